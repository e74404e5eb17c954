package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/scout-discovery/scout/protocol/infostring"
)

// Defaults of a [Prober] whose fields are zero.
const (
	// DefaultTimeout is how long one send waits for its reply before the
	// request is sent again: long enough for the slowest Internet paths
	// (~400 ms) plus a server that is busy building a status reply.
	DefaultTimeout = time.Second
	// DefaultAttempts is how many times one request is sent, the first
	// send included, before the server is reported as not answering.
	DefaultAttempts = 3
	// DefaultWindow is how many requests may be in flight at once: the
	// Enemy Territory client's 16 outstanding probes.
	DefaultWindow = 16
	// DefaultMaxTargets bounds the servers of one run.
	DefaultMaxTargets = 1 << 16
)

// ReadBufferSize is the size of the buffer each read uses: the largest
// UDP payload, so no reply is ever truncated.
const ReadBufferSize = 65535

// maxReadErrors is how many reads in a row may fail with an error other
// than a deadline before Run gives up on the socket.
const maxReadErrors = 64

// Errors a [Result] may carry, wrapped with detail. Test with errors.Is.
var (
	// ErrTimeout: a request got no reply after every attempt.
	ErrTimeout = errors.New("no reply")
	// ErrGarbled: the server sent something the dialect could not read,
	// and nothing readable.
	ErrGarbled = errors.New("garbled reply")
	// ErrMisdirected: the reply to one of our requests came from another
	// address than the one the request went to.
	ErrMisdirected = errors.New("reply from an unexpected address")
	// ErrDuplicate: the same address was given twice in one run.
	ErrDuplicate = errors.New("duplicate target")
	// ErrTooManyTargets: a run was given more than MaxTargets servers.
	ErrTooManyTargets = errors.New("too many targets")
)

// ErrUnreachable (icmp.go) is the error of a request ended by an ICMP
// destination unreachable.

