package history

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
)

var (
	t0   = time.Date(2026, 11, 20, 18, 0, 0, 0, time.UTC)
	srvA = netip.MustParseAddrPort("192.0.2.1:27960")
	srvB = netip.MustParseAddrPort("192.0.2.2:27960")
)

func names(ss []Sighting) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%v %s %q %s-%s", s.Server, s.Game, s.Name, s.First.Format("15:04"), s.Last.Format("15:04")))
	}
	return out
}

// TestSightings_WherePlayersPlayedRecently: each list records its people
// on its server, first seen from the registry's Since; colours do not
// make another player; bots are not recorded; the most recent first; a
// list seen again changes nothing.
func TestSightings_WherePlayersPlayedRecently(t *testing.T) {
	r := NewSightings()
	since := t0.Add(-30 * time.Minute)
	r.Seen(srvA, "Quake3Arena", t0, []master.Player{
		{Name: "^1Bob", Ping: 40, Since: since}, {Name: "Sarge", Ping: 0}, {Name: "^7", Ping: 30},
	})
	r.Seen(srvA, "Quake3Arena", t0.Add(5*time.Minute), []master.Player{{Name: "^1Bob", Ping: 41, Since: since}})
	r.Seen(srvB, "et", t0.Add(2*time.Hour), []master.Player{{Name: "^4Bob", Ping: 60, Since: t0.Add(2 * time.Hour)}})
	v := r.Version()
	r.Seen(srvB, "et", t0.Add(2*time.Hour), []master.Player{{Name: "^4Bob", Ping: 60, Since: t0.Add(2 * time.Hour)}})
	if r.Version() != v {
		t.Error("the same list again changed the record")
	}
	got := names(r.Of("Bob", t0.Add(3*time.Hour)))
	want := []string{`192.0.2.2:27960 et "^4Bob" 20:00-20:00`, `192.0.2.1:27960 Quake3Arena "^1Bob" 17:30-18:05`}
	if !slices.Equal(got, want) {
		t.Errorf("Bob seen %q, want %q", got, want)
	}
	if s := r.Of("Sarge", t0); s != nil {
		t.Errorf("a bot was recorded: %v", s)
	}
	if n, lists, _ := r.Len(); n != 1 || lists != 4 {
		t.Errorf("%d names, %d lists; want Bob alone of 4 lists", n, lists)
	}
	// An older list (another instance's, late) does not move it back.
	r.Seen(srvB, "et", t0.Add(time.Hour), []master.Player{{Name: "Bob", Ping: 60}})
	if got := names(r.Of("Bob", t0.Add(3*time.Hour))); !slices.Equal(got, want) {
		t.Errorf("after an older list: %q", got)
	}
}

// TestSightings_ForgottenAfterRetention: a sighting not renewed for
// SightingRetention is not given, and is dropped (and deleted from the
// state file) by the next prune; a renewed one stays.
func TestSightings_ForgottenAfterRetention(t *testing.T) {
	r := NewSightings()
	r.OnChange(nil)
	r.Seen(srvA, "q3", t0, []master.Player{{Name: "Old", Ping: 50}, {Name: "Both", Ping: 50}})
	r.Seen(srvB, "q3", t0.Add(24*time.Hour), []master.Player{{Name: "Both", Ping: 50}})
	r.TakeDirty()
	end := t0.Add(SightingRetention)
	if r.Of("Old", end) == nil || r.Of("Old", end.Add(time.Second)) != nil {
		t.Errorf("kept for exactly %v: %v then %v", SightingRetention, r.Of("Old", end), r.Of("Old", end.Add(time.Second)))
	}
	r.Seen(srvB, "q3", end.Add(time.Hour), []master.Player{{Name: "New", Ping: 50}})
	if n, _, _ := r.Len(); n != 2 {
		t.Errorf("%d names after the prune, want Both and New", n)
	}
	if got := names(r.Of("Both", end.Add(time.Hour))); len(got) != 1 || got[0][:15] != "192.0.2.2:27960" {
		t.Errorf("Both: %q", got)
	}
	recs := r.TakeDirty()
	slices.SortFunc(recs, func(a, b SightingRecord) int { return bytes.Compare([]byte(a.Key), []byte(b.Key)) })
	if len(recs) != 3 || recs[0].Key != "Both" || recs[0].Value == nil || recs[1].Key != "New" || recs[2].Key != "Old" || recs[2].Value != nil {
		t.Errorf("dirty after the prune: %+v", recs)
	}
}

// TestSightings_MaxSightingsPerName: a player seen on more servers keeps
// the MaxSightingsPerName seen last.
func TestSightings_MaxSightingsPerName(t *testing.T) {
	r := NewSightings()
	for i := range MaxSightingsPerName + 2 {
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)}), 27960)
		r.Seen(a, "q3", t0.Add(time.Duration(i)*time.Minute), []master.Player{{Name: "Roamer", Ping: 50}})
	}
	got := r.Of("Roamer", t0.Add(time.Hour))
	if len(got) != MaxSightingsPerName || got[0].Server.Addr().As4()[3] != MaxSightingsPerName+2 || got[len(got)-1].Server.Addr().As4()[3] != 3 {
		t.Errorf("kept %q", names(got))
	}
}

