package probe

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// settings are a Prober's fields with the defaults applied.
type settings struct {
	timeout    time.Duration
	attempts   int
	window     int
	interval   time.Duration
	maxTargets int
}

// session is the state of one run: a pure state machine that the socket
// loop in Run drives. It does no I/O and never reads the clock: poll and
// receive take now, wrote takes the time of the write. It is used by one
// goroutine.
//
// Memory is bounded by the targets of the run: every send stays in byTok
// until the run ends (so a late reply is told from an unknown one), at
// most targets x steps x attempts entries.
type session struct {
	settings

	targets   []*target
	byAddr    map[netip.AddrPort]*target
	byTok     map[uint64]*send
	dialects  []Dialect // the distinct dialects of the run, to read strays
	started   int       // targets[:started] have begun
	open      int       // requests begun and not yet answered or given up
	queue     []*request
	waiting   []*request // sent, awaiting a reply or their deadline
	lastSend  time.Time
	remaining int       // targets without a result
	finished  []*target // results not yet taken

	counts Counts
}

type target struct {
	index     int
	addr      netip.AddrPort
	d         Dialect
	res       Result
	open      int      // requests open
	cur       *request // the latest request begun (non-echoing dialects)
	contacted bool
	garbled   error // the last parse error of a reply from addr
	misdirect netip.AddrPort
	done      bool
}

type request struct {
	t        *target
	st       step
	attempts int
	last     *send
	deadline time.Time // of the latest send; zero until written
	done     bool
}

// send is one datagram: a request with its token.
type send struct {
	r   *request
	tok uint64
	b   []byte
	at  time.Time
}

func newSession(cfg settings, targets []Target) (*session, error) {
	if len(targets) > cfg.maxTargets {
		return nil, fmt.Errorf("probe: %w: %d, limit %d", ErrTooManyTargets, len(targets), cfg.maxTargets)
	}
	s := &session{
		settings:  cfg,
		targets:   make([]*target, len(targets)),
		byAddr:    make(map[netip.AddrPort]*target, len(targets)),
		byTok:     make(map[uint64]*send),
		remaining: len(targets),
	}
	for i, tg := range targets {
		if tg.Dialect == nil {
			return nil, fmt.Errorf("probe: target %v has no dialect", tg.Addr)
		}
		t := &target{index: i, addr: unmap(tg.Addr), d: tg.Dialect}
		t.res = Result{Addr: t.addr, Game: tg.Dialect.Name()}
		s.targets[i] = t
		if !t.addr.IsValid() {
			t.res.Err = fmt.Errorf("probe: invalid address %v", tg.Addr)
		} else if _, dup := s.byAddr[t.addr]; dup {
			t.res.Err = fmt.Errorf("probe: %w: %v", ErrDuplicate, t.addr)
		} else {
			s.byAddr[t.addr] = t
		}
		known := false
		for _, d := range s.dialects {
			known = known || d == tg.Dialect
		}
		if !known {
			s.dialects = append(s.dialects, tg.Dialect)
		}
	}
	return s, nil
}

// poll handles the deadlines that have passed at now, begins the targets
// the window has room for and returns the sends due now. The caller
// writes each and reports it with wrote.
func (s *session) poll(now time.Time) []*send {
	// Deadlines: retry, or give up.
	kept := s.waiting[:0]
	for _, r := range s.waiting {
		switch {
		case r.done:
		case now.Before(r.deadline):
			kept = append(kept, r)
		case r.attempts < s.attempts:
			s.counts.Retries++
			s.queue = append(s.queue, r)
		default:
			s.fail(r, fmt.Errorf("%s: %w after %d attempts", r.t.d.stepName(&r.st), ErrTimeout, r.attempts))
		}
	}
	clear(s.waiting[len(kept):])
	s.waiting = kept

	// Begin targets while the window has room.
	for s.started < len(s.targets) {
		t := s.targets[s.started]
		if t.res.Err != nil {
			s.started++
			s.finish(t)
			continue
		}
		steps := t.d.begin()
		if len(steps) == 0 {
			s.started++
			s.finish(t)
			continue
		}
		if s.open > 0 && s.open+len(steps) > s.window {
			break
		}
		s.started++
		for _, st := range steps {
			s.begin(t, st)
		}
	}

	// Sends, paced.
	var out []*send
	for len(s.queue) > 0 {
		if s.interval > 0 && !s.lastSend.IsZero() && now.Before(s.lastSend.Add(s.interval)) {
			break
		}
		r := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if r.done {
			continue
		}
		tok := s.newToken(r.t.d.tokenMask())
		b, err := r.t.d.appendRequest(nil, &r.st, tok)
		if err != nil {
			s.fail(r, fmt.Errorf("%s: encoding: %w", r.t.d.stepName(&r.st), err))
			continue
		}
		sd := &send{r: r, tok: tok, b: b}
		s.byTok[tok] = sd
		r.last = sd
		r.attempts++
		r.deadline = time.Time{}
		s.lastSend = now
		out = append(out, sd)
	}
	return out
}

