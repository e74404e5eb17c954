package adaptive

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// outcome is a step-6 outcome in a scripted run.
type outcome struct {
	rtt      time.Duration
	answered bool
}

// script runs a planner over one cluster of 300 servers in one /16 (18
// calibration probes at 10 ms, no split), giving the i-th step-6 probe the
// outcome step6(i), and returns after how many step-6 outcomes auto-stop
// fired (0 if never) and the StopInfo.
func script(t *testing.T, p Params, step6 func(i int) outcome) (int, StopInfo) {
	t.Helper()
	pl := newPlanner(t, addrs("AU", 1, 1, 300), p, 1)
	n := 0
	for {
		tgt, ph, ok := pl.Next()
		if !ok {
			if ph != Done {
				t.Fatalf("phase %v", ph)
			}
			stopped, info := pl.Stopped()
			if !stopped {
				return 0, info
			}
			return n, info
		}
		o := outcome{ms(10), true}
		if ph == Reordered {
			o = step6(n)
			n++
		}
		if err := pl.Observe(tgt.Addr, o.rtt, o.answered); err != nil {
			t.Fatal(err)
		}
		if stopped, info := pl.Stopped(); stopped {
			if _, ph, ok := pl.Next(); ok || ph != Done {
				t.Fatalf("after auto-stop Next = %v, %v", ph, ok)
			}
			return n, info
		}
	}
}

// lowThenHigh gives the first `low` step-6 probes 100 ms, the rest `high`.
func lowThenHigh(low int, high outcome) func(int) outcome {
	return func(i int) outcome {
		if i < low {
			return outcome{ms(100), true}
		}
		return high
	}
}

// TestAlgorithm2_FiresAt2ndPercentile checks that auto-stop fires after the
// step-6 outcome that makes the 2nd smallest of the last 100 reach 200 ms,
// and not one outcome earlier. With 150 low outcomes (0..149), the window
// ending at outcome n-1 holds outcomes n-100..n-1; it holds one low outcome
// first when n = 249.
func TestAlgorithm2_FiresAt2ndPercentile(t *testing.T) {
	for _, tc := range []struct {
		name string
		high outcome
		want int
	}{
		{"250ms", outcome{ms(250), true}, 249},
		{"exactly 200ms", outcome{ms(200), true}, 249},
		{"200ms-1ns never", outcome{ms(200) - 1, true}, 0},
		{"unanswered counts as infinite", outcome{0, false}, 249},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, info := script(t, Paper(), lowThenHigh(150, tc.high))
			if got != tc.want {
				t.Fatalf("stopped after %d step-6 outcomes, want %d", got, tc.want)
			}
			if got == 0 {
				return
			}
			want := tc.high.rtt
			if !tc.high.answered {
				want = NoAnswer
			}
			if info.Reordered != got || info.Bottom != want || info.Rule != StopPaper {
				t.Errorf("info %+v", info)
			}
			if info.Sent != 18+got || info.Unprobed != 300-18-got {
				t.Errorf("sent %d, unprobed %d", info.Sent, info.Unprobed)
			}
		})
	}
}

// TestAlgorithm2_NotBeforeWindow checks "Wait until at least Wautostop
// servers are probed in Algorithm 1's step 6": all step-6 outcomes far, stop
// after exactly the 100th.
func TestAlgorithm2_NotBeforeWindow(t *testing.T) {
	for _, w := range []int{1, 2, 50, 100} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			p := Paper()
			p.Window = w
			got, _ := script(t, p, func(int) outcome { return outcome{ms(400), true} })
			if got != w {
				t.Errorf("stopped after %d, want %d", got, w)
			}
		})
	}
}

// TestAlgorithm2_OneLowInWindow checks that one low outcome in the window
// does not keep probing going (the 2nd smallest is what counts), but two do.
func TestAlgorithm2_OneLowInWindow(t *testing.T) {
	lows := func(at ...int) func(int) outcome {
		return func(i int) outcome {
			for _, a := range at {
				if i == a {
					return outcome{ms(20), true}
				}
			}
			return outcome{ms(300), true}
		}
	}
	if got, _ := script(t, Paper(), lows(50)); got != 100 {
		t.Errorf("one low outcome: stopped after %d, want 100", got)
	}
	// Lows at 10 and 60: the first window with at most one of them is
	// 11..110, complete after 111 outcomes.
	if got, _ := script(t, Paper(), lows(10, 60)); got != 111 {
		t.Errorf("two low outcomes: stopped after %d, want 111", got)
	}
}

