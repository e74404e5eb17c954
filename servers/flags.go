package servers

import (
	"cmp"
	"flag"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/browser"
	"github.com/scout-discovery/scout/browser/tui"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/rttcache"
)

// About is scout servers -h's opening paragraphs.
var About = `Asks the masters of a game for their server lists and probes every server
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

Output: on a terminal, an interactive browser that fills in as servers
answer, nearest first: keys sort, filter (game, map, empty, full, text,
max ping), show a server's players and settings, copy its address and
start the game on it (the command per game comes from the launch
configuration: see below); ? lists the keys. With --plain on a terminal, a
progress line, then the best servers that fit the screen (nearest first,
or by --sort) and the summary. Otherwise (a pipe) one line per server as
it answers (sorted at the end with --sort); with --json one JSON object
per server as its probe ends ({"type":"server",...}, servers that never
answered included, with "error"; "players" when the server sent its
list), then {"type":"summary",...}. With --status, plain output lists each
server's players under it. The summary counts every server listed:
answered, silent, unreachable, stopped (before an answer, by Ctrl-C or
--max-time) and not probed add up to the servers listed.

Launch configuration: ` + tui.ConfigPath() + `
(scout's folder in the user's configuration directory, file ` + tui.ConfigName + `), one
line per game or mod, "+connect ADDRESS" is added:

    # game or mod (as the server names it, else --game) = command
    Quake3Arena = /usr/games/quake3
    baseoa      = /usr/games/openarena
    wolfmp      = "C:\Games\RtCW\WolfMP.exe" +set com_hunkmegs 128

Exit status: 0 when at least one server answered, 1 when none did, 2 for
bad usage.`

// Help is scout servers -h's text before its flags: About, the games and
// the orders.
func Help() string { return About + "\n\n" + gamesHelp() + "\n\n" + orderHelp }

// orderHelp is the paragraph of scout servers -h on --order and its flags.
const orderHelp = `Order (--order): auto, the default, waits for the complete list, then
probes one server per /24 (IPv6: /64) first, in the order of Armitage's
planner with this project's constants (--variant scout, below), and probes
the rest of a /24 when one of them answered under --auto-stop, skips it
when the least of k answers is at least --auto-stop + 20/k ms, and asks
one more in between. With the landmark masters' RTTs to the servers
(scout master --landmark-place; the query must be getserversExt: --ipv6,
or --order landmarks) it orders by them instead, and checks every site
(one AS in one place, as the landmarks see it) by probing its nearest
server first: a site is left only when it answers far. The memory
(--memory, on by default: per /24 the least RTT of each of the last few
runs and how many answers it rests on, and the /24s each run's list held,
a day at most, in --memory-file) comes first: /24s remembered playable
are probed first and whole, /24s remembered far are not probed, and a
site is measured again only through /24s new since;
it is not used when the RTTs to the masters are not the remembered ones
(another network). EVALUATION.md ("Safe by default") measures it with
every WonderProxy city as a client.
master probes in the masters' order, starting while the lists arrive
(conventional discovery, as the Enemy Territory client does; paced by the
link, in random order among those listed, an address's first server
before its others).
adaptive is Armitage's client-side adaptive discovery (NETWORKING 2008): it
waits for the complete list (clustering needs every server), geolocates
every server (embedded tables; country and AS), clusters them by country
(--cluster-by as: by origin AS), probes a sample of each cluster
(calibration), then the clusters nearest first, and stops once the
2nd-percentile RTT of the last 100 re-ordered probes reaches --auto-stop
(0: probe every server). --variant scout runs this project's variant
instead (adaptive.Scout, measured in EVALUATION.md): clusters by country
and origin AS, a second round of calibration samples only for clusters
whose first sample is under --auto-stop + 50 ms, and a stop once the last
20 re-ordered probes were at or over --auto-stop and no cluster with
servers left has answered under it + 5 ms. The paper's variant misses
playable servers (EVALUATION.md): it is here to compare.
landmarks is auto asking the masters for their RTTs to the servers with
the list, taking the least of each list query's round trip and
--landmark-pings pings after it (an empty-list query each, one small
packet each way) as the client's RTT to that master.`