// wrote records the write of sd, begun at at.
func (s *session) wrote(sd *send, at time.Time, err error) {
	r := sd.r
	if err != nil {
		s.counts.WriteErrors++
		s.fail(r, fmt.Errorf("%s: sending: %w", r.t.d.stepName(&r.st), err))
		return
	}
	sd.at = at
	s.counts.Sent++
	s.counts.BytesOut += int64(len(sd.b))
	sd.b = nil
	if !r.t.contacted {
		r.t.contacted = true
		s.counts.Destinations++
	}
	if r.attempts > r.t.res.Attempts {
		r.t.res.Attempts = r.attempts
	}
	if r.done {
		return
	}
	r.deadline = at.Add(s.timeout)
	s.waiting = append(s.waiting, r)
}

// receive handles a datagram b read from from at now.
func (s *session) receive(now time.Time, from netip.AddrPort, b []byte) {
	s.counts.Received++
	s.counts.BytesIn += int64(len(b))
	t := s.byAddr[from]
	if t == nil {
		s.stray(from, b)
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
	} else if r := s.openRequest(t, rep.kind); r != nil {
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
	if rtt := now.Sub(sd.at); t.res.RTT == 0 || rtt < t.res.RTT {
		t.res.RTT = max(rtt, time.Nanosecond) // answered means RTT > 0
	}
	for _, st := range next {
		s.begin(t, st)
	}
	if complete {
		s.close(r)
	}
}

// openRequest returns the open request of t that a reply of kind answers:
// the latest request begun, which for a non-echoing dialect is the only
// one open.
func (s *session) openRequest(t *target, kind uint8) *request {
	r := t.cur
	if r == nil || r.done || (kind != anyKind && r.st.kind != kind) {
		for _, w := range s.waiting {
			if w.t == t && !w.done && w.st.kind == kind {
				return w
			}
		}
		return nil
	}
	return r
}

// stray handles a datagram from an address that is no target: one of our
// tokens means a server answered from another address.
func (s *session) stray(from netip.AddrPort, b []byte) {
	for _, d := range s.dialects {
		rep, err := d.parse(b)
		if err != nil || !rep.hasToken {
			continue
		}
		if sd := s.byTok[rep.token]; sd != nil && sd.r.t.d == d {
			s.misdirected(sd, from)
			return
		}
	}
	s.counts.Unknown++
}

func (s *session) misdirected(sd *send, from netip.AddrPort) {
	s.counts.Misdirected++
	if !sd.r.t.done {
		sd.r.t.misdirect = from
	}
}

func (s *session) begin(t *target, st step) {
	r := &request{t: t, st: st}
	t.open++
	t.cur = r
	s.open++
	s.queue = append(s.queue, r)
}

// close ends an answered request.
func (s *session) close(r *request) {
	r.done = true
	s.open--
	r.t.open--
	if r.t.open == 0 {
		s.finish(r.t)
	}
}

// fail ends a request that will not be answered. The reason given to the
// target prefers what its address sent over a bare timeout.
func (s *session) fail(r *request, err error) {
	t := r.t
	if errors.Is(err, ErrTimeout) {
		switch {
		case t.misdirect.IsValid():
			err = fmt.Errorf("%s: %w: %v answered instead", t.d.stepName(&r.st), ErrMisdirected, t.misdirect)
		case t.garbled != nil:
			err = fmt.Errorf("%s: %w: %w", t.d.stepName(&r.st), ErrGarbled, t.garbled)
		}
	}
	if t.res.Err == nil {
		t.res.Err = err
	}
	s.close(r)
}

func (s *session) finish(t *target) {
	if t.done {
		return
	}
	t.done = true
	s.remaining--
	s.finished = append(s.finished, t)
}

// takeFinished returns the targets finished since the last call.
func (s *session) takeFinished() []*target {
	f := s.finished
	s.finished = nil
	return f
}

// done reports whether every target has a result.
func (s *session) done() bool { return s.remaining == 0 }

// wake returns when poll next has work: the earliest deadline of a send,
// or the next paced send. Replies may come sooner.
func (s *session) wake() time.Time {
	var w time.Time
	for _, r := range s.waiting {
		if !r.done && (w.IsZero() || r.deadline.Before(w)) {
			w = r.deadline
		}
	}
	if len(s.queue) > 0 && s.interval > 0 {
		if p := s.lastSend.Add(s.interval); w.IsZero() || p.Before(w) {
			w = p
		}
	}
	return w
}

// abort ends every request and target still open with err.
func (s *session) abort(err error) {
	for _, t := range s.targets {
		if !t.done {
			if t.res.Err == nil {
				t.res.Err = err
			}
			s.finish(t)
		}
	}
	s.queue, s.waiting = nil, nil
}

// newToken draws a token no send of this run has used.
func (s *session) newToken(mask uint64) uint64 {
	var b [8]byte
	for {
		rand.Read(b[:]) // never fails (crypto/rand)
		tok := binary.LittleEndian.Uint64(b[:]) & mask
		if _, used := s.byTok[tok]; !used && tok != 0 {
			return tok
		}
	}
}