// TestAlgorithm2_Off checks that StopRTT 0 never stops and a huge StopRTT
// stops only on lost probes.
func TestAlgorithm2_Off(t *testing.T) {
	p := Paper()
	p.StopRTT = 0
	if got, _ := script(t, p, func(int) outcome { return outcome{0, false} }); got != 0 {
		t.Errorf("StopRTT 0: stopped after %d", got)
	}
	p.StopRTT = time.Duration(math.MaxInt64)
	if got, _ := script(t, p, func(int) outcome { return outcome{time.Hour, true} }); got != 0 {
		t.Errorf("StopRTT max: stopped after %d", got)
	}
}

// TestStopRun checks the "smooth run" rule: the paper's condition must hold
// after StopRun consecutive outcomes.
func TestStopRun(t *testing.T) {
	p := Paper()
	p.Stop, p.StopRun = StopRun, 30
	if got, _ := script(t, p, lowThenHigh(150, outcome{ms(250), true})); got != 249+29 {
		t.Errorf("stopped after %d, want %d", got, 249+29)
	}
	// A window bottom exactly at StopRTT counts (RTTbottom >= RTTstop), as
	// it does for StopPaper; 1 ns under it never does.
	if got, _ := script(t, p, lowThenHigh(150, outcome{ms(200), true})); got != 249+29 {
		t.Errorf("bottom exactly StopRTT: stopped after %d, want %d", got, 249+29)
	}
	if got, _ := script(t, p, lowThenHigh(150, outcome{ms(200) - 1, true})); got != 0 {
		t.Errorf("bottom 1ns under StopRTT: stopped after %d, want never", got)
	}
	// A low outcome inside the run resets it.
	blip := func(i int) outcome {
		if i < 150 || i == 260 || i == 262 {
			return outcome{ms(100), true}
		}
		return outcome{ms(250), true}
	}
	if got, _ := script(t, p, blip); got != 0 {
		t.Errorf("with a low blip: stopped after %d, want never (the run is broken until outcome %d)", got, 362+29)
	}
}

// TestStopEstimate checks the estimate rule: it waits for StopAgree high
// outcomes, and for every remaining cluster to be estimated above StopRTT +
// StopMargin.
func TestStopEstimate(t *testing.T) {
	// NZ is near (30 ms), US is at `us`; 100 servers each, one /16 each.
	for _, tc := range []struct {
		us   time.Duration
		want int // step-6 outcomes before the stop, 0 for never
	}{
		{ms(240), 20},     // NZ's 90 step-6 probes, then 20 US outcomes agree
		{ms(225), 20},     // exactly StopRTT + margin
		{ms(225) - 1, 90}, // just under: the estimate keeps probing going to the end
	} {
		t.Run(tc.us.String(), func(t *testing.T) {
			ts := append(addrs("NZ", 1, 1, 100), addrs("US", 2, 1, 100)...)
			p := Paper()
			p.Stop = StopEstimate
			pl := newPlanner(t, ts, p, 1)
			ps := drive(t, pl, byCountry(map[string]time.Duration{"NZ": ms(30), "US": tc.us}))
			stopped, info := pl.Stopped()
			us := 0
			for _, p := range phases(ps, Reordered) {
				if p.t.Country == "US" {
					us++
				}
			}
			nearest := tc.us
			if tc.want == 90 {
				nearest = NoAnswer // nothing left to estimate
			}
			if !stopped || us != tc.want || info.Nearest != nearest {
				t.Errorf("stopped %v after %d US outcomes (want %d), info %+v", stopped, us, tc.want, info)
			}
		})
	}
}

// TestWindowBottom checks the nearest-rank percentile in the window for the
// insertion path (k <= 8) and the sort path.
func TestWindowBottom(t *testing.T) {
	for _, pct := range []float64{0.02, 0.05, 0.5, 1} {
		p := Paper()
		p.StopPercentile = pct
		var w window
		w.init(p)
		for i := range 250 {
			w.push(time.Duration((i*7919)%1000), i%11 != 0)
		}
		vals := append([]time.Duration(nil), w.buf...)
		sortDur(vals)
		if got, want := w.bottom(), vals[rank(pct, 100)-1]; got != want {
			t.Errorf("pct %v: bottom %v, want %v", pct, got, want)
		}
	}
}

func sortDur(v []time.Duration) {
	for i := range v {
		for j := i + 1; j < len(v); j++ {
			if v[j] < v[i] {
				v[i], v[j] = v[j], v[i]
			}
		}
	}
}

