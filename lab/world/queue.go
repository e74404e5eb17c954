package world

import (
	"context"
	"math"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// outPacket is a datagram waiting for its due time.
type outPacket struct {
	due  time.Time
	seq  uint64 // push order, to keep equal due times in order
	sock int    // index of the sending server's socket
	to   netip.AddrPort
	b    []byte
	// reply marks a reply to a client, which crosses the client's access
	// link (heartbeats to masters do not); shaped, one that has.
	reply, shaped bool
}

// packetHeap is a binary min-heap by (due, seq), written out rather than
// through container/heap so that pushing does not box each packet.
type packetHeap []outPacket

func (h packetHeap) less(i, j int) bool {
	if c := h[i].due.Compare(h[j].due); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}

func (h *packetHeap) push(p outPacket) {
	*h = append(*h, p)
	a := *h
	for i := len(a) - 1; i > 0; {
		parent := (i - 1) / 2
		if !a.less(i, parent) {
			break
		}
		a[i], a[parent] = a[parent], a[i]
		i = parent
	}
}

func (h *packetHeap) pop() outPacket {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a[last] = outPacket{}
	a = a[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(a) && a.less(l, m) {
			m = l
		}
		if r := l + 1; r < len(a) && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// MaxQueued bounds the datagrams waiting for their due time. At 10,000
// replies a second and a 400 ms delay, 4,000 wait; beyond the bound a
// reply is dropped and counted (Stats.QueueFull), as a router drops on a
// full queue.
const MaxQueued = 1 << 18

// queue is the min-heap of pending datagrams, by due time. mu guards h and
// seq; wake (capacity 1) tells the releaser the head may have changed.
type queue struct {
	mu   sync.Mutex
	h    packetHeap
	seq  uint64
	wake chan struct{}
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

// push adds p; false when the queue is full.
func (q *queue) push(p outPacket) bool {
	q.mu.Lock()
	if len(q.h) >= MaxQueued {
		q.mu.Unlock()
		return false
	}
	q.seq++
	p.seq = q.seq
	q.h.push(p)
	head := q.h[0].seq == p.seq
	q.mu.Unlock()
	if head {
		q.signal()
	}
	return true
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next returns the earliest due time.
func (q *queue) next() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) == 0 {
		return time.Time{}, false
	}
	return q.h[0].due, true
}

// popDue appends to buf every packet due at or before now, in due order.
func (q *queue) popDue(now time.Time, buf []outPacket) []outPacket {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.h) > 0 && !q.h[0].due.After(now) {
		buf = append(buf, q.h.pop())
	}
	return buf
}

// clear drops every pending packet and returns how many.
func (q *queue) clear() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.h)
	q.h = nil
	return n
}

// WaitMode is how the releaser waits for a datagram's due time. Go's
// timers wake up to about a millisecond late (measured on the 2-core CI
// machine: p50 0.55 ms, p99 1.1 ms, and far worse when the thread that runs
// them is descheduled on a loaded machine), too coarse for an RTT accurate
// to 1 ms, so by default the releaser sleeps in the kernel.
type WaitMode uint8

const (
	// WaitSleep: nanosleep(2) in slices of at most SleepSlice, looking at
	// the queue between slices (hrtimer precision: measured p50 80 us,
	// p99 200 us late on an idle machine). Costs no CPU to speak of. A
	// packet that becomes the earliest during a slice waits for the slice
	// to end, so only delays under SleepSlice can be late by it.
	WaitSleep WaitMode = iota
	// WaitSpin: as WaitSleep until SleepSlice before the due time, then
	// yield in a loop reading the clock: microseconds late, but up to one
	// core busy at a thousand replies a second.
	WaitSpin
	// WaitTimer: a Go timer to the due time: up to ~1 ms late, no CPU.
	// The only mode that runs under testing/synctest, where time is fake.
	WaitTimer
)

// SleepSlice bounds one kernel sleep of the releaser (WaitSleep,
// WaitSpin): the releaser looks at its queue at least this often while
// packets are pending.
const SleepSlice = time.Millisecond

