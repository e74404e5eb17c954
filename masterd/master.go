package masterd

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/upstream"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/web"
)

// Master is a running scout master: its handler, sockets and store.
type Master struct {
	Config   Config // with its defaults filled in
	Server   *PacketServer
	Handler  *master.Handler
	Registry *master.Registry
	Log      *slog.Logger
	// History is every server's player count over time (the handler's
	// Observer); API serves the list, the detail and the ranking.
	History *history.History
	// Sightings is where players were seen recently, fed from the
	// registry's player lists (nil with Config.NoPlayerSightings). It is
	// kept in the state file with the history; a fleet's instances keep
	// each its own, in memory, from their own re-probes (player lists
	// are not shared).
	Sightings *history.Sightings
	API       *web.API

	deps   Deps
	writer *storeWriter
	// fleetHistory: the fleet's history was read at NewMaster
	// (HistoryFleet); if not, Run reads it once the fleet answers.
	fleetHistory bool
	conns        []*net.UDPConn
	motd         []*net.UDPConn
	httpLn       net.Listener
	httpConns    *connLimiter // httpLn within Config.HTTPLimits

	closeOnce sync.Once

	// reloadMu serialises Reload; running is the run-time configuration
	// in force (Config holds the one the master started with).
	reloadMu sync.Mutex
	running  Reloadable
}

// NewMaster builds a master from cfg working with deps: registry,
// defences, handler, and the servers restored from deps.Store or read
// from deps.Fleet. It opens no socket yet.
func NewMaster(now time.Time, cfg Config, deps Deps) (*Master, error) {
	cfg = cfg.withDefaults()
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	log := deps.Logger
	if deps.Fleet != nil && deps.Store != nil {
		return nil, errors.New("masterd: a state file and a fleet cannot both keep the registry")
	}
	chal, err := master.NewChallenger(cfg.ChallengeRotation, rand.Reader)
	if err != nil {
		return nil, err
	}
	reg, err := master.NewRegistry(cfg.Registry, chal)
	if err != nil {
		return nil, err
	}
	hist := history.New()
	var seen *history.Sightings
	if !cfg.NoPlayerSightings {
		seen = history.NewSightings()
	}
	lm := cfg.landmark(deps.Fleet)
	hd, err := handlerDeps(cfg, deps, reg, hist, seen, lm)
	if err != nil {
		return nil, err
	}
	wd := web.Deps{Registry: reg, History: hist, Sightings: seen, Landmark: lm, Logger: log}
	var h *master.Handler // set below; the API asks it for the upstreams' health
	wd.Upstreams = func(now time.Time) []upstream.Health { return h.Upstreams(now) }
	if lf, ok := deps.Fleet.(interface{ Landmarks() []master.Landmark }); ok {
		wd.Peers = lf.Landmarks // the fleet's other landmarks, at /api/v1/landmarks
	}
	api, err := web.New(cfg.API, wd)
	if err != nil {
		return nil, err
	}
	m := &Master{Config: cfg, Registry: reg, Log: log, History: hist, Sightings: seen, API: api, deps: deps, running: cfg.Reloadable}
	if len(cfg.LandmarkPeers) > 0 {
		if err := m.setLandmarkPeers(now, lm); err != nil {
			return nil, err
		}
	}
	if deps.Fleet != nil {
		if err := m.joinFleet(now, hd.Observer); err != nil {
			return nil, err
		}
		hd.Persist = deps.Fleet
	}
	if deps.Store != nil {
		if err := m.restore(now); err != nil {
			return nil, err
		}
		hd.Persist = m.writer
	}
	m.buildSnapshot()
	h, err = master.NewHandler(cfg.Handler, hd)
	if err != nil {
		return nil, err
	}
	m.Handler = h
	m.Server = NewPacketServer(h, log)
	return m, nil
}

// buildSnapshot builds the answer snapshot of what the store or the fleet
// gave, before any socket opens. A listing larger than the registry's
// InlineSnapshot is otherwise built by Run's refresher, seconds for a
// million, and the queries of those seconds would be answered from the
// empty snapshot the registry starts with.
func (m *Master) buildSnapshot() {
	start := time.Now()
	if m.Registry.Refresh(start) {
		listed, _ := m.Registry.Counts()
		m.Log.Info("answer snapshot built", "listed", listed, "took", time.Since(start).Round(time.Millisecond))
	}
}

