package rttplot

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// NoReply is the RTT of a [Point] whose percentile fell on a probe that got no
// reply: Algorithm 2 counts such a probe as an RTT above every playable one.
// The chart draws it on the top edge.
const NoReply = time.Duration(math.MaxInt64)

// Point is one value of a running statistic over time.
type Point struct {
	At  time.Duration // since the start of discovery, like Probe.At
	RTT time.Duration // NoReply when the statistic fell on an unanswered probe
}

// Bottom computes Algorithm 2's RTTbottom over probes: once window step-6
// probes are in, after each further one, the percentile RTT of the last
// window of them. It returns one Point per step-6 probe from the window-th
// on, at that probe's At, and nil when there are fewer than window of them.
//
// Only [Reordered] and [Conventional] probes count: Algorithm 2 looks at the
// probes of Algorithm 1's step 6, which are the re-ordered ones; a
// conventional sequence is all step 6 in master order, so the same rule can
// be drawn over it. [Calibrate] and [Split] probes are skipped. Probes are
// taken in slice order, which should be the order in which the producer
// learned their outcomes (the order the auto-stop rule saw them).
//
// The percentile is by nearest rank: the ceil(percentile*window)-th smallest
// RTT in the window, always a measured value, never an interpolation. With
// the paper's window = 100 and percentile = 0.02 that is the 2nd smallest, so
// RTTbottom >= 200 ms exactly when 99 of the last 100 probes took 200 ms or
// more or got no reply. An unanswered probe counts as [NoReply].
//
// Bottom panics if window < 1 or percentile is not in (0, 1], as
// strings.Repeat does on a negative count: they are the caller's constants.
func Bottom(probes []Probe, window int, percentile float64) []Point {
	if window < 1 || !(percentile > 0 && percentile <= 1) {
		panic(fmt.Sprintf("rttplot: Bottom(window %d, percentile %v): want window >= 1 and 0 < percentile <= 1", window, percentile))
	}
	k := rank(percentile, window)
	steps := 0
	for _, p := range probes {
		if p.Phase.stepSix() {
			steps++
		}
	}
	if steps < window {
		return nil
	}
	out := make([]Point, 0, steps-window+1)
	ring := make([]time.Duration, window)      // the window in arrival order
	sorted := make([]time.Duration, 0, window) // the same values, ascending
	n := 0
	for _, p := range probes {
		if !p.Phase.stepSix() {
			continue
		}
		rtt := p.RTT
		if !p.Answered {
			rtt = NoReply
		}
		slot := n % window
		if n >= window {
			i, _ := slices.BinarySearch(sorted, ring[slot])
			sorted = slices.Delete(sorted, i, i+1)
		}
		ring[slot] = rtt
		i, _ := slices.BinarySearch(sorted, rtt)
		sorted = slices.Insert(sorted, i, rtt)
		n++
		if n >= window {
			out = append(out, Point{At: p.At, RTT: sorted[k-1]})
		}
	}
	return out
}

// rank is the nearest-rank position (1-based) of the p-th quantile of n
// samples: ceil(p*n), within [1, n]. The tolerance absorbs the float error
// of p*n (0.07*100 is 7.000000000000001 in float64, and must give 7).
func rank(p float64, n int) int {
	k := int(math.Ceil(p*float64(n) - 1e-9))
	return min(max(k, 1), n)
}
