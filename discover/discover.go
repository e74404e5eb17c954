package discover

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
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

// Discover asks cfg.Masters for their lists on masterConn and probes every
// server listed (and cfg.Extra) from probeConn, reporting each event to
// each as it happens. each is never called concurrently. Discover returns
// when every list has ended and every server has a result, or when ctx
// ends. It must be the only reader of both conns; it closes neither. The
// two may not be the same socket.
func Discover(ctx context.Context, masterConn, probeConn probe.Conn, cfg Config, each func(Event)) (Summary, error) {
	start := time.Now()
	var mu sync.Mutex // serialises each and guards what the two goroutines share below
	var sum Summary
	firstResult := time.Duration(0)
	emit := func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		each(e)
	}

	type listing struct{ masters []string }
	seen := map[netip.AddrPort]*listing{} // guarded by mu
	var order []netip.AddrPort            // target index -> address (guarded by mu)

	in := make(chan probe.Target, 256)
	c := &collector{cfg: cfg, byAddr: map[netip.AddrPort]*collecting{}}
	for _, m := range cfg.Masters {
		m.Addr = netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port())
		if c.byAddr[m.Addr] != nil {
			continue
		}
		cm := &collecting{Master: m, index: len(c.masters)}
		cm.rep = MasterReport{Name: m.Name, Addr: m.Addr, Protocol: m.Protocol.String()}
		c.masters = append(c.masters, cm)
		c.byAddr[m.Addr] = cm
	}
	c.list = func(m *collecting, ap netip.AddrPort) {
		mu.Lock()
		l := seen[ap]
		again := l != nil
		if !again {
			l = &listing{}
			seen[ap] = l
			order = append(order, ap)
			m.rep.New++
			sum.Listed++
		}
		if !slices.Contains(l.masters, m.Name) { // a master may list it under two forms
			l.masters = append(l.masters, m.Name)
		}
		each(Listed{Addr: ap, Master: m.Name, Again: again})
		mu.Unlock()
		if !again {
			select {
			case in <- probe.Target{Addr: ap, Dialect: m.Dialect}:
			case <-ctx.Done():
			}
		}
	}
	c.done = func(m *collecting) { emit(MasterDone{m.rep}) }

	collected := make(chan error, 1)
	go func() {
		// Extra targets first: they need no master.
		for _, t := range cfg.Extra {
			mu.Lock()
			dup := seen[t.Addr] != nil
			if !dup {
				seen[t.Addr] = &listing{}
				order = append(order, t.Addr)
			}
			mu.Unlock()
			if !dup {
				select {
				case in <- t:
				case <-ctx.Done():
				}
			}
		}
		var err error
		if len(c.masters) > 0 {
			err = collect(ctx, masterConn, c)
		}
		mu.Lock()
		sum.ListsTook = time.Since(start)
		mu.Unlock()
		close(in)
		collected <- err
	}()

	counts, perr := cfg.Prober.Stream(ctx, probeConn, in, func(i int, r probe.Result) {
		mu.Lock()
		defer mu.Unlock()
		s := Server{Result: r}
		if i < len(order) {
			if l := seen[order[i]]; l != nil {
				s.Masters = append([]string(nil), l.masters...)
			}
		}
		if r.Answered() && firstResult == 0 {
			firstResult = time.Since(start)
		}
		each(Probed{s})
	})
	cerr := <-collected

	mu.Lock()
	defer mu.Unlock()
	sum.Probe = counts
	for _, m := range c.masters {
		sum.Masters = append(sum.Masters, m.rep)
	}
	sum.MasterQueries, sum.MasterBytesOut, sum.MasterBytesIn, sum.Stray = c.sent, c.out, c.in, c.stray
	sum.FirstResult = firstResult
	sum.Took = time.Since(start)
	if err := errors.Join(perr, cerr); err != nil {
		return sum, fmt.Errorf("discover: %w", err)
	}
	return sum, nil
}
