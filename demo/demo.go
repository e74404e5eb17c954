// Package demo runs scout's demonstration in one process on loopback: a
// master, an emulated world of Enemy Territory servers placed in real
// networks of real countries with the delays a player in Melbourne sees,
// registered with the master by real heartbeats, and four discoveries of
// it over real sockets, side by side: conventional (master order, the
// Enemy Territory client's window of 16), adaptive as the paper gives it
// (Armitage's Algorithms 1 and 2), adaptive with this project's variant
// (adaptive.Scout) and the oracle (exactly the playable servers, nearest
// first: the bound no client can reach, since it needs the true RTTs).
//
// It is a shell: it owns the sockets, the clocks and the emulator. The
// counting of what each run found ([Found]) is a pure function of the
// run's outcomes and the world's ground truth.
//
// # The world
//
// The servers come from package population with the model of scout sim's
// tables (population.FittedVantage: the calibrated world with the
// per-vantage latency residual): public IPv4 addresses in the prefixes
// their origin ASes announced in 2008, in the countries and the hosting
// networks real server lists show, in the order a master lists them; each
// server's RTT is the model's from the chosen place (Melbourne by default)
// to the server's city, network and /16. The emulator adds to every reply
// that RTT, a jitter drawn uniformly from [0, 2*mean) with the model's
// per-ping mean (1.1 ms + 0.5% of the RTT), and Loss (1%). Host names,
// maps and players come from world.Generate.
//
// # Ground truth
//
// A server is playable when the RTT the emulator was told to give it (its
// path's RTT, before jitter, loss and the loopback's own delay) is below
// StopRTT: that is a property of the world, not of one measurement. A run
// found a playable server when it probed it and the server answered,
// whatever RTT that probe measured: jitter only lengthens an RTT, so a
// server at 199 ms may measure 201 ms, and counting measured RTTs under
// 200 ms would make the jitter, not the ordering, decide the count.
//
// # No packet leaves loopback
//
// Every server's socket is on 127.0.0.0/8 (127.1.0.1 upwards, one loopback
// address per public address, the port kept); the master's socket and the
// clients' sockets are wrapped with the world's loopnat table, so the
// master lists public addresses, the clients probe public addresses, and
// every datagram goes to a loopback address (loopnat drops any other).
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/geo"
	"github.com/scout-discovery/scout/loopnat"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/population"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/world"
)

// Defaults of a Config whose fields are zero.
const (
	DefaultServers = 2000
	DefaultPlace   = "AU"
	// DefaultLoss is each reply's chance of being lost.
	DefaultLoss = 0.01
	// DefaultTimeout and DefaultAttempts are the probes': one retry after
	// a second, so a lost reply costs a second, not the server.
	DefaultTimeout  = time.Second
	DefaultAttempts = 2
	// DefaultRegister bounds the wait for every server to be listed.
	DefaultRegister = 20 * time.Second
)

// Config is one demonstration.
type Config struct {
	Servers int    // world size; 0 means DefaultServers
	Seed    uint64 // world, emulator and planner seed
	Place   string // the client's place, a key of population.Places; "" means DefaultPlace
	Loss    float64
	// NoLoss sets Loss to 0 (Loss 0 means DefaultLoss).
	NoLoss bool
	// StopRTT is the largest playable RTT, exclusive: a server is playable
	// when its true RTT is below it, and the oracle probes exactly those;
	// 0 means adaptive.Paper().StopRTT (200 ms).
	StopRTT time.Duration
	// Variants are the adaptive runs, between conventional and the oracle;
	// nil means DefaultVariants(StopRTT).
	Variants []Variant
	// Window is the probes in flight of every run; 0 means the ET client's
	// probe.DefaultWindow (16).
	Window   int
	Timeout  time.Duration
	Attempts int
	// Register bounds the wait for the master to list every server.
	Register time.Duration
	// Landmarks are the cities of the masters (population.Cities names),
	// each a landmark (landmarks.go); nil means DefaultLandmarks. The
	// first lists the world for every run.
	Landmarks []string
	// LandmarkPlan, if set, adds the landmark run ("landmarks", before
	// the oracle): scout servers --order landmarks' planner.
	LandmarkPlan LandmarkPlan
	// Log, when set, gets a line at each stage.
	Log io.Writer
}

// Variant is one adaptive run: a name for the table and the planner's
// constants.
type Variant struct {
	Name   string
	Params adaptive.Params
}

