package probe

import (
	"container/heap"
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
	burst      int
	pause      time.Duration
	fromFirst  bool
	maxTargets int
	pace       *Pace // delay-based pacing instead of interval; nil: none
	lookahead  int   // Prober.Lookahead
}

// tokenLifetime is how long a token stays known after its send: every
// attempt of its request, plus one more timeout for a reply that is merely
// slow. A reply carrying an expired token counts as unknown, not late.
func (c settings) tokenLifetime() time.Duration {
	return c.timeout * time.Duration(c.attempts+1)
}

// session is the state of one run: a pure state machine that the socket
// loop in Run drives. It does no I/O and never reads the clock: poll and
// receive take now, wrote takes the time of the write. It is used by one
// goroutine.
//
// Targets may be added while the run goes on (add); the run is over when
// the input is closed (closeInput) and every target has a result.
//
// Memory is bounded by maxTargets: one entry per target in byAddr for the
// run (to refuse duplicates), and one entry per send in byTok until the
// token expires (tokenLifetime after the send, once its request is over),
// so a long streaming run holds the tokens of the last few seconds only.
// Deadlines live in a heap: a poll costs O(log n) per deadline that
// passes, whatever the number of requests in flight.
type session struct {
	settings

	added     int // targets added, the index of the next one
	byAddr    map[netip.AddrPort]*target
	byTok     map[uint64]*send
	tokens    []*send   // every live token, in send order (expiry FIFO)
	dialects  []Dialect // the distinct dialects of the run, to read strays
	pending   []*target // added, not begun (FIFO)
	open      int       // requests begun and not yet answered or given up
	queue     []*request
	retries   []*request    // paced: retries, sent before the queue (FIFO)
	rto       time.Duration // paced: the retry timeout deadlines were last set with
	waiting   deadlines     // sent, awaiting a reply or their deadline
	nextSend  time.Time     // pacing: no send before this
	inBurst   int           // sends of the current burst
	remaining int           // targets added without a result
	closed    bool          // no more targets will be added
	finished  []*target     // results not yet taken
	found     []Result      // broadcast: servers found, not yet taken
	foundAt   map[netip.AddrPort]bool
	pacer     *Pacer               // with settings.pace
	hosts     map[netip.Addr]*host // paced: the targets of each address (session_pace.go)
	// lastMatched is the send the datagram being received answered, for
	// the pacer; nil when it answered none.
	lastMatched *send

	counts Counts
}

type target struct {
	index     int
	addr      netip.AddrPort
	d         Dialect
	res       Result
	reqs      []*request // requests open (a handful)
	contacted bool
	garbled   error // the last parse error of a reply from addr
	misdirect netip.AddrPort
	broadcast bool // any address may answer; each is a server found
	done      bool
}

type request struct {
	t        *target
	st       step
	attempts int
	first    time.Time // of the first send; zero until written
	last     *send
	deadline time.Time // of the latest send; zero until written
	heapIdx  int       // in session.waiting, -1 when not there
	sent     []byte    // the latest datagram written, to check an ICMP error's quote; nil until written and once done
	done     bool
}

// send is one datagram: a request with its token.
type send struct {
	r   *request
	tok uint64
	b   []byte
	at  time.Time
	// train is the pacer's train id (Pacer.Train) when this send is one
	// of a train, 0 otherwise.
	train int
}

func newSession(cfg settings) *session {
	s := &session{
		settings: cfg,
		byAddr:   make(map[netip.AddrPort]*target),
		byTok:    make(map[uint64]*send),
	}
	if cfg.pace != nil {
		s.pacer = NewPacer(*cfg.pace)
	}
	return s
}

