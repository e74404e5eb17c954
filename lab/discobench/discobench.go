// Package discobench measures server discovery side by side: scout
// servers and qstat's quakestat find the same emulated world through the
// same master, and each run is judged by what the world knows about
// itself (which servers exist, each one's injected round-trip time, how
// many requests reached it).
//
// # The identity world
//
// quakestat knows nothing of package loopnat, so every address it is
// given must be one it can reach directly on loopback. An [Env] therefore
// runs an identity world: a scout master on 127.0.0.1 with
// --list-loopback and no address translation, and a world of emulated
// servers (package world) heartbeating to it from their own loopback
// sockets. The master lists each server by the source address of its
// verified heartbeat, which is its loopback address: no public-looking
// address (the world file's Public field) reaches the master, scout or
// quakestat. [Env.CheckLoopback] refuses to go on if the master lists
// anything off 127.0.0.0/8.
//
// # What is measured
//
// For each client run ([Env.Scout], [Env.Quakestat]):
//
//   - wall time, from starting the process to its exit (master query
//     included, process start-up included for both);
//   - servers found: those the client reports as answering, out of those
//     the master lists;
//   - probes: datagrams the world's servers received during the run
//     (retries and rate-limited requests included), counted by the
//     emulator, the same for both clients;
//   - traffic ([Traffic]): every datagram between the client and the
//     world's servers and between the client and the master, both ways,
//     as the loopback interface carried it (a packet socket, Linux, needs
//     CAP_NET_RAW), payload bytes and bytes on the wire (HeaderBytes more
//     per datagram), and the shapes of the requests the servers got.
//     Without the tap ([Env.TapErr]), bytes are scout's own count of
//     request payload bytes, and for quakestat probes times its request
//     size, captured from one quakestat run against a scripted socket
//     ([QuakestatRequest]);
//   - RTT error: reported RTT minus the server's injected RTT, at p50 and
//     p99 over the servers found. scout reports microseconds; quakestat
//     whole milliseconds (its -json "ping"), so its error carries up to
//     1 ms of rounding.
//
// Nothing in this package leaves loopback: the master binds 127.0.0.1,
// the world binds 127.0.0.0/8 and refuses non-loopback masters, and the
// clients are only ever given the master's loopback address.
package discobench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
)

// Limits of one Env.
const (
	// MaxServers bounds the world an Env runs.
	MaxServers = 20_000
	// DefaultListTimeout bounds the wait for the master to list the whole
	// world.
	DefaultListTimeout = 60 * time.Second
	// pollEvery is how often the master's registry is read while waiting.
	pollEvery = 20 * time.Millisecond
)

// Config describes an identity world and its master.
type Config struct {
	// Servers is the number of emulated servers, 1 to MaxServers.
	Servers int
	// Games is the world's game mix; nil means OpenArena alone (Quake III
	// protocol 71, heartbeat QuakeArena-1: what quakestat -q3m,71 lists).
	Games world.Mix
	// Full and Empty are the shares of full and empty servers.
	Full, Empty float64
	// RTTMin and RTTMax bound the injected round-trip times (each hosting
	// network draws one, see world.Spec).
	RTTMin, RTTMax time.Duration
	// Loss is the probability that a reply datagram is lost.
	Loss float64
	// Gone is the share of servers that answer the master only
	// (world.Server.Gone): listed, they never answer a client.
	Gone float64
	// Seed seeds the world.
	Seed uint64
	// FloodProtection keeps the master's default defence on queries on
	// (response rate limiting per victim address, masterd.Config.Responses);
	// benchmarks that query many times turn it off.
	FloodProtection bool
	// ListTimeout bounds Start's wait; 0 means DefaultListTimeout.
	ListTimeout time.Duration
	// RealTime runs the world's releaser on a SCHED_FIFO thread
	// (world.Config.RealTime), as scout-lab world --realtime does.
	RealTime bool
	// Access is the clients' access link (world.Config.Access); the zero
	// value is none.
	Access world.AccessLink
	// HeartbeatInterval is the servers' heartbeat period
	// (world.Config.HeartbeatInterval); 0 means the games' 5 minutes. A
	// test that must see every server listed on a loaded machine shortens
	// it: the world's first heartbeats leave together, and a master that
	// is slow to read loses some to its full socket buffer, as a real
	// master would; the next heartbeat registers them.
	HeartbeatInterval time.Duration
}

// Env is a running master and identity world.
type Env struct {
	// Master is the master's address on 127.0.0.1.
	Master netip.AddrPort
	// World is the world as generated (Public addresses unused).
	World world.World
	// Emulator runs it; its Stats count what the servers received.
	Emulator *world.Emulator

	// TapErr is why traffic is not counted on loopback (see Traffic),
	// nil when it is.
	TapErr error

	tap    *tap
	access world.AccessLink
	reg    *master.Registry
	stats  *master.Stats
	truth  map[netip.AddrPort]*world.Server // by bound loopback address
	stop   func()
}

