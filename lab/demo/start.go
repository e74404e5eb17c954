package demo

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/scout-discovery/scout/lab/loopnat"
	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/latency"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
)

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
	// Playable are the playable servers the first master listed when
	// discovery began (Report.Playable counts them).
	Playable []netip.AddrPort
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
		rep.Masters = append(rep.Masters, LandmarkMaster{City: c, Addr: a, ClientRTT: place.Access + latency.CityRTT(place.City, c)})
	}
	// The paths to each master: the other masters' pings take the
	// model's RTT between the two cities, the player's queries its own.
	for k, m := range rep.Masters {
		delay := map[netip.AddrPort]time.Duration{}
		for _, o := range rep.Masters {
			delay[o.Addr] = latency.CityRTT(o.City, m.City)
		}
		rep.Masters[k].Path, err = RelayWith(ctx, &wg, m.Addr, RelayConfig{Delay: func(from netip.AddrPort) time.Duration {
			if d, ok := delay[from]; ok {
				return d
			}
			return m.ClientRTT
		}})
		if err != nil {
			return nil, nil, err
		}
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
		var peers []master.LandmarkPeer
		for j, o := range rep.Masters {
			if j != k {
				peers = append(peers, master.LandmarkPeer{ID: landmarkID(o.City), Addr: o.Path})
			}
		}
		m, err := newMaster(landmarkID(c), peers)
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
	if err := waitMesh(ctx, regs, cities, MeshWait); err != nil {
		return nil, nil, err
	}
	rep.Listed, _ = regs[0].Counts() // after every master's wait: the first's list when discovery begins
	rep.Registration = time.Since(start)
	for k := range rep.Masters {
		m := &rep.Masters[k]
		m.PeerRTTs = regs[k].Mesh().Own()
		var peers []string
		for _, e := range m.PeerRTTs {
			peers = append(peers, fmt.Sprintf("%s %v", e.Landmark, e.RTT.Round(100*time.Microsecond)))
		}
		cfg.logf("master %v in %s (the player's RTT to it %v): %d of %d servers registered by heartbeat; its RTTs to the other masters: %s",
			m.Addr, m.City.Name, m.ClientRTT.Round(time.Millisecond), listed[k], rep.Servers, strings.Join(peers, ", "))
	}
	cfg.logf("registration took %.1fs", rep.Registration.Seconds())
	var playable []netip.AddrPort
	for _, s := range regs[0].Servers(nil) {
		if r, ok := truth[s.Addr]; ok && r < rep.StopRTT {
			playable = append(playable, s.Addr)
		}
	}
	rep.Playable = len(playable)

	return &Env{Master: addrs[0], Table: table, Report: rep, Truth: truth, Playable: playable}, halt, nil
}

// newMaster builds one of the demo's masters, the landmark named landmark:
// loopback clients allowed to query, no flood protection (the clients ask
// once each), no outbound budget to speak of, pinging peers (the other
// landmark masters, through their paths) every MeshInterval; the socket
// is the caller's.
func newMaster(landmark string, peers []master.LandmarkPeer) (*masterd.Master, error) {
	return masterd.NewMaster(time.Now(), masterd.Config{
		Listen:   []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		Landmark: &master.Landmark{ID: landmark},
		Reloadable: masterd.Reloadable{
			NoQueryLimit:  true,
			OutRate:       1_000_000_000,
			Registry:      master.Config{LandmarkPingInterval: MeshInterval},
			LandmarkPeers: peers,
		},
	}, masterd.Deps{})
}

// MeshInterval is how often each of the demo's landmark masters pings the
// others: a few samples each (their median is published) while the world
// registers, where a real master's default (master.DefaultLandmarkPingInterval,
// 30 s) would give the demo one.
const MeshInterval = time.Second

// MeshWait bounds the wait, once the world is listed, for every landmark
// master to have measured its RTT to every other.
const MeshWait = 10 * time.Second

// waitMesh waits until every registry of regs (the masters in cities)
// has measured its RTT to every other (master.Mesh.Own), at most limit
// or until ctx ends.
func waitMesh(ctx context.Context, regs []*master.Registry, cities []latency.City, limit time.Duration) error {
	peers := len(regs) - 1
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for k := 0; k < len(regs); {
		own := regs[k].Mesh().Own()
		if len(own) >= peers {
			k++
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: waiting for the landmark master in %s to measure its RTTs to the others: %w", cities[k].Name, ctx.Err())
		case <-deadline.C:
			pings, pongs := regs[k].Mesh().Counts()
			return fmt.Errorf("demo: the landmark master in %s measured its RTT to %d of the %d others within %v (%d pings sent, %d replies taken)",
				cities[k].Name, len(own), peers, limit, pings, pongs)
		case <-tick.C:
		}
	}
	return nil
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
