package adaptive

import (
	"container/heap"
	"slices"
	"time"
)

// nearest returns the first cluster in step 6's order that has a server not
// yet handed out, or -1; it drops finished clusters from the order.
func (pl *Planner) nearest() int32 {
	for len(pl.order) > 0 {
		c := &pl.cl[pl.order[0]]
		for c.cursor < len(c.members) && pl.slots[c.members[c.cursor]].status != unprobed {
			c.cursor++ // calibration probes are not repeated
		}
		if c.cursor < len(c.members) {
			return pl.order[0]
		}
		heap.Pop(clusterOrder{pl})
	}
	return -1
}

// less is step 5's order: estimated clusters first, by ascending RTT, then by
// the master position of the first server.
func (pl *Planner) less(a, b int32) bool {
	ca, cb := &pl.cl[a], &pl.cl[b]
	if ca.known != cb.known {
		return ca.known
	}
	if ca.known && ca.est != cb.est {
		return ca.est < cb.est
	}
	return ca.members[0] < cb.members[0]
}

// rank is step 5.
func (pl *Planner) rank() {
	pl.ranked = true
	pl.order = pl.order[:0]
	for c := range pl.cl {
		cl := &pl.cl[c]
		if cl.dissolved {
			continue
		}
		cl.est = cl.rtt
		if pl.p.Rerank {
			cl.med = &median{}
			for _, r := range pl.answeredRTTs(cl.samples) {
				cl.med.push(r)
			}
		}
		pl.order = append(pl.order, int32(c))
	}
	slices.SortFunc(pl.order, func(a, b int32) int {
		if pl.less(a, b) {
			return -1
		}
		return 1 // clusters are distinct, and so are their first servers
	})
	for i, c := range pl.order {
		pl.cl[c].rank = i + 1
		pl.cl[c].heapAt = i // a sorted slice is a heap
	}
}

// rerank folds a step-6 RTT into cluster c's estimate and restores the heap.
func (pl *Planner) rerank(c int32, rtt time.Duration) {
	cl := &pl.cl[c]
	cl.med.push(rtt)
	cl.est, cl.known = cl.med.value(), true
	if cl.heapAt >= 0 {
		heap.Fix(clusterOrder{pl}, cl.heapAt)
	}
}

// clusterOrder is Planner.order as a container/heap: the unfinished
// clusters by Planner.less, each keeping its position in heapAt.
type clusterOrder struct{ pl *Planner }

func (h clusterOrder) Len() int           { return len(h.pl.order) }
func (h clusterOrder) Less(i, j int) bool { return h.pl.less(h.pl.order[i], h.pl.order[j]) }
func (h clusterOrder) Swap(i, j int) {
	o := h.pl.order
	o[i], o[j] = o[j], o[i]
	h.pl.cl[o[i]].heapAt = i
	h.pl.cl[o[j]].heapAt = j
}

func (h clusterOrder) Push(x any) {
	c := x.(int32)
	h.pl.cl[c].heapAt = len(h.pl.order)
	h.pl.order = append(h.pl.order, c)
}

func (h clusterOrder) Pop() any {
	n := len(h.pl.order) - 1
	c := h.pl.order[n]
	h.pl.cl[c].heapAt = -1
	h.pl.order = h.pl.order[:n]
	return c
}

// blocking is BoundFirst: when c, the next cluster in step 6's order, is
// estimated at StopRTT or more, the cluster with servers not yet handed out
// whose lower bound is lowest and under StopRTT + StopMargin (the bound rule
// waits for it), if there is one and it is not c; else -1. Its cursor is
// moved past servers already handed out.
func (pl *Planner) blocking(c int32) int32 {
	if !pl.p.BoundFirst || pl.p.Stop != StopBound || !pl.cl[c].known || pl.cl[c].est < pl.p.StopRTT {
		return -1
	}
	best, low := int32(-1), pl.p.StopRTT+pl.p.StopMargin
	for i := range pl.cl {
		cl := &pl.cl[i]
		if cl.dissolved || !cl.lowOK || cl.low >= low || cl.probed >= len(cl.members) {
			continue
		}
		for cl.cursor < len(cl.members) && pl.slots[cl.members[cl.cursor]].status != unprobed {
			cl.cursor++
		}
		if cl.cursor < len(cl.members) {
			best, low = int32(i), cl.low
		}
	}
	if best == c {
		return -1
	}
	return best
}