// add queues a target and returns it. A target that cannot be probed
// (no dialect, invalid address, duplicate, over maxTargets) is finished at
// once with its error.
func (s *session) add(tg Target) *target {
	t := &target{index: s.added, addr: unmap(tg.Addr), d: tg.Dialect}
	s.added++
	s.remaining++
	s.counts.Targets++
	t.res = Result{Addr: t.addr, Game: dialectName(tg.Dialect)}
	switch {
	case tg.Dialect == nil:
		t.res.Err = fmt.Errorf("probe: target %v has no dialect", tg.Addr)
	case !t.addr.IsValid():
		t.res.Err = fmt.Errorf("probe: invalid address %v", tg.Addr)
	case s.byAddr[t.addr] != nil || s.foundAt[t.addr]:
		t.res.Err = fmt.Errorf("probe: %w: %v", ErrDuplicate, t.addr)
	case len(s.byAddr) >= s.maxTargets:
		t.res.Err = fmt.Errorf("probe: %w: limit %d", ErrTooManyTargets, s.maxTargets)
	}
	if t.res.Err != nil {
		s.finish(t)
		return t
	}
	s.byAddr[t.addr] = t
	known := false
	for _, d := range s.dialects {
		known = known || d == tg.Dialect
	}
	if !known {
		s.dialects = append(s.dialects, tg.Dialect)
	}
	s.pending = append(s.pending, t)
	if s.pacer != nil {
		s.addHost(t)
	}
	return t
}

// wantsInput reports whether a streaming run takes another target now:
// always, or with a lookahead while fewer than that many wait to be sent.
func (s *session) wantsInput() bool {
	return s.lookahead <= 0 || len(s.pending)+len(s.queue) < s.lookahead
}

// closeInput records that no more targets will be added.
func (s *session) closeInput() { s.closed = true }

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
	for (len(s.queue) > 0 || len(s.retries) > 0) && !now.Before(s.nextSend) {
		var r *request
		if len(s.retries) > 0 {
			r = s.retries[0]
			s.retries[0] = nil
			s.retries = s.retries[1:]
		} else {
			if s.pacer != nil && len(s.queue) > 1 {
				j := s.draw()
				s.queue[0], s.queue[j] = s.queue[j], s.queue[0]
			}
			r = s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
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

func (s *session) begin(t *target, st step) {
	r := &request{t: t, st: st, heapIdx: -1}
	t.reqs = append(t.reqs, r)
	s.open++
	s.queue = append(s.queue, r)
}

// close ends a request, answered or not.
func (s *session) close(r *request) {
	r.done = true
	r.sent = nil
	if r.heapIdx >= 0 {
		heap.Remove(&s.waiting, r.heapIdx)
	}
	s.open--
	t := r.t
	for i, o := range t.reqs {
		if o == r {
			t.reqs = append(t.reqs[:i], t.reqs[i+1:]...)
			break
		}
	}
	if len(t.reqs) == 0 {
		s.finish(t)
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
	switch {
	case t.res.Answered():
		s.counts.Answered++
	case errors.Is(t.res.Err, ErrTimeout):
		s.counts.Silent++
	}
	s.finished = append(s.finished, t)
}

// takeFinished returns the targets finished since the last call.
func (s *session) takeFinished() []*target {
	f := s.finished
	s.finished = nil
	return f
}

// done reports whether the input is closed and every target has a result.
func (s *session) done() bool { return s.closed && s.remaining == 0 }

// wake returns when poll next has work: the earliest deadline of a send,
// or the next paced send. Replies may come sooner. Zero means nothing is
// scheduled.
func (s *session) wake() time.Time {
	var w time.Time
	if len(s.waiting) > 0 {
		w = s.waiting[0].deadline
	}
	if len(s.queue)+len(s.retries) > 0 && !s.nextSend.IsZero() {
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

// abort ends every request and target still open with err.
func (s *session) abort(err error) {
	for _, t := range s.byAddr {
		if !t.done {
			if t.res.Err == nil {
				t.res.Err = err
			}
			s.finish(t)
		}
	}
	s.pending, s.queue, s.retries, s.waiting = nil, nil, nil, nil
	s.closed = true
}

// newToken draws a token no live send of this run has.
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
