package adaptive

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestAlgorithm1_Slash8Servers checks step 2(b)i at its boundary: a /8 with
// 10 servers is not "more than 10 game servers", one with 11 is.
func TestAlgorithm1_Slash8Servers(t *testing.T) {
	for _, tc := range []struct {
		inSlash8 int
		want     bool
	}{{10, false}, {11, true}} {
		t.Run(fmt.Sprint(tc.inSlash8), func(t *testing.T) {
			// The /8 holds far more than 10% of the country either way.
			ts := append(addrs("DE", 80, 1, tc.inSlash8), addrs("DE", 90, 1, 5)...)
			cs := live(newPlanner(t, ts, Paper(), 1).Clusters())
			c, ok := cs["DE 80.0.0.0/8"]
			if ok != tc.want {
				t.Fatalf("/8 cluster made = %v, want %v; clusters %v", ok, tc.want, ids(cs))
			}
			if ok && c.Size != tc.inSlash8 {
				t.Errorf("size %d, want %d", c.Size, tc.inSlash8)
			}
			rest := cs["DE"]
			wantRest := 5
			if !tc.want {
				wantRest += tc.inSlash8
			}
			if rest.Size != wantRest {
				t.Errorf("rest of DE: %d servers, want %d", rest.Size, wantRest)
			}
		})
	}
}

// TestAlgorithm1_Slash8Share checks step 2(b)ii at its boundary: 11 servers
// out of 110 is exactly 10%, not "more than 10%"; 11 of 109 is.
func TestAlgorithm1_Slash8Share(t *testing.T) {
	for _, tc := range []struct {
		country int
		want    bool
	}{{110, false}, {109, true}} {
		t.Run(fmt.Sprint(tc.country), func(t *testing.T) {
			ts := addrs("US", 12, 1, 11)
			// The rest of the country, spread over /8s that stay small.
			for i := range tc.country - 11 {
				ts = append(ts, tg(fmt.Sprintf("%d.0.0.1", 100+i), "US"))
			}
			cs := live(newPlanner(t, ts, Paper(), 1).Clusters())
			if _, ok := cs["US 12.0.0.0/8"]; ok != tc.want {
				t.Fatalf("/8 cluster made = %v, want %v (11 of %d)", ok, tc.want, tc.country)
			}
		})
	}
}

// TestAlgorithm1_Slash8PerCountry checks that the /8 rule counts within a
// country: a /8 shared by two countries is two clusters (or none).
func TestAlgorithm1_Slash8PerCountry(t *testing.T) {
	ts := append(addrs("FR", 62, 1, 12), addrs("NL", 62, 2, 12)...)
	ts = append(ts, addrs("FR", 91, 1, 3)...)
	ts = append(ts, tg("1.2.3.4", ""), tg("1.2.3.5", ""))
	cs := live(newPlanner(t, ts, Paper(), 1).Clusters())
	want := []string{"--", "FR", "FR 62.0.0.0/8", "NL 62.0.0.0/8"}
	if got := ids(cs); !slices.Equal(got, want) {
		t.Errorf("clusters %v, want %v", got, want)
	}
}

