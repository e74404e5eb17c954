package discover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/scout-discovery/scout/probe"
)

// Config is one discovery run.
type Config struct {
	// Masters to ask; duplicates (same address) are asked once.
	Masters []Master
	// Quiet, Timeout and Attempts govern the master queries; zero means
	// DefaultQuiet, DefaultMasterTimeout and DefaultMasterAttempts.
	Quiet    time.Duration
	Timeout  time.Duration
	Attempts int
	// MaxServers, MaxPackets and MaxListTime bound each master's answer:
	// the entries it may list (duplicates included), the packets it may
	// send (garbled ones included) and the time from its first query to
	// the end of its list. Zero means DefaultMaxServersQ3 (or
	// DefaultMaxServersSteam for a Steam master), DefaultMaxPackets and
	// DefaultMaxListTime.
	MaxServers  int
	MaxPackets  int
	MaxListTime time.Duration
	// AdmitBurst and AdmitRate meter the listed servers handed to the
	// prober (see [DefaultAdmitBurst]): zero means DefaultAdmitBurst and
	// DefaultAdmitRate; a negative AdmitRate hands every server out as
	// soon as it is listed (for measurements only: a master's list then
	// sets the pace).
	AdmitBurst int
	AdmitRate  float64
	// Landmarks asks every getserversExt master for its RTTs to the
	// servers it lists and keeps them in MasterReport (landmarks.go).
	Landmarks bool
	// NoCookies sends getservers without the cookie word (cookie.go), for
	// a master that would not answer a request with a word it does not
	// know; no known master is such.
	NoCookies bool
	// LandmarkPings is how many pings each landmark master gets after
	// its list, for the client's RTT to it (ping.go; at most
	// MaxLandmarkPings); 0 sends none.
	LandmarkPings int
	// AllowLocal probes what a public master lists at private, loopback,
	// link-local, multicast, unspecified, documentation or reserved
	// addresses, and at the master's own address; by default such
	// entries are counted (MasterReport.Refused, Summary.Refused) and
	// dropped (netscope.Refused). A master at a local address (a LAN
	// master) may list local servers either way.
	AllowLocal bool
	// Extra are servers to probe besides those the masters list.
	Extra []probe.Target
	// Prober probes the servers; its MaxTargets bounds the servers of the
	// run (further ones are listed but not probed).
	Prober probe.Prober
}

func (c *Config) quiet() time.Duration   { return or(c.Quiet, DefaultQuiet) }
func (c *Config) timeout() time.Duration { return or(c.Timeout, DefaultMasterTimeout) }
func (c *Config) attempts() int {
	if c.Attempts <= 0 {
		return DefaultMasterAttempts
	}
	return c.Attempts
}

func (c *Config) maxServers(p Protocol) int {
	switch {
	case c.MaxServers > 0:
		return c.MaxServers
	case p == ProtocolSteam:
		return DefaultMaxServersSteam
	}
	return DefaultMaxServersQ3
}

func (c *Config) maxPackets() int {
	if c.MaxPackets > 0 {
		return c.MaxPackets
	}
	return DefaultMaxPackets
}

func (c *Config) maxListTime() time.Duration { return or(c.MaxListTime, DefaultMaxListTime) }

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// An Event is something a run learned: [Listed], [MasterDone] or
// [Probed].
type Event interface{ event() }

// Listed: a master listed a server. Again is set when an earlier master
// had listed it already (it is probed once).
type Listed struct {
	Addr   netip.AddrPort
	Master string
	Again  bool
}

// MasterDone: a master's list ended.
type MasterDone struct{ MasterReport }

// Probed: a server's probe ended, answered or not.
type Probed struct{ Server }

func (Listed) event()     {}
func (MasterDone) event() {}
func (Probed) event()     {}

// Server is a probed server and the masters that listed it, as far as
// known when its probe ended (none for an extra target).
type Server struct {
	probe.Result
	Masters []string
}

// Summary is the outcome of a run.
type Summary struct {
	Masters []MasterReport
	Listed  int          // distinct servers listed
	Probe   probe.Counts // the probe engine's counts
	// Refused counts, by reason (a netscope.Scope's name, or "master"),
	// the distinct servers public masters listed and that were not
	// probed for their address (see Config.AllowLocal); nil when none was.
	Refused map[string]int
	// Master traffic: queries sent and bytes each way, and packets on the
	// master socket from other addresses (dropped).
	MasterQueries  int
	MasterBytesOut int64
	MasterBytesIn  int64
	Stray          int
	// ListsTook is the time until the last master's list ended;
	// FirstResult until the first server answered; Took the whole run.
	ListsTook   time.Duration
	FirstResult time.Duration
	Took        time.Duration
}

// admission returns the burst and rate of the admission of listed
// servers; a negative rate admits every server at once.
func (c *Config) admission() (burst int, rate float64) {
	burst, rate = c.AdmitBurst, c.AdmitRate
	if burst <= 0 {
		burst = DefaultAdmitBurst
	}
	if rate == 0 {
		rate = DefaultAdmitRate
	}
	return burst, rate
}

