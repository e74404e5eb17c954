// Package demo runs scout's demonstration in one process on loopback:
// landmark masters (landmarks.go), an emulated world of Enemy Territory
// servers placed in real networks of real countries with the delays a
// player in Melbourne sees, registered with the masters by real
// heartbeats, and discoveries of it over real sockets, side by side:
// conventional (master order, the Enemy Territory client's window of 16),
// adaptive as the paper gives it (Armitage's Algorithms 1 and 2), adaptive
// with this project's variant (adaptive.Scout), the landmark run (with
// Config.LandmarkRun) and the oracle (exactly the playable servers,
// nearest first: the bound no client can reach, since it needs the true
// RTTs).
//
// It is a shell: it owns the sockets, the clocks and the emulator. The
// counting of what each run found and missed ([Found], [Missed]) is a
// pure function of the run's outcomes and the world's ground truth.
//
// # The world
//
// The servers come from package population with the model of scout-lab sim's
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
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/geo"
	"github.com/scout-discovery/scout/lab/loopnat"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/rttcache"
)

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
	// answered with their RTTs); nil for the other runs. Matrix is their
	// RTTs to each other as its planner used them.
	Landmarks []string
	Matrix    LandmarkMatrix
	// Listed is the list the landmark run planned, for the memory of the
	// remembered run (rttcache.Cache.SetListed); nil for the other runs.
	Listed []netip.AddrPort
	// Unprobed and Unanswered split the playable servers the master
	// listed that the run did not find: never probed (its stop fired
	// first, or its context ended), or probed and never answered (every
	// reply lost); see [Missed].
	Unprobed, Unanswered int
	Err                  error
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
	// of them the first master listed, which every run can find (a
	// landmark run, which asks every master, finds only these counted).
	WorldPlayable, Playable int
	StopRTT                 time.Duration
	// Masters are the landmark masters; the first listed the world.
	Masters []LandmarkMaster
	// Runs are conventional, the adaptive variants in Config order, the
	// landmark run (with Config.LandmarkRun) and the oracle.
	Runs []Run
	Took time.Duration
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
	// The runs are judged on the servers the first master listed: a
	// server that only another master lists (its challenge answer to the
	// first was lost) is not counted for the landmark runs either.
	listed := make(map[netip.AddrPort]time.Duration, len(env.Playable))
	for _, a := range env.Playable {
		listed[a] = truth[a]
	}
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
	if cfg.Paced {
		base.Prober = probe.Prober{Pace: &probe.Pace{}, Timeout: cfg.Timeout, Attempts: cfg.Attempts}
	}
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
	if cfg.DefaultRun {
		scout := adaptive.Scout()
		scout.StopRTT = rep.StopRTT
		runs = append(runs, Run{Name: "default, no landmarks", Params: &scout})
		plans = append(plans, func(ts []adaptive.Target) (adaptive.Strategy, error) {
			pl, err := discover.PlanDefault(ts, nil, discover.PlanOptions{AutoStop: rep.StopRTT, Seed: cfg.Seed})
			if err != nil {
				return nil, err
			}
			return pl.Strategy(), nil
		})
	}
	lmRun := -1
	var lmMu sync.Mutex
	var lmReports []discover.MasterReport
	if cfg.LandmarkRun {
		lmRun = len(runs)
		scout := adaptive.Scout()
		scout.StopRTT = rep.StopRTT
		runs = append(runs, Run{Name: "landmarks", Params: &scout})
		plans = append(plans, func(ts []adaptive.Target) (adaptive.Strategy, error) {
			lmMu.Lock()
			reps := slices.Clone(lmReports)
			lmMu.Unlock()
			st, m, err := landmarkPlan(ts, reps, rep.StopRTT, cfg.Seed, nil, nil)
			runs[lmRun].Matrix = m // on the run's own goroutine (discover.Ordered calls the planner)
			for _, t := range ts {
				runs[lmRun].Listed = append(runs[lmRun].Listed, t.Addr)
			}
			return st, err
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
	if cfg.DefaultRun {
		names = append(names, "default, no landmarks (group probing over the scout variant)")
	}
	// The landmark run asks every master through its path, which gives
	// the player's RTT to its city.
	lmBase := base
	if lmRun >= 0 {
		// getserversExt: the landmark extension's form (ET's own client
		// asks with getservers).
		ext, err := discover.RequestFor(g, 0, true)
		if err != nil {
			return rep, err
		}
		lmBase.Masters, lmBase.Landmarks, lmBase.LandmarkPings = nil, true, discover.DefaultLandmarkPings
		for _, m := range rep.Masters {
			lmBase.Masters = append(lmBase.Masters, discover.Master{Name: m.City.Name, Addr: m.Path, Request: ext})
		}
		var cities []string
		for _, m := range rep.Masters {
			cities = append(cities, fmt.Sprintf("%s (%v away)", m.City.Name, m.ClientRTT.Round(time.Millisecond)))
		}
		names = append(names, "landmarks ("+strings.Join(cities, ", ")+")")
	}
	sending := fmt.Sprintf("window %d", cfg.Window)
	if cfg.Paced {
		sending = "paced"
	}
	cfg.logf("discovering: conventional (master order, %s), %s and oracle, side by side",
		sending, strings.Join(names, ", "))
	var runWG sync.WaitGroup
	for i := range runs {
		runWG.Go(func() {
			r := &runs[i]
			pc, mw, closeConns, err := runConns(table, i)
			if err != nil {
				r.Err = err
				return
			}
			defer closeConns()
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
			r.Found, r.LastPlayable = Found(r.Ordering.Probes, listed, rep.StopRTT)
			r.Unprobed, r.Unanswered = Missed(r.Ordering.Probes, env.Playable)
		})
	}
	runWG.Wait()
	if lmRun >= 0 && cfg.Remembered && ctx.Err() == nil {
		// The landmark run once more, later, with the memory of its first
		// run (rttcache, as scout servers keeps it between runs).
		r := rememberedRun(ctx, runs[lmRun], lmBase, table, locate, rep.StopRTT, cfg.Seed)
		r.Found, r.LastPlayable = Found(r.Ordering.Probes, listed, rep.StopRTT)
		r.Unprobed, r.Unanswered = Missed(r.Ordering.Probes, env.Playable)
		runs = slices.Insert(runs, lmRun+1, r)
	}
	rep.Runs = runs
	rep.Took = time.Since(start)
	cancel()
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

func gameET() *game.Game {
	for _, g := range game.Builtin() {
		if g.Name == "et" {
			return g
		}
	}
	panic("demo: no et in the game catalogue")
}

// runAddr is run i's loopback address: 127.0.2.(i+1), outside the
// masters' 127.0.1.0/24 and the world's servers (outside 127.0.0.0/16).
func runAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 2, byte(i + 1)}) }