// DefaultVariants are the paper's algorithm (adaptive.Paper) and this
// project's variant (adaptive.Scout), both auto-stopping at stopRTT (0
// keeps theirs, 200 ms).
func DefaultVariants(stopRTT time.Duration) []Variant {
	paper, scout := adaptive.Paper(), adaptive.Scout()
	if stopRTT > 0 {
		paper.StopRTT, scout.StopRTT = stopRTT, stopRTT
	}
	return []Variant{{Name: "adaptive, paper", Params: paper}, {Name: "adaptive, scout", Params: scout}}
}

// Run is one discovery of the world.
type Run struct {
	Name string
	// Params are an adaptive run's constants; nil for conventional and the
	// oracle.
	Params   *adaptive.Params
	Summary  discover.Summary
	Ordering discover.Ordering // Probes is set for every run; the rest for adaptive and oracle
	// Found counts the playable servers (true RTT below StopRTT) that
	// answered a probe of the run, whatever RTT it measured (see [Found]);
	// LastPlayable is when the last of them answered, since the run began.
	Found        int
	LastPlayable time.Duration
	// Landmarks are the landmark run's landmarks (the masters that
	// answered with their RTTs); nil for the other runs.
	Landmarks []string
	Err       error
}

// Report is the outcome of a demonstration.
type Report struct {
	Place   population.Place
	Servers int // in the world
	// Countries and ASes of the world; Listed is what the master listed
	// when discovery began, of Servers.
	Countries, ASes int
	Listed          int
	Registration    time.Duration
	// WorldPlayable counts the servers whose RTT from Place is below
	// StopRTT (the path's own RTT, before jitter and loss); Playable those
	// of them the master listed, which discovery can find.
	WorldPlayable, Playable int
	StopRTT                 time.Duration
	// Masters are the landmark masters; the first listed the world.
	Masters []LandmarkMaster
	// Runs are conventional, the adaptive variants in Config order, the
	// landmark run (with Config.LandmarkPlan) and the oracle.
	Runs []Run
	Took time.Duration
}

// Build makes the demonstration's world from the population model: ET
// servers at their public addresses with the delays from place, and the
// true RTT of each server.
func Build(cfg Config) (world.World, population.Place, error) {
	w, place, _, err := build(cfg)
	return w, place, err
}

// build is Build, with the population the world was made from.
func build(cfg Config) (world.World, population.Place, *population.World, error) {
	cfg = cfg.withDefaults()
	place, ok := population.Places()[cfg.Place]
	if !ok {
		return world.World{}, place, nil, fmt.Errorf("demo: unknown place %q (known: %v)", cfg.Place, placeNames())
	}
	pop, err := population.Build(population.FittedVantage(population.ET, cfg.Servers, cfg.Seed))
	if err != nil {
		return world.World{}, place, nil, err
	}
	rtts := pop.RTTs(place)
	gen, err := world.Generate(world.Spec{Servers: len(pop.Servers), Games: world.Mix{{Game: world.ET, Weight: 1}},
		Full: 0.1, Empty: 0.5, Seed: cfg.Seed})
	if err != nil {
		return world.World{}, place, nil, err
	}
	w := world.World{Version: world.FormatVersion, Seed: cfg.Seed}
	hosts := map[netip.Addr]netip.Addr{}
	for i, ps := range pop.Servers {
		s := gen.Servers[i]
		lo, ok := hosts[ps.Addr.Addr()]
		if !ok {
			lo = loopbackHost(len(hosts))
			hosts[ps.Addr.Addr()] = lo
		}
		rtt := min(rtts[i], world.MaxRTT)
		jitter := 2 * (1100*time.Microsecond + rtt/200) // uniform [0, 2*mean): the model's per-ping mean
		s.Public, s.Loopback = ps.Addr, netip.AddrPortFrom(lo, ps.Addr.Port())
		s.Link = world.Link{RTT: world.Duration(rtt), Jitter: world.Duration(jitter), Loss: cfg.Loss}
		s.Country, s.ASN = ps.Country, ps.ASN
		w.Servers = append(w.Servers, s)
	}
	return w, place, pop, nil
}

// loopbackHost is the i-th server host: 127.1.0.1 upwards, skipping .0 and
// .255 (127.0.0.0/16 is left to the clients and the master).
func loopbackHost(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(1 + i/(256*254)), byte(i / 254 % 256), byte(1 + i%254)})
}

