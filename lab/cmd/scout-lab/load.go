//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/lab/loadgen/bench"
	"github.com/scout-discovery/scout/protocol/q3"
)

func init() {
	register(cli.Command{Name: "load", Summary: "measure Quake III masters (scout, dpmaster) with an emulated fleet and full-list queries", Run: runLoad})
}

const loadAbout = `Registers --servers emulated game servers (each a UDP socket on its own
127.x.y.z address and port, answering getinfo and getstatus) with every
target master, then, --runs times and taking turns between targets, sends
the list request for --duration from --sources sockets on distinct
127.x.y.z addresses (consecutive, or with --source-nets N spread over N
/16s, as clients from many networks reach a master's per-network limits):
closed-loop with --outstanding requests in flight, or open-loop at --rate
requests per second. Every answer is checked (EOT and
all servers; every 1000th decoded in full and compared with the fleet).
An answer is complete at the packet with an end marker that brings it to
--servers servers, whether the master puts the marker on every packet
(scout master's default) or on the last only (dpmaster 2.x); one short of
servers ends 100 ms after its last packet if that carried a marker (package
discover's rule). --first-marker-ends ends each answer at its first marker
instead (the last-only layout alone).
"unansw" counts requests without an EOT within --timeout, "silent" those
of them that got no packet at all (refused by flood protection or a byte
budget); "lost" counts the packets missing from answers that did arrive.

Targets: --target NAME=ADDR:PORT[@PID], several allowed. With
--exec NAME=COMMAND the command (split on spaces; prefix "taskset -c 0" to
pin it) is started, waited for until it answers, measured and stopped at
the end; its PID is taken from the process. With a PID the master's CPU
time per answer (/proc/PID/stat) and its memory per listed server (VmRSS
after registration minus before; exec'd targets only) are reported.

Traffic goes to loopback only: every target address must be in 127.0.0.0/8.
Run it pinned to the other core than the masters ("taskset -c 1").

Output: one line per run and target, then the medians and the ratio of
each target to the first; with --json one JSON object per line.

Flood: with --flood RATE the runs are a reflection attack instead. For
--duration, RATE list requests per second are "spoofed" with the --victim
address, or spread over its network (--spread 24, 16) or everywhere
(random4: 127.0.0.0/8; random6: an IPv6 --prefix6 routed to lo), the next
address or network in each run so no run inherits a spent budget (sent
from sockets bound to them, each from a fresh source port, or in turn
from --flood-ports ports), while a real client on the victim's address
(a game client, or with --cookie scout's own) asks for the list every
--refresh and checks each answer. Each run prints the requests and bytes
spoofed, the bytes the master sent to the victims (the flood's ports and
the client's) and per second, the most any one /24 (IPv6 /56) got per
second, the amplification (victim bytes / spoofed bytes, UDP payload;
"wire" counts 28 header bytes per datagram each way) and the client's
refreshes answered complete. --client-only runs the client alone (a large
list refreshed every --refresh; give --timeout for a paced answer). With
--swarm the servers are the swarm's, and the list is its Quake3Arena 68
servers' (seven in ten).

Swarm: with --swarm, --servers IPv4 servers (one 127.x.y.z address each
from --swarm-base, sharing --sockets ports: heartbeats leave from each
server's address by IP_PKTINFO, in sendmmsg batches, and the master's
getinfos are read in recvmmsg batches) and --ipv6 servers on ::1 (a port
each) heartbeat to the one target (IPv6 to [::1] at the target's port),
--heartbeat-rate per second in all (default 20000), and again, round after
round, those the master did not challenge, within --populate-timeout
(default 10m). Printed: a line a second (servers that answered a getinfo,
with --metrics the master's own count of listed servers, the master's and
this process's CPU), the registration rate, the master's
CPU per registration, each game's full list (getserversExt GAME PROTO
empty full ipv4 ipv6; give the master --no-flood-protection and an
--out-rate and --out-burst that pass 5 MB) and its VmRSS per listed
server. A million heartbeating sources need the master's limits raised:
-n, --max-clients (the heartbeat flood table), and, since every IPv6
server shares ::1, --hash-ports and an --hb-throttle above --ipv6.`

