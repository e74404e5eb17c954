package adaptive

import (
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

// median is a running median: lo is a max-heap of the lower half, hi a
// min-heap of the upper half, len(lo) == len(hi) or len(hi)+1.
type median struct{ lo, hi []time.Duration }

func (m *median) push(v time.Duration) {
	if len(m.lo) == 0 || v <= m.lo[0] {
		heapPush(&m.lo, v, greater)
	} else {
		heapPush(&m.hi, v, lesser)
	}
	switch {
	case len(m.lo) > len(m.hi)+1:
		heapPush(&m.hi, heapPop(&m.lo, greater), lesser)
	case len(m.hi) > len(m.lo):
		heapPush(&m.lo, heapPop(&m.hi, lesser), greater)
	}
}

// value is the median as medianOf defines it; 0 when empty.
func (m *median) value() time.Duration {
	switch {
	case len(m.lo) == 0:
		return 0
	case len(m.lo) > len(m.hi):
		return m.lo[0]
	}
	a, b := m.lo[0], m.hi[0]
	return a + (b-a)/2
}

func lesser(a, b time.Duration) bool  { return a < b }
func greater(a, b time.Duration) bool { return a > b }

func heapPush(h *[]time.Duration, v time.Duration, before func(a, b time.Duration) bool) {
	*h = append(*h, v)
	s := *h
	for i := len(s) - 1; i > 0; {
		up := (i - 1) / 2
		if !before(s[i], s[up]) {
			break
		}
		s[i], s[up] = s[up], s[i]
		i = up
	}
}

func heapPop(h *[]time.Duration, before func(a, b time.Duration) bool) time.Duration {
	s := *h
	top, n := s[0], len(s)-1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		m, l, r := i, 2*i+1, 2*i+2
		if l < n && before(s[l], s[m]) {
			m = l
		}
		if r < n && before(s[r], s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
