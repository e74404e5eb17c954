package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/scout-discovery/scout/browser"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/loopnat"
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

// serversOutput shows events in the chosen mode. Its methods are called
// from one goroutine at a time (discover serialises events).
type serversOutput struct {
	opt          serversOptions
	w            io.Writer
	enc          *json.Encoder
	live         *browser.Live
	plain        []probe.Result // plain output with --sort: held to the end
	headed       bool           // plain output: the header is out
	began        time.Time
	lastDraw     time.Time
	listed       int
	probed       int
	answered     int
	mastersDone  int
	mastersAsked int
	ordering     *orderReport // --order adaptive: the summary's "order"
}

// drawEvery limits the live table's redraws.
const drawEvery = 100 * time.Millisecond

func newServersOutput(opt serversOptions, w io.Writer) *serversOutput {
	o := &serversOutput{opt: opt, w: w}
	if opt.json {
		o.enc = json.NewEncoder(w)
		o.enc.SetEscapeHTML(false)
		return o
	}
	live := opt.live == "on"
	height := 24
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		live = live || opt.live == "auto"
		if _, h, err := term.GetSize(int(f.Fd())); err == nil {
			height = h
		}
	}
	if live {
		order := opt.order
		if order == "" {
			order = "ping"
		}
		o.live = browser.NewLive(w, height-1, opt.filter, order)
	}
	return o
}

func (o *serversOutput) start() { o.began = time.Now() }

func (o *serversOutput) progress() browser.Progress {
	return browser.Progress{Listed: o.listed, Probed: o.probed, Answered: o.answered,
		Masters: o.mastersDone, Of: o.mastersAsked, Elapsed: time.Since(o.began)}
}

func (o *serversOutput) event(e discover.Event) {
	switch e := e.(type) {
	case discover.Listed:
		if !e.Again {
			o.listed++
		}
	case discover.MasterDone:
		o.mastersDone++
	case discover.Probed:
		o.probed++
		if e.Answered() {
			o.answered++
		}
		o.server(e.Server)
	}
	if o.live != nil && time.Since(o.lastDraw) >= drawEvery {
		o.live.Draw(o.progress())
		o.lastDraw = time.Now()
	}
}

func (o *serversOutput) server(s discover.Server) {
	switch {
	case o.enc != nil:
		if s.Answered() && !o.opt.filter.Show(s.Result) {
			return
		}
		o.enc.Encode(s.JSON())
	case o.live != nil:
		o.live.Add(s.Result)
	case !o.opt.filter.Show(s.Result):
	case o.opt.order != "":
		o.plain = append(o.plain, s.Result)
	default:
		if !o.headed {
			o.headed = true
			fmt.Fprintln(o.w, browser.Header())
		}
		o.line(s.Result)
	}
}

// line prints a server in plain output, its players under it with
// --status.
func (o *serversOutput) line(r probe.Result) {
	fmt.Fprintln(o.w, browser.Line(r))
	if !o.opt.status {
		return
	}
	for _, p := range r.Players {
		fmt.Fprintf(o.w, "    %-32s  score %4d  ping %3d\n", browser.Name(p.Name), p.Score, p.Ping)
	}
}

func (o *serversOutput) finish(sum discover.Summary) {
	switch {
	case o.enc != nil:
		o.enc.Encode(summaryJSON(sum, o))
	case o.live != nil:
		o.live.Final(o.progress())
		o.masterLines(sum)
	default:
		if o.opt.order != "" {
			browser.Sort(o.plain, o.opt.order)
			if len(o.plain) > 0 {
				fmt.Fprintln(o.w, browser.Header())
			}
			for _, r := range o.plain {
				o.line(r)
			}
		}
		o.masterLines(sum)
	}
}

// masterLines prints how each master did, and the totals.
func (o *serversOutput) masterLines(sum discover.Summary) {
	for _, m := range sum.Masters {
		line := fmt.Sprintf("master %s: %d listed (%d new), %s", browser.Display(m.Name), m.Listed, m.New, m.End)
		if m.Error != "" {
			line += ": " + browser.Display(m.Error)
		}
		fmt.Fprintln(o.w, line)
	}
	c := sum.Probe
	fmt.Fprintf(o.w, "%d servers listed, %d probed, %d answered, %d silent, %d unreachable; %d probes (%d retries), %d bytes out, %d flows; %.2fs\n",
		sum.Listed, o.probed, o.answered, c.Silent, c.Unreachable, c.Sent, c.Retries, c.BytesOut, c.Destinations, sum.Took.Seconds())
}

// summaryOut is the final {"type":"summary"} line of --json.
type summaryOut struct {
	Type          string                  `json:"type"`
	Listed        int                     `json:"listed"`
	Probed        int                     `json:"probed"`
	Answered      int                     `json:"answered"`
	Silent        int                     `json:"silent"`
	Unreachable   int                     `json:"unreachable"` // ended by an ICMP destination unreachable (Linux)
	Probes        int                     `json:"probes"`
	Retries       int                     `json:"retries"`
	BytesOut      int64                   `json:"bytes_out"`
	BytesIn       int64                   `json:"bytes_in"`
	Flows         int                     `json:"flows"`
	PeakInFlight  int                     `json:"peak_in_flight"`
	Late          int                     `json:"late"`
	Unknown       int                     `json:"unknown"`
	KernelStamped int                     `json:"kernel_stamped"`
	MasterQueries int                     `json:"master_queries"`
	MasterBytes   int64                   `json:"master_bytes_out"`
	Stray         int                     `json:"master_stray"`
	ListsMs       float64                 `json:"lists_ms"`
	FirstMs       float64                 `json:"first_result_ms"`
	TookMs        float64                 `json:"took_ms"`
	Masters       []discover.MasterReport `json:"masters"`
	Order         *orderReport            `json:"order,omitempty"`
	Pace          *paceOut                `json:"pace,omitempty"`
}

// paceOut is what the link-paced default did (probe.Counts.Pace*).
type paceOut struct {
	Rate        float64 `json:"rate"`
	PeakRate    float64 `json:"peak_rate"`
	Cuts        int     `json:"cuts"`
	CapacityBps float64 `json:"capacity_bps"`
	// TrainRate is the probes per second the packet trains measured,
	// TrainSends their sends beyond each train's first.
	TrainRate  float64 `json:"train_rate"`
	TrainSends int     `json:"train_sends"`
}

func summaryJSON(s discover.Summary, o *serversOutput) summaryOut {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	c := s.Probe
	j := summaryOut{Type: "summary", Listed: s.Listed, Probed: o.probed, Answered: o.answered, Silent: c.Silent, Unreachable: c.Unreachable,
		Probes: c.Sent, Retries: c.Retries, BytesOut: c.BytesOut, BytesIn: c.BytesIn, Flows: c.Destinations,
		PeakInFlight: c.PeakInFlight, Late: c.Late, Unknown: c.Unknown, KernelStamped: c.KernelStamped,
		MasterQueries: s.MasterQueries, MasterBytes: s.MasterBytesOut, Stray: s.Stray,
		ListsMs: ms(s.ListsTook), FirstMs: ms(s.FirstResult), TookMs: ms(s.Took), Masters: s.Masters, Order: o.ordering}
	if j.Masters == nil {
		j.Masters = []discover.MasterReport{}
	}
	if c.PacePeakRate > 0 {
		j.Pace = &paceOut{Rate: c.PaceRate, PeakRate: c.PacePeakRate, Cuts: c.PaceCuts, CapacityBps: c.PaceCapacity,
			TrainRate: c.PaceTrainRate, TrainSends: c.PaceTrainSends}
	}
	return j
}
