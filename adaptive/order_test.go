package adaptive

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

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
