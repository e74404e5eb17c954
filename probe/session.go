package probe

import (
	"container/heap"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	mrand "math/rand/v2"
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
	// Paced: first sends parked out of the queue (session_order.go): by
	// their host's RTT, and those waiting for it.
	known    [][]*request
	deferred []*request
	parked   int
	rng      *mrand.Rand // draw's source; nil: the global one (tests set it)
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
	park     uint8     // paced: where it waits to be sent (session_order.go)
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
	return s.lookahead <= 0 || len(s.pending)+len(s.queue)+s.parked < s.lookahead
}

// closeInput records that no more targets will be added.
func (s *session) closeInput() { s.closed = true }

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
	s.known, s.deferred, s.parked = nil, nil, 0
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