// rememberedRunIndex is the remembered run's index for runAddr: after every other.
const rememberedRunIndex = 200

// runConns opens run i's two sockets on loopback, seen through table: the
// probes' (read with the kernel's receive timestamps, as scout servers'
// is: an RTT then leaves out the time a busy machine took to read the
// reply) and the masters'. Each run has an address of its own, as each
// player has: the servers limit queries per source address (ioquake3's
// burst of 10), and the runs side by side, one of them with the pacer's
// packet trains, would otherwise share one budget and lose replies.
func runConns(table *loopnat.Table, i int) (probes, masters *loopnat.Conn, closeBoth func(), err error) {
	ip := runAddr(i).AsSlice()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ip})
	if err != nil {
		return nil, nil, nil, err
	}
	mc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ip})
	if err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	sc, _ := probe.KernelTimestamps(c)
	return loopnat.Wrap(sc.(loopnat.PacketConn), table), loopnat.Wrap(mc, table), func() { c.Close(); mc.Close() }, nil
}

// rememberedRun runs the landmark plan again with the memory that its
// first run, first, left (rttcache: per /24 the least RTT of the run and
// its answers, and the list it planned when it ran to its end), as scout
// servers keeps it.
func rememberedRun(ctx context.Context, first Run, cfg discover.Config, table *loopnat.Table, locate discover.Locator, stopRTT time.Duration, seed uint64) Run {
	r := Run{Name: first.Name + ", remembered", Params: first.Params}
	mem := rttcache.New()
	outs := make([]rttcache.Outcome, 0, len(first.Ordering.Probes))
	for _, p := range first.Ordering.Probes {
		outs = append(outs, rttcache.Outcome{Addr: p.Addr, RTT: p.RTT, Answered: p.Answered})
	}
	now := time.Now()
	mem.Record(now, nil, outs)
	if first.Err == nil {
		mem.SetListed(now, first.Listed)
	}
	prior, known := mem.Priors(now), mem.Known(now)
	pc, mw, closeConns, err := runConns(table, rememberedRunIndex)
	if err != nil {
		r.Err = err
		return r
	}
	defer closeConns()
	var reps []discover.MasterReport
	plan := func(ts []adaptive.Target) (adaptive.Strategy, error) {
		st, m, err := landmarkPlan(ts, reps, stopRTT, seed, prior, known)
		r.Matrix = m
		return st, err
	}
	r.Summary, r.Ordering, r.Err = discover.Ordered(ctx, mw, pc, cfg, locate, plan, func(e discover.Event) {
		if d, ok := e.(discover.MasterDone); ok {
			reps = append(reps, d.MasterReport)
			if d.Landmark != "" {
				r.Landmarks = append(r.Landmarks, d.Landmark)
			}
		}
	})
	return r
}