// Flags are scout servers' flags on a flag set; Config reads them, once
// the set is parsed, into a Config.
type Flags struct {
	fs                    *flag.FlagSet
	cfg                   Config
	masters               stringList
	gameName, strategy    *string
	window                *int
	rate                  *float64
	bandwidth             *string
	timeout               *time.Duration
	retries               *int
	lanAddr, lanPorts, by *string
	live                  *string
	memory                *bool
	memoryFile            *string
}

// defaultMemoryFile is --memory-file's default: rttcache.DefaultPath, ""
// when the platform has no user cache folder.
func defaultMemoryFile() string {
	p, err := rttcache.DefaultPath()
	if err != nil {
		return ""
	}
	return p
}

// AddFlags defines scout servers' flags on fs.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	opt := &f.cfg
	fs.Var(&f.masters, "master", "a master `HOST:PORT` to ask (repeatable); default: the game's well-known masters")
	f.gameName = fs.String("game", "q3", "the game whose servers to list (the queries each sends: Games, below)")
	fs.IntVar(&opt.Protocol, "protocol", 0, "the protocol to ask masters for (default: the game's newest)")
	fs.BoolVar(&opt.IPv6, "ipv6", false, "ask with getserversExt, for IPv6 servers too (Quake III family)")
	fs.DurationVar(&opt.Quiet, "quiet", discover.DefaultQuiet, "a master's list without end marker is complete after this silence")
	fs.DurationVar(&opt.MasterTimeout, "master-timeout", discover.DefaultMasterTimeout, "how long a master has to answer each query")
	f.strategy = fs.String("strategy", "auto", "send pattern: auto, et, q4 or qstat")
	f.window = fs.Int("window", 0, "probes in flight at most (default: the strategy's, or what --rate needs)")
	f.rate = fs.Float64("rate", 0, "probes per second, retries included (0: as fast as the window allows)")
	f.bandwidth = fs.String("bandwidth", "", "upstream to use for probes, bits/s with k or M (e.g. 512k): the cap of --strategy auto (whose packet trains measure the line, upstream included, at the start of a run, but not an upstream that slows later: give it here), or sets --rate")
	f.timeout = fs.Duration("timeout", probe.DefaultTimeout, "how long each probe waits for its reply")
	f.retries = fs.Int("retries", probe.DefaultAttempts-1, "how many times an unanswered probe is sent again")
	fs.BoolVar(&opt.Status, "status", false, "also fetch each server's full status: rules and players (Quake III family: getstatus)")
	fs.BoolVar(&opt.JSON, "json", false, "one JSON object per server as it arrives, then a summary")
	fs.BoolVar(&opt.AllowLocal, "allow-local", false, "probe the servers a master on a public address lists at private, loopback, link-local, multicast, documentation or reserved addresses, or at its own address (a master on a local address may list them anyway)")
	fs.BoolVar(&opt.Plain, "plain", false, "print lines instead of opening the browser on a terminal (as in a pipe)")
	f.live = fs.String("live", "auto", "the browser on a terminal: auto, or off (as --plain)")
	fs.BoolVar(&opt.Filter.HideEmpty, "hide-empty", false, "hide servers without players")
	fs.BoolVar(&opt.Filter.HideFull, "hide-full", false, "hide full servers")
	fs.DurationVar(&opt.Filter.MaxPing, "max-ping", 0, "hide servers slower than this (e.g. 150ms)")
	fs.StringVar(&opt.Filter.GameType, "gametype", "", "show only this game type, by name (CTF) or as the server writes it (4)")
	fs.StringVar(&opt.Filter.Map, "map", "", "show only maps containing this")
	fs.StringVar(&opt.Filter.GameName, "gamename", "", "show only this game or mod (gamename/game key)")
	fs.StringVar(&opt.Sort, "sort", "", "order: ping, players, name or map (plain output waits for the end)")
	fs.BoolVar(&opt.LAN, "lan", false, "find servers on the local network by broadcast instead of masters")
	f.lanAddr = fs.String("lan-addr", "255.255.255.255", "the address --lan sends getinfo to")
	f.lanPorts = fs.String("lan-ports", "27960-27963", "the ports --lan sends getinfo to (N or N-M)")
	fs.DurationVar(&opt.LANWindow, "lan-window", discover.DefaultLANWindow, "how long --lan collects replies")
	fs.DurationVar(&opt.MaxTime, "max-time", 5*time.Minute, "stop the whole run after this long")
	o := &opt.Order
	fs.StringVar(&o.Order, "order", "auto", "probe order: auto (group probing over scout's planner, or the landmark plan when the masters publish RTTs, with the memory), master (conventional), adaptive, or landmarks (auto asking the masters for their RTTs: scout master --landmark-place)")
	fs.DurationVar(&o.AutoStop, "auto-stop", adaptive.Paper().StopRTT, "adaptive: RTTstop, the largest playable RTT; paper: stop when the 2nd-percentile RTT of the last 100 probes reaches it (0: never stop)")
	fs.StringVar(&o.Variant, "variant", "paper", "adaptive: paper (Algorithms 1 and 2 as published) or scout (country+AS clusters, two-round calibration, bound stop rule)")
	f.by = fs.String("cluster-by", "", "adaptive: cluster servers by country, as (origin AS) or country+as (default: the variant's, country for paper, country+as for scout)")
	fs.Uint64Var(&o.Seed, "order-seed", 1, "adaptive: seed of the calibration samples' random choice")
	fs.BoolVar(&o.LandmarkSiblings, "landmark-siblings", false, "landmarks: also skip a server whose answered siblings (vectors that differ by the same amount at every landmark) predict it unplayable, for a client within 50 ms of a landmark (landmark.DefaultSiblings; off: it decides on one answer, which can sit tens of ms over the path's RTT)")
	f.memory = fs.Bool("memory", true, "remember this run's RTTs per server /24 in --memory-file, and with --order auto or landmarks order and stop by them")
	f.memoryFile = fs.String("memory-file", "", "the memory's `FILE` (default: scout/rtt-cache in the user's cache folder)")
	fs.IntVar(&o.LandmarkPings, "landmark-pings", discover.DefaultLandmarkPings, fmt.Sprintf("landmarks: pings to each landmark master after its list, for the client's RTT to it (the least sample; 0 to %d)", discover.MaxLandmarkPings))
	return f
}