// TestSightings_MaxSightingNames: beyond MaxSightingNames names, those
// seen longest ago are forgotten, a sixteenth at once.
func TestSightings_MaxSightingNames(t *testing.T) {
	r := NewSightings()
	for i := range MaxSightingNames + 1 {
		r.Seen(srvA, "q3", t0.Add(time.Duration(i)*time.Second), []master.Player{{Name: fmt.Sprintf("p%d", i), Ping: 50}})
	}
	n, _, evicted := r.Len()
	if n > MaxSightingNames || evicted != MaxSightingNames/16 || n != MaxSightingNames+1-MaxSightingNames/16 {
		t.Errorf("%d names kept, %d forgotten", n, evicted)
	}
	now := t0.Add(24 * time.Hour)
	if r.Of("p0", now) != nil || r.Of(fmt.Sprintf("p%d", MaxSightingNames/16-1), now) != nil || r.Of(fmt.Sprintf("p%d", MaxSightingNames/16), now) == nil ||
		r.Of(fmt.Sprintf("p%d", MaxSightingNames), now) == nil {
		t.Error("not the names seen longest ago forgotten")
	}
}

// TestSightings_StateRoundTrip: what TakeDirty hands the state file loads
// back into another record as it was; a record that does not decode is
// counted, and one older than SightingRetention is not loaded.
func TestSightings_StateRoundTrip(t *testing.T) {
	r := NewSightings()
	r.OnChange(nil)
	r.Seen(srvA, "Quake3Arena", t0, []master.Player{{Name: "^1Bob", Ping: 40, Since: t0.Add(-time.Hour)}, {Name: "\xc1lice", Ping: 30}})
	r.Seen(netip.MustParseAddrPort("[2001:db8::1]:27960"), "Quake4", t0.Add(time.Minute), []master.Player{{Name: "^c900Bob", Ping: 40}})
	recs := r.TakeDirty()
	recs = append(recs, SightingRecord{Key: "Broken", Value: []byte{1, 0}}, SightingRecord{Key: "Stale",
		Value: EncodeSightings([]Sighting{{Server: srvB, Game: "q3", Name: "Stale", First: t0.Add(-9 * 24 * time.Hour), Last: t0.Add(-8 * 24 * time.Hour)}})})
	back := NewSightings()
	if corrupt := back.Load(t0.Add(time.Hour), recs); corrupt != 1 {
		t.Errorf("%d corrupt records, want 1", corrupt)
	}
	for _, k := range []string{"Bob", "\xc1lice"} {
		if got, want := names(back.Of(k, t0.Add(time.Hour))), names(r.Of(k, t0.Add(time.Hour))); !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("%q loaded back as %q, want %q", k, got, want)
		}
	}
	if back.Of("Stale", t0) != nil {
		t.Error("a sighting older than the retention was loaded")
	}
}

// TestDecodeSightings_Truncated: every prefix of a valid record fails
// cleanly, as does a byte more.
func TestDecodeSightings_Truncated(t *testing.T) {
	b := EncodeSightings([]Sighting{
		{Server: srvA, Game: "Quake3Arena", Name: "^1Bob", First: t0, Last: t0.Add(time.Hour)},
		{Server: netip.MustParseAddrPort("[2001:db8::1]:27960"), Game: "Quake4", Name: "Bob", First: t0, Last: t0},
	})
	if ss, err := DecodeSightings(b); err != nil || len(ss) != 2 {
		t.Fatalf("valid record: %v %v", ss, err)
	}
	for i := range len(b) {
		if _, err := DecodeSightings(b[:i]); !errors.Is(err, ErrBadSightings) {
			t.Errorf("prefix of %d bytes: %v", i, err)
		}
	}
	if _, err := DecodeSightings(append(b, 0)); !errors.Is(err, ErrBadSightings) {
		t.Errorf("a trailing byte: %v", err)
	}
}

func FuzzDecodeSightings(f *testing.F) {
	f.Add(EncodeSightings([]Sighting{{Server: srvA, Game: "q3", Name: "^1Bob", First: t0, Last: t0}}))
	f.Add([]byte{1, 1, 6, 192, 0, 2, 1, 0x60, 0x6d, 0, 0, 0, 0})
	f.Add([]byte{1, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		ss, err := DecodeSightings(b)
		if err != nil {
			return
		}
		if len(ss) == 0 || len(ss) > MaxSightingsPerName {
			t.Fatalf("%d sightings decoded", len(ss))
		}
		again, err := DecodeSightings(EncodeSightings(ss))
		if err != nil || !slices.Equal(names(again), names(ss)) {
			t.Fatalf("decode, encode, decode: %v, %q then %q", err, names(ss), names(again))
		}
	})
}

// BenchmarkSightings_MemoryPerName measures the live heap per name: one
// sighting each, and MaxSightingsPerName each.
func BenchmarkSightings_MemoryPerName(b *testing.B) {
	for _, per := range []int{1, MaxSightingsPerName} {
		b.Run(fmt.Sprintf("sightings=%d", per), func(b *testing.B) {
			const n = 20000
			var r *Sightings
			var before, after runtime.MemStats
			for range b.N {
				runtime.GC()
				runtime.ReadMemStats(&before)
				r = NewSightings()
				for i := range n {
					for j := range per {
						a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, byte(j), byte(i)}), 27960)
						r.Seen(a, "Quake3Arena", t0.Add(time.Duration(j)*time.Minute),
							[]master.Player{{Name: fmt.Sprintf("^1Player^7%08d", i), Ping: 50}})
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
			}
			runtime.KeepAlive(r)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/name")
		})
	}
}