// handlerDeps derives what the handler works with from cfg and deps: the
// defences cfg selects, the global budget, the history, the sightings (if
// kept) and deps.Observer as its observers, the landmark id. Persist is
// set by the caller once the store or fleet is read.
func handlerDeps(cfg Config, deps Deps, reg *master.Registry, hist *history.History, seen *history.Sightings, lm *master.Landmark) (master.HandlerDeps, error) {
	hd := master.HandlerDeps{Registry: reg, Logger: deps.Logger, Observer: hist, DeferEncoding: max(cfg.DeferEncoding, 0), Seed: randomSeed()}
	obs := observers{hist}
	if seen != nil {
		obs = append(obs, seen.Watch(reg.Players))
	}
	if deps.Observer != nil {
		obs = append(obs, deps.Observer)
	}
	if len(obs) > 1 {
		hd.Observer = obs
	}
	if lm != nil {
		hd.Landmark = lm.ID
	}
	var err error
	switch {
	case cfg.NoQueryLimit:
	case cfg.SourceThrottle:
		if hd.Queries, err = master.NewSourceLimiter(cfg.Queries.Throttle, cfg.Queries.Decay, cfg.MaxSources); err != nil {
			return hd, err
		}
	default:
		if hd.Responses, err = master.NewResponseLimiter(cfg.Responses); err != nil {
			return hd, err
		}
	}
	if hd.Heartbeats, err = master.NewSourceLimiter(cfg.Heartbeats.Throttle, cfg.Heartbeats.Decay, cfg.MaxSources); err != nil {
		return hd, err
	}
	if hd.Budget, err = master.NewByteBudget(cfg.OutRate, cfg.OutBurst); err != nil {
		return hd, err
	}
	if cfg.CookieRotation > 0 {
		if hd.Cookies, err = master.NewChallenger(cfg.CookieRotation, rand.Reader); err != nil {
			return hd, err
		}
	}
	return hd, nil
}

// setLandmarkPeers gives the registry's mesh the landmark masters to ping.
func (m *Master) setLandmarkPeers(now time.Time, lm *master.Landmark) error {
	switch {
	case lm == nil:
		return errors.New("masterd: only a landmark (Config.Landmark) pings landmark peers")
	case m.deps.Fleet != nil:
		return errors.New("masterd: a fleet's landmarks ping the fleet's other landmarks: LandmarkPeers is for a master alone")
	}
	peers := m.Config.LandmarkPeers
	if n := m.Registry.Mesh().SetPeers(now, peers); n != len(peers) {
		return fmt.Errorf("masterd: %d of %d landmark peers kept: each needs a landmark id (1 to %d letters, digits or ._:-[]) of its own and an address with a port, at most %d",
			n, len(peers), q3.MaxLandmarkIDLen, master.MaxLandmarks)
	}
	return nil
}

// joinFleet reads the shared registry (and, from a HistoryFleet, the
// history) before the master answers anything.
func (m *Master) joinFleet(now time.Time, obs master.Observer) error {
	f := m.deps.Fleet
	ctx, cancel := context.WithTimeout(context.Background(), FleetJoinTimeout)
	err := f.Join(ctx, m.Registry, obs)
	cancel()
	if err != nil {
		return fmt.Errorf("masterd: joining the fleet: %w", err)
	}
	if hf, ok := f.(HistoryFleet); ok {
		// Remember the changed days for Run's writes (TakeDirty)
		// from here on. The samples of the records Join applied are
		// not changes to write: the instance that verified each
		// wrote its day, and writing them all again (up to
		// history.MaxServers at every join) held Redis for
		// seconds, delaying the fleet's verifications behind it.
		m.History.OnChange(nil)
		ctx, cancel := context.WithTimeout(context.Background(), FleetJoinTimeout)
		m.fleetHistory = m.loadFleetHistory(ctx, hf, now, true)
		cancel()
	}
	return nil
}

