package probe

import (
	mrand "math/rand/v2"
	"time"
)

// The order of a paced run's sends (Prober.Pace), part of the pure core:
// retries first; then the servers of addresses not yet probed, drawn at
// random; then, once one server of an address has answered, the other
// servers of that address, each when its reply is due where the link has
// room.
//
// Why: a lost reply costs its server a retry timeout and a second RTT,
// and near the end of a run that is the run's tail. The servers of one
// address (one machine: ports 27960, 27961, ...) are at one distance, so
// once one of them has answered the others are of known RTT: a lost
// reply of theirs is retried after about that RTT (retryWait) instead of
// the run's retry timeout, and the time their reply reaches the link is
// known. A server of unknown RTT has the longest tail, so those go first,
// one per address; its siblings wait (deferred) until it answers, or
// until its probe is overdue. A reply is due at its send plus its RTT,
// so probes sent at a steady rate to servers of known RTT in any order
// that follows their distance (the far ones first, say) reach the link
// in bursts; the calendar of replies due (Pacer.Planned) gives each
// millisecond the rate's share of replies, and a server of known RTT
// goes only into a millisecond with room, the emptiest one (the farthest
// server among equals). Sent so, the replies of the end of a run fill
// the link where the replies of the servers of unknown RTT leave it
// room, and the far servers go before the near ones while there is.

// Where a request waits to be sent (request.park).
const (
	parkNone     uint8 = iota // in the queue or the retries, or sent
	parkKnown                 // in session.known: its host's RTT is known
	parkDeferred              // in session.deferred: its host is probed, not yet answered
)

// toSend returns how many requests wait to be sent.
func (s *session) toSend() int { return len(s.queue) + len(s.retries) + s.parked }

// draw returns the index in the queue of the request to send next,
// paced: one drawn at random. A master lists a hosting network's servers
// together, and servers at one distance probed back to back answer in
// one burst, which queues on the player's link at any rate.
func (s *session) draw() int {
	if s.rng != nil {
		return s.rng.IntN(len(s.queue))
	}
	return mrand.IntN(len(s.queue))
}

// next returns the request to send at now and its server's expected RTT
// (0 when unknown), or nil when none may go now.
func (s *session) next(now time.Time) (*request, time.Duration) {
	if len(s.retries) > 0 {
		r := s.retries[0]
		s.retries[0] = nil
		s.retries = s.retries[1:]
		return r, s.expectedRTT(r)
	}
	if s.pacer == nil {
		if len(s.queue) == 0 {
			return nil, 0
		}
		r := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		return r, 0
	}
	for len(s.queue) > 0 {
		j := s.draw()
		r := s.queue[j]
		last := len(s.queue) - 1
		s.queue[j], s.queue[last] = s.queue[last], nil
		s.queue = s.queue[:last]
		if r.done {
			continue
		}
		h := s.hosts[r.t.addr.Addr()]
		switch {
		case h == nil || s.lookahead > 0:
			// With a lookahead the caller orders the targets (an
			// adaptive order): the few waiting go as drawn.
			return r, 0
		case h.rtt > 0:
			s.parkKnown(r, h.rtt)
		case !h.probed.IsZero() && now.Sub(h.probed) < s.pacer.RetryTimeout(now, s.timeout):
			r.park = parkDeferred
			s.deferred = append(s.deferred, r)
			s.parked++
		default:
			if h.probed.IsZero() {
				h.probed = now
			}
			return r, 0
		}
	}
	if r, rtt := s.nextKnown(now); r != nil {
		return r, rtt
	}
	return s.nextOverdue(now), 0
}

// expectedRTT returns the RTT of r's host, 0 while unknown.
func (s *session) expectedRTT(r *request) time.Duration {
	if h := s.hosts[r.t.addr.Addr()]; h != nil {
		return h.rtt
	}
	return 0
}

// parkKnown parks r among the requests of known RTT, by that RTT in
// calBin steps.
func (s *session) parkKnown(r *request, rtt time.Duration) {
	if s.known == nil {
		s.known = make([][]*request, calHistBins)
	}
	k := min(int(rtt/calBin), len(s.known)-1)
	s.known[k] = append(s.known[k], r)
	if r.park == parkNone {
		s.parked++
	}
	r.park = parkKnown
}

// nextKnown returns the request of known RTT whose reply, sent at now,
// is due in the millisecond with the most room for its share (Pacer.Room),
// the farthest among equals; nil when none has room.
func (s *session) nextKnown(now time.Time) (*request, time.Duration) {
	best, most := -1, 0.0
	for k := len(s.known) - 1; k >= 0; k-- {
		b := s.known[k]
		for len(b) > 0 && b[len(b)-1].done {
			b[len(b)-1] = nil
			b = b[:len(b)-1]
			s.parked--
		}
		s.known[k] = b
		if len(b) == 0 {
			continue
		}
		room, share := s.pacer.room(now.Add(s.expectedRTT(b[len(b)-1])))
		if room < calMinRoom {
			continue
		}
		if share > 0 {
			room /= share // +Inf while the capacity is unknown: the farthest
		}
		if best < 0 || room > most {
			best, most = k, room
		}
	}
	if best < 0 {
		return nil, 0
	}
	b := s.known[best]
	r := b[len(b)-1]
	b[len(b)-1] = nil
	s.known[best] = b[:len(b)-1]
	r.park = parkNone
	s.parked--
	return r, s.expectedRTT(r)
}

// nextOverdue returns a deferred request whose host's probe has gone
// unanswered for the retry timeout (lost, or a silent server: its other
// servers go as servers of unknown RTT), nil when none has; it drops the
// entries parked as known since.
func (s *session) nextOverdue(now time.Time) *request {
	overdue := s.pacer.RetryTimeout(now, s.timeout)
	kept := s.deferred[:0]
	var out *request
	for _, r := range s.deferred {
		switch {
		case r.park != parkDeferred:
		case r.done:
			r.park = parkNone
			s.parked--
		case out == nil && now.Sub(s.hosts[r.t.addr.Addr()].probed) >= overdue:
			r.park = parkNone
			s.parked--
			out = r
		default:
			kept = append(kept, r)
		}
	}
	clear(s.deferred[len(kept):])
	s.deferred = kept
	if len(kept) == 0 {
		s.deferred = nil
	}
	return out
}