func placeNames() []string {
	var out []string
	for k := range population.Places() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (cfg Config) withDefaults() Config {
	if cfg.Servers == 0 {
		cfg.Servers = DefaultServers
	}
	if cfg.Place == "" {
		cfg.Place = DefaultPlace
	}
	if cfg.Loss == 0 && !cfg.NoLoss {
		cfg.Loss = DefaultLoss
	}
	if cfg.NoLoss {
		cfg.Loss = 0
	}
	if cfg.StopRTT == 0 {
		cfg.StopRTT = adaptive.Paper().StopRTT
	}
	if cfg.Variants == nil {
		cfg.Variants = DefaultVariants(cfg.StopRTT)
	}
	if cfg.Window == 0 {
		cfg.Window = probe.DefaultWindow
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Attempts == 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.Register == 0 {
		cfg.Register = DefaultRegister
	}
	if cfg.Landmarks == nil {
		cfg.Landmarks = DefaultLandmarks
	}
	return cfg
}

func (cfg Config) logf(format string, a ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, format+"\n", a...)
	}
}

// Env is a running demonstration world: the emulated servers and the master
// that lists them, on loopback.
type Env struct {
	// Master is the master's (loopback) address; Table translates the
	// servers' public addresses to their sockets, for loopnat.Wrap.
	Master netip.AddrPort
	Table  *loopnat.Table
	// Report holds the world's figures; Runs is empty.
	Report Report
	// Truth is every server's RTT from the place: the path's, the RTT the
	// emulator was told to give it, before jitter.
	Truth map[netip.AddrPort]time.Duration
}

// Start builds the world, runs it and the master until ctx ends, and
// returns once the master lists the world (see waitListed). stop ends both
// and waits for them.
func Start(ctx context.Context, cfg Config) (env *Env, stop func(), err error) {
	start := time.Now()
	cfg = cfg.withDefaults()
	rep := Report{StopRTT: cfg.StopRTT}
	w, place, pop, err := build(cfg)
	if err != nil {
		return nil, nil, err
	}
	cities, err := landmarkCities(cfg.Landmarks)
	if err != nil {
		return nil, nil, err
	}
	rep.Place, rep.Servers = place, len(w.Servers)
	truth := map[netip.AddrPort]time.Duration{}
	countries, ases := map[string]bool{}, map[uint32]bool{}
	for _, s := range w.Servers {
		truth[s.Public] = time.Duration(s.Link.RTT)
		countries[s.Country], ases[s.ASN] = true, true
		if time.Duration(s.Link.RTT) < rep.StopRTT {
			rep.WorldPlayable++
		}
	}
	rep.Countries, rep.ASes = len(countries), len(ases)
	cfg.logf("world: %d Enemy Territory servers in %d countries, %d ASes; %d playable from %s (RTT < %v)",
		rep.Servers, rep.Countries, rep.ASes, rep.WorldPlayable, place.City.Name, rep.StopRTT)

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	halt := func() { cancel(); wg.Wait() }
	var conns []*net.UDPConn
	defer func() {
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			halt()
		}
	}()

	// The masters, each a landmark on a loopback IP of its own (the world
	// answers it with its city's RTTs), on sockets wrapped with the
	// world's table.
	requesters := map[netip.Addr][]world.Link{}
	var addrs []netip.AddrPort
	for k, c := range cities {
		mconn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(landmarkHost(k), 0)))
		if err != nil {
			return nil, nil, err
		}
		conns = append(conns, mconn)
		a := mconn.LocalAddr().(*net.UDPAddr).AddrPort()
		addrs = append(addrs, a)
		requesters[a.Addr()] = landmarkLinks(pop, c, cfg.Loss)
		rep.Masters = append(rep.Masters, LandmarkMaster{City: c, Addr: a, ClientRTT: place.Access + population.CityRTT(place.City, c)})
	}
	// RealTime: replies leave on time on a loaded machine where the process
	// may (root or CAP_SYS_NICE); silently ordinary otherwise.
	emu, err := world.Listen(w, world.Config{Masters: addrs, Requesters: requesters, RealTime: true})
	if err != nil {
		return nil, nil, err
	}
	table := emu.Table()
	var regs []*master.Registry
	for k, c := range cities {
		m, err := newMaster(landmarkID(c))
		if err != nil {
			emu.Close()
			return nil, nil, err
		}
		regs = append(regs, m.Registry)
		mconn := conns[k]
		wg.Go(func() {
			defer mconn.Close()
			m.Server.Serve(ctx, loopnat.Wrap(mconn, table), false)
		})
		wg.Go(func() { m.Server.Tick(ctx, masterd.TickInterval) })
	}
	conns = nil // the masters' goroutines close them
	wg.Go(func() {
		if err := emu.Run(ctx); err != nil {
			cfg.logf("world: %v", err)
		}
	})

	// Registration: heartbeat, getinfo challenge, infoResponse, listed,
	// at every master.
	var listed []int
	for _, reg := range regs {
		n, err := waitListed(ctx, reg, len(w.Servers), cfg.Register)
		if err != nil {
			return nil, nil, err
		}
		listed = append(listed, n)
	}
	rep.Listed, _ = regs[0].Counts() // after every master's wait: the first's list when discovery begins
	rep.Registration = time.Since(start)
	for k, m := range rep.Masters {
		cfg.logf("master %v in %s (the player's RTT to it %v): %d of %d servers registered by heartbeat",
			m.Addr, m.City.Name, m.ClientRTT.Round(time.Millisecond), listed[k], rep.Servers)
	}
	cfg.logf("registration took %.1fs", rep.Registration.Seconds())
	rep.Playable = 0
	for _, s := range regs[0].Servers(nil) {
		if r, ok := truth[s.Addr]; ok && r < rep.StopRTT {
			rep.Playable++
		}
	}

	return &Env{Master: addrs[0], Table: table, Report: rep, Truth: truth}, halt, nil
}

