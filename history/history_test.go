package history

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// historyGen makes the player counts of one server over time, the way
// real ones look: constant (most servers: nobody plays), changing a few
// times a day, or changing at every sample.
type historyGen struct {
	kind  int // 0 constant, 1 a few changes a day, 2 every sample
	count int
}

func (g *historyGen) next(r *rand.Rand) int {
	switch g.kind {
	case 1:
		if r.IntN(40) == 0 {
			g.count = r.IntN(24)
		}
	case 2:
		g.count = r.IntN(300) // above MaxCount sometimes: capped
	}
	return g.count
}

// TestHistory_SameAsReference holds History to the raw-array History it
// replaced (refHistory): the same answers to Points, Recent, Stats, Len
// and TakeDirty after random Records (in order, repeated in a slot, out of
// order, days apart), Loads and Prunes.
func TestHistory_SameAsReference(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 9))
		h, ref := New(), newRefHistory()
		changes, refChanges := 0, 0
		h.OnChange(func() { changes++ })
		addrs := []netip.AddrPort{
			netip.MustParseAddrPort("192.0.2.1:27960"),
			netip.MustParseAddrPort("192.0.2.1:27961"),
			netip.MustParseAddrPort("[2001:db8::1]:27960"),
			netip.MustParseAddrPort("[::ffff:198.51.100.7]:27960"), // kept unmapped
		}
		gens := make([]historyGen, len(addrs))
		for i := range gens {
			gens[i] = historyGen{kind: r.IntN(3), count: r.IntN(5)}
		}
		now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(86400)) * time.Second)
		for op := range 4000 {
			i := r.IntN(len(addrs))
			a := addrs[i]
			switch x := r.IntN(1000); {
			case x < 900: // the next sample: 4-5 minutes on, sometimes later or in the same slot
				now = now.Add(time.Duration(r.IntN(330)) * time.Second)
				if r.IntN(200) == 0 {
					now = now.Add(time.Duration(r.IntN(4*86400)) * time.Second)
				}
				c := gens[i].next(r)
				h.Record(a, now, c)
				if ref.Record(a, now, c) {
					refChanges++
				}
			case x < 940: // out of order: up to 10 days back
				at := now.Add(-time.Duration(r.IntN(10*86400)) * time.Second)
				c := r.IntN(20)
				h.Record(a, at, c)
				if ref.Record(a, at, c) {
					refChanges++
				}
			case x < 960: // a Load of some days
				var days []Day
				for range 1 + r.IntN(3) {
					d := Day{Addr: addrs[r.IntN(len(addrs))], Day: int32(SlotOf(now)/int64(SlotsPerDay)) - int32(r.IntN(12))}
					for j := range d.Counts {
						d.Counts[j] = NoSample
						if r.IntN(3) == 0 {
							d.Counts[j] = uint8(r.IntN(MaxCount + 1))
						}
					}
					days = append(days, d)
				}
				h.Load(days)
				ref.Load(days)
			case x < 970:
				at := now.Add(time.Duration(r.IntN(3*86400)) * time.Second)
				if a, b := h.Prune(at), ref.Prune(at); a != b {
					t.Fatalf("seed %d op %d: Prune %d, reference %d", seed, op, a, b)
				}
			case x < 985:
				got, want := h.TakeDirty(), ref.TakeDirty()
				sortDays(got)
				sortDays(want)
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d op %d: TakeDirty %d days, reference %d", seed, op, len(got), len(want))
				}
			default:
				for _, a := range addrs {
					end := SlotOf(now) + int64(r.IntN(3*SlotsPerDay)) - int64(SlotsPerDay)
					from := end - int64(r.IntN(12*SlotsPerDay))
					if g, w := h.Points(a, from, end), ref.Points(a, from, end); !slices.Equal(g, w) {
						t.Fatalf("seed %d op %d: Points(%v, %d, %d): %d points, reference %d", seed, op, a, from, end, len(g), len(w))
					}
					if g, w := h.Points(a, 0, end+1000), ref.Points(a, 0, end+1000); !slices.Equal(g, w) {
						t.Fatalf("seed %d op %d: all Points(%v): %d points, reference %d", seed, op, a, len(g), len(w))
					}
					n := r.IntN(300)
					if g, w := h.Recent(a, end, n), ref.Recent(a, end, n); !slices.Equal(g, w) {
						t.Fatalf("seed %d op %d: Recent(%v, %d, %d): %v, reference %v", seed, op, a, end, n, g, w)
					}
					ga, gp, gn := h.Stats(a, from, end)
					wa, wp, wn := ref.Stats(a, from, end)
					if ga != wa || gp != wp || gn != wn {
						t.Fatalf("seed %d op %d: Stats %v %v %v, reference %v %v %v", seed, op, ga, gp, gn, wa, wp, wn)
					}
				}
				if err := checkSlots(h); err != "" {
					t.Fatalf("seed %d op %d: %s", seed, op, err)
				}
				if changes != refChanges {
					t.Fatalf("seed %d op %d: %d changes notified, reference %d", seed, op, changes, refChanges)
				}
				gs, gsm, _ := h.Len()
				ws, wsm, _ := ref.Len()
				if gs != ws || gsm != wsm {
					t.Fatalf("seed %d op %d: Len %d %d, reference %d %d", seed, op, gs, gsm, ws, wsm)
				}
			}
		}
	}
}