// restore reads the servers (and, from a HistoryStore, the history) back
// from the store and starts the state writer.
func (m *Master) restore(now time.Time) error {
	st, log := m.deps.Store, m.Log
	servers, corrupt, err := st.Load()
	if err != nil {
		return fmt.Errorf("masterd: loading the state: %w", err)
	}
	n, skipped := m.Registry.Restore(now, servers)
	log.Info("restored", "servers", n, "skipped", len(skipped), "corrupt", corrupt)
	m.writer = newStoreWriter(st, log, m.Config.CommitInterval)
	if hs, ok := st.(HistoryStore); ok {
		days, corrupt, err := hs.LoadHistory()
		if err != nil {
			return fmt.Errorf("masterd: loading the history: %w", err)
		}
		loaded := make([]history.Day, 0, len(days))
		for _, d := range days {
			if len(d.Counts) != history.SlotsPerDay {
				corrupt++
				continue
			}
			wd := history.Day{Addr: d.Addr, Day: d.Day}
			copy(wd.Counts[:], d.Counts)
			loaded = append(loaded, wd)
		}
		m.History.Load(loaded)
		servers, _, _ := m.History.Len()
		log.Info("history restored", "servers", servers, "days", len(loaded), "corrupt", corrupt)
		m.writer.keepHistory(m.History)
	}
	if ps, ok := st.(PlayerStore); ok && m.Sightings != nil {
		recs, corrupt, err := ps.LoadPlayers()
		if err != nil {
			return fmt.Errorf("masterd: loading the player sightings: %w", err)
		}
		in := make([]history.SightingRecord, len(recs))
		for i, r := range recs {
			in[i] = history.SightingRecord{Key: r.Key, Value: r.Value}
		}
		corrupt += m.Sightings.Load(now, in)
		names, _, _ := m.Sightings.Len()
		log.Info("player sightings restored", "players", names, "corrupt", corrupt)
		m.writer.keepSightings(m.Sightings)
	}
	// Servers the current configuration refuses leave the state.
	for _, r := range skipped {
		m.writer.Delete(r.Addr)
	}
	return nil
}

// Listen opens the master and MOTD sockets, then the HTTP listener if
// Config.HTTP names one. An IPv6 socket that cannot be opened is skipped
// with a warning when Config.OptionalIPv6 (the default sockets), as
// dpmaster does.
func (m *Master) Listen() error {
	open := func(a netip.AddrPort) (*net.UDPConn, error) {
		network := "udp4"
		if a.Addr().Is6() && !a.Addr().Is4In6() {
			network = "udp6"
		}
		c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(a))
		if err != nil && m.Config.OptionalIPv6 && network == "udp6" {
			m.Log.Warn("IPv6 socket not opened", "addr", a, "err", err)
			return nil, nil
		}
		if err == nil && m.Config.ReadBuffer > 0 {
			// The kernel caps it at net.core.rmem_max without saying so.
			if err := c.SetReadBuffer(m.Config.ReadBuffer); err != nil {
				m.Log.Warn("receive buffer not set", "addr", a, "bytes", m.Config.ReadBuffer, "err", err)
			}
		}
		return c, err
	}
	for _, a := range m.Config.Listen {
		c, err := open(a)
		if err != nil {
			m.Close()
			return err
		}
		if c != nil {
			m.conns = append(m.conns, c)
			m.Log.Info("listening", "addr", c.LocalAddr().String(), "port", "master")
		}
	}
	for _, a := range m.Config.MOTDListen {
		c, err := open(a)
		if err != nil {
			m.Close()
			return err
		}
		if c != nil {
			m.motd = append(m.motd, c)
			m.Log.Info("listening", "addr", c.LocalAddr().String(), "port", "motd")
		}
	}
	if len(m.conns) == 0 {
		m.Close()
		return errors.New("masterd: no socket to listen on")
	}
	// A fleet's landmark is pinged by its peers where it listens, unless
	// its description names an address already.
	if lf, ok := m.deps.Fleet.(interface{ SetLandmarkAddress(netip.AddrPort) }); ok {
		lf.SetLandmarkAddress(m.Addrs()[0])
	}
	if m.Config.HTTP != "" {
		ln, err := net.Listen("tcp", m.Config.HTTP)
		if err != nil {
			m.Close()
			return fmt.Errorf("listening for HTTP on %s: %w", m.Config.HTTP, err)
		}
		m.httpLn = ln
		m.httpConns = newConnLimiter(ln, m.Config.HTTPLimits)
		m.Log.Info("listening", "addr", ln.Addr().String(), "port", "http")
	}
	return nil
}

