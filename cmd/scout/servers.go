package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/browser"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/lab/loopnat"
	"github.com/scout-discovery/scout/probe"
)

func init() {
	register(command{name: "servers", summary: "list a game's servers from its masters (or the LAN) and probe each", run: runServers})
}

const serversAbout = `Asks the masters of a game for their server lists and probes every server
listed for its info and round-trip time, starting while the lists are still
arriving. Lists from several masters are merged; a master that does not
answer is reported and the others still count. With --lan, getinfo is
broadcast to ports 27960-27963 instead, as the Quake III client does.

Send patterns (--strategy): auto (the default: paced by the link: a few
packet trains measure what the line carries, upstream and down, and the
rate fills it to where 99% of the replies queue for at most 2 ms (0.8
of a 10 Mbit/s line), backing off on a standing queue, at most 5,000/s
or --bandwidth; see package probe's Pacer), et
(Enemy Territory's 16 in flight), q4 (bursts of 32 then 300 ms), qstat
(20 in flight, one every 10 ms, RTT from the first send: for comparison
only). --rate paces the probes at a fixed rate instead and sizes the
window to it; --bandwidth caps auto, or sets --rate for the others.

--status also fetches each server's full status (getstatus: every rule
and the player list, as qstat's -R -P) for the Quake III family, whose
getinfo carries neither; Quake 4, UT3 and Source queries always include
the players. It doubles the probes sent to Quake III servers.

Output: on a terminal, a live table with a progress bar; otherwise one line
per server as it answers (sorted at the end with --sort); with --json one
JSON object per server as its probe ends ({"type":"server",...}, servers
that never answered included, with "error"; "players" when the server sent
its list), then {"type":"summary",...}. With --status, plain output lists
each server's players under it.

Exit status: 0 when at least one server answered, 1 when none did, 2 for
bad usage.`

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// gameAliases are short names for catalogue games.
var gameAliases = map[string]string{
	"q3": "Quake3Arena", "q3a": "Quake3Arena", "quake3": "Quake3Arena", "ioquake3": "Quake3Arena",
	"rtcw": "wolfmp", "q4": "Quake4", "quake4": "Quake4", "css": "cstrike", "source": "cstrike",
}

func findGame(name string) (*game.Game, error) {
	if a, ok := gameAliases[strings.ToLower(name)]; ok {
		name = a
	}
	var names []string
	for _, g := range game.Builtin() {
		if strings.EqualFold(g.Name, name) {
			return g, nil
		}
		names = append(names, g.Name)
	}
	return nil, fmt.Errorf("unknown game %q (known: q3, rtcw, q4, css, %s)", name, strings.Join(names, ", "))
}

type serversOptions struct {
	game       *game.Game
	masters    []string
	protocol   int
	ext        bool
	quiet      time.Duration
	prober     probe.Prober
	json       bool
	live       string // auto, on, off
	filter     browser.Filter
	order      string
	lan        bool
	status     bool
	lanAddr    netip.Addr
	lanPorts   []uint16
	lanWindow  time.Duration
	worldMap   string
	maxTime    time.Duration
	masterTime time.Duration
	ordering   orderOptions // --order, --auto-stop, --cluster-by, --plot (servers_order.go)
}

func runServers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opt, code, ok := parseServersFlags(args, stderr)
	if !ok {
		return code
	}
	if opt.maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.maxTime)
		defer cancel()
	}
	out := newServersOutput(opt, stdout)
	var err error
	if opt.lan {
		err = serversLAN(ctx, opt, out)
	} else {
		err = serversDiscover(ctx, opt, out, stderr)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(stderr, "scout servers: %v\n", err)
		if out.answered == 0 {
			return 1
		}
	}
	if out.answered == 0 {
		return 1
	}
	return 0
}