// Conn is the part of *net.UDPConn a Prober uses, so tests and the
// simulator drive the same code as production.
type Conn interface {
	ReadFromUDPAddrPort(b []byte) (n int, addr netip.AddrPort, err error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	SetReadDeadline(t time.Time) error
}

// Prober queries game servers. Its zero value is ready to use with the
// defaults above; a Prober holds only settings, so one value may run
// several queries at once. [StrategyNamed] returns the send patterns of
// known clients as Probers.
type Prober struct {
	// Timeout is how long each send waits for its reply; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Attempts is how many times a request is sent before the server is
	// reported as not answering, the first send included; 0 means
	// DefaultAttempts.
	Attempts int
	// Window bounds the requests in flight (sent or due, not yet answered
	// or given up); 0 means DefaultWindow. A server whose query needs
	// more requests than the window still starts when nothing else is in
	// flight.
	Window int
	// Interval is the least time between two sends (pacing: a rate of
	// 1/Interval sends per second, retries included); 0 sends as fast as
	// the window allows. [IntervalForRate] and [IntervalForBandwidth]
	// compute it.
	Interval time.Duration
	// Pace, when set, paces the sends by the delay-based controller of
	// [Pacer] instead of Interval: from Pace.StartRate up to what the
	// player's link carries without queueing, capped at Pace.MaxRate. A
	// zero Window then means one large enough for MaxRate
	// ([WindowForRate]). The first few Quake III getinfo requests go as
	// packet trains ([Pacer.Train]: 8 sends each to one server, at most 42
	// extra sends a run) that measure the path. Requests then leave in
	// random order (servers of one network, listed together, would answer
	// in one burst), retries before the rest, and a send that is not its
	// request's last is retried after [Pacer.RetryTimeout] (1.2 times the
	// 99th percentile of the run's RTTs plus 20 ms, brought forward for
	// the sends made before it was known) rather than Timeout, except for
	// A2S, whose replies carry no token (a late reply to the first send
	// would be timed from the retry). A Q3 server older than 1.32, which echoes no challenge, is
	// matched the same way: one slower than that retry timeout reports
	// the RTT from its retry.
	Pace *Pace
	// Burst, when positive, makes the sends go in bursts of Burst
	// datagrams, each burst after the first waiting Pause after the last
	// send of the one before (Quake 4's browser: 32, then a few hundred
	// milliseconds). Within a burst Interval still applies.
	Burst int
	Pause time.Duration
	// RTTFromFirstSend measures the round-trip time from the first send of
	// a request, not from the send that was answered: qstat's way, which
	// turns one lost packet into a one-second ping. For comparisons only.
	RTTFromFirstSend bool
	// MaxTargets bounds the servers of one run; 0 means
	// DefaultMaxTargets. Targets past the bound get ErrTooManyTargets.
	MaxTargets int
	// Lookahead, when positive, makes Stream take a new target from its
	// channel only while fewer than Lookahead targets it took wait to be
	// sent: a caller that decides each target from the outcomes so far
	// (an adaptive order) then decides it as late as the pacing allows,
	// not when the window has room. With Lookahead the packet trains of
	// Pace are not sent (they need [Pacer.Train]'s queue of 256), and a
	// paced run keeps the order it is given (no address first, see
	// session_order.go).
	Lookahead int
}

// EffectiveWindow is the window a run of p uses: Window, or with Pace
// and no Window one large enough for Pace's MaxRate, or DefaultWindow.
func (p *Prober) EffectiveWindow() int { return p.settings().window }

// Target is one server to query.
type Target struct {
	Addr    netip.AddrPort
	Dialect Dialect
}

// Result is what one server answered, or why it did not.
type Result struct {
	Addr netip.AddrPort
	Game string // the dialect's name: "q3", "q4", "gs4", "a2s"

	// A summary read from the reply, for display and filtering. Name
	// keeps the server's colour codes and bytes as sent.
	Name       string
	Map        string
	GameType   string // as the server writes it ("0" for Q3 free for all)
	Protocol   string
	NumPlayers int // as the server counts them, bots included
	MaxPlayers int

	// Info holds every key/value the server sent, in wire order; where a
	// dialect makes several requests the keys of later replies follow
	// those of earlier ones, and a key already present is not repeated.
	// The challenge scout sent is not included.
	Info infostring.Info
	// StatusInfo holds the keys of a Quake III statusResponse that its
	// infoResponse (kept in Info) gave another value, with the
	// statusResponse's value: OpenArena's "gamename" is "Quake3Arena" in
	// one and "baseoa" in the other. Nil when no key differs.
	StatusInfo infostring.Info
	// Players is the player list, nil when the server did not send one.
	Players []Player
	// Rules holds the server's variables, in wire order, where the
	// dialect asks for them apart from Info (A2S_RULES); nil when the
	// server did not send them.
	Rules infostring.Info

	// RTT is the smallest round-trip time of the server's replies, each
	// measured from the send it answered; 0 when nothing was answered.
	RTT time.Duration
	// Attempts is the largest number of sends any one request needed,
	// or made before giving up (1 when nothing was lost).
	Attempts int
	// Err is why a request of this query failed: nil when every request
	// was answered. A server can answer its first request and not the
	// next, so Err may be set while Info is filled; see Answered.
	Err error
}

// Answered reports whether the server answered at least one request.
func (r Result) Answered() bool { return r.RTT > 0 }

// Player is one player in a server's status.
type Player struct {
	Name  string // as sent, colour codes kept
	Score int
	Ping  int    // milliseconds, as the server measures it; 0 for bots
	Team  string // empty when the game does not say
	// Time is how long the player has been connected, when the game says
	// (A2S).
	Time time.Duration
}

// Counts describe the traffic of one run. Byte counts are UDP payloads.
type Counts struct {
	Targets  int // targets given, duplicates and refusals included
	Answered int // targets that answered at least one request
	Silent   int // targets that answered nothing before every attempt timed out
	// Unreachable counts targets ended by an ICMP destination unreachable
	// (ErrUnreachable); one that had answered a first request is counted
	// in Answered too.
	Unreachable int

	Sent         int   // requests sent, retries included (the paper's probes)
	Retries      int   // sends that repeated an unanswered request
	BytesOut     int64 // payload bytes sent
	Destinations int   // distinct addresses sent to (flows created)
	WriteErrors  int   // sends the socket refused
	PeakInFlight int   // the most requests sent and awaiting a reply at one time

	Received    int   // datagrams read
	BytesIn     int64 // payload bytes read
	Matched     int   // replies matched to an open request
	Late        int   // replies to a request already answered or given up
	Unknown     int   // from an address that is no target, or a token not ours (or expired)
	Garbled     int   // from a target, but not a reply its dialect can read
	Misdirected int   // one of our tokens, from another address
	ReadErrors  int   // reads that failed with an error other than a deadline
	Expired     int   // tokens forgotten after their lifetime

	// ICMPErrors counts the ICMP errors read from the socket's error queue
	// (an [ICMPConn] only); ICMPUnmatched those of them that ended nothing
	// (see the package doc's policy); StaleSendErrors the writes that
	// failed because an ICMP error for an earlier datagram was pending, and
	// were repeated.
	ICMPErrors      int
	ICMPUnmatched   int
	StaleSendErrors int

	// KernelStamped counts the datagrams timed by the kernel's receive
	// timestamp (see [KernelTimestamps]); StampLag sums, and StampLagMax
	// is the largest of, the time each of them waited between the kernel
	// and the read: what the timestamp took off their round-trip times.
	KernelStamped int
	StampLag      time.Duration
	StampLagMax   time.Duration

	// With Prober.Pace: the rate at the last send and the highest, in
	// probes per second; the backoffs (Pacer.Cuts); the link capacity
	// the pacer estimated, in bits per second (0: never found).
	PaceRate     float64
	PacePeakRate float64
	PaceCuts     int
	PaceCapacity float64
	// PaceTrainSends counts the sends of packet trains beyond each
	// train's first (included in Sent), PaceTrainReplies the replies to
	// them after the first of their train (not in Late); PaceTrainRate is
	// the rate the trains measured, in probes per second (0: none).
	PaceTrainSends   int
	PaceTrainReplies int
	PaceTrainRate    float64
}

// Query opens a UDP socket on all interfaces, runs the targets and
// returns their results in the order given. The socket is read through
// [Wrap]: where the platform reports ICMP errors, a closed port ends
// with ErrUnreachable instead of a timeout.
func (p *Prober) Query(ctx context.Context, targets []Target) ([]Result, Counts, error) {
	conn, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, Counts{}, err
	}
	defer conn.Close()
	c, _ := Wrap(conn)
	results := make([]Result, len(targets))
	counts, err := p.Run(ctx, c, targets, func(i int, r Result) { results[i] = r })
	return results, counts, err
}

