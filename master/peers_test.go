package master

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// A fleet instance answers "getserversExt ... landmarks" with its own RTTs
// and then every other landmark's it holds, one run of packets per
// landmark, for the servers of the list asked for only.
func TestHandler_LandmarksCarryPeersRTTs(t *testing.T) {
	f := newHandlerFix(t, Config{}, func(c *handlerSetup) { c.Landmark = "fra-1" })
	a, b := ap("198.51.100.1:27960"), ap("198.51.100.2:27960")
	f.listAfter(t, a, 12*time.Millisecond)
	f.listAfter(t, b, 80*time.Millisecond)
	other := ap("198.51.100.4:27961")
	f.list(t, other, "protocol", "68") // another protocol: not in the list asked for
	reg := f.h.Registry()
	at := f.now.Add(-5 * time.Second)
	for _, c := range []struct {
		a   netip.AddrPort
		lm  string
		rtt time.Duration
	}{{a, "nyc-1", 90 * time.Millisecond}, {b, "nyc-1", 70 * time.Millisecond}, {a, "tyo-1", 250 * time.Millisecond}, {other, "tyo-1", time.Millisecond}} {
		if !reg.ApplyLandmarkRTT(c.a, c.lm, c.rtt, at) {
			t.Fatalf("ApplyLandmarkRTT(%v, %s) refused", c.a, c.lm)
		}
	}
	list, lm := landmarkPackets(t, f.in(ap("203.0.113.9:5000"), oob("getserversExt Quake3Arena 71 empty full landmarks")))
	got := map[string]map[netip.AddrPort]time.Duration{}
	for _, r := range lm {
		if got[r.Landmark] == nil {
			got[r.Landmark] = map[netip.AddrPort]time.Duration{}
		}
		for _, e := range r.Entries {
			got[r.Landmark][e.Addr] = e.RTT
			if r.Landmark != "fra-1" && (e.Age < 5*time.Second || e.Age > 6*time.Second) {
				t.Errorf("%s's entry %+v: want age 5 s", r.Landmark, e)
			}
		}
	}
	want := map[string]map[netip.AddrPort]time.Duration{
		"fra-1": {a: 12 * time.Millisecond, b: 80 * time.Millisecond},
		"nyc-1": {a: 90 * time.Millisecond, b: 70 * time.Millisecond},
		"tyo-1": {a: 250 * time.Millisecond},
	}
	if list != 1 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("list %d, landmarks %v, want %v", list, got, want)
	}
	if lm[0].Landmark != "fra-1" {
		t.Errorf("first run from %s, want this master's", lm[0].Landmark)
	}
	s, _ := reg.Lookup(a)
	if len(s.Landmarks) != 2 || s.Landmarks[0].Landmark != "nyc-1" || s.Landmarks[0].RTT != 90*time.Millisecond || !s.Landmarks[0].Measured.Equal(at) {
		t.Errorf("Lookup's Landmarks %+v", s.Landmarks)
	}
}