// TestPercentile_NearestRank checks the percentile definition used by step
// 4(e) and Algorithm 2: the ceil(p*n)-th smallest.
func TestPercentile_NearestRank(t *testing.T) {
	s := func(n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = time.Duration(i + 1) // the k-th smallest is k
		}
		return out
	}
	for _, tc := range []struct {
		p    float64
		n    int
		want time.Duration
	}{
		{0.2, 1, 1}, {0.8, 1, 1}, {0.2, 2, 1}, {0.8, 2, 2}, {0.2, 3, 1}, {0.8, 3, 3},
		{0.2, 5, 1}, {0.8, 5, 4}, {0.2, 6, 2}, {0.8, 6, 5}, {0.2, 10, 2}, {0.8, 10, 8},
		{0.2, 11, 3}, {0.8, 11, 9}, {0.02, 100, 2}, {0.02, 50, 1}, {0.02, 51, 2},
		{0.02, 101, 3}, {0.5, 4, 2}, {1, 7, 7},
	} {
		if got := percentile(s(tc.n), tc.p); got != tc.want {
			t.Errorf("P%v of 1..%d = %d, want %d", tc.p*100, tc.n, got, tc.want)
		}
	}
}

// TestWindow_HighIncludesStopRTT checks that StopEstimate's agreeing run
// counts an outcome of exactly StopRTT as high, and a lost probe too.
func TestWindow_HighIncludesStopRTT(t *testing.T) {
	var w window
	w.init(Paper())
	w.push(ms(200), true)
	w.push(0, false)
	if w.high != 2 {
		t.Errorf("high run %d after 200 ms and a lost probe, want 2", w.high)
	}
	w.push(ms(200)-1, true)
	if w.high != 0 {
		t.Errorf("high run %d after 200 ms - 1 ns, want 0", w.high)
	}
}

// TestStopBound checks the bound rule on two countries: it waits for
// StopAgree high outcomes, and for every cluster with servers left to have
// answered nothing under StopRTT + StopMargin.
func TestStopBound(t *testing.T) {
	// NZ is near (30 ms); US is at `us` except one server at `low`.
	for _, tc := range []struct {
		us, low time.Duration
		want    int // US step-6 outcomes before the stop, 0 for never
	}{
		{ms(240), ms(240), 20},     // NZ's 90 step-6 probes, then 20 US outcomes agree
		{ms(205), ms(205), 20},     // exactly StopRTT + margin
		{ms(240), ms(205) - 1, 90}, // one US server under the bound: the US is probed to its end
	} {
		t.Run(fmt.Sprint(tc.us, tc.low), func(t *testing.T) {
			ts := append(addrs("NZ", 1, 1, 100), addrs("US", 2, 1, 100)...)
			p := Scout()
			p.ClusterBy = ByCountry // no ASes here
			p.FarCut = 0
			pl := newPlanner(t, ts, p, 1)
			world := func(x Target) (time.Duration, bool) {
				switch {
				case x.Country == "NZ":
					return ms(30), true
				case x.Addr == ts[100].Addr: // the first US server: a calibration sample or the first US step-6 probe
					return tc.low, true
				}
				return tc.us, true
			}
			ps := drive(t, pl, world)
			stopped, info := pl.Stopped()
			us := 0
			for _, p := range phases(ps, Reordered) {
				if p.t.Country == "US" {
					us++
				}
			}
			if tc.want == 90 {
				if stopped && info.Unprobed > 0 {
					t.Errorf("stopped with %d unprobed under a bound of %v: %+v", info.Unprobed, tc.low, info)
				}
				if us != 90 {
					t.Errorf("%d US step-6 outcomes, want 90", us)
				}
				return
			}
			if !stopped || us != tc.want || info.Nearest != tc.us || info.Rule != StopBound {
				t.Errorf("stopped %v after %d US outcomes (want %d), info %+v", stopped, us, tc.want, info)
			}
		})
	}
}