func parseServersFlags(args []string, stderr io.Writer) (serversOptions, int, bool) {
	fs := newFlags("servers", "[flags]", serversAbout+"\n\n"+gamesHelp()+"\n\n"+orderHelp, stderr)
	var opt serversOptions
	var masters stringList
	fs.Var(&masters, "master", "a master `HOST:PORT` to ask (repeatable); default: the game's well-known masters")
	gameName := fs.String("game", "q3", "the game whose servers to list (the queries each sends: Games, below)")
	fs.IntVar(&opt.protocol, "protocol", 0, "the protocol to ask masters for (default: the game's newest)")
	fs.BoolVar(&opt.ext, "ipv6", false, "ask with getserversExt, for IPv6 servers too (Quake III family)")
	fs.DurationVar(&opt.quiet, "quiet", discover.DefaultQuiet, "a master's list without end marker is complete after this silence")
	fs.DurationVar(&opt.masterTime, "master-timeout", discover.DefaultMasterTimeout, "how long a master has to answer each query")
	strategy := fs.String("strategy", "auto", "send pattern: auto, et, q4 or qstat")
	window := fs.Int("window", 0, "probes in flight at most (default: the strategy's, or what --rate needs)")
	rate := fs.Float64("rate", 0, "probes per second, retries included (0: as fast as the window allows)")
	bandwidth := fs.String("bandwidth", "", "upstream to use for probes, bits/s with k or M (e.g. 512k): the cap of --strategy auto (whose packet trains measure the line, upstream included, at the start of a run, but not an upstream that slows later: give it here), or sets --rate")
	timeout := fs.Duration("timeout", probe.DefaultTimeout, "how long each probe waits for its reply")
	retries := fs.Int("retries", probe.DefaultAttempts-1, "how many times an unanswered probe is sent again")
	fs.BoolVar(&opt.status, "status", false, "also fetch each server's full status: rules and players (Quake III family: getstatus)")
	fs.BoolVar(&opt.json, "json", false, "one JSON object per server as it arrives, then a summary")
	fs.StringVar(&opt.live, "live", "auto", "live table: auto (when stdout is a terminal), on, off")
	fs.BoolVar(&opt.filter.HideEmpty, "hide-empty", false, "hide servers without players")
	fs.BoolVar(&opt.filter.HideFull, "hide-full", false, "hide full servers")
	fs.DurationVar(&opt.filter.MaxPing, "max-ping", 0, "hide servers slower than this (e.g. 150ms)")
	fs.StringVar(&opt.filter.GameType, "gametype", "", "show only this game type (as the server writes it)")
	fs.StringVar(&opt.filter.Map, "map", "", "show only maps containing this")
	fs.StringVar(&opt.filter.GameName, "gamename", "", "show only this game or mod (gamename/game key)")
	fs.StringVar(&opt.order, "sort", "", "order: ping, players, name or map (plain output waits for the end)")
	fs.BoolVar(&opt.lan, "lan", false, "find servers on the local network by broadcast instead of masters")
	lanAddr := fs.String("lan-addr", "255.255.255.255", "the address --lan sends getinfo to")
	lanPorts := fs.String("lan-ports", "27960-27963", "the ports --lan sends getinfo to (N or N-M)")
	fs.DurationVar(&opt.lanWindow, "lan-window", discover.DefaultLANWindow, "how long --lan collects replies")
	fs.StringVar(&opt.worldMap, "world-map", "", "an emulated world's address table (loopnat): probe its servers over loopback")
	fs.DurationVar(&opt.maxTime, "max-time", 5*time.Minute, "stop the whole run after this long")
	checkOrder := addOrderFlags(fs, &opt.ordering)
	if code, done := parseFlags(fs, args); done {
		return opt, code, false
	}
	bad := func(format string, a ...any) (serversOptions, int, bool) {
		fmt.Fprintf(stderr, "scout servers: "+format+"\n", a...)
		return opt, 2, false
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q (masters go with --master)", fs.Arg(0))
	}
	var err error
	if opt.game, err = findGame(*gameName); err != nil {
		return bad("%v", err)
	}
	opt.masters = masters
	st, err := probe.StrategyNamed(*strategy)
	if err != nil {
		return bad("%v", err)
	}
	opt.prober = st.Prober
	if st.Prober.Pace != nil {
		pc := *st.Prober.Pace // not the shared strategy's
		opt.prober.Pace = &pc
	}
	if *timeout <= 0 || *retries < 0 || *window < 0 || *rate < 0 {
		return bad("--timeout must be positive; --retries, --window and --rate not negative")
	}
	opt.prober.Timeout, opt.prober.Attempts = *timeout, *retries+1
	if *bandwidth != "" {
		bps, err := parseBandwidth(*bandwidth)
		if err != nil {
			return bad("%v", err)
		}
		req, _ := discover.RequestFor(opt.game, opt.protocol, opt.ext)
		d := statusDialect(req.Dialect, opt.status)
		if d == nil {
			d = probe.Q3Info
		}
		r := probe.RateForBandwidth(bps, probe.RequestSize(d))
		if opt.prober.Pace != nil && *rate == 0 {
			opt.prober.Pace.MaxRate = r
		} else {
			*rate = r
		}
	}
	if *rate > 0 {
		opt.prober.Pace = nil
		opt.prober.Interval = probe.IntervalForRate(*rate)
		opt.prober.Window = probe.WindowForRate(*rate, *timeout)
		opt.prober.Burst = 0
	}
	if *window > 0 {
		opt.prober.Window = *window
	}
	if err := checkOrder(); err != nil {
		return bad("%v", err)
	}
	if opt.order != "" && !browser.Sort(nil, opt.order) {
		return bad("unknown --sort %q (%s)", opt.order, strings.Join(browser.Orders, ", "))
	}
	switch opt.live {
	case "auto", "on", "off":
	default:
		return bad("--live is auto, on or off")
	}
	if opt.status && opt.lan {
		return bad("--status does not apply to --lan (query a server found there with 'scout query')")
	}
	if opt.lanAddr, err = netip.ParseAddr(*lanAddr); err != nil {
		return bad("--lan-addr: %v", err)
	}
	if opt.lanPorts, err = parsePorts(*lanPorts); err != nil {
		return bad("--lan-ports: %v", err)
	}
	if opt.quiet <= 0 || opt.masterTime <= 0 || opt.lanWindow <= 0 || opt.maxTime < 0 {
		return bad("--quiet, --master-timeout and --lan-window must be positive")
	}
	return opt, 0, true
}