// checkSlots checks that every series kept out of line has its own index
// in h.big and that every other index of h.big is free.
func checkSlots(h *History) string {
	used := map[uint32]bool{}
	for _, s := range h.servers {
		if s.n == outOfLine {
			i := binary.LittleEndian.Uint32(s.b[:4])
			if used[i] || len(h.big[i]) <= inlineSeries {
				return fmt.Sprintf("big series %d shared or short (%d bytes)", i, len(h.big[i]))
			}
			used[i] = true
		}
	}
	if len(used)+len(h.free) != len(h.big) {
		return fmt.Sprintf("%d big series in use, %d free, %d in all", len(used), len(h.free), len(h.big))
	}
	return ""
}

func sortDays(d []Day) {
	slices.SortFunc(d, func(a, b Day) int {
		return cmp.Or(a.Addr.Compare(b.Addr), cmp.Compare(a.Day, b.Day))
	})
}

// TestHistory_DayEncoding checks that a day's body round-trips and stays
// within maxBody, for random days and for the patterns that cost most
// (runs of exactly minRun between counts kept as they are).
func TestHistory_DayEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var days [][SlotsPerDay]uint8
	var d [SlotsPerDay]uint8
	for range 2000 {
		levels := 1 + r.IntN(6)
		for i := range d {
			d[i] = uint8(r.IntN(levels))
			if levels == 6 {
				d[i] = NoSample // with levels 6 some slots have no sample
			}
		}
		days = append(days, d)
	}
	for period := 1; period <= 2*minRun+2; period++ { // a run of minRun, then period-minRun changing counts
		for i := range d {
			d[i] = uint8(i / period % 2)
			if i%period >= minRun {
				d[i] = uint8(2 + i%2)
			}
		}
		days = append(days, d)
	}
	for i := range d {
		d[i] = uint8(i % 2)
	}
	days = append(days, d)
	worst := 0
	for i, d := range days {
		body := appendBody(nil, &d)
		worst = max(worst, len(body))
		if len(body) > maxBody {
			t.Errorf("day %d: %d bytes, more than %d", i, len(body), maxBody)
		}
		var back [SlotsPerDay]uint8
		decodeBody(body, &back)
		if back != d {
			t.Fatalf("day %d does not round-trip", i)
		}
	}
	t.Logf("largest body: %d bytes", worst)
	// A day with one count from its first sample is a few bytes.
	for i := range d {
		d[i] = NoSample
		if i >= 100 {
			d[i] = 0
		}
	}
	if b := appendBody(nil, &d); len(b) > 6 {
		t.Errorf("a constant day takes %d bytes: % x", len(b), b)
	}
}

// FuzzHistoryDecode feeds arbitrary bytes to the series and day decoders:
// they never read out of bounds, and what they decode encodes and decodes
// back to the same counts.
func FuzzHistoryDecode(f *testing.F) {
	var d [SlotsPerDay]uint8
	for i := range d {
		d[i] = uint8(i / 50)
	}
	enc := appendSeries(nil, []dayRef{{20500, appendBody(nil, &d)}, {20502, []byte{0x05, 1, 2}}})
	f.Add(enc)
	f.Add([]byte{})
	f.Add(binary.AppendVarint(nil, -3))
	f.Add([]byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, enc []byte) {
		for _, ref := range parseDays(enc, nil) {
			if !bytes.Contains(enc, ref.body) {
				t.Fatal("a body outside the series")
			}
			var c, back [SlotsPerDay]uint8
			decodeBody(ref.body, &c)
			decodeBody(appendBody(nil, &c), &back)
			if back != c {
				t.Fatal("decoded counts do not round-trip")
			}
		}
		var c [SlotsPerDay]uint8
		decodeBody(enc, &c)
	})
}