// TestProperty_StopBound checks, over random worlds and orders of outcomes,
// that StopBound never fires while a cluster with a server not handed out
// or not yet observed has answered under StopRTT + StopMargin (its lower
// bound, computed here from the outcomes alone), nor before StopAgree
// step-6 outcomes in a row were high or lost.
func TestProperty_StopBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	fired := 0
	for i := range 80 {
		w := randomWorld(rng, 50+rng.IntN(1500))
		p := Scout()
		p.ClusterBy = Key(rng.IntN(3))
		p.FarCut = []time.Duration{0, ms(20), ms(50)}[rng.IntN(3)]
		p.StopMargin = ms(float64(rng.IntN(20)))
		p.StopAgree = 1 + rng.IntN(30)
		p.Rerank = rng.IntN(2) == 0
		p.BoundFirst = rng.IntN(2) == 0
		pl := newPlanner(t, w.targets, p, uint64(i))
		type out struct {
			rtt      time.Duration
			answered bool
		}
		seen := map[netip.AddrPort]*out{} // handed out; outcome when observed
		var step6 []out
		var flying []Target
		inflight := 1 + rng.IntN(32)
		for stopped := false; !stopped; {
			for len(flying) < inflight {
				x, _, ok := pl.Next()
				if !ok {
					break
				}
				seen[x.Addr] = nil
				flying = append(flying, x)
			}
			if len(flying) == 0 {
				break
			}
			j := rng.IntN(len(flying))
			x := flying[j]
			flying = append(flying[:j], flying[j+1:]...)
			rtt, ok := w.truth(x)
			ph := pl.slots[pl.index[x.Addr]].phase
			if err := pl.Observe(x.Addr, rtt, ok); err != nil {
				t.Fatal(err)
			}
			seen[x.Addr] = &out{rtt, ok}
			if ph == Reordered {
				step6 = append(step6, out{rtt, ok})
			}
			stopped, _ = pl.Stopped()
		}
		stopped, info := pl.Stopped()
		if !stopped {
			continue
		}
		fired++
		if len(step6) < p.StopAgree {
			t.Fatalf("world %d: stopped after %d step-6 outcomes, want %d or more", i, len(step6), p.StopAgree)
		}
		for _, o := range step6[len(step6)-p.StopAgree:] {
			if o.answered && o.rtt < p.StopRTT {
				t.Fatalf("world %d: stopped with a step-6 outcome of %v among the last %d", i, o.rtt, p.StopAgree)
			}
		}
		// Each live cluster's bound from the outcomes: its members' lowest
		// answered RTT, or for a cluster made by a split with none, its
		// parent's lowest answered calibration sample.
		cs := pl.Clusters()
		for ci, c := range cs {
			if c.Dissolved {
				continue
			}
			open, bound, has := false, time.Duration(0), false
			for _, s := range pl.cl[ci].members {
				o, handed := seen[pl.targets[s].Addr]
				if !handed || o == nil {
					open = true
					continue
				}
				if o.answered && (!has || o.rtt < bound) {
					bound, has = o.rtt, true
				}
			}
			if !has && c.Parent >= 0 {
				for _, s := range cs[c.Parent].Samples {
					if s.Answered && (!has || s.RTT < bound) {
						bound, has = s.RTT, true
					}
				}
			}
			if open && has && bound < p.StopRTT+p.StopMargin {
				t.Fatalf("world %d: stopped (%+v) with cluster %s open at a bound of %v < %v", i, info, c.ID, bound, p.StopRTT+p.StopMargin)
			}
		}
	}
	if fired < 10 {
		t.Errorf("the bound rule fired in %d of 80 worlds: the property was barely tested", fired)
	}
}

// TestFarCut checks FarCut's two rounds: a cluster whose first sample is
// far gets no more samples; a near one, and one whose first sample was
// lost, get the paper's sqrt(N).
func TestFarCut(t *testing.T) {
	var ts []Target
	for b := range 10 { // 100 servers in 10 /16s per country
		ts = append(ts, addrs("NZ", 1, b, 10)...)
		ts = append(ts, addrs("DE", 2, b, 10)...)
		ts = append(ts, addrs("FR", 3, b, 10)...)
	}
	for _, far := range []time.Duration{0, ms(50)} {
		p := Paper()
		p.FarCut = far
		pl := newPlanner(t, ts, p, 3)
		first := true
		world := func(x Target) (time.Duration, bool) {
			switch x.Country {
			case "NZ":
				return ms(30), true
			case "FR":
				if first { // FR's first sample is lost
					first = false
					return 0, false
				}
				return ms(300), true
			}
			return ms(300), true
		}
		drive(t, pl, world)
		want := map[string]int{"NZ": 10, "DE": 10, "FR": 10}
		if far > 0 {
			want["DE"] = 1
		}
		for id, c := range live(pl.Clusters()) {
			if got := len(c.Samples); got != want[c.Group] {
				t.Errorf("FarCut %v: cluster %s has %d samples, want %d", far, id, got, want[c.Group])
			}
		}
	}
}

