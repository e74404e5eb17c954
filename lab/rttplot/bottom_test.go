package rttplot

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

const ms1 = time.Millisecond

func answered(at, rtt time.Duration, ph Phase) Probe {
	return Probe{At: at, RTT: rtt, Answered: true, Phase: ph}
}

func lost(at time.Duration, ph Phase) Probe { return Probe{At: at, Phase: ph} }

// TestBottom_HandTable checks a window of 4 at the 50th percentile (nearest
// rank: ceil(0.5*4) = the 2nd smallest) against values worked out by hand:
// calibration and split probes skipped, conventional ones counted, a lost
// probe counted as NoReply, the first Point on the window-th step-6 probe.
func TestBottom_HandTable(t *testing.T) {
	s := time.Second
	probes := []Probe{
		answered(0*s, 50*ms1, Calibrate), // skipped
		answered(1*s, 40*ms1, Reordered),
		answered(2*s, 30*ms1, Reordered),
		answered(3*s, 10*ms1, Split), // skipped
		answered(4*s, 60*ms1, Reordered),
		lost(5*s, Reordered),                // {40 30 60 ∞}: 2nd smallest 40
		answered(6*s, 20*ms1, Reordered),    // {30 60 ∞ 20}: 30
		answered(7*s, 90*ms1, Reordered),    // {60 ∞ 20 90}: 60
		answered(8*s, 90*ms1, Conventional), // {∞ 20 90 90}: 90
		lost(9*s, Reordered),                // {20 90 90 ∞}: 90
		lost(10*s, Reordered),               // {90 90 ∞ ∞}: 90
		lost(11*s, Reordered),               // {90 ∞ ∞ ∞}: no reply
	}
	want := []Point{
		{5 * s, 40 * ms1},
		{6 * s, 30 * ms1},
		{7 * s, 60 * ms1},
		{8 * s, 90 * ms1},
		{9 * s, 90 * ms1},
		{10 * s, 90 * ms1},
		{11 * s, NoReply},
	}
	got := Bottom(probes, 4, 0.5)
	if !slices.Equal(got, want) {
		t.Errorf("Bottom(window 4, 50%%):\n got %v\nwant %v", got, want)
	}
}

// TestBottom_PaperRank checks Algorithm 2's numbers: with W = 100 and the
// 2nd percentile, RTTbottom is the 2nd smallest of the last 100, so it
// reaches 200 ms exactly when the second-to-last fast probe leaves the
// window, and not one probe earlier.
func TestBottom_PaperRank(t *testing.T) {
	var probes []Probe
	at := func() time.Duration { return time.Duration(len(probes)) * 10 * ms1 }
	probes = append(probes, answered(at(), 50*ms1, Reordered), answered(at(), 60*ms1, Reordered))
	for range 99 {
		probes = append(probes, answered(at(), 250*ms1, Reordered))
	}
	got := Bottom(probes, 100, 0.02)
	// Window 1 holds both fast probes: 60 ms. Window 2 holds only the
	// 60 ms one: the 2nd smallest is 250 ms.
	want := []Point{{990 * ms1, 60 * ms1}, {1000 * ms1, 250 * ms1}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, c := range []struct {
		window int
		pct    float64
		rank   int
	}{
		{100, 0.02, 2},
		{100, 0.07, 7}, // not 8: 0.07*100 is 7.000000000000001 in float64
		{100, 0.29, 29},
		{50, 0.02, 1},
		{10, 0.02, 1},
		{101, 0.02, 3},
		{4, 1, 4},
		{1, 0.5, 1},
	} {
		if r := rank(c.pct, c.window); r != c.rank {
			t.Errorf("rank(%v, %d) = %d, want %d", c.pct, c.window, r, c.rank)
		}
	}
}

// slowBottom is the reference: sort each window afresh.
func slowBottom(probes []Probe, window int, pct float64) []Point {
	var vals []time.Duration
	var out []Point
	for _, p := range probes {
		if p.Phase != Reordered && p.Phase != Conventional {
			continue
		}
		v := p.RTT
		if !p.Answered {
			v = NoReply
		}
		vals = append(vals, v)
		if len(vals) < window {
			continue
		}
		w := slices.Clone(vals[len(vals)-window:])
		slices.Sort(w)
		out = append(out, Point{At: p.At, RTT: w[rank(pct, window)-1]})
	}
	return out
}

func TestBottom_MatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	probes := make([]Probe, 3000)
	for i := range probes {
		ph := Phase(rng.IntN(4))
		rtt := time.Duration(rng.IntN(40)) * 10 * ms1 // many ties
		if rng.IntN(10) == 0 {
			probes[i] = lost(time.Duration(i)*ms1, ph)
		} else {
			probes[i] = answered(time.Duration(i)*ms1, rtt, ph)
		}
	}
	for _, window := range []int{1, 2, 7, 100, 1000} {
		for _, pct := range []float64{0.001, 0.02, 0.2, 0.5, 0.8, 1} {
			got, want := Bottom(probes, window, pct), slowBottom(probes, window, pct)
			if !slices.Equal(got, want) {
				t.Fatalf("window %d, percentile %v: differs from the reference (%d points, want %d)", window, pct, len(got), len(want))
			}
		}
	}
}

func TestBottom_Short(t *testing.T) {
	if got := Bottom(nil, 100, 0.02); got != nil {
		t.Errorf("Bottom(nil) = %v, want nil", got)
	}
	probes := make([]Probe, 99)
	for i := range probes {
		probes[i] = answered(time.Duration(i)*ms1, 300*ms1, Reordered)
	}
	probes = append(probes, answered(time.Second, 300*ms1, Calibrate)) // 100 probes, 99 of step 6
	if got := Bottom(probes, 100, 0.02); got != nil {
		t.Errorf("99 step-6 probes, window 100: got %v, want nil", got)
	}
	if got := Bottom(probes[:1], 1, 0.02); len(got) != 1 || got[0].RTT != 300*ms1 {
		t.Errorf("one probe, window 1: got %v", got)
	}
}

func TestBottom_BadArguments(t *testing.T) {
	for _, c := range []struct {
		window int
		pct    float64
	}{{0, 0.02}, {-1, 0.02}, {100, 0}, {100, -0.1}, {100, 1.01}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Bottom(window %d, percentile %v) did not panic", c.window, c.pct)
				}
			}()
			Bottom(nil, c.window, c.pct)
		}()
	}
}

func BenchmarkBottom_50k(b *testing.B) {
	conv, _ := synthetic(1, 50000, time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		Bottom(conv.Probes, 100, 0.02)
	}
}