// Start runs a master and the world, and waits until the master lists
// every server of the world. Close stops both.
func Start(ctx context.Context, cfg Config) (*Env, error) {
	if cfg.Servers < 1 || cfg.Servers > MaxServers {
		return nil, fmt.Errorf("discobench: %d servers, want 1..%d", cfg.Servers, MaxServers)
	}
	games := cfg.Games
	if games == nil {
		games = world.Mix{{Game: world.OA, Weight: 1}}
	}
	w, err := world.Generate(world.Spec{Servers: cfg.Servers, Games: games, Full: cfg.Full, Empty: cfg.Empty,
		RTTMin: cfg.RTTMin, RTTMax: cfg.RTTMax, Loss: cfg.Loss, Gone: cfg.Gone, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m, err := masterd.NewMaster(time.Now(), masterd.Config{
		Listen:    []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		GCPercent: -1, // the world's runtime tuning (world.TuneRuntime) holds
		Reloadable: masterd.Reloadable{
			Registry:     master.Config{AllowLoopback: true},
			NoQueryLimit: !cfg.FloodProtection,
		},
	}, masterd.Deps{})
	if err != nil {
		cancel()
		return nil, err
	}
	if err := m.Listen(); err != nil {
		cancel()
		return nil, err
	}
	e := &Env{World: w, reg: m.Registry, stats: m.Handler.Stats(), access: cfg.Access}
	for _, a := range m.Addrs() {
		if a.Addr().Is4() && a.Addr().IsLoopback() {
			e.Master = a
		}
	}
	if !e.Master.IsValid() {
		m.Close()
		cancel()
		return nil, errors.New("discobench: the master has no socket on 127.0.0.1")
	}
	mdone := make(chan error, 1)
	go func() { mdone <- m.Run(runCtx) }()

	em, err := world.Listen(w, world.Config{Masters: []netip.AddrPort{e.Master}, RealTime: cfg.RealTime, Access: cfg.Access, HeartbeatInterval: cfg.HeartbeatInterval})
	if err != nil {
		cancel()
		<-mdone
		return nil, err
	}
	e.Emulator = em
	wdone := make(chan error, 1)
	go func() { wdone <- em.Run(runCtx) }()
	e.tap, e.TapErr = openTap()
	e.stop = func() {
		cancel()
		<-wdone
		<-mdone
		if e.tap != nil {
			e.tap.close()
		}
	}

	e.truth = make(map[netip.AddrPort]*world.Server, len(w.Servers))
	byPublic := make(map[netip.AddrPort]*world.Server, len(w.Servers))
	for i := range w.Servers {
		byPublic[w.Servers[i].Public] = &w.Servers[i]
	}
	for _, p := range em.Table().Pairs() {
		e.truth[p.Loopback] = byPublic[p.Public]
	}

	timeout := cfg.ListTimeout
	if timeout <= 0 {
		timeout = DefaultListTimeout
	}
	wctx, wcancel := context.WithTimeout(ctx, timeout)
	defer wcancel()
	if err := e.waitSettled(wctx, cfg.Servers); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// settleTime is how long the listing must stay unchanged, nothing
// pending, before a world with loss is taken as listed: the reply to the
// master's verifying getinfo is lost with the world's loss like any other
// reply, and such a server is only listed at its next heartbeat (5
// minutes on), so a world with 1% loss starts with about 1% unlisted.
const settleTime = 2 * time.Second

// minListedShare is the least share of the world that must be listed.
const minListedShare = 0.9

// waitSettled waits until the master lists all n servers, or the listing
// has settled (see settleTime) with at least minListedShare of them.
func (e *Env) waitSettled(ctx context.Context, n int) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	last, since := -1, time.Now()
	for {
		listed, pending := e.reg.Counts()
		if listed >= n {
			return nil
		}
		if listed != last || pending > 0 {
			last, since = listed, time.Now()
		} else if time.Since(since) >= settleTime && float64(listed) >= minListedShare*float64(n) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("discobench: the master lists %d of %d servers (%d pending): %w", listed, n, pending, ctx.Err())
		case <-tick.C:
		}
	}
}

// Close stops the world (its shutdown heartbeats included) and the
// master, and waits for both.
func (e *Env) Close() {
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
}

// Listed returns the addresses the master lists, sorted.
func (e *Env) Listed() []netip.AddrPort {
	var out []netip.AddrPort
	for _, s := range e.reg.Servers(nil) {
		out = append(out, s.Addr)
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return out
}

// WaitListed waits until the master lists at least n servers, or ctx
// ends.
func (e *Env) WaitListed(ctx context.Context, n int) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		listed, pending := e.reg.Counts()
		if listed >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("discobench: the master lists %d of %d servers (%d pending): %w", listed, n, pending, ctx.Err())
		case <-tick.C:
		}
	}
}

// CheckLoopback returns an error naming the first address the master
// lists that is not an IPv4 loopback address. Run it before handing the
// master to a program without address translation.
func (e *Env) CheckLoopback() error {
	for _, a := range e.Listed() {
		if !a.Addr().Is4() || !a.Addr().IsLoopback() {
			return fmt.Errorf("discobench: the master lists %v, which is not on 127.0.0.0/8", a)
		}
	}
	return nil
}

// MaxRTT returns the largest injected round-trip time of the world.
func (e *Env) MaxRTT() time.Duration {
	var m time.Duration
	for _, s := range e.World.Servers {
		m = max(m, time.Duration(s.Link.RTT))
	}
	return m
}

// Server returns the emulated server at the loopback address a, as the
// world describes it.
func (e *Env) Server(a netip.AddrPort) (*world.Server, bool) {
	s, ok := e.truth[a]
	return s, ok
}

// received returns the datagrams the world's servers have received so
// far from anyone but the master: the master's own verifying and
// re-probing queries (heartbeats, periodic re-probes) are taken off.
func (e *Env) received() uint64 {
	var fromMaster uint64
	for _, k := range []master.Kind{master.KindGetInfo, master.KindGetStatus, master.KindGetChallenge} {
		n, _ := e.stats.Out(k)
		fromMaster += n
	}
	return e.Emulator.Stats().Received - fromMaster
}