// Config returns the run the parsed flags describe, or the usage error
// that names the flag at fault.
func (f *Flags) Config() (Config, error) {
	opt := f.cfg
	var err error
	if opt.Game, err = FindGame(*f.gameName); err != nil {
		return opt, err
	}
	opt.Masters = f.masters
	if opt.Prober, err = f.prober(opt); err != nil {
		return opt, err
	}
	if err := f.checkOrder(&opt.Order); err != nil {
		return opt, err
	}
	if *f.memory {
		opt.Memory = cmp.Or(*f.memoryFile, defaultMemoryFile())
	}
	f.fs.Visit(func(fl *flag.Flag) { opt.Order.Given = opt.Order.Given || fl.Name == "order" })
	if opt.Sort != "" && !browser.Sort(nil, opt.Sort) {
		return opt, fmt.Errorf("unknown --sort %q (%s)", opt.Sort, strings.Join(browser.Orders, ", "))
	}
	switch *f.live {
	case "auto":
	case "off":
		opt.Plain = true
	default:
		return opt, fmt.Errorf("--live is auto or off")
	}
	if opt.Status && opt.LAN {
		return opt, fmt.Errorf("--status does not apply to --lan (query a server found there with 'scout query')")
	}
	if opt.LANAddr, err = netip.ParseAddr(*f.lanAddr); err != nil {
		return opt, fmt.Errorf("--lan-addr: %v", err)
	}
	if opt.LANPorts, err = parsePorts(*f.lanPorts); err != nil {
		return opt, fmt.Errorf("--lan-ports: %v", err)
	}
	if opt.Quiet <= 0 || opt.MasterTimeout <= 0 || opt.LANWindow <= 0 || opt.MaxTime < 0 {
		return opt, fmt.Errorf("--quiet, --master-timeout and --lan-window must be positive")
	}
	return opt, nil
}