// Run queries targets from conn, which it reads until every target has a
// result or ctx ends, and calls each (from Run's goroutine) with the index
// of a target and its result as soon as the result is known. Every target
// gets exactly one call, even when ctx ends first (with ctx's error) or
// Run fails. Run must be the only reader of conn while it runs; it does
// not close conn.
func (p *Prober) Run(ctx context.Context, conn Conn, targets []Target, each func(int, Result)) (Counts, error) {
	cfg := p.settings()
	if len(targets) > cfg.maxTargets {
		err := fmt.Errorf("probe: %w: %d, limit %d", ErrTooManyTargets, len(targets), cfg.maxTargets)
		for i, t := range targets {
			each(i, Result{Addr: t.Addr, Game: dialectName(t.Dialect), Err: err})
		}
		return Counts{}, err
	}
	s := newSession(cfg)
	for _, t := range targets {
		s.add(t)
	}
	s.closeInput()
	return loop(ctx, conn, s, nil, each, nil)
}

// Broadcast sends the first request of each target's query to its
// address, a broadcast address (or, in tests, any address), and reports
// every server that answers with the request's token, from whatever
// address, through found, as the Quake III client finds LAN servers
// (getinfo to ports 27960-27963 of the broadcast address). Each request
// is sent Attempts times, Timeout apart, and replies are collected until
// the last send's Timeout has passed: that is the collection window.
// Broadcast must be the only reader of conn while it runs.
func (p *Prober) Broadcast(ctx context.Context, conn Conn, targets []Target, found func(Result)) (Counts, error) {
	s := newSession(p.settings())
	for _, tg := range targets {
		if t := s.add(tg); !t.done {
			t.broadcast = true
		}
	}
	s.closeInput()
	return loop(ctx, conn, s, nil, func(int, Result) {}, found)
}