// releaser sends each queued datagram at its due time. It is the only
// goroutine that writes to the servers' sockets.
type releaser struct {
	q    *queue
	mode WaitMode
	send func(p outPacket) // does the I/O
	// link, when set, sees every packet at its due time first and
	// reports whether it took it (queued it again for a later time, or
	// dropped it); only packets it leaves are sent, at the due time it
	// leaves them.
	link func(p *outPacket, now time.Time) bool
	late *histogram
	// realTime asks for a SCHED_FIFO thread (see lockRealTime).
	realTime bool
	// draining: once set, the releaser returns when the queue is empty.
	draining atomic.Bool
}

// run releases packets until ctx ends, or until the queue is empty once
// draining is set.
func (r *releaser) run(ctx context.Context) {
	if r.realTime {
		// Never unlocked: the thread exits with this goroutine rather than
		// going back to the runtime's pool with a real-time priority.
		lockRealTime()
	}
	var batch []outPacket
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for ctx.Err() == nil {
		due, ok := r.q.next()
		if !ok {
			if r.draining.Load() {
				return
			}
			select {
			case <-r.q.wake:
			case <-ctx.Done():
				return
			}
			continue
		}
		if d := time.Until(due); d > 0 {
			switch {
			case r.mode == WaitTimer:
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-r.q.wake: // a new head may be earlier
					timer.Stop()
				case <-ctx.Done():
					timer.Stop()
				}
				continue
			case d > SleepSlice:
				sleep(SleepSlice)
				continue
			case r.mode == WaitSpin:
				for time.Now().Before(due) {
					runtime.Gosched()
				}
			default:
				sleep(d) // may wake early (EINTR): popDue below takes nothing then
			}
		}
		batch = r.q.popDue(time.Now(), batch[:0])
		for _, p := range batch {
			now := time.Now()
			if r.link != nil && r.link(&p, now) {
				continue
			}
			r.late.add(now.Sub(p.due))
			r.send(p)
		}
	}
}

// shape decides what the link does to one datagram received (or sent) at
// at: lost, or due at at+RTT+U[0,Jitter). oneWay halves the RTT and jitter
// (heartbeats). rng is owned by the caller's goroutine.
func shape(l Link, rng *rand.Rand, at time.Time, oneWay bool) (due time.Time, lost bool) {
	if !oneWay && l.Loss > 0 && rng.Float64() < l.Loss {
		return time.Time{}, true
	}
	d := time.Duration(l.RTT)
	if l.Jitter > 0 {
		d += time.Duration(rng.Int64N(int64(l.Jitter)))
	}
	if oneWay {
		d /= 2
	}
	return at.Add(d), false
}

// histogram counts durations in HistogramBucket-wide buckets up to
// HistogramMax; the last bucket holds everything longer. Safe for
// concurrent use.
type histogram struct {
	counts [histBuckets + 1]atomic.Uint64
	n      atomic.Uint64
	max    atomic.Int64 // the longest duration added, for the overflow bucket
}

// Lateness histogram resolution and range.
const (
	HistogramBucket = 10 * time.Microsecond
	HistogramMax    = 100 * time.Millisecond
	histBuckets     = int(HistogramMax / HistogramBucket)
)

func (h *histogram) add(d time.Duration) {
	i := int(d / HistogramBucket)
	if d < 0 {
		i = 0
	}
	if i > histBuckets {
		i = histBuckets
	}
	for { // before the counts, so a quantile in the overflow bucket sees it
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			break
		}
	}
	h.counts[i].Add(1)
	h.n.Add(1)
}

// quantile returns the upper edge of the bucket holding quantile q (0..1):
// the true value is at most this, and more than this minus HistogramBucket.
// It returns 0 for an empty histogram and, when q falls in the overflow
// bucket, the longest duration added (the true value is then more than
// HistogramMax and at most that).
func (h *histogram) quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = max(rank, 1)
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			if i == histBuckets {
				return time.Duration(h.max.Load())
			}
			return time.Duration(i+1) * HistogramBucket
		}
	}
	return time.Duration(h.max.Load()) // not reached: counts are added before n
}

// count returns how many durations were added.
func (h *histogram) count() uint64 { return h.n.Load() }