// parseBandwidth reads bits per second: 512000, 512k, 1.5M.
func parseBandwidth(s string) (float64, error) {
	t, mult := cutKM(s)
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("bad --bandwidth %q (bits per second, e.g. 512k)", s)
	}
	return v * mult, nil
}

// maxLANPorts bounds --lan-ports: the Q3 client uses 4.
const maxLANPorts = 64

func parsePorts(s string) ([]uint16, error) {
	lo, hi, rng := strings.Cut(s, "-")
	a, err := strconv.ParseUint(lo, 10, 16)
	if err != nil || a == 0 {
		return nil, fmt.Errorf("bad port %q", lo)
	}
	b := a
	if rng {
		if b, err = strconv.ParseUint(hi, 10, 16); err != nil || b < a || b-a >= maxLANPorts {
			return nil, fmt.Errorf("bad port range %q (at most %d ports)", s, maxLANPorts)
		}
	}
	var out []uint16
	for p := a; p <= b; p++ {
		out = append(out, uint16(p))
	}
	return out, nil
}

// listen opens a UDP socket, wrapped for an emulated world when
// --world-map is given, read with the kernel's receive timestamps where
// available (and ICMP errors, off an emulated world).
func listen(opt serversOptions, table *loopnat.Table) (probe.Conn, io.Closer, error) {
	c, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, nil, err
	}
	if table != nil {
		sc, _ := probe.KernelTimestamps(c)
		return loopnat.Wrap(sc.(loopnat.PacketConn), table), c, nil
	}
	sc, _ := probe.Wrap(c) // kernel timestamps and ICMP errors, where the platform has them
	return sc, c, nil
}

func loadWorld(opt serversOptions) (*loopnat.Table, error) {
	if opt.worldMap == "" {
		return nil, nil
	}
	return loopnat.Load(opt.worldMap)
}