// Stream queries the targets received from in, from conn, beginning each
// as soon as the window has room, so probing starts while the list is
// still arriving (Enemy Territory's overlap of the master's reply and the
// first probes). It returns when in is closed and every target has a
// result, or when ctx ends. each is called (from Stream's goroutine) once
// per target received, with the target's index in the order received and
// its result; targets still open when ctx ends get ctx's error. Stream
// must be the only reader of conn while it runs; it does not close conn.
func (p *Prober) Stream(ctx context.Context, conn Conn, in <-chan Target, each func(int, Result)) (Counts, error) {
	return loop(ctx, conn, newSession(p.settings()), in, each, nil)
}

// datagram is one read, timed.
type datagram struct {
	b    []byte
	from netip.AddrPort
	at   time.Time
	lag  time.Duration // kernel stamp to read; -1 when unstamped
	err  error         // a read error that ends the run
	icmp []ICMPError   // instead of a datagram: ICMP errors from the error queue
}

// maxReadBatch bounds the datagrams handled between two polls, so a flood
// of replies cannot starve the sends and deadlines.
const maxReadBatch = 64

// maxStaleSendRetries bounds how often one datagram is written again
// after a write failed only because an ICMP error for an earlier datagram
// was pending on the socket (Linux with IP_RECVERR: the failing write
// consumes the error, so one repeat normally goes through; a local error
// that looks the same, such as EACCES for a broadcast, fails again and is
// reported).
const maxStaleSendRetries = 2

// loop drives s: one goroutine reads conn and stamps each datagram as it
// arrives; this one owns the session, writes the sends and sleeps until
// the next deadline, a datagram, a new target or the end of ctx.
func loop(ctx context.Context, conn Conn, s *session, in <-chan Target, each func(int, Result), found func(Result)) (Counts, error) {
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		s.abort(err)
		emit(s, each, found)
		return s.counts, err
	}
	reads := make(chan datagram, maxReadBatch)
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		read(conn, reads, stop)
	}()
	defer func() {
		close(stop)
		conn.SetReadDeadline(time.Unix(1, 0)) // wakes the reader; sticks until the next run
		<-readerDone
	}()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	if in == nil {
		s.closeInput()
	}
	ic, _ := conn.(ICMPConn)
	for {
		var icmps []ICMPError // read while writing, handled after the batch
		for _, sd := range s.poll(time.Now()) {
			at := time.Now()
			_, werr := conn.WriteToUDPAddrPort(sd.b, sd.r.t.addr)
			for try := 0; werr != nil && ic != nil && ic.ICMPReported(werr) && try < maxStaleSendRetries; try++ {
				// An ICMP error for an earlier datagram, not this one's
				// fault: this datagram did not leave. Take the queued
				// errors (the reader may not wake for them now that the
				// write consumed the socket error) and write again.
				s.counts.StaleSendErrors++
				q, _ := ic.ReadICMP()
				icmps = append(icmps, q...)
				at = time.Now()
				_, werr = conn.WriteToUDPAddrPort(sd.b, sd.r.t.addr)
			}
			s.wrote(sd, at, werr)
		}
		for _, e := range icmps {
			s.icmp(e)
		}
		emit(s, each, found)
		if s.done() {
			return s.counts, nil
		}
		if w := s.wake(); !w.IsZero() {
			timer.Reset(time.Until(w))
		} else {
			timer.Stop()
		}
		take := in
		if !s.wantsInput() {
			take = nil // Lookahead: enough wait to be sent
		}
		select {
		case <-ctx.Done():
			s.abort(ctx.Err())
			emit(s, each, found)
			return s.counts, ctx.Err()
		case <-timer.C:
		case t, ok := <-take:
			if !ok {
				in = nil
				s.closeInput()
				break
			}
			s.add(t)
		drain:
			for range maxReadBatch { // take what else is ready before the next poll
				if !s.wantsInput() {
					break
				}
				select {
				case t, ok := <-in:
					if !ok {
						in = nil
						s.closeInput()
						break drain
					}
					s.add(t)
				default:
					break drain
				}
			}
		case d := <-reads:
			for i := 0; ; i++ {
				if d.err != nil {
					err := fmt.Errorf("probe: reading: %w", d.err)
					s.abort(err)
					emit(s, each, found)
					return s.counts, err
				}
				if d.lag >= 0 {
					s.counts.KernelStamped++
					s.counts.StampLag += d.lag
					s.counts.StampLagMax = max(s.counts.StampLagMax, d.lag)
				}
				switch {
				case d.icmp != nil:
					for _, e := range d.icmp {
						s.icmp(e)
					}
				case d.from.IsValid():
					s.receive(d.at, unmap(d.from), d.b)
				default:
					s.counts.ReadErrors++
				}
				if i == maxReadBatch {
					break
				}
				select {
				case d = <-reads:
					continue
				default:
				}
				break
			}
		}
	}
}