// Discover asks cfg.Masters for their lists on masterConn and probes every
// server listed (and cfg.Extra) from probeConn, reporting each event to
// each as it happens. each is never called concurrently. Discover returns
// when every list has ended and every server has a result, or when ctx
// ends. It must be the only reader of both conns; it closes neither. The
// two may not be the same socket.
//
// Discover is the shell around the run's pure core (session): one
// goroutine reads the master socket, the prober ([probe.Prober.Stream])
// runs in another, and this one owns the core, feeding it packets,
// results and the clock, writing the queries it returns and handing the
// servers it admits to the prober.
func Discover(ctx context.Context, masterConn, probeConn probe.Conn, cfg Config, each func(Event)) (Summary, error) {
	start := time.Now()
	s := newSession(cfg, start)
	s.addExtra()

	type result struct {
		i  int
		r  probe.Result
		at time.Time
	}
	results := make(chan result)
	in := make(chan probe.Target)
	probed := make(chan error, 1)
	var counts probe.Counts
	go func() {
		var err error
		counts, err = cfg.Prober.Stream(ctx, probeConn, in, func(i int, r probe.Result) {
			results <- result{i, r, time.Now()}
		})
		probed <- err
	}()

	reads := make(chan masterDatagram, 64)
	stopReading := startReading(masterConn, reads)
	defer stopReading()

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var queue []probe.Target // admitted, not yet taken by the prober
	var lerr, perr error
	inOpen, proberRunning := true, true
	done := ctx.Done()
	for proberRunning {
		now := time.Now()
		if !s.listsDone() {
			for _, o := range s.poll(now) {
				_, err := masterConn.WriteToUDPAddrPort(o.b, o.to)
				s.wrote(now, o, err)
			}
		}
		if s.listsDone() && reads != nil {
			s.endLists(now)
			stopReading()
			reads = nil
		}
		if inOpen {
			queue = append(queue, s.due(now)...)
		}
		for _, e := range s.takeEvents() {
			each(e)
		}
		var feed chan probe.Target
		var next probe.Target
		if len(queue) > 0 {
			feed, next = in, queue[0]
		} else if inOpen && s.allHanded() {
			close(in)
			inOpen = false
		}
		w := s.wake()
		if a := s.admitWake(); inOpen && !a.IsZero() && (w.IsZero() || a.Before(w)) {
			w = a
		}
		if !w.IsZero() {
			timer.Reset(time.Until(w))
		} else {
			timer.Stop()
		}
		select {
		case <-done:
			done = nil // the prober ends its targets with ctx's error
			s.stop(time.Now(), ctx.Err())
			lerr = ctx.Err()
			queue = nil
			if inOpen {
				close(in)
				inOpen = false
			}
		case <-timer.C:
		case d := <-reads:
			if d.err != nil {
				s.stop(d.at, d.err)
				lerr = d.err
				continue
			}
			if !s.listsDone() {
				for _, o := range s.receive(d.at, d.from, d.b) {
					_, err := masterConn.WriteToUDPAddrPort(o.b, o.to)
					s.wrote(d.at, o, err)
				}
			}
		case feed <- next:
			queue = queue[1:]
		case r := <-results:
			s.result(r.at, r.i, r.r)
		case perr = <-probed:
			proberRunning = false
		}
	}
	for _, e := range s.takeEvents() {
		each(e)
	}
	sum := s.summary(time.Now())
	sum.Probe = counts
	if err := errors.Join(perr, lerr); err != nil {
		return sum, fmt.Errorf("discover: %w", err)
	}
	return sum, nil
}

// masterDatagram is one read of the master socket.
type masterDatagram struct {
	b    []byte
	from netip.AddrPort // unmapped
	at   time.Time
	err  error // the socket failed; nothing more comes
}

// startReading reads conn in a goroutine, sending each datagram, timed at
// its read, to out, until the returned stop is called (stop may be called
// more than once, and waits for the reader to end). A socket that fails
// maxReadErrors times in a row, or is closed, ends with one datagram
// carrying the error.
func startReading(conn probe.Conn, out chan<- masterDatagram) (stop func()) {
	quit := make(chan struct{})
	ended := make(chan struct{})
	conn.SetReadDeadline(time.Time{})
	go func() {
		defer close(ended)
		buf := make([]byte, probe.ReadBufferSize)
		errs := 0
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			d := masterDatagram{at: time.Now()}
			switch {
			case err == nil:
				errs = 0
				d.b, d.from = append([]byte(nil), buf[:n]...), netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
			case errors.Is(err, os.ErrDeadlineExceeded):
				select {
				case <-quit:
					return
				default:
					continue
				}
			case !errors.Is(err, net.ErrClosed) && errs < maxReadErrors:
				errs++ // an ICMP error on some platforms; the socket lives on
				continue
			default:
				d.err = err
			}
			select {
			case out <- d:
			case <-quit:
				return
			}
			if d.err != nil {
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			conn.SetReadDeadline(time.Unix(1, 0)) // wakes the reader
			<-ended
		})
	}
}