func serversDiscover(ctx context.Context, opt serversOptions, out *serversOutput, stderr io.Writer) error {
	// --order landmarks asks with getserversExt: the landmark extension
	// rides on it (q3.LandmarksKeyword).
	req, err := discover.RequestFor(opt.game, opt.protocol, opt.ext || opt.ordering.order == "landmarks")
	if err != nil {
		return err
	}
	req.Dialect = statusDialect(req.Dialect, opt.status)
	names := opt.masters
	if len(names) == 0 {
		names = opt.game.Masters
	}
	if len(names) == 0 {
		return fmt.Errorf("%s has no well-known master: give --master", opt.game.Name)
	}
	cfg := discover.Config{Quiet: opt.quiet, Timeout: opt.masterTime, Prober: opt.prober}
	var unresolved []discover.MasterReport
	for _, n := range names {
		ap, err := resolveMaster(ctx, n, opt.game.MasterPort)
		if err != nil {
			unresolved = append(unresolved, discover.MasterReport{Name: n, Protocol: req.Protocol.String(),
				End: discover.EndNoReply, Error: err.Error()})
			continue
		}
		cfg.Masters = append(cfg.Masters, discover.Master{Name: n, Addr: ap, Request: req})
	}
	out.mastersAsked = len(names)
	for _, r := range unresolved {
		out.event(discover.MasterDone{MasterReport: r})
	}
	table, err := loadWorld(opt)
	if err != nil {
		return err
	}
	mconn, mc, err := listen(opt, table)
	if err != nil {
		return err
	}
	defer mc.Close()
	pconn, pc, err := listen(opt, table)
	if err != nil {
		return err
	}
	defer pc.Close()
	out.start()
	if opt.ordering.order == "adaptive" {
		return serversOrdered(ctx, opt, out, mconn, pconn, cfg, unresolved, stderr)
	}
	if opt.ordering.order == "landmarks" {
		return serversLandmarks(ctx, opt, out, mconn, pconn, cfg, unresolved)
	}
	log := &probeLog{start: out.began}
	gn := &gameNames{}
	nc := startNameCheck(ctx, opt, cfg)
	sum, err := discover.Discover(ctx, mconn, pconn, cfg, gn.wrap(opt.filter, log.wrap(out.event)))
	sum.Masters = append(unresolved, sum.Masters...)
	out.finish(sum)
	warnLimits(sum, stderr)
	warnGameName(ctx, opt, sum, gn, nc, stderr)
	if err == nil && opt.ordering.plot != "" {
		err = writePlot(opt.ordering.plot, "scout servers --order master", opt.ordering.autoStop,
			plotSeries("conventional", log.probes, 0, opt.ordering.params()))
	}
	return err
}

// statusDialect returns the dialect that also fetches the full status
// when status is set: Q3 (getinfo and getstatus) for Q3Info, A2S
// (A2S_INFO, A2S_PLAYER and A2S_RULES) for A2SInfo. The other dialects
// already fetch what there is.
func statusDialect(d probe.Dialect, status bool) probe.Dialect {
	switch {
	case status && d == probe.Q3Info:
		return probe.Q3
	case status && d == probe.A2SInfo:
		return probe.A2S
	}
	return d
}

// resolveMaster reads HOST:PORT (or HOST, with the game's master port).
func resolveMaster(ctx context.Context, s string, defPort uint16) (netip.AddrPort, error) {
	qa, err := parseQueryAddr(s, defPort)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return qa.resolve(ctx)
}

func serversLAN(ctx context.Context, opt serversOptions, out *serversOutput) error {
	table, err := loadWorld(opt)
	if err != nil {
		return err
	}
	conn, c, err := listen(opt, table)
	if err != nil {
		return err
	}
	defer c.Close()
	var targets []probe.Target
	for _, p := range opt.lanPorts {
		targets = append(targets, probe.Target{Addr: netip.AddrPortFrom(opt.lanAddr, p), Dialect: probe.Q3Info})
	}
	out.start()
	counts, err := discover.LAN(ctx, conn, targets, opt.lanWindow, func(s discover.Server) {
		out.event(discover.Listed{Addr: s.Addr, Master: "lan"})
		out.event(discover.Probed{Server: s})
	})
	out.finish(discover.Summary{Listed: out.listed, Probe: counts, Took: time.Since(out.began)})
	return err
}
