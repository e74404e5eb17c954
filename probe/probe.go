package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/scout-discovery/scout/infostring"
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

// Conn is the part of *net.UDPConn a Prober uses, so tests and the
// simulator drive the same code as production.
type Conn interface {
	ReadFromUDPAddrPort(b []byte) (n int, addr netip.AddrPort, err error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	SetReadDeadline(t time.Time) error
}

// Prober queries game servers. Its zero value is ready to use with the
// defaults above; a Prober holds only settings, so one value may run
// several queries at once.
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
	// Interval is the least time between two sends (pacing); 0 sends as
	// fast as the window allows.
	Interval time.Duration
	// MaxTargets bounds the servers of one run; 0 means
	// DefaultMaxTargets.
	MaxTargets int
}

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
	// Players is the player list, nil when the server did not send one.
	Players []Player

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
	Sent         int   // requests sent, retries included
	Retries      int   // sends that repeated an unanswered request
	BytesOut     int64 // payload bytes sent
	Destinations int   // distinct addresses sent to (flows created)
	WriteErrors  int   // sends the socket refused

	Received    int   // datagrams read
	BytesIn     int64 // payload bytes read
	Matched     int   // replies matched to an open request
	Late        int   // replies to a request already answered or given up
	Unknown     int   // from an address that is no target, or a token not ours
	Garbled     int   // from a target, but not a reply its dialect can read
	Misdirected int   // one of our tokens, from another address
	ReadErrors  int   // reads that failed with an error other than a deadline
}

// Query opens a UDP socket on all interfaces, runs the targets and
// returns their results in the order given.
func (p *Prober) Query(ctx context.Context, targets []Target) ([]Result, Counts, error) {
	conn, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, Counts{}, err
	}
	defer conn.Close()
	results := make([]Result, len(targets))
	counts, err := p.Run(ctx, conn, targets, func(i int, r Result) { results[i] = r })
	return results, counts, err
}

// Run queries targets from conn, which it reads until every target has a
// result or ctx ends, and calls each (from Run's goroutine) with the index
// of a target and its result as soon as the result is known. Every target
// gets exactly one call, even when ctx ends first (with ctx's error) or
// Run fails. Run must be the only reader of conn while it runs; it does
// not close conn.
func (p *Prober) Run(ctx context.Context, conn Conn, targets []Target, each func(int, Result)) (Counts, error) {
	s, err := newSession(p.settings(), targets)
	if err != nil {
		for i, t := range targets {
			each(i, Result{Addr: t.Addr, Game: dialectName(t.Dialect), Err: err})
		}
		return Counts{}, err
	}
	// Wake the read when ctx ends. The loop checks ctx after setting each
	// deadline, so a cancellation is never overwritten unseen.
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	buf := make([]byte, ReadBufferSize)
	readErrors := 0
	emit := func() {
		for _, t := range s.takeFinished() {
			each(t.index, t.res)
		}
	}
	for {
		for _, sd := range s.poll(time.Now()) {
			at := time.Now()
			_, werr := conn.WriteToUDPAddrPort(sd.b, sd.r.t.addr)
			s.wrote(sd, at, werr)
		}
		emit()
		if s.done() {
			return s.counts, nil
		}
		if err := conn.SetReadDeadline(s.wake()); err != nil {
			s.abort(err)
			emit()
			return s.counts, err
		}
		if err := ctx.Err(); err != nil {
			s.abort(err)
			emit()
			return s.counts, err
		}
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		now := time.Now()
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				readErrors = 0
				continue // a timeout is due, or ctx ended: the loop sees to both
			case readErrors < maxReadErrors && !errors.Is(err, net.ErrClosed):
				// Some platforms report ICMP errors here; the socket
				// lives on.
				readErrors++
				s.counts.ReadErrors++
				continue
			}
			err = fmt.Errorf("probe: reading: %w", err)
			s.abort(err)
			emit()
			return s.counts, err
		}
		readErrors = 0
		s.receive(now, unmap(from), buf[:n])
		emit()
	}
}

func (p *Prober) settings() settings {
	s := settings{timeout: p.Timeout, attempts: p.Attempts, window: p.Window,
		interval: p.Interval, maxTargets: p.MaxTargets}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.attempts <= 0 {
		s.attempts = DefaultAttempts
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