// prober returns the probe engine's settings: --strategy's, with
// --timeout, --retries, --bandwidth, --rate and --window.
func (f *Flags) prober(opt Config) (probe.Prober, error) {
	st, err := probe.StrategyNamed(*f.strategy)
	if err != nil {
		return probe.Prober{}, err
	}
	p := st.Prober
	if st.Prober.Pace != nil {
		pc := *st.Prober.Pace // not the shared strategy's
		p.Pace = &pc
	}
	rate := *f.rate
	if *f.timeout <= 0 || *f.retries < 0 || *f.window < 0 || rate < 0 {
		return p, fmt.Errorf("--timeout must be positive; --retries, --window and --rate not negative")
	}
	p.Timeout, p.Attempts = *f.timeout, *f.retries+1
	if *f.bandwidth != "" {
		bps, err := parseBandwidth(*f.bandwidth)
		if err != nil {
			return p, err
		}
		req, _ := discover.RequestFor(opt.Game, opt.Protocol, opt.IPv6)
		d := StatusDialect(req.Dialect, opt.Status)
		if d == nil {
			d = probe.Q3Info
		}
		r := probe.RateForBandwidth(bps, probe.RequestSize(d))
		if p.Pace != nil && rate == 0 {
			p.Pace.MaxRate = r
		} else {
			rate = r
		}
	}
	if rate > 0 {
		p.Pace = nil
		p.Interval = probe.IntervalForRate(rate)
		p.Window = probe.WindowForRate(rate, *f.timeout)
		p.Burst = 0
	}
	if *f.window > 0 {
		p.Window = *f.window
	}
	return p, nil
}

// checkOrder checks --order and its flags, and reads --cluster-by.
func (f *Flags) checkOrder(o *Order) error {
	switch o.Order {
	case "auto", "master", "adaptive", "landmarks":
	default:
		return fmt.Errorf("unknown --order %q (auto, master, adaptive or landmarks; oracle needs true RTTs: scout demo, scout-lab sim)", o.Order)
	}
	switch o.Variant {
	case "paper", "scout":
	default:
		return fmt.Errorf("unknown --variant %q (paper or scout)", o.Variant)
	}
	var k adaptive.Key
	switch strings.ToLower(*f.by) {
	case "":
	case "country":
		k = adaptive.ByCountry
	case "as":
		k = adaptive.ByAS
	case "country+as":
		k = adaptive.ByCountryAS
	default:
		return fmt.Errorf("unknown --cluster-by %q (country, as or country+as)", *f.by)
	}
	if *f.by != "" {
		o.ClusterBy = &k
	}
	if o.LandmarkPings < 0 || o.LandmarkPings > discover.MaxLandmarkPings {
		return fmt.Errorf("--landmark-pings must be 0 to %d, got %d", discover.MaxLandmarkPings, o.LandmarkPings)
	}
	if o.AutoStop < 0 {
		return fmt.Errorf("--auto-stop must not be negative")
	}
	return nil
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// gameAliases are short names for catalogue games.
var gameAliases = map[string]string{
	"q3": "Quake3Arena", "q3a": "Quake3Arena", "quake3": "Quake3Arena", "ioquake3": "Quake3Arena",
	"rtcw": "wolfmp", "q4": "Quake4", "quake4": "Quake4", "css": "cstrike", "source": "cstrike",
}

// FindGame returns the built-in game called name (case-insensitive) or by
// one of its short names (q3, rtcw, q4, css).
func FindGame(name string) (*game.Game, error) {
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

// parseBandwidth reads bits per second: 512000, 512k, 1.5M.
func parseBandwidth(s string) (float64, error) {
	t, mult := s, 1.0
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		t, mult = s[:len(s)-1], 1e3
	case strings.HasSuffix(s, "M"):
		t, mult = s[:len(s)-1], 1e6
	}
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