// multiFlag collects a repeated string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, code, ok := parseLoadFlags(args, stderr)
	if !ok {
		return code
	}
	if err := bench.Run(ctx, cfg, stdout, stderr); err != nil {
		if !errors.Is(err, bench.ErrCheckFailed) && !errors.Is(err, bench.ErrNotListed) {
			fmt.Fprintf(stderr, "scout-lab load: %v\n", err)
		}
		return 1
	}
	return 0
}

// loadFlags are scout-lab load's flags that are not a field of the
// benchmark's configuration as they stand.
type loadFlags struct {
	targets, execs                       multiFlag
	fleetBase, sourceBase, query, victim *string
	spread, prefix6                      *string
	clientOnly                           *bool
	fleetPort                            *uint
	swarm                                *bool
	ss                                   swarmFlags
}

// parseLoadFlags reads scout-lab load's flags into the benchmark's
// configuration; when it returns !ok, the caller returns code at once.
func parseLoadFlags(args []string, stderr io.Writer) (cfg bench.Config, code int, ok bool) {
	fs := newFlags("load", "--target NAME=ADDR:PORT[@PID] [--exec NAME=COMMAND] [flags]", loadAbout, stderr)
	var f loadFlags
	fs.Var(&f.targets, "target", "NAME=ADDR:PORT[@PID]: a master to measure (several allowed)")
	fs.Var(&f.execs, "exec", "NAME=COMMAND: start this master for target NAME, measure it, stop it")
	fs.IntVar(&cfg.Fleet.Servers, "servers", loadgen.DefaultServers, "emulated game servers to register")
	fs.IntVar(&cfg.Fleet.PerAddr, "per-addr", loadgen.DefaultPerAddr, "emulated servers per loopback address")
	f.fleetBase = fs.String("fleet-base", loadgen.DefaultFleetBase.String(), "first address of the emulated servers")
	f.fleetPort = fs.Uint("fleet-port", loadgen.DefaultFleetPort, "first port of the emulated servers on each address")
	fs.IntVar(&cfg.Fleet.Protocol, "protocol", loadgen.DefaultProtocol, "protocol the servers announce and the query asks for")
	f.query = fs.String("query", "", `list request without the FF FF FF FF prefix (default "getservers PROTOCOL empty full")`)
	fs.IntVar(&cfg.HeartbeatRate, "heartbeat-rate", loadgen.DefaultHeartbeatRate, "heartbeats per second while registering")
	fs.DurationVar(&cfg.PopulateTimeout, "populate-timeout", time.Minute, "how long registration may take per master")
	l := &cfg.Load
	fs.IntVar(&l.Sources, "sources", loadgen.DefaultSources, "source sockets, each on its own 127.x.y.z address")
	f.sourceBase = fs.String("source-base", loadgen.DefaultSourceBase.String(), "first source address")
	fs.IntVar(&l.SourceNets, "source-nets", 0, "spread the sources over this many /16s from --source-base's, no two in one /24 (0: consecutive addresses)")
	fs.IntVar(&l.Outstanding, "outstanding", loadgen.DefaultOutstanding, "closed loop: requests in flight")
	fs.Float64Var(&l.Rate, "rate", 0, "open loop: requests per second (0: closed loop)")
	fs.DurationVar(&l.Duration, "duration", loadgen.DefaultDuration, "how long each run sends requests")
	fs.IntVar(&l.MaxRequests, "max-requests", 0, "stop each run after this many requests (0: --duration only)")
	fs.IntVar(&cfg.Runs, "runs", 5, "runs per target, taking turns between targets")
	fs.DurationVar(&l.Timeout, "timeout", loadgen.DefaultAnswerTimeout, "how long an answer may take")
	fs.DurationVar(&cfg.StartTimeout, "start-timeout", 10*time.Second, "how long an --exec master may take to answer")
	fs.BoolVar(&l.FirstMarkerEnds, "first-marker-ends", false, "end each answer at its first end marker: reads the marker-on-the-last-packet layout (dpmaster 2.x) only")
	fs.BoolVar(&cfg.JSON, "json", false, "print one JSON object per run and one per target summary")
	fl := loadgen.FloodConfig{}
	fs.Float64Var(&fl.Rate, "flood", 0, "spoofed requests per second aimed at --victim (0: no flood; see Flood below)")
	f.victim = fs.String("victim", "127.77.0.1", "--flood: the victim's address, which the spoofed requests and the refreshing client both use")
	fs.IntVar(&fl.Ports, "flood-ports", 0, "--flood: source ports the flood uses in turn (0: a fresh port per request)")
	fs.DurationVar(&fl.Refresh, "refresh", loadgen.DefaultRefresh, "--flood: the victim's client asks for the list this often")
	f.spread = fs.String("spread", "address", "--flood: the addresses spoofed: address (the victim's), 24 (its /24), 16 (its /16), random4 (127.0.0.0/8), random6 (--prefix6)")
	f.prefix6 = fs.String("prefix6", "", "--flood --spread random6: an IPv6 prefix routed to lo (ip -6 route add local PREFIX dev lo); --victim is one of its addresses and the target listens on [::1]")
	fs.BoolVar(&fl.Cookie, "cookie", false, "--flood: the victim's client is scout's, asking for a cookie and echoing it")
	f.clientOnly = fs.Bool("client-only", false, "the --flood measurement without a flood: the victim's client alone (a large list refreshed every --refresh)")
	f.swarm = fs.Bool("swarm", false, "register --servers IPv4 and --ipv6 IPv6 servers on few sockets with the one target, measure the rate, and stop (see Swarm below)")
	f.ss = addSwarmFlags(fs)
	if code, done := parseFlags(fs, args); done {
		return cfg, code, false
	}
	if err := f.config(fs, &cfg, fl); err != nil {
		return cfg, cli.UsageError(fs, "%v", err), false
	}
	return cfg, 0, true
}

