package evaluate

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/scout-discovery/scout/lab/mesh"
)

// Stability is what WonderProxy's two days say about how well a path's
// least RTT repeats, the assumption the client's memory rests on. The file
// holds one summary per ordered pair, not a time series, so it cannot say
// how a path's RTT moves from hour to hour; it can say how far apart two
// independent series of the same path are: node i pinging j and node j
// pinging i take the same two one-way paths (other flows, other minutes).
type Stability struct {
	Pairs int // pairs measured both ways
	// Both are the quantiles (Quantiles) of |min_ij - min_ji| (ms) over
	// every pair, and over the pairs of neither of the Worst nodes.
	Both, BothBest []float64
	// Over5, Over20 are the shares of pairs whose two least RTTs differ by
	// more than 5 and 20 ms; Best* the same without the Worst nodes.
	Over5, Over20, BestOver5, BestOver20 float64
	// Worst are the nodes in the most pairs differing by more than 20 ms,
	// with that count, most first.
	Worst []NodeCount
	// Spread and Range are the quantiles of avg - min and max - min within
	// the summarised hour (30 pings), over every ordered pair.
	Spread, Range []float64
}

// NodeCount is a node and a count.
type NodeCount struct {
	Name  string
	Pairs int
}

// Quantiles are the quantiles Stability reports.
var Quantiles = []float64{0.5, 0.9, 0.99, 0.999}

// WorstNodes is how many nodes scout-lab landmarks --stability sets apart.
const WorstNodes = 10

// PathStability computes Stability from d, setting apart the worst nodes.
func PathStability(d *mesh.Directions, worstNodes int) Stability {
	n := len(d.Cities)
	var s Stability
	var both []float64
	bad := make([]int, n)
	type pair struct {
		i, j int
		diff float64
	}
	var pairs []pair
	for i := range n {
		for j := i + 1; j < n; j++ {
			a, b := d.Min[i*n+j], d.Min[j*n+i]
			if math.IsNaN(a) || math.IsNaN(b) {
				continue
			}
			x := math.Abs(a - b)
			both = append(both, x)
			pairs = append(pairs, pair{i, j, x})
			if x > 20 {
				bad[i]++
				bad[j]++
			}
		}
	}
	s.Pairs = len(both)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(bad[b], bad[a]) })
	worst := map[int]bool{}
	for _, i := range order[:min(worstNodes, n)] {
		worst[i] = true
		s.Worst = append(s.Worst, NodeCount{d.Cities[i].Name, bad[i]})
	}
	var best []float64
	for _, p := range pairs {
		if !worst[p.i] && !worst[p.j] {
			best = append(best, p.diff)
		}
	}
	share := func(xs []float64, over float64) float64 {
		k := 0
		for _, x := range xs {
			if x > over {
				k++
			}
		}
		return float64(k) / float64(max(len(xs), 1))
	}
	s.Over5, s.Over20, s.BestOver5, s.BestOver20 = share(both, 5), share(both, 20), share(best, 5), share(best, 20)
	var spread, rng []float64
	for k := range d.Min {
		if !math.IsNaN(d.Min[k]) && !math.IsNaN(d.Avg[k]) && !math.IsNaN(d.Max[k]) && k/n != k%n {
			spread = append(spread, d.Avg[k]-d.Min[k])
			rng = append(rng, d.Max[k]-d.Min[k])
		}
	}
	for _, q := range Quantiles {
		s.Both = append(s.Both, quantile(both, q))
		s.BothBest = append(s.BothBest, quantile(best, q))
		s.Spread = append(s.Spread, quantile(spread, q))
		s.Range = append(s.Range, quantile(rng, q))
	}
	return s
}

// PrintStability prints s.
func PrintStability(w io.Writer, s Stability) {
	qs := func(xs []float64) string {
		out := ""
		for i, q := range Quantiles {
			out += fmt.Sprintf(" p%g %.2f", 100*q, xs[i])
		}
		return out
	}
	fmt.Fprintf(w, "WonderProxy, %d pairs pinged both ways: |least RTT one way - the other| ms:%s; over 5 ms %.1f%%, over 20 ms %.1f%%\n", s.Pairs, qs(s.Both), 100*s.Over5, 100*s.Over20)
	fmt.Fprintf(w, "  without the %d nodes in most pairs over 20 ms:%s; over 5 ms %.2f%%, over 20 ms %.2f%%\n", len(s.Worst), qs(s.BothBest), 100*s.BestOver5, 100*s.BestOver20)
	fmt.Fprint(w, "  those nodes (pairs over 20 ms):")
	for _, c := range s.Worst {
		fmt.Fprintf(w, " %s %d", c.Name, c.Pairs)
	}
	fmt.Fprintf(w, "\nWithin the summarised hour (30 pings): avg - min ms:%s; max - min ms:%s\n", qs(s.Spread), qs(s.Range))
}