// landmarkID is city's name as a landmark id (q3.LandmarksResponse's
// characters).
func landmarkID(c population.City) string {
	b := []byte(c.Name)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

// Demo runs the demonstration until every run has ended or ctx ends.
func Demo(ctx context.Context, cfg Config) (Report, error) {
	start := time.Now()
	cfg = cfg.withDefaults()
	env, stop, err := Start(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	defer stop()
	rep, truth, table, masterAddr := env.Report, env.Truth, env.Table, env.Master
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The three runs, side by side, each on its own socket.
	g := gameET()
	req, err := discover.RequestFor(g, 0, false)
	if err != nil {
		return rep, err
	}
	base := discover.Config{Masters: []discover.Master{{Name: "demo", Addr: masterAddr, Request: req}},
		Quiet:  300 * time.Millisecond,
		Prober: probe.Prober{Window: cfg.Window, Timeout: cfg.Timeout, Attempts: cfg.Attempts}}
	locate := func(a netip.Addr) (string, uint32) {
		info, ok := geo.Default().Lookup(a)
		if !ok {
			return "", 0
		}
		return info.Country, info.ASN
	}
	runs := []Run{{Name: "conventional"}}
	plans := []discover.Planner{nil}
	for k, v := range cfg.Variants {
		p := v.Params
		runs = append(runs, Run{Name: v.Name, Params: &p})
		plans = append(plans, func(ts []adaptive.Target) (adaptive.Strategy, error) {
			return adaptive.New(ts, p, rand.New(rand.NewPCG(cfg.Seed, 0xad+uint64(k))))
		})
	}
	lmRun := -1
	var lmMu sync.Mutex
	var lmReports []discover.MasterReport
	if cfg.LandmarkPlan != nil {
		lmRun = len(runs)
		scout := adaptive.Scout()
		scout.StopRTT = rep.StopRTT
		runs = append(runs, Run{Name: "landmarks", Params: &scout})
		plans = append(plans, func(ts []adaptive.Target) (adaptive.Strategy, error) {
			lmMu.Lock()
			reps := slices.Clone(lmReports)
			lmMu.Unlock()
			return cfg.LandmarkPlan(ts, reps)
		})
	}
	runs = append(runs, Run{Name: "oracle"})
	plans = append(plans, func(ts []adaptive.Target) (adaptive.Strategy, error) {
		return adaptive.NewOracle(ts, func(t adaptive.Target) (time.Duration, bool) {
			r, ok := truth[t.Addr]
			return r, ok
		}, rep.StopRTT-time.Nanosecond) // playable: below StopRTT, as counted above
	})
	geo.Default() // load the tables before the clocks start
	names := make([]string, 0, len(cfg.Variants))
	for _, v := range cfg.Variants {
		names = append(names, fmt.Sprintf("%s (%s clusters, auto-stop at %v)", v.Name, v.Params.ClusterBy, v.Params.StopRTT))
	}
	// The landmark run asks every master, each through a relay that
	// gives the player's RTT to its city.
	lmBase := base
	var relays sync.WaitGroup // ended by cancel
	if lmRun >= 0 {
		// getserversExt: the landmark extension's form (ET's own client
		// asks with getservers).
		ext, err := discover.RequestFor(g, 0, true)
		if err != nil {
			return rep, err
		}
		lmBase.Masters, lmBase.Landmarks = nil, true
		for _, m := range rep.Masters {
			ra, err := Relay(ctx, &relays, m.Addr, m.ClientRTT)
			if err != nil {
				return rep, err
			}
			lmBase.Masters = append(lmBase.Masters, discover.Master{Name: m.City.Name, Addr: ra, Request: ext})
		}
		var cities []string
		for _, m := range rep.Masters {
			cities = append(cities, fmt.Sprintf("%s (%v away)", m.City.Name, m.ClientRTT.Round(time.Millisecond)))
		}
		names = append(names, "landmarks ("+strings.Join(cities, ", ")+")")
	}
	cfg.logf("discovering: conventional (master order, window %d), %s and oracle, side by side",
		cfg.Window, strings.Join(names, ", "))
	var runWG sync.WaitGroup
	for i := range runs {
		runWG.Go(func() {
			r := &runs[i]
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				r.Err = err
				return
			}
			defer c.Close()
			mc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				r.Err = err
				return
			}
			defer mc.Close()
			pc, mw := loopnat.Wrap(c, table), loopnat.Wrap(mc, table)
			switch {
			case plans[i] == nil:
				r.Summary, r.Ordering.Probes, r.Err = conventional(ctx, mw, pc, base)
			case i == lmRun:
				r.Summary, r.Ordering, r.Err = discover.Ordered(ctx, mw, pc, lmBase, locate, plans[i], func(e discover.Event) {
					if d, ok := e.(discover.MasterDone); ok {
						lmMu.Lock()
						lmReports = append(lmReports, d.MasterReport)
						if d.Landmark != "" {
							r.Landmarks = append(r.Landmarks, d.Landmark)
						}
						lmMu.Unlock()
					}
				})
			default:
				r.Summary, r.Ordering, r.Err = discover.Ordered(ctx, mw, pc, base, locate, plans[i], func(discover.Event) {})
			}
			r.Found, r.LastPlayable = Found(r.Ordering.Probes, truth, rep.StopRTT)
		})
	}
	runWG.Wait()
	rep.Runs = runs
	rep.Took = time.Since(start)
	cancel()
	relays.Wait()
	var errs []error
	for _, r := range runs {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Name, r.Err))
		}
	}
	return rep, errors.Join(errs...)
}

