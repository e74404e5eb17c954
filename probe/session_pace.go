package probe

import (
	"container/heap"
	"net/netip"
	"time"
)

// The paced session's own rules (Prober.Pace): the order of the queue and
// when a send is overdue. Part of the pure core: they take the time and
// what was answered.

// Constants of the paced session.
const (
	// A send to an address whose other servers have answered is overdue
	// after hostRetryFactor times the least RTT they answered in, plus
	// hostRetrySlack, at least hostRetryMin (within the pacer's retry
	// timeout): the servers of one address (one machine: ports 27960,
	// 27961, ...) are at one distance, so a lost reply there is retried
	// after about its own RTT, not the run's largest. The margin covers
	// the queueing on the player's link (a few milliseconds at most with
	// the pacer) and a server that answers a little later than its
	// sibling; a spurious retry costs a probe. (1.5 x + 50 ms, at least
	// 100 ms, before the order of session_order.go made the servers of
	// known RTT most of a run's end.)
	hostRetryFactor = 1.2
	hostRetrySlack  = 20 * time.Millisecond
	hostRetryMin    = 50 * time.Millisecond
)

// host is what a paced session knows of one address: its targets, the
// least RTT any of them answered in (0 until one does) and when the
// first of them was probed (zero until then).
type host struct {
	rtt     time.Duration
	probed  time.Time
	targets []*target
}

// addHost records t under its address.
func (s *session) addHost(t *target) {
	if s.hosts == nil {
		s.hosts = make(map[netip.Addr]*host)
	}
	h := s.hosts[t.addr.Addr()]
	if h == nil {
		h = &host{}
		s.hosts[t.addr.Addr()] = h
	}
	h.targets = append(h.targets, t)
}

// learnHost records that t answered a send in rtt at now, and brings forward the
// deadlines of the sends to the other servers of its address that now
// wait longer than hostWait allows.
func (s *session) learnHost(t *target, rtt time.Duration, now time.Time) {
	h := s.hosts[t.addr.Addr()]
	if h == nil || rtt <= 0 || h.rtt > 0 && h.rtt <= rtt {
		return
	}
	h.rtt = rtt
	for _, u := range h.targets {
		if u == t || u.done {
			continue
		}
		for _, r := range u.reqs {
			if r.park == parkDeferred {
				s.parkKnown(r, rtt) // its entry in deferred is skipped
				continue
			}
			if r.heapIdx < 0 || r.last == nil || r.last.at.IsZero() {
				continue
			}
			if d := r.last.at.Add(s.retryWait(r, now)); d.Before(r.deadline) {
				r.deadline = d
				heap.Fix(&s.waiting, r.heapIdx)
			}
		}
	}
}

// retryWait is how long a send of r written at at waits for its reply
// before r is sent again: the timeout, or paced, for a send that is not
// the request's last, the pacer's retry timeout, and no longer than
// hostWait once another server of its address has answered. Not for A2S:
// its replies carry no token, so a reply to the first send that comes
// after a retry would be timed from the retry.
func (s *session) retryWait(r *request, at time.Time) time.Duration {
	if _, noEcho := r.t.d.(a2sDialect); s.pacer == nil || r.attempts >= s.attempts || noEcho {
		return s.timeout
	}
	w := s.pacer.RetryTimeout(at, s.timeout)
	if h := s.hosts[r.t.addr.Addr()]; h != nil && h.rtt > 0 {
		w = min(w, max(time.Duration(hostRetryFactor*float64(h.rtt))+hostRetrySlack, hostRetryMin))
	}
	return w
}

// rekey brings the deadlines of the sends waiting forward when the
// pacer's retry timeout has fallen by a tenth or more since they were
// set (it falls as the RTTs of the run come in: a send early in a run
// waits the full timeout), so that a reply lost early is not retried
// last. Deadlines only move earlier.
func (s *session) rekey(now time.Time) {
	if s.pacer == nil {
		return
	}
	rto := s.pacer.RetryTimeout(now, s.timeout)
	if s.rto == 0 {
		s.rto = s.timeout
	}
	if rto >= s.rto*9/10 {
		return
	}
	s.rto = rto
	moved := false
	for _, r := range s.waiting {
		if r.last == nil || r.last.at.IsZero() {
			continue
		}
		if d := r.last.at.Add(s.retryWait(r, now)); d.Before(r.deadline) {
			r.deadline = d
			moved = true
		}
	}
	if moved {
		heap.Init(&s.waiting)
	}
}