// A peer's RTT is kept only for a listed server, only if newer, only for a
// name the extension can carry and up to MaxLandmarks names; it goes with
// the server and with its landmark (ForgetLandmarks).
func TestRegistry_ApplyLandmarkRTTBounds(t *testing.T) {
	r := newTestRegistry(t, Config{AllowLoopback: true})
	a := ap("198.51.100.1:27960")
	if r.ApplyLandmarkRTT(a, "nyc", 10*time.Millisecond, t0) {
		t.Fatal("kept an RTT to a server not listed")
	}
	register(t, r, t0, a)
	for _, c := range []struct {
		lm  string
		rtt time.Duration
		at  time.Time
		ok  bool
	}{
		{"nyc", 10 * time.Millisecond, t0, true},
		{"nyc", 20 * time.Millisecond, t0, false}, // not newer
		{"nyc", 30 * time.Millisecond, t0.Add(time.Second), true},
		{"", 10 * time.Millisecond, t0, false},
		{"bad id", 10 * time.Millisecond, t0, false},
		{"tyo", 0, t0, false},
		{"tyo", MaxRTT + time.Millisecond, t0, false},
		{"tyo", 40 * time.Millisecond, time.Time{}, false},
	} {
		if got := r.ApplyLandmarkRTT(a, c.lm, c.rtt, c.at); got != c.ok {
			t.Errorf("ApplyLandmarkRTT(%q, %v, %v) = %v, want %v", c.lm, c.rtt, c.at, got, c.ok)
		}
	}
	if s, _ := r.Lookup(a); len(s.Landmarks) != 1 || s.Landmarks[0].RTT != 30*time.Millisecond {
		t.Fatalf("Landmarks %+v", s.Landmarks)
	}
	for i := 1; i < MaxLandmarks; i++ {
		if !r.ApplyLandmarkRTT(a, fmt.Sprint("lm", i), time.Millisecond, t0) {
			t.Fatalf("landmark %d of %d refused", i+1, MaxLandmarks)
		}
	}
	if r.ApplyLandmarkRTT(a, "one-more", time.Millisecond, t0) {
		t.Fatalf("a landmark beyond MaxLandmarks (%d) kept", MaxLandmarks)
	}
	r.ForgetLandmarks(func(id string) bool { return id == "lm3" })
	if got := r.Landmarks(); len(got) != 1 || got[0] != "lm3" {
		t.Fatalf("Landmarks after ForgetLandmarks: %v", got)
	}
	if s, _ := r.Lookup(a); len(s.Landmarks) != 1 || s.Landmarks[0].Landmark != "lm3" {
		t.Fatalf("Landmarks %+v", s.Landmarks)
	}
	if !r.ApplyLandmarkRTT(a, "one-more", time.Millisecond, t0) {
		t.Fatal("a forgotten landmark's place not freed")
	}
	if !r.ApplyRemoval(a, t0.Add(time.Hour)) {
		t.Fatal("the server did not go")
	}
	if n := len(r.peers); n != 0 {
		t.Errorf("%d servers' peer RTTs kept after the server went", n)
	}
}

// BenchmarkRegistry_PeerRTTBytesPerServer reports the live heap that the
// other landmarks' RTTs add per listed server in a fleet of three
// landmarks (two others' samples per server), at 16,384 servers.
func BenchmarkRegistry_PeerRTTBytesPerServer(b *testing.B) {
	const n = 16384
	for b.Loop() {
		r := newTestRegistry(b, Config{AllowLoopback: true, MaxServersPerAddress: -1, MaxPending: n})
		addrs := make([]netip.AddrPort, n)
		for i := range addrs {
			addrs[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), 27960)
			register(b, r, t0, addrs[i])
		}
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		for _, a := range addrs {
			for _, lm := range []string{"nyc-1", "tyo-1"} {
				if !r.ApplyLandmarkRTT(a, lm, 90*time.Millisecond, t0) {
					b.Fatal("refused")
				}
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/n, "B/server")
		runtime.KeepAlive(r)
	}
}

// A fleet instance that has measured none of the listed servers still
// sends its own run first (its id alone), then its peers': a client takes
// the first id as the master's own, and a peer's first (as before) made it
// file its RTT to this master under that peer.
func TestHandler_LandmarksOwnRunFirstWhenEmpty(t *testing.T) {
	f := newHandlerFix(t, Config{}, func(c *handlerSetup) { c.Landmark = "fra-1" })
	a := ap("198.51.100.1:27960")
	f.list(t, a)
	reg := f.h.Registry()
	if s, _ := reg.Lookup(a); s.RTT != 0 {
		t.Fatalf("%v measured: RTT %v", a, s.RTT)
	}
	if !reg.ApplyLandmarkRTT(a, "nyc-1", 90*time.Millisecond, f.now) {
		t.Fatal("ApplyLandmarkRTT refused")
	}
	list, lm := landmarkPackets(t, f.in(ap("203.0.113.9:5000"), oob("getserversExt Quake3Arena 71 empty full landmarks")))
	if list != 1 || len(lm) != 2 || lm[0].Landmark != "fra-1" || len(lm[0].Entries) != 0 ||
		lm[1].Landmark != "nyc-1" || len(lm[1].Entries) != 1 || lm[1].Entries[0].RTT != 90*time.Millisecond {
		t.Fatalf("list %d, landmarks %+v; want fra-1's empty run, then nyc-1's", list, lm)
	}
}