func ids(cs map[string]ClusterInfo) []string {
	var out []string
	for id := range cs {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

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

// TestAlgorithm1_RankAndMasterOrder checks steps 5 and 6: clusters by
// ascending RTT, servers in master order within a cluster, calibration
// probes not repeated, every server once.
func TestAlgorithm1_RankAndMasterOrder(t *testing.T) {
	rtts := map[string]time.Duration{"US": ms(180), "AU": ms(20), "JP": ms(120), "DE": ms(300)}
	var ts []Target
	// Interleaved in master order, each country in its own /16s.
	for i := range 40 {
		for j, cc := range []string{"US", "AU", "JP", "DE"} {
			ts = append(ts, tg(fmt.Sprintf("%d.%d.0.%d", 50+j, i%5, i+1), cc))
		}
	}
	pl := newPlanner(t, ts, Paper(), 9)
	ps := drive(t, pl, byCountry(rtts))
	if len(ps) != len(ts) {
		t.Fatalf("%d probes, want %d", len(ps), len(ts))
	}
	seen := make(map[netip.AddrPort]bool)
	for _, p := range ps {
		if seen[p.t.Addr] {
			t.Fatalf("%v probed twice", p.t.Addr)
		}
		seen[p.t.Addr] = true
	}
	re := phases(ps, Reordered)
	if want := len(ts) - 4*7; len(re) != want { // Nsample = ceil(sqrt(40)) = 7
		t.Fatalf("%d step-6 probes, want %d", len(re), want)
	}
	order := []string{"AU", "JP", "US", "DE"}
	k := 0
	last := -1
	for _, p := range re {
		for p.t.Country != order[k] {
			k++
			last = -1
			if k == len(order) {
				t.Fatalf("%v (%s) out of rank order", p.t.Addr, p.t.Country)
			}
		}
		if p.t.Index <= last {
			t.Fatalf("%v: master index %d after %d within %s", p.t.Addr, p.t.Index, last, p.t.Country)
		}
		last = p.t.Index
	}
	for _, c := range pl.Clusters() {
		if want := slices.Index(order, c.Group) + 1; c.Rank != want {
			t.Errorf("%s rank %d, want %d", c.ID, c.Rank, want)
		}
	}
}

// TestAlgorithm1_RankTies checks that equal RTTs rank by the master position
// of each cluster's first server, and that a cluster none of whose samples
// answered ranks last.
func TestAlgorithm1_RankTies(t *testing.T) {
	ts := []Target{
		tg("1.1.0.1", "SE"), tg("2.1.0.1", "DK"), tg("3.1.0.1", "NO"), tg("4.1.0.1", "FI"),
		tg("1.1.0.2", "SE"), tg("2.1.0.2", "DK"), tg("3.1.0.2", "NO"), tg("4.1.0.2", "FI"),
	}
	world := byCountry(map[string]time.Duration{"SE": ms(30), "DK": ms(20), "FI": ms(20)}) // NO never answers
	pl := newPlanner(t, ts, Paper(), 1)
	drive(t, pl, world)
	got := make([]string, 4)
	for _, c := range pl.Clusters() {
		got[c.Rank-1] = c.ID
	}
	if want := []string{"DK", "FI", "SE", "NO"}; !slices.Equal(got, want) {
		t.Errorf("rank order %v, want %v", got, want)
	}
}

// TestAlgorithm1_CalibrationWaits checks that step 6 waits for every
// calibration and split outcome, and that outcomes may arrive in any order.
func TestAlgorithm1_CalibrationWaits(t *testing.T) {
	ts := append(addrs("AU", 1, 1, 30), addrs("US", 2, 1, 30)...)
	pl := newPlanner(t, ts, Paper(), 1)
	var out []Target
	for {
		tg, ph, ok := pl.Next()
		if !ok {
			if ph != Waiting {
				t.Fatalf("phase %v, want Waiting", ph)
			}
			break
		}
		if ph != Calibrate {
			t.Fatalf("phase %v before calibration is done", ph)
		}
		out = append(out, tg)
	}
	if len(out) != 12 || pl.Calibrated() {
		t.Fatalf("%d calibration probes (want 12), calibrated %v", len(out), pl.Calibrated())
	}
	if !slices.IsSortedFunc(out, func(a, b Target) int { return a.Index - b.Index }) {
		t.Errorf("calibration probes not in master order")
	}
	for i := len(out) - 1; i > 0; i-- {
		if err := pl.Observe(out[i].Addr, ms(10), true); err != nil {
			t.Fatal(err)
		}
		if _, ph, ok := pl.Next(); ok || ph != Waiting {
			t.Fatalf("with %d outstanding: Next = %v, %v", i, ph, ok)
		}
	}
	if err := pl.Observe(out[0].Addr, ms(10), false); err != nil {
		t.Fatal(err)
	}
	if _, ph, ok := pl.Next(); !ok || ph != Reordered || !pl.Calibrated() {
		t.Fatalf("after calibration: Next = %v, %v", ph, ok)
	}
}

// TestObserve_Refusals checks the outcomes Observe refuses.
func TestObserve_Refusals(t *testing.T) {
	ts := addrs("AU", 1, 1, 4)
	pl := newPlanner(t, ts, Paper(), 1)
	first, _, _ := pl.Next()
	if err := pl.Observe(ap("9.9.9.9"), ms(1), true); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown address: %v", err)
	}
	var notSent Target
	for _, x := range ts {
		if x.Addr != first.Addr {
			notSent = x
		}
	}
	if err := pl.Observe(notSent.Addr, ms(1), true); !errors.Is(err, ErrNotSent) {
		t.Errorf("not handed out: %v", err)
	}
	mapped := netip.AddrPortFrom(netip.AddrFrom16(first.Addr.Addr().As16()), first.Addr.Port())
	if err := pl.Observe(mapped, ms(1), true); err != nil {
		t.Errorf("IPv4-mapped form of a handed-out address: %v", err)
	}
	if err := pl.Observe(first.Addr, ms(1), true); !errors.Is(err, ErrNotSent) {
		t.Errorf("observed twice: %v", err)
	}
	if s := pl.Stats(); s.Refused != 3 || s.Observed != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestNew_Refusals checks what New refuses, and that duplicates are dropped.
func TestNew_Refusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	if _, err := New([]Target{{Country: "AU"}}, Paper(), rng); !errors.Is(err, ErrTarget) {
		t.Errorf("zero address: %v", err)
	}
	if _, err := New(nil, Paper(), nil); !errors.Is(err, ErrParams) {
		t.Errorf("nil rng: %v", err)
	}
	for name, edit := range map[string]func(*Params){
		"Window 0":          func(p *Params) { p.Window = 0 },
		"SampleScale 0":     func(p *Params) { p.SampleScale = 0 },
		"Fine4 = Coarse4":   func(p *Params) { p.Fine4 = 8 },
		"Fine6 129":         func(p *Params) { p.Fine6 = 129 },
		"SplitLow > High":   func(p *Params) { p.SplitLow = 0.9 },
		"StopPercentile 0":  func(p *Params) { p.StopPercentile = 0 },
		"Slash8Share 1.5":   func(p *Params) { p.Slash8Share = 1.5 },
		"StopRun 0":         func(p *Params) { p.Stop, p.StopRun = StopRun, 0 },
		"StopAgree 0":       func(p *Params) { p.Stop, p.StopAgree = StopEstimate, 0 },
		"ClusterBy unknown": func(p *Params) { p.ClusterBy = 9 },
	} {
		p := Paper()
		edit(&p)
		if _, err := New(nil, p, rng); !errors.Is(err, ErrParams) {
			t.Errorf("%s: %v", name, err)
		}
	}
	p := Paper()
	p.StopRTT, p.Window = 0, 0 // auto-stop off: Window unused
	if _, err := New(nil, p, rng); err != nil {
		t.Errorf("auto-stop off with Window 0: %v", err)
	}
	ts := []Target{tg("1.1.1.1", "AU"), tg("2.2.2.2", "AU"), tg("1.1.1.1", "NZ"),
		{Addr: netip.MustParseAddrPort("[::ffff:2.2.2.2]:27960"), Country: "AU"}}
	pl := newPlanner(t, ts, Paper(), 1)
	ps := drive(t, pl, byCountry(map[string]time.Duration{"AU": ms(5)}))
	if len(ps) != 2 || pl.Stats().Duplicates != 2 || ps[0].t.Index != 0 || ps[1].t.Index != 1 {
		t.Errorf("duplicates: %d probes %+v, stats %+v", len(ps), ps, pl.Stats())
	}
}

// TestPlanner_Empty checks that an empty list is done at once.
func TestPlanner_Empty(t *testing.T) {
	pl := newPlanner(t, nil, Paper(), 1)
	if _, ph, ok := pl.Next(); ok || ph != Done || !pl.Calibrated() {
		t.Errorf("Next = %v, %v", ph, ok)
	}
}

// TestPlanner_IPv6 checks that IPv6 servers use /32 and /48 and never share
// a prefix with IPv4 ones.
func TestPlanner_IPv6(t *testing.T) {
	var ts []Target
	for i := range 12 {
		ts = append(ts, Target{Addr: netip.MustParseAddrPort(fmt.Sprintf("[2001:4860:%x::1]:27960", i%3)), Country: "US"})
		ts[len(ts)-1].Addr = netip.AddrPortFrom(ts[len(ts)-1].Addr.Addr(), uint16(1000+i))
	}
	ts = append(ts, addrs("US", 32, 1, 3)...)
	pl := newPlanner(t, ts, Paper(), 1)
	cs := live(pl.Clusters())
	if got := ids(cs); !slices.Equal(got, []string{"US", "US 2001:4860::/32"}) {
		t.Fatalf("clusters %v", got)
	}
	cal := phases(drive(t, pl, byCountry(map[string]time.Duration{"US": ms(90)})), Calibrate)
	per := make(map[netip.Prefix]int)
	for _, p := range cal {
		if p.t.Addr.Addr().Is6() {
			pfx, _ := p.t.Addr.Addr().Prefix(48)
			per[pfx]++
		}
	}
	if len(per) != 3 { // Nsample = ceil(sqrt(12)) = 4 over three /48s
		t.Errorf("IPv6 samples by /48: %v", per)
	}
}

// TestPlanner_Deterministic checks that a seed and a sequence of outcomes
// give one plan, and that the seed matters.
func TestPlanner_Deterministic(t *testing.T) {
	w := randomWorld(rand.New(rand.NewPCG(5, 5)), 2000)
	run := func(seed uint64) []netip.AddrPort {
		pl := newPlanner(t, w.targets, Paper(), seed)
		var out []netip.AddrPort
		for _, p := range drive(t, pl, w.truth) {
			out = append(out, p.t.Addr)
		}
		return out
	}
	a, b, c := run(1), run(1), run(2)
	if !slices.Equal(a, b) {
		t.Error("same seed, different plans")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds, same plan")
	}
}

// TestByAS checks the AS groupings of section 5.2 and their fallback to the
// country for servers without an AS.
func TestByAS(t *testing.T) {
	ts := []Target{
		{Addr: ap("5.1.0.1"), Country: "DE", ASN: 16276},
		{Addr: ap("5.2.0.1"), Country: "FR", ASN: 16276},
		{Addr: ap("6.1.0.1"), Country: "DE", ASN: 24940},
		{Addr: ap("7.1.0.1"), Country: "DE"},
	}
	for _, tc := range []struct {
		key  Key
		want []string
	}{
		{ByCountry, []string{"DE", "FR"}},
		{ByAS, []string{"AS16276", "AS24940", "DE"}},
		{ByCountryAS, []string{"DE", "DE AS16276", "DE AS24940", "FR AS16276"}},
	} {
		p := Paper()
		p.ClusterBy = tc.key
		if got := ids(live(newPlanner(t, ts, p, 1).Clusters())); !slices.Equal(got, tc.want) {
			t.Errorf("%v: clusters %v, want %v", tc.key, got, tc.want)
		}
	}
}

// TestRerank checks that with Rerank a cluster whose step-6 RTTs come in
// far above its estimate yields to the next cluster, and that without it
// the paper's order holds.
func TestRerank(t *testing.T) {
	// GB's samples say 50 ms but the rest of GB is at 400 ms; IE is 100 ms.
	ts := append(addrs("GB", 81, 1, 100), addrs("IE", 82, 1, 100)...)
	for _, rerank := range []bool{false, true} {
		p := Paper()
		p.Rerank, p.StopRTT = rerank, 0
		pl := newPlanner(t, ts, p, 1)
		calibrated := false
		world := func(t Target) (time.Duration, bool) {
			switch {
			case t.Country == "IE":
				return ms(100), true
			case !calibrated:
				return ms(50), true
			}
			return ms(400), true
		}
		var re []probe
		for _, pr := range drive(t, pl, func(t Target) (time.Duration, bool) {
			calibrated = pl.Calibrated()
			return world(t)
		}) {
			if pr.ph == Reordered {
				re = append(re, pr)
			}
		}
		// GB's first step-6 probes come first either way; with Rerank, IE
		// follows as soon as GB's running median passes 100 ms.
		firstIE := slices.IndexFunc(re, func(p probe) bool { return p.t.Country == "IE" })
		if rerank && firstIE > 15 {
			t.Errorf("rerank: first IE probe at step-6 position %d, want within 15", firstIE)
		}
		if !rerank && firstIE != 90 {
			t.Errorf("paper: first IE probe at step-6 position %d, want 90 (after all of GB)", firstIE)
		}
	}
}

// TestMedian checks the running median against medianOf.
func TestMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var m median
	var all []time.Duration
	for range 500 {
		v := time.Duration(rng.IntN(1000))
		m.push(v)
		all = append(all, v)
		sorted := slices.Sorted(slices.Values(all))
		if got, want := m.value(), medianOf(sorted); got != want {
			t.Fatalf("after %d values: %v, want %v", len(all), got, want)
		}
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