// TestFarSpread checks that FarSpread rescues a cluster whose one
// first-round sample stands out from its country's: two ASes of NZ, one of
// whose first samples was delayed to 400 ms.
func TestFarSpread(t *testing.T) {
	var ts []Target
	for b := range 10 {
		for _, x := range addrs("NZ", 1, b, 10) {
			x.ASN = 1
			ts = append(ts, x)
		}
		for _, x := range addrs("NZ", 2, b, 10) {
			x.ASN = 2
			ts = append(ts, x)
		}
	}
	for _, spread := range []time.Duration{0, ms(100)} {
		p := Scout()
		p.FarSpread = spread
		pl := newPlanner(t, ts, p, 5)
		delayed := false
		drive(t, pl, func(x Target) (time.Duration, bool) {
			if x.ASN == 2 && !delayed {
				delayed = true
				return ms(400), true
			}
			return ms(30), true
		})
		want := 10
		if spread == 0 {
			want = 1 // far on its one delayed sample
		}
		for id, c := range live(pl.Clusters()) {
			if c.Group == "NZ AS2" && len(c.Samples) != want {
				t.Errorf("FarSpread %v: %s has %d samples, want %d", spread, id, len(c.Samples), want)
			}
		}
	}
}

// TestBoundFirst checks BoundFirst's order: once the next cluster is past
// StopRTT, a cluster the bound rule waits for (one sample at 203 ms, the
// rest at 260 ms) is probed before a nearer-estimated one at 240 ms.
func TestBoundFirst(t *testing.T) {
	ts := append(addrs("NZ", 1, 1, 100), addrs("US", 2, 1, 100)...)
	for b := range 10 {
		ts = append(ts, addrs("CA", 3, b, 10)...)
	}
	world := func(x Target) (time.Duration, bool) {
		switch {
		case x.Country == "NZ":
			return ms(30), true
		case x.Country == "US":
			return ms(240), true
		case x.Addr.Addr().As4()[1] == 0: // CA's 3.0/16
			return ms(203), true
		}
		return ms(260), true
	}
	for _, first := range []bool{false, true} {
		p := Scout()
		p.ClusterBy, p.FarCut, p.BoundFirst = ByCountry, 0, first
		pl := newPlanner(t, ts, p, 2)
		ps := phases(drive(t, pl, world), Reordered)
		var after string // the country probed right after NZ's step-6 probes
		for _, x := range ps {
			if x.t.Country != "NZ" {
				after = x.t.Country
				break
			}
		}
		want := "US"
		if first {
			want = "CA"
		}
		if after != want {
			t.Errorf("BoundFirst %v: %s after NZ, want %s", first, after, want)
		}
	}
}

// TestHoldAhead: with many probes in flight, StopBound's far tail is
// handed out only as far as its agreeing run needs: once every cluster
// left is bounded far, no more than StopAgree step-6 probes are out, and
// the stop fires after about that many US probes instead of the whole of
// the US. Without HoldAhead the same sender hands the US out whole. With
// a US server near, the US is probed to its end either way.
func TestHoldAhead(t *testing.T) {
	ts := append(addrs("NZ", 1, 1, 100), addrs("US", 2, 1, 400)...)
	run := func(hold bool, low time.Duration) (us int, stopped bool) {
		p := Scout()
		p.ClusterBy = ByCountry
		p.FarCut = 0
		p.HoldAhead = hold
		pl := newPlanner(t, ts, p, 1)
		world := func(x Target) (time.Duration, bool) {
			switch {
			case x.Country == "NZ":
				return ms(30), true
			case x.Addr == ts[100].Addr:
				return low, true
			}
			return ms(300), true
		}
		// Everything available out at once, outcomes in the order sent.
		for _, pr := range driveBatched(t, pl, world, nil, len(ts)) {
			if pr.ph == Reordered && pr.t.Country == "US" {
				us++
			}
		}
		stopped, _ = pl.Stopped()
		return us, stopped
	}
	p := Scout()
	us, stopped := run(true, ms(300))
	if !stopped || us > 2*p.StopAgree {
		t.Errorf("held: stopped %v after %d US step-6 probes; want a stop within %d", stopped, us, 2*p.StopAgree)
	}
	if us, _ := run(false, ms(300)); us < 300 {
		t.Errorf("not held: %d US step-6 probes; want the US handed out whole (the test no longer shows what holding saves)", us)
	}
	if us, _ := run(true, ms(150)); us < 380 {
		t.Errorf("held, a US server at 150 ms: %d US step-6 probes, want the US to its end", us)
	}
}