// conventional runs discover.Discover (probing while the list arrives, in
// master order) and records its probes from the events.
func conventional(ctx context.Context, mconn, pconn probe.Conn, cfg discover.Config) (discover.Summary, []discover.Outcome, error) {
	start := time.Now()
	var probes []discover.Outcome
	sum, err := discover.Discover(ctx, mconn, pconn, cfg, func(e discover.Event) {
		p, ok := e.(discover.Probed)
		if !ok {
			return
		}
		now := time.Since(start)
		o := discover.Outcome{Addr: p.Addr, Phase: adaptive.Master, At: now, Answered: p.Answered()}
		if o.Answered {
			o.RTT, o.At = p.RTT, now-p.RTT
		}
		probes = append(probes, o)
	})
	return sum, probes, err
}

// newMaster builds one of the demo's masters, the landmark named landmark:
// loopback clients allowed to query, no flood protection (the clients ask
// once each), no outbound budget to speak of; the socket is the caller's.
func newMaster(landmark string) (*masterd.Master, error) {
	return masterd.NewMaster(time.Now(), masterd.Config{
		Listen:       []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		NoQueryLimit: true,
		OutRate:      1_000_000_000,
		Handler:      master.HandlerConfig{Landmark: landmark},
	})
}

// settle is how long the master's list must stay the same, every server
// having heartbeated, before discovery begins: longer than any emulated
// RTT's verification round trip.
const settle = 1500 * time.Millisecond

// waitListed waits until the registry lists want servers, or until every
// server has heartbeated (listed + pending >= want) and the list has not
// changed for settle: a server whose verification reply was lost (the
// world's loss applies to it) stays unlisted until its next heartbeat, as
// on the Internet. At limit it returns what is listed.
func waitListed(ctx context.Context, reg *master.Registry, want int, limit time.Duration) (int, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	last, since := -1, time.Now()
	for {
		listed, pending := reg.Counts()
		if listed != last {
			last, since = listed, time.Now()
		}
		if listed >= want || (listed+pending >= want && time.Since(since) >= settle) {
			return listed, nil
		}
		select {
		case <-ctx.Done():
			return listed, ctx.Err()
		case <-deadline.C:
			return listed, nil
		case <-tick.C:
		}
	}
}

func gameET() *game.Game {
	for _, g := range game.Builtin() {
		if g.Name == "et" {
			return g
		}
	}
	panic("demo: no et in the game catalogue")
}
