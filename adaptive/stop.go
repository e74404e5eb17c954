package adaptive

import (
	"container/heap"
	"slices"
	"time"
)

// window holds Algorithm 2's last Wautostop step-6 outcomes, lost probes as
// NoAnswer, and the runs the other rules count.
type window struct {
	buf     []time.Duration // ring of the last len(buf) outcomes
	n       int             // step-6 outcomes pushed in all
	pct     float64         // StopPercentile
	stopRTT time.Duration
	scratch []time.Duration
	run     int // consecutive outcomes after which the StopPaper condition held
	high    int // consecutive outcomes at or above StopRTT, or lost
}

func (w *window) init(p Params) {
	if p.StopRTT == 0 {
		return
	}
	w.buf = make([]time.Duration, p.Window)
	w.pct = p.StopPercentile
	w.stopRTT = p.StopRTT
}

func (w *window) push(rtt time.Duration, answered bool) {
	if w.buf == nil {
		return // auto-stop off
	}
	if !answered {
		rtt = NoAnswer
	}
	w.buf[w.n%len(w.buf)] = rtt
	w.n++
	if rtt >= w.stopRTT {
		w.high++
	} else {
		w.high = 0
	}
	if w.full() && w.bottom() >= w.stopRTT {
		w.run++
	} else {
		w.run = 0
	}
}

// full reports whether Wautostop step-6 outcomes are in.
func (w *window) full() bool { return w.buf != nil && w.n >= len(w.buf) }

// bottom is RTTbottom: the nearest-rank StopPercentile of the outcomes in the
// window (all of them once it is full).
func (w *window) bottom() time.Duration {
	if w.buf == nil || w.n == 0 {
		return 0
	}
	vals := w.buf[:min(w.n, len(w.buf))]
	k := rank(w.pct, len(vals))
	if k <= 8 {
		// The k smallest by insertion: the paper's k is 2.
		small := w.scratch[:0]
		for _, v := range vals {
			if len(small) == k && v >= small[k-1] {
				continue
			}
			i, _ := slices.BinarySearch(small, v)
			if len(small) < k {
				small = append(small, 0)
			}
			copy(small[i+1:], small[i:len(small)-1])
			small[i] = v
		}
		w.scratch = small
		return small[k-1]
	}
	w.scratch = append(w.scratch[:0], vals...)
	slices.Sort(w.scratch)
	return w.scratch[k-1]
}

// median is a running median: lo holds the lower half negated and hi the
// upper half, both min-heaps, so that -lo.s[0] is the largest of the lower
// half; len(lo) == len(hi) or len(hi)+1.
type median struct{ lo, hi durations }

func (m *median) push(v time.Duration) {
	if m.lo.Len() == 0 || v <= -m.lo.s[0] {
		m.lo.push(-v)
	} else {
		m.hi.push(v)
	}
	switch {
	case m.lo.Len() > m.hi.Len()+1:
		m.hi.push(-m.lo.pop())
	case m.hi.Len() > m.lo.Len():
		m.lo.push(-m.hi.pop())
	}
}

// value is the median as medianOf defines it; 0 when empty.
func (m *median) value() time.Duration {
	switch {
	case m.lo.Len() == 0:
		return 0
	case m.lo.Len() > m.hi.Len():
		return -m.lo.s[0]
	}
	a, b := -m.lo.s[0], m.hi.s[0]
	return a + (b-a)/2
}

// durations is a min-heap of durations through container/heap. push and
// pop go through heap.Fix and heap.Pop without boxing a value: Push is
// never called, and Pop leaves the value to pop, which reads it before.
type durations struct{ s []time.Duration }

func (h *durations) Len() int           { return len(h.s) }
func (h *durations) Less(i, j int) bool { return h.s[i] < h.s[j] }
func (h *durations) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *durations) Push(x any)         { h.s = append(h.s, x.(time.Duration)) }
func (h *durations) Pop() any           { h.s = h.s[:len(h.s)-1]; return nil }

func (h *durations) push(v time.Duration) {
	h.s = append(h.s, v)
	heap.Fix(h, len(h.s)-1)
}

func (h *durations) pop() time.Duration {
	top := h.s[0]
	heap.Pop(h)
	return top
}

// checkStop runs the auto-stop rule after a step-6 outcome.
func (pl *Planner) checkStop() {
	if pl.p.StopRTT == 0 {
		return
	}
	w := &pl.win
	fire := false
	nearest := NoAnswer
	switch pl.p.Stop {
	case StopPaper:
		fire = w.full() && w.bottom() >= pl.p.StopRTT
	case StopRun:
		fire = w.run >= pl.p.StopRun
	case StopEstimate:
		if w.high >= pl.p.StopAgree {
			if c := pl.nearest(); c >= 0 && pl.cl[c].known {
				nearest = pl.cl[c].est
			}
			fire = nearest >= pl.p.StopRTT+pl.p.StopMargin
		}
	case StopBound:
		if w.high >= pl.p.StopAgree {
			nearest = pl.lowestBound()
			fire = nearest >= pl.p.StopRTT+pl.p.StopMargin
		}
	}
	if !fire {
		return
	}
	pl.stopped = true
	sent := pl.stats.Calibrate + pl.stats.Split + pl.stats.Reordered
	pl.info = StopInfo{
		Rule:      pl.p.Stop,
		Reordered: w.n,
		Sent:      sent,
		Bottom:    w.bottom(),
		Nearest:   nearest,
		Unprobed:  len(pl.targets) - sent,
	}
}

// lowestBound is the lowest lower bound among the clusters with servers not
// yet handed out or whose outcomes are not all in (StopBound); NoAnswer when
// none of them has one.
func (pl *Planner) lowestBound() time.Duration {
	low := NoAnswer
	for i := range pl.cl {
		c := &pl.cl[i]
		if !c.dissolved && c.lowOK && (c.probed < len(c.members) || c.inflight > 0) && c.low < low {
			low = c.low
		}
	}
	return low
}