func emit(s *session, each func(int, Result), found func(Result)) {
	for _, r := range s.found {
		found(r)
	}
	clear(s.found)
	s.found = s.found[:0]
	for _, t := range s.takeFinished() {
		each(t.index, t.res)
		t.res = Result{Addr: t.res.Addr, Game: t.res.Game} // the caller has it now
	}
}

// read reads conn until stop is closed, sending each datagram, timed as
// close to its arrival as the platform allows, to out. A failing socket
// ends with one datagram carrying the error.
func read(conn Conn, out chan<- datagram, stop <-chan struct{}) {
	sc, stamped := conn.(StampedConn)
	ic, _ := conn.(ICMPConn)
	buf := make([]byte, ReadBufferSize)
	errs := 0
	for {
		var (
			n    int
			from netip.AddrPort
			at   time.Time
			lag  = time.Duration(-1)
			err  error
		)
		if stamped {
			n, from, at, lag, err = sc.ReadStamped(buf)
		} else {
			n, from, err = conn.ReadFromUDPAddrPort(buf)
			at = time.Now()
		}
		var d datagram
		switch {
		case err == nil:
			errs = 0
			d = datagram{b: append([]byte(nil), buf[:n]...), from: from, at: at, lag: lag}
		case errors.Is(err, os.ErrDeadlineExceeded):
			select {
			case <-stop:
				return
			default:
				continue
			}
		case ic != nil && ic.ICMPReported(err):
			// The socket says an ICMP error is queued; the errors are on
			// the error queue. Not a read error, and never fatal.
			// Such reads come once per ICMP error received, so this
			// cannot spin.
			q, qerr := ic.ReadICMP()
			switch {
			case len(q) > 0:
				d = datagram{icmp: q, lag: -1}
			case qerr != nil:
				d = datagram{lag: -1} // counted as a read error
			default:
				continue // the writer took them first
			}
		case errs < maxReadErrors && !errors.Is(err, net.ErrClosed):
			// Some platforms report ICMP errors here; the socket lives on.
			errs++
			d = datagram{lag: -1} // counted as a read error
		default:
			d = datagram{err: err, lag: -1}
		}
		select {
		case out <- d:
		case <-stop:
			return
		}
		if d.err != nil {
			return
		}
	}
}

func (p *Prober) settings() settings {
	s := settings{timeout: p.Timeout, attempts: p.Attempts, window: p.Window,
		interval: p.Interval, burst: p.Burst, pause: p.Pause, fromFirst: p.RTTFromFirstSend,
		maxTargets: p.MaxTargets, pace: p.Pace, lookahead: p.Lookahead}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.attempts <= 0 {
		s.attempts = DefaultAttempts
	}
	if s.window <= 0 && s.pace != nil {
		s.window = WindowForRate(s.pace.withDefaults().MaxRate, s.timeout)
	}
	if s.window <= 0 {
		s.window = DefaultWindow
	}
	if s.maxTargets <= 0 {
		s.maxTargets = DefaultMaxTargets
	}
	return s
}

func unmap(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

func dialectName(d Dialect) string {
	if d == nil {
		return ""
	}
	return d.Name()
}