// config completes cfg from the flags that need reading: the targets,
// the addresses, the query, and the flood and swarm modes.
func (f *loadFlags) config(fs *flag.FlagSet, cfg *bench.Config, fl loadgen.FloodConfig) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if len(f.targets) == 0 {
		return fmt.Errorf("no --target given")
	}
	if cfg.Runs < 1 || cfg.Fleet.Servers < 1 || *f.fleetPort == 0 || *f.fleetPort > 65535 {
		return fmt.Errorf("--runs and --servers must be at least 1, --fleet-port a port")
	}
	var err error
	if cfg.Targets, err = loadTargets(f.targets, f.execs); err != nil {
		return err
	}
	cfg.Fleet.Port = uint16(*f.fleetPort)
	if cfg.Fleet.Base, err = netip.ParseAddr(*f.fleetBase); err != nil {
		return fmt.Errorf("--fleet-base: %v", err)
	}
	if cfg.Load.SourceBase, err = netip.ParseAddr(*f.sourceBase); err != nil {
		return fmt.Errorf("--source-base: %v", err)
	}
	if *f.query == "" {
		cfg.Query, err = q3.GetServers{Protocol: cfg.Fleet.Protocol, Empty: true, Full: true}.AppendBinary(nil)
	} else {
		cfg.Query = append([]byte(q3.Prefix), *f.query...)
		_, err = q3.Parse(cfg.Query)
	}
	if err != nil {
		return fmt.Errorf("--query: %v", err)
	}
	cfg.Load.Query, cfg.Load.Expect = cfg.Query, cfg.Fleet.Servers
	if *f.swarm {
		if len(cfg.Targets) != 1 {
			return fmt.Errorf("--swarm measures one --target")
		}
		so, err := f.ss.options(fs, cfg)
		if err != nil {
			return err
		}
		cfg.Swarm = &so
	}
	if *f.clientOnly {
		fl.Rate = -1
	}
	if fl.Rate != 0 {
		if fl.Victim, err = netip.ParseAddr(*f.victim); err != nil {
			return fmt.Errorf("--victim: %v", err)
		}
		if fl.Spread, err = loadgen.ParseSpread(*f.spread); err != nil {
			return err
		}
		if *f.prefix6 != "" {
			if fl.Prefix6, err = netip.ParsePrefix(*f.prefix6); err != nil {
				return fmt.Errorf("--prefix6: %v", err)
			}
		}
		fl.Query, fl.Expect, fl.Duration, fl.Timeout = cfg.Query, cfg.Fleet.Servers, cfg.Load.Duration, cfg.Load.Timeout
		cfg.Flood = &fl
	}
	return nil
}

