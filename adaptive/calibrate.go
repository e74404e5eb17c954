package adaptive

import (
	"math"
	"slices"
	"time"
)

// nsample is step 4(a): ceil(SampleScale*sqrt(n)), within [1, n].
func (pl *Planner) nsample(n int) int {
	k := int(math.Ceil(pl.p.SampleScale*math.Sqrt(float64(n)) - 1e-9))
	return min(max(k, 1), n)
}

// calibrate is step 4(a)-(c) for every cluster: choose the samples and queue
// them in master order.
func (pl *Planner) calibrate() {
	var grouped []int32
	for ci := range pl.cl {
		c := &pl.cl[ci]
		var bounds []int32
		grouped, bounds = pl.byFine(c.members, grouped)
		want := pl.nsample(len(c.members))
		perm := pl.rng.Perm(len(bounds) - 1)
		for round := int32(0); len(c.samples) < want; round++ {
			for _, b := range perm {
				lo, hi := bounds[b]+round, bounds[b+1]
				if lo >= hi {
					continue
				}
				j := lo + pl.rng.Int32N(hi-lo)
				grouped[lo], grouped[j] = grouped[j], grouped[lo]
				c.samples = append(c.samples, grouped[lo])
				if len(c.samples) == want {
					break
				}
			}
		}
		if k := max(pl.p.FarFirst, 1); pl.p.FarCut > 0 && pl.p.StopRTT > 0 && len(c.samples) > k {
			c.later = slices.Clone(c.samples[k:])
			c.samples = c.samples[:k]
		}
		c.pending = int32(len(c.samples))
		pl.queue = append(pl.queue, c.samples...)
	}
	slices.Sort(pl.queue)
	for _, s := range pl.queue {
		pl.slots[s].phase = Calibrate
	}
	pl.pending = len(pl.queue)
	pl.round1 = pl.pending > 0 && pl.p.FarCut > 0 && pl.p.StopRTT > 0
}

// endRound1 ends FarCut's first round, all of whose outcomes are in: every
// cluster whose lowest answered first-round sample is at StopRTT + FarCut or
// more (and, with FarSpread, within FarSpread of the lowest first-round
// sample of each of its members' countries) is far and estimated from those
// samples; every other cluster with samples held back has them queued.
func (pl *Planner) endRound1() {
	cut := pl.p.StopRTT + pl.p.FarCut
	countryLow := map[string]time.Duration{}
	if pl.p.FarSpread > 0 {
		for ci := range pl.cl {
			for _, s := range pl.cl[ci].samples {
				sl := pl.slots[s]
				if !sl.answered {
					continue
				}
				cc := pl.targets[s].Country
				if v, ok := countryLow[cc]; !ok || sl.rtt < v {
					countryLow[cc] = sl.rtt
				}
			}
		}
	}
	n := len(pl.cl) // estimate may append clusters made by splits
	for ci := range n {
		cl := &pl.cl[ci]
		if len(cl.later) == 0 {
			pl.estimate(int32(ci))
			continue
		}
		rtts := pl.answeredRTTs(cl.samples)
		far := len(rtts) > 0 && rtts[0] >= cut
		if far && pl.p.FarSpread > 0 {
			for _, s := range cl.members {
				if v, ok := countryLow[pl.targets[s].Country]; ok && rtts[0]-v > pl.p.FarSpread {
					far = false
					break
				}
			}
		}
		later := cl.later
		cl.later = nil
		if far {
			cl.far = true
			pl.estimate(int32(ci))
			continue
		}
		for _, s := range later {
			pl.slots[s].phase = Calibrate
		}
		cl.samples = append(cl.samples, later...)
		cl.pending += int32(len(later))
		pl.queue = append(pl.queue, later...)
		pl.pending += len(later)
	}
}

func (pl *Planner) calibrationDone() {
	if pl.pending--; pl.pending > 0 {
		return
	}
	if pl.round1 {
		pl.round1 = false
		pl.endRound1()
	}
	if pl.pending == 0 {
		pl.rank()
	}
}

// answeredRTTs returns the sorted RTTs of the answered slots among ss.
func (pl *Planner) answeredRTTs(ss []int32) []time.Duration {
	var rtts []time.Duration
	for _, s := range ss {
		if sl := pl.slots[s]; sl.status == observed && sl.answered {
			rtts = append(rtts, sl.rtt)
		}
	}
	slices.Sort(rtts)
	return rtts
}

