package adaptive

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestAlgorithm1_Nsample checks step 4(a): ceil(scale*sqrt(n)), at least 1.
func TestAlgorithm1_Nsample(t *testing.T) {
	for _, tc := range []struct {
		n     int
		scale float64
		want  int
	}{
		{1, 1, 1}, {2, 1, 2}, {3, 1, 2}, {4, 1, 2}, {5, 1, 3}, {9, 1, 3},
		{10, 1, 4}, {16, 1, 4}, {17, 1, 5}, {100, 1, 10}, {101, 1, 11},
		{4, 2, 4}, {5, 2, 5}, {100, 0.5, 5}, {1, 0.01, 1}, {3, 5, 3},
	} {
		t.Run(fmt.Sprintf("%d×%v", tc.n, tc.scale), func(t *testing.T) {
			// Every server in its own /16, so one-per-/16 never limits.
			var ts []Target
			for i := range tc.n {
				ts = append(ts, tg(fmt.Sprintf("10.%d.0.1", i), "AU"))
			}
			p := Paper()
			p.SampleScale = tc.scale
			pl := newPlanner(t, ts, p, 1)
			if got := pl.nsample(tc.n); got != tc.want {
				t.Errorf("nsample = %d, want %d", got, tc.want)
			}
			got := len(phases(drive(t, pl, byCountry(map[string]time.Duration{"AU": ms(10)})), Calibrate))
			if got != tc.want {
				t.Errorf("calibration probes = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAlgorithm1_OnePerSlash16 checks step 4(b): the samples come one from
// each of Nsample different /16s when there are enough, and round robin
// over the /16s when there are fewer.
func TestAlgorithm1_OnePerSlash16(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perSub  []int // servers in each /16
		wantMax int   // most samples any /16 may give
	}{
		{"16 servers in 4 /16s", []int{4, 4, 4, 4}, 1},                     // Nsample 4
		{"25 servers in 10 /16s", []int{16, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1}, // Nsample 5
		{"16 servers in 2 /16s", []int{8, 8}, 2},                           // Nsample 4
		{"16 servers in 3 /16s", []int{1, 1, 14}, 2},                       // Nsample 4: 1, 1, 2
		{"16 servers in 1 /16", []int{16}, 4},                              // Nsample 4
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ts []Target
			total := 0
			for b, n := range tc.perSub {
				ts = append(ts, addrs("JP", 60, b, n)...)
				total += n
			}
			want := Paper()
			wantN := newPlanner(t, ts, want, 0).nsample(total)
			seen := make(map[netip.Prefix]bool)
			for seed := range uint64(50) {
				pl := newPlanner(t, ts, Paper(), seed)
				cal := phases(drive(t, pl, byCountry(map[string]time.Duration{"JP": ms(100)})), Calibrate)
				if len(cal) != wantN {
					t.Fatalf("seed %d: %d samples, want %d", seed, len(cal), wantN)
				}
				per := make(map[netip.Prefix]int)
				for _, p := range cal {
					pfx, _ := p.t.Addr.Addr().Prefix(16)
					per[pfx]++
					seen[pfx] = true
				}
				lo, hi := wantN, 0
				for _, n := range per {
					lo, hi = min(lo, n), max(hi, n)
				}
				if hi > tc.wantMax {
					t.Fatalf("seed %d: a /16 gave %d samples, want at most %d: %v", seed, hi, tc.wantMax, per)
				}
				// Round robin: no /16 gives a second before every /16 with
				// servers left gave one.
				if len(per) < min(wantN, len(tc.perSub)) {
					t.Fatalf("seed %d: samples from %d /16s, want %d: %v", seed, len(per), min(wantN, len(tc.perSub)), per)
				}
			}
			if len(seen) != len(tc.perSub) {
				t.Errorf("over 50 seeds, samples came from %d of %d /16s", len(seen), len(tc.perSub))
			}
		})
	}
}

// TestAlgorithm1_SplitBoundary checks step 4(e) at 40 ms and 40 ms + 1 ns:
// a spread of exactly 40 ms is not "more than 40ms".
func TestAlgorithm1_SplitBoundary(t *testing.T) {
	for _, tc := range []struct {
		far   time.Duration
		split bool
	}{{ms(50), false}, {ms(50) + 1, true}} {
		t.Run(tc.far.String(), func(t *testing.T) {
			// Four servers in two /16s: Nsample 2, one from each /16, so
			// P20 is the near one and P80 the far one.
			ts := append(addrs("NZ", 20, 1, 2), addrs("NZ", 20, 2, 2)...)
			world := func(t Target) (time.Duration, bool) {
				if t.Addr.Addr().As4()[1] == 2 {
					return tc.far, true
				}
				return ms(10), true
			}
			pl := newPlanner(t, ts, Paper(), 3)
			ps := drive(t, pl, world)
			splits := phases(ps, Split)
			cs := pl.Clusters()
			if !tc.split {
				if len(splits) != 0 || len(cs) != 1 {
					t.Fatalf("split: %d split probes, %d clusters", len(splits), len(cs))
				}
				if want := ms(10) + (tc.far-ms(10))/2; cs[0].RTT != want {
					t.Errorf("RTTcluster %v, want the median %v", cs[0].RTT, want)
				}
				return
			}
			if len(splits) != 2 {
				t.Fatalf("%d split probes, want one per new cluster (2)", len(splits))
			}
			lc := live(cs)
			if got := ids(lc); !slices.Equal(got, []string{"NZ 20.1.0.0/16", "NZ 20.2.0.0/16"}) {
				t.Fatalf("clusters %v", got)
			}
			if !cs[0].Dissolved || lc["NZ 20.1.0.0/16"].Parent != 0 {
				t.Errorf("parent not dissolved or not parent: %+v", cs)
			}
			if r := lc["NZ 20.2.0.0/16"].RTT; r != tc.far {
				t.Errorf("new cluster RTT %v, want its split probe's %v", r, tc.far)
			}
			// The split probe is a server not probed in calibration.
			cal := phases(ps, Calibrate)
			for _, s := range splits {
				for _, c := range cal {
					if s.t.Addr == c.t.Addr {
						t.Errorf("split probe %v repeats a calibration probe", s.t.Addr)
					}
				}
			}
			// Rank order: the near /16 first.
			re := phases(ps, Reordered)
			if len(re) != 0 {
				t.Errorf("%d step-6 probes, want 0 (4 servers: 2 calibrated, 2 split)", len(re))
			}
		})
	}
}

// TestAlgorithm1_SplitAllProbed checks a new cluster whose servers were all
// probed in calibration: it takes the median of those samples, and gets no
// split probe.
func TestAlgorithm1_SplitAllProbed(t *testing.T) {
	// Nine servers: one alone in 30.1/16, eight in 30.2/16. Nsample 3: the
	// lone server is always sampled, and so are two of the eight.
	ts := append(addrs("BR", 30, 1, 1), addrs("BR", 30, 2, 8)...)
	world := func(t Target) (time.Duration, bool) {
		if t.Addr.Addr().As4()[1] == 1 {
			return ms(300), true
		}
		return ms(100), true
	}
	pl := newPlanner(t, ts, Paper(), 7)
	ps := drive(t, pl, world)
	if n := len(phases(ps, Split)); n != 1 {
		t.Errorf("%d split probes, want 1 (the lone /16 was probed already)", n)
	}
	lc := live(pl.Clusters())
	lone := lc["BR 30.1.0.0/16"]
	if !lone.Estimated || lone.RTT != ms(300) || len(lone.Samples) != 1 {
		t.Errorf("lone /16: %+v", lone)
	}
	if lone.Rank != 2 || lc["BR 30.2.0.0/16"].Rank != 1 {
		t.Errorf("ranks: near %d, far %d", lc["BR 30.2.0.0/16"].Rank, lone.Rank)
	}
}

// TestAlgorithm1_SingleSlash16NotSplit checks that a cluster in one /16,
// however spread its samples, keeps its median: there is nothing to split.
func TestAlgorithm1_SingleSlash16NotSplit(t *testing.T) {
	ts := addrs("CA", 40, 1, 9)
	world := func(t Target) (time.Duration, bool) { return ms(float64(10 + 50*t.Index)), true }
	pl := newPlanner(t, ts, Paper(), 1)
	ps := drive(t, pl, world)
	if n := len(phases(ps, Split)); n != 0 {
		t.Errorf("%d split probes", n)
	}
	if cs := pl.Clusters(); len(cs) != 1 || cs[0].Dissolved {
		t.Errorf("clusters %+v", cs)
	}
}

// TestAlgorithm1_SplitProbeRTT checks step 4(e)iii, "The probed RTT becomes
// RTTcluster": the new cluster takes its split probe's RTT, not its
// calibration samples'.
func TestAlgorithm1_SplitProbeRTT(t *testing.T) {
	ts := append(addrs("NZ", 20, 1, 4), addrs("NZ", 20, 2, 5)...) // Nsample 3
	probed := make(map[byte]int)
	world := func(t Target) (time.Duration, bool) {
		sub := t.Addr.Addr().As4()[1]
		probed[sub]++
		if probed[sub] == 1 { // each /16's first probe is calibration
			return ms(10 + 100*float64(sub-1)), true
		}
		return ms(60 + 100*float64(sub-1)), true
	}
	pl := newPlanner(t, ts, Paper(), 1)
	ps := drive(t, pl, world)
	if n := len(phases(ps, Split)); n != 2 {
		t.Fatalf("%d split probes, want 2", n)
	}
	lc := live(pl.Clusters())
	for id, want := range map[string]time.Duration{"NZ 20.1.0.0/16": ms(60), "NZ 20.2.0.0/16": ms(160)} {
		if got := lc[id].RTT; got != want {
			t.Errorf("%s: RTT %v, want the split probe's %v", id, got, want)
		}
	}
}

// TestAlgorithm1_SplitProbeRandom checks that step 4(e)iii's server is
// "randomly selected": over seeds, more than one server of a /16 is chosen,
// and never one probed in calibration.
func TestAlgorithm1_SplitProbeRandom(t *testing.T) {
	ts := append(addrs("NZ", 20, 1, 1), addrs("NZ", 20, 2, 8)...) // Nsample 3: 1 + 2
	world := func(t Target) (time.Duration, bool) { return ms(10 + 100*float64(t.Addr.Addr().As4()[1])), true }
	chosen := make(map[netip.AddrPort]bool)
	for seed := range uint64(30) {
		ps := drive(t, newPlanner(t, ts, Paper(), seed), world)
		cal := make(map[netip.AddrPort]bool)
		for _, p := range phases(ps, Calibrate) {
			cal[p.t.Addr] = true
		}
		for _, p := range phases(ps, Split) {
			if cal[p.t.Addr] {
				t.Fatalf("seed %d: split probe %v was a calibration probe", seed, p.t.Addr)
			}
			chosen[p.t.Addr] = true
		}
	}
	if len(chosen) < 4 {
		t.Errorf("over 30 seeds the split probe was one of only %d servers", len(chosen))
	}
}
