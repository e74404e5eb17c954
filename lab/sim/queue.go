package sim

import (
	"container/heap"
	"time"
)

// Event is one scheduled happening in virtual time.
type Event struct {
	At   time.Duration // since the start of the run
	Kind EventKind
	// Probe is the index of the probe in the run's trace (for replies and
	// timeouts).
	Probe int
	seq   uint64
}

// EventKind says what an Event is.
type EventKind uint8

const (
	Send    EventKind = iota // the pacer may send the next probe
	Reply                    // a probe's reply arrives
	Timeout                  // a probe is given up as lost
)

// Queue is a priority queue of events: earliest At first, and among events
// at the same time, the one scheduled first. The zero Queue is empty and
// ready.
type Queue struct {
	h   eventHeap
	seq uint64
}

// Push schedules e.
func (q *Queue) Push(e Event) {
	e.seq = q.seq
	q.seq++
	heap.Push(&q.h, e)
}

// Pop removes and returns the next event; ok is false when the queue is
// empty.
func (q *Queue) Pop() (e Event, ok bool) {
	if len(q.h) == 0 {
		return Event{}, false
	}
	return heap.Pop(&q.h).(Event), true
}

// Len is the number of events scheduled.
func (q *Queue) Len() int { return len(q.h) }

type eventHeap []Event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].At != h[j].At {
		return h[i].At < h[j].At
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(Event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