// loadTargets reads the --target flags and gives each --exec's command to
// its target.
func loadTargets(targetFlags, execFlags []string) ([]*bench.Target, error) {
	var targets []*bench.Target
	for _, s := range targetFlags {
		t, err := bench.ParseTarget(s)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(targets, func(o *bench.Target) bool { return o.Name == t.Name }) {
			return nil, fmt.Errorf("target %q given twice", t.Name)
		}
		targets = append(targets, &t)
	}
	for _, s := range execFlags {
		name, cmdline, ok := strings.Cut(s, "=")
		i := slices.IndexFunc(targets, func(t *bench.Target) bool { return t.Name == name })
		if !ok || i < 0 || len(strings.Fields(cmdline)) == 0 {
			return nil, fmt.Errorf("--exec %q: want NAME=COMMAND for a NAME given with --target", s)
		}
		if targets[i].PID != 0 {
			return nil, fmt.Errorf("--exec %q: target %q already has a PID", s, name)
		}
		targets[i].Argv = strings.Fields(cmdline)
	}
	return targets, nil
}

// swarmFlags are scout-lab load's --swarm flags.
type swarmFlags struct {
	ipv6, sockets *int
	port6         *uint
	metrics, base *string
}

func addSwarmFlags(fs *flag.FlagSet) swarmFlags {
	return swarmFlags{
		ipv6:    fs.Int("ipv6", 0, "--swarm: servers on ::1, one port each from --port6 (the target must listen on [::1] at its port too)"),
		port6:   fs.Uint("port6", loadgen.DefaultSwarmPort6, "--swarm: first port tried for the IPv6 servers"),
		sockets: fs.Int("sockets", loadgen.DefaultSwarmSockets, "--swarm: IPv4 sockets (ports) the IPv4 servers share"),
		metrics: fs.String("metrics", "", "--swarm: the master's /metrics URL (its --http), read each second for the servers it lists"),
		base:    fs.String("swarm-base", loadgen.DefaultSwarmBase.String(), "--swarm: first address of the IPv4 servers"),
	}
}

// options returns the swarm's options: --heartbeat-rate if given, else
// the swarm's default rate, and --populate-timeout if given, else 10
// minutes.
func (f swarmFlags) options(fs *flag.FlagSet, cfg *bench.Config) (bench.SwarmOptions, error) {
	sb, err := netip.ParseAddr(*f.base)
	if err != nil {
		return bench.SwarmOptions{}, fmt.Errorf("--swarm-base: %v", err)
	}
	if *f.ipv6 < 0 || *f.sockets < 1 || *f.port6 < 1 || *f.port6 > 65535 {
		return bench.SwarmOptions{}, fmt.Errorf("--ipv6 must be at least 0, --sockets at least 1, --port6 a port")
	}
	so := bench.SwarmOptions{
		Swarm: loadgen.SwarmConfig{Servers: cfg.Fleet.Servers, Base: sb, Sockets: *f.sockets, IPv6: *f.ipv6, Port6: uint16(*f.port6)},
		Rate:  loadgen.DefaultSwarmRate, Deadline: cfg.PopulateTimeout, Metrics: *f.metrics,
	}
	if flagSet(fs, "heartbeat-rate") {
		so.Rate = cfg.HeartbeatRate
	}
	if !flagSet(fs, "populate-timeout") {
		so.Deadline = 10 * time.Minute
	}
	return so, nil
}