// estimate is steps 4(d) and 4(e) for cluster c, all of whose samples are in.
func (pl *Planner) estimate(c int32) {
	rtts := pl.answeredRTTs(pl.cl[c].samples)
	if len(rtts) == 0 {
		return // no estimate: ranked last
	}
	pl.cl[c].rtt, pl.cl[c].known = medianOf(rtts), true
	if pl.cl[c].far {
		return // FarCut: one sample says nothing of the spread
	}
	// Only step 2's clusters get here: a cluster made by a split has one
	// split probe (estimateSplit) and is not split again.
	spread := percentile(rtts, pl.p.SplitHigh) - percentile(rtts, pl.p.SplitLow)
	if spread <= pl.p.SplitSpread {
		return
	}
	grouped, bounds := pl.byFine(pl.cl[c].members, nil)
	if len(bounds)-1 < 2 {
		return // one /16: nothing to split along
	}
	pl.cl[c].dissolved = true
	for b := range len(bounds) - 1 {
		members := grouped[bounds[b]:bounds[b+1]:bounds[b+1]]
		child := int32(len(pl.cl))
		parent := &pl.cl[c]
		pl.cl = append(pl.cl, cluster{
			group:  parent.group,
			prefix: pl.prefix(pl.targets[members[0]].Addr.Addr(), true),
			parent: c, members: members, heapAt: -1,
		})
		fresh := 0
		for _, s := range members {
			pl.slots[s].cluster = child
			switch pl.slots[s].status {
			case unprobed:
				fresh++
			default:
				pl.cl[child].samples = append(pl.cl[child].samples, s)
				pl.cl[child].probed++
				if sl := pl.slots[s]; sl.status == observed && sl.answered {
					pl.lower(child, sl.rtt)
				}
			}
		}
		if fresh == 0 {
			pl.fallback(child)
			continue
		}
		k := pl.rng.IntN(fresh) // step 4(e)iii: one previously unprobed server, at random
		for _, s := range members {
			if pl.slots[s].status != unprobed {
				continue
			}
			if k == 0 {
				pl.slots[s].phase = Split
				pl.cl[child].samples = append(pl.cl[child].samples, s)
				pl.cl[child].pending = 1
				pl.queue = append(pl.queue, s)
				pl.pending++
				break
			}
			k--
		}
	}
}

// lower folds an answered RTT into cluster c's lower bound.
func (pl *Planner) lower(c int32, rtt time.Duration) {
	if cl := &pl.cl[c]; !cl.lowOK || rtt < cl.low {
		cl.low, cl.lowOK = rtt, true
	}
}

// estimateSplit is step 4(e)iii's "The probed RTT becomes RTTcluster".
func (pl *Planner) estimateSplit(c, s int32) {
	if sl := pl.slots[s]; sl.answered {
		pl.cl[c].rtt, pl.cl[c].known = sl.rtt, true
		return
	}
	pl.fallback(c)
}

// fallback estimates a cluster made by a split that has no split probe RTT:
// the median of its own answered calibration samples, else its parent's RTT.
func (pl *Planner) fallback(c int32) {
	cl := &pl.cl[c]
	if rtts := pl.answeredRTTs(cl.samples); len(rtts) > 0 {
		cl.rtt, cl.known = medianOf(rtts), true
		return
	}
	parent := pl.cl[cl.parent]
	cl.rtt, cl.known = parent.rtt, parent.known
	if !cl.lowOK {
		cl.low, cl.lowOK = parent.low, parent.lowOK
	}
}

// medianOf returns the median of sorted, non-empty rtts: the middle one, or
// the mean of the two middle ones.
func medianOf(rtts []time.Duration) time.Duration {
	n := len(rtts)
	if n%2 == 1 {
		return rtts[n/2]
	}
	a, b := rtts[n/2-1], rtts[n/2]
	return a + (b-a)/2
}

// rank returns the nearest-rank position (1-based) of the p-th quantile in n
// samples: ceil(p*n), within [1, n]. The tolerance absorbs the float error of
// p*n (0.02*100 must be 2, not 3).
func rank(p float64, n int) int {
	k := int(math.Ceil(p*float64(n) - 1e-9))
	return min(max(k, 1), n)
}

// percentile is the nearest-rank p-th quantile of sorted, non-empty rtts.
func percentile(rtts []time.Duration, p float64) time.Duration {
	return rtts[rank(p, len(rtts))-1]
}
