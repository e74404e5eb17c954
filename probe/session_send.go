package probe

import (
	"container/heap"
	"fmt"
	"time"
)

// The session's sending side: deadlines, pacing and writes.

// poll handles the deadlines that have passed at now, expires old tokens,
// begins the targets the window has room for and returns the sends due
// now. The caller writes each and reports it with wrote.
func (s *session) poll(now time.Time) []*send {
	s.rekey(now)
	// Deadlines: retry, or give up. Only the requests whose deadline has
	// passed are touched.
	for len(s.waiting) > 0 && !now.Before(s.waiting[0].deadline) {
		r := heap.Pop(&s.waiting).(*request)
		if r.attempts < s.attempts {
			s.counts.Retries++
			if s.pacer != nil {
				// A lost reply near the end of a run is its tail: the
				// retry goes before the queue.
				s.retries = append(s.retries, r)
			} else {
				s.queue = append(s.queue, r)
			}
			continue
		}
		s.fail(r, fmt.Errorf("%s: %w after %d attempts", r.t.d.stepName(&r.st), ErrTimeout, r.attempts))
	}
	s.expire(now)

	// Begin targets while the window has room.
	for len(s.pending) > 0 {
		t := s.pending[0]
		steps := t.d.begin()
		if len(steps) > 0 && s.open > 0 && s.open+len(steps) > s.window {
			break
		}
		s.pending[0] = nil
		s.pending = s.pending[1:]
		if len(steps) == 0 {
			s.finish(t)
			continue
		}
		for _, st := range steps {
			s.begin(t, st)
		}
	}

	// Sends, paced.
	var out []*send
	for s.toSend() > 0 && !now.Before(s.nextSend) {
		r, rtt := s.next(now)
		if r == nil {
			// Paced: what waits may not go yet (its reply would find the
			// link full, or its host's RTT is about to be known).
			s.nextSend = now.Truncate(calBin).Add(calBin)
			break
		}
		if r.done {
			continue
		}
		train, n := 0, 1
		if d, ok := r.t.d.(q3Dialect); ok && s.pacer != nil && s.lookahead <= 0 && r.attempts == 0 && r.st.kind == q3Info && !d.status {
			// A packet train measures the path (see Pacer): getinfo
			// alone, whose replies echo each send's own token.
			train, n = s.pacer.Train(now, len(s.queue)+len(s.pending)+1)
		}
		for k := range n {
			tok := s.newToken(r.t.d.tokenMask())
			b, err := r.t.d.appendRequest(nil, &r.st, tok)
			if err != nil {
				s.fail(r, fmt.Errorf("%s: encoding: %w", r.t.d.stepName(&r.st), err))
				break
			}
			sd := &send{r: r, tok: tok, b: b, train: train}
			s.byTok[tok] = sd
			s.tokens = append(s.tokens, sd)
			r.last = sd
			if s.pacer != nil {
				s.pacer.Planned(now, rtt)
			}
			if k == 0 {
				r.attempts++
				r.deadline = time.Time{}
				s.pace(now)
			} else {
				s.pacer.Sent(now)
				s.counts.PaceTrainSends++
			}
			out = append(out, sd)
		}
	}
	if len(s.queue) == 0 {
		s.queue = nil // let the backing array go
	}
	if len(s.retries) == 0 {
		s.retries = nil
	}
	return out
}

// pace sets the earliest time of the next send after a send at now. The
// interval is the pacer's (settings.pace) or the fixed one. With an
// interval, a wake-up that came late by less than one interval (or
// maxCatchUp) keeps the cadence (the next send is due one interval after
// the slot, not after now), so the rate holds on average; a longer gap
// restarts it. A burst
// size makes every burst-th send wait the pause.
func (s *session) pace(now time.Time) {
	if s.burst > 0 {
		s.inBurst++
		if s.inBurst >= s.burst {
			s.inBurst = 0
			s.nextSend = now.Add(s.pause)
			return
		}
	}
	interval := s.interval
	if s.pacer != nil {
		s.pacer.Sent(now)
		interval = s.pacer.Interval(now)
		s.counts.PaceRate = s.pacer.rate
		s.counts.PacePeakRate = max(s.counts.PacePeakRate, s.pacer.rate)
		s.counts.PaceCuts = s.pacer.Cuts
		s.counts.PaceCapacity = 8 * s.pacer.capacity
		s.counts.PaceTrainRate = s.pacer.trainRate
	}
	if interval <= 0 {
		return
	}
	slot := s.nextSend
	if slot.IsZero() || now.Sub(slot) >= max(interval, maxCatchUp) {
		slot = now
	}
	s.nextSend = slot.Add(interval)
}

// maxCatchUp is how far behind its cadence a paced send may be and still
// keep it: timers wake up to a millisecond late, so at intervals below a
// millisecond the sends missed while asleep go at the wake-up, back to
// back (at most a millisecond's worth), or the rate would be held to
// about one send per wake-up.
const maxCatchUp = time.Millisecond

// expire forgets the tokens of requests that are over and were sent more
// than tokenLifetime before now. Sends are in time order, so this looks at
// the oldest only; a request still open keeps its tokens (and those after
// it) a little longer.
func (s *session) expire(now time.Time) {
	life := s.tokenLifetime()
	n := 0
	for _, sd := range s.tokens {
		if !sd.r.done || now.Sub(sd.at) < life {
			break
		}
		delete(s.byTok, sd.tok)
		n++
	}
	if n > 0 {
		clear(s.tokens[:n])
		s.tokens = s.tokens[n:]
		s.counts.Expired += n
	}
}

// wrote records the write of sd, begun at at.
func (s *session) wrote(sd *send, at time.Time, err error) {
	r := sd.r
	size := len(sd.b)
	b := sd.b
	sd.b = nil
	if err != nil {
		sd.at = at // expires like any other
		s.counts.WriteErrors++
		s.fail(r, fmt.Errorf("%s: sending: %w", r.t.d.stepName(&r.st), err))
		return
	}
	sd.at = at
	if r.first.IsZero() {
		r.first = at
	}
	s.counts.Sent++
	s.counts.BytesOut += int64(size)
	if !r.t.contacted {
		r.t.contacted = true
		s.counts.Destinations++
	}
	if r.attempts > r.t.res.Attempts {
		r.t.res.Attempts = r.attempts
	}
	if r.done || sd != r.last {
		return // answered already, or not the last send of a train
	}
	r.sent = b
	r.deadline = at.Add(s.retryWait(r, at))
	heap.Push(&s.waiting, r)
	s.counts.PeakInFlight = max(s.counts.PeakInFlight, len(s.waiting))
}

// wake returns when poll next has work: the earliest deadline of a send,
// or the next paced send. Replies may come sooner. Zero means nothing is
// scheduled.
func (s *session) wake() time.Time {
	var w time.Time
	if len(s.waiting) > 0 {
		w = s.waiting[0].deadline
	}
	if s.toSend() > 0 && !s.nextSend.IsZero() {
		if w.IsZero() || s.nextSend.Before(w) {
			w = s.nextSend
		}
	}
	if len(s.tokens) > 0 && s.tokens[0].r.done && !s.tokens[0].at.IsZero() {
		// Not needed for correctness; it keeps a quiet run's memory low.
		if e := s.tokens[0].at.Add(s.tokenLifetime()); w.IsZero() || e.Before(w) {
			w = e
		}
	}
	return w
}
