package probe

import (
	"net/netip"
	"time"
)

// The session's receiving side: matching a datagram to its send.

// receive handles a datagram b read from from at now.
func (s *session) receive(now time.Time, from netip.AddrPort, b []byte) {
	s.counts.Received++
	s.counts.BytesIn += int64(len(b))
	if s.pacer != nil {
		defer func() {
			var sent time.Time // of the probe b answered, if it answered one
			if sd := s.lastMatched; sd != nil {
				sent, s.lastMatched = sd.at, nil
			}
			s.pacer.Received(now, len(b)+UDPOverhead, sent)
		}()
	}
	t := s.byAddr[from]
	if t == nil || t.broadcast {
		s.stray(now, from, b)
		return
	}
	rep, err := t.d.parse(b)
	if err != nil {
		s.counts.Garbled++
		if !t.done {
			t.garbled = err
		}
		return
	}
	var sd *send
	if rep.hasToken {
		sd = s.byTok[rep.token]
		if sd == nil {
			s.counts.Unknown++
			return
		}
		if sd.r.t != t {
			s.misdirected(sd, from)
			return
		}
		if sd.train > 0 && s.pacer != nil {
			s.pacer.TrainReply(sd.train, now)
			if sd.r.done {
				// Another send of the train was answered first: this
				// reply only measures the path.
				s.counts.PaceTrainReplies++
				s.lastMatched = sd
				return
			}
		}
	} else if r := openRequest(t, rep.kind); r != nil {
		sd = r.last
	}
	if sd == nil || sd.at.IsZero() {
		// Nothing open of that kind: the requests it could answer are over.
		s.counts.Late++
		return
	}
	r := sd.r
	if r.done {
		s.counts.Late++
		return
	}
	next, complete, err := t.d.handle(&r.st, rep, &t.res)
	if err != nil {
		s.counts.Garbled++
		t.garbled = err
		return
	}
	s.counts.Matched++
	from0 := sd.at
	if s.fromFirst {
		from0 = r.first // qstat's way, for comparison only
	}
	if s.pacer != nil {
		s.pacer.Answered(sd.at, now.Sub(sd.at))
		s.lastMatched = sd
	}
	if rtt := now.Sub(from0); t.res.RTT == 0 || rtt < t.res.RTT {
		t.res.RTT = max(rtt, time.Nanosecond) // answered means RTT > 0
	}
	if s.pacer != nil {
		s.learnHost(t, now.Sub(sd.at), now)
	}
	for _, st := range next {
		s.begin(t, st)
	}
	if complete {
		s.close(r)
	}
}

// openRequest returns the open request of t that a reply of kind answers:
// the latest request begun of that kind, or for anyKind the latest open.
// A non-echoing dialect keeps one request open per target.
func openRequest(t *target, kind uint8) *request {
	for i := len(t.reqs) - 1; i >= 0; i-- {
		if r := t.reqs[i]; kind == anyKind || r.st.kind == kind {
			return r
		}
	}
	return nil
}

// stray handles a datagram from an address that is no target: one of our
// tokens means a server answered from another address, or, for a
// broadcast, that a server was found.
func (s *session) stray(now time.Time, from netip.AddrPort, b []byte) {
	for _, d := range s.dialects {
		rep, err := d.parse(b)
		if err != nil || !rep.hasToken {
			continue
		}
		if sd := s.byTok[rep.token]; sd != nil && sd.r.t.d == d {
			if sd.r.t.broadcast {
				s.foundServer(now, from, sd, rep)
				return
			}
			s.misdirected(sd, from)
			return
		}
	}
	s.counts.Unknown++
}

// foundServer records a server that answered a broadcast request.
func (s *session) foundServer(now time.Time, from netip.AddrPort, sd *send, rep reply) {
	if sd.r.done {
		s.counts.Late++
		return
	}
	if s.foundAt[from] {
		s.counts.Late++ // a second copy
		return
	}
	d := sd.r.t.d
	st := sd.r.st // each server gets a copy of the step
	res := Result{Addr: from, Game: d.Name(), Attempts: sd.r.attempts}
	if _, _, err := d.handle(&st, rep, &res); err != nil {
		s.counts.Garbled++
		return
	}
	s.counts.Matched++
	res.RTT = max(now.Sub(sd.at), time.Nanosecond)
	if s.foundAt == nil {
		s.foundAt = make(map[netip.AddrPort]bool)
	}
	s.foundAt[from] = true
	s.counts.Answered++
	s.found = append(s.found, res)
}

func (s *session) misdirected(sd *send, from netip.AddrPort) {
	s.counts.Misdirected++
	if !sd.r.t.done {
		sd.r.t.misdirect = from
	}
}