// Addrs returns the addresses of the open master sockets.
func (m *Master) Addrs() []netip.AddrPort {
	var out []netip.AddrPort
	for _, c := range m.conns {
		out = append(out, c.LocalAddr().(*net.UDPAddr).AddrPort())
	}
	return out
}

// HTTPAddr returns the address of the HTTP listener, if one is open.
func (m *Master) HTTPAddr() net.Addr {
	if m.httpLn == nil {
		return nil
	}
	return m.httpLn.Addr()
}

// Run serves every socket, the ticker, the HTTP listener and the state
// writer until ctx ends, then closes the sockets and writes what is
// pending.
func (m *Master) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer tuneGC(m.Config.GCPercent)()
	var wg sync.WaitGroup
	serve := func(c *net.UDPConn, motd bool) {
		wg.Go(func() {
			if err := m.Server.Serve(ctx, c, motd); err != nil {
				cancel(fmt.Errorf("socket %v: %w", c.LocalAddr(), err))
			}
		})
	}
	for _, c := range m.conns {
		serve(c, false)
	}
	for _, c := range m.motd {
		serve(c, true)
	}
	wg.Go(func() { m.Server.Tick(ctx, TickInterval) })
	wg.Go(func() { refreshSnapshots(ctx, m.Handler.Registry(), SnapshotRefreshInterval) })
	wg.Go(func() { m.fetchPeers(ctx, TickInterval) })
	if m.httpLn != nil {
		hs := m.Config.HTTPLimits.server(m.HTTPHandler(), m.httpConns)
		go hs.Serve(m.httpConns)
		defer hs.Close()
	}
	var wdone chan struct{}
	if m.writer != nil {
		wdone = make(chan struct{})
		wctx, wcancel := context.WithCancel(context.Background())
		go func() { m.writer.run(wctx); close(wdone) }()
		defer func() { wcancel(); <-wdone }()
	}
	var fdone chan struct{}
	if m.deps.Fleet != nil {
		fdone = make(chan struct{})
		fctx, fcancel := context.WithCancel(context.Background())
		go func() { m.deps.Fleet.Run(fctx); close(fdone) }()
		defer func() { fcancel(); <-fdone }()
		if hf, ok := m.deps.Fleet.(HistoryFleet); ok {
			hdone := make(chan struct{})
			hctx, hcancel := context.WithCancel(context.Background())
			go func() { m.keepFleetHistory(hctx, hf, m.fleetHistory); close(hdone) }()
			defer func() { hcancel(); <-hdone }() // before the fleet stops
		}
	}
	<-ctx.Done()
	wg.Wait()
	m.Close()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// gcTuning counts the Runs that set the GC percent (Config.GCPercent):
// the first sets it, the last to return puts back the value from before
// the first.
var gcTuning struct {
	sync.Mutex
	runs int
	old  int
}

// tuneGC sets the process's GC percent to percent, unless percent is not
// positive or the GOGC environment variable is set, and returns the
// function that undoes it.
func tuneGC(percent int) (restore func()) {
	if percent <= 0 || os.Getenv("GOGC") != "" {
		return func() {}
	}
	gcTuning.Lock()
	defer gcTuning.Unlock()
	if gcTuning.runs == 0 {
		gcTuning.old = debug.SetGCPercent(percent)
	}
	gcTuning.runs++
	return func() {
		gcTuning.Lock()
		defer gcTuning.Unlock()
		if gcTuning.runs--; gcTuning.runs == 0 {
			debug.SetGCPercent(gcTuning.old)
		}
	}
}

// Close closes the sockets and the HTTP listener. It is idempotent.
func (m *Master) Close() error {
	m.closeOnce.Do(func() {
		for _, c := range append(m.conns, m.motd...) {
			c.Close()
		}
		if m.httpLn != nil {
			m.httpLn.Close()
		}
	})
	return nil
}

// NewLogger returns a text (or, with json, a JSON) logger writing records
// of level and above to w; a *slog.LevelVar as level lets a reload change
// it.
func NewLogger(w io.Writer, level slog.Leveler, json bool) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if json {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// observers tells each of its observers in turn.
type observers []master.Observer

func (o observers) Verified(now time.Time, s master.Server) {
	for _, x := range o {
		x.Verified(now, s)
	}
}
