//go:build linux

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/protocol/q3"
)

func init() {
	register(cli.Command{Name: "load", Summary: "measure Quake III masters (scout, dpmaster) with an emulated fleet and full-list queries", Run: runLoad})
}

const loadAbout = `Registers --servers emulated game servers (each a UDP socket on its own
127.x.y.z address and port, answering getinfo and getstatus) with every
target master, then, --runs times and taking turns between targets, sends
the list request for --duration from --sources sockets on distinct
127.x.y.z addresses: closed-loop with --outstanding requests in flight, or
open-loop at --rate requests per second. Every answer is checked (EOT and
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
address (the next address in each run, so no run inherits a spent budget) (sent from sockets bound to it, each from a fresh source port, or
in turn from --flood-ports ports), while a real client on the same address
asks for the list every --refresh and checks each answer. Each run prints
the requests and bytes spoofed, the bytes the master sent to the victim
(the flood's ports and the client's), the amplification (victim bytes /
spoofed bytes, UDP payload; "wire" counts 28 header bytes per datagram
each way) and the client's refreshes answered complete.

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

type loadTarget struct {
	name string
	addr netip.AddrPort
	pid  int
	argv []string
	// proc is the exec'd master, and exited receives its Wait result.
	proc   *os.Process
	exited chan error
	rss0   int64 // VmRSS before registration, bytes; 0 unknown
	rss1   int64 // after
}

// parseTarget reads NAME=ADDR:PORT[@PID].
func parseTarget(s string) (loadTarget, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return loadTarget{}, fmt.Errorf("--target %q: want NAME=ADDR:PORT[@PID]", s)
	}
	t := loadTarget{name: name}
	if a, p, ok := strings.Cut(rest, "@"); ok {
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 {
			return loadTarget{}, fmt.Errorf("--target %q: bad PID %q", s, p)
		}
		t.pid, rest = pid, a
	}
	ap, err := netip.ParseAddrPort(rest)
	if err != nil {
		return loadTarget{}, fmt.Errorf("--target %q: %v", s, err)
	}
	if !ap.Addr().Unmap().IsLoopback() || !ap.Addr().Unmap().Is4() {
		return loadTarget{}, fmt.Errorf("--target %q: only IPv4 loopback masters (127.0.0.0/8) may be loaded", s)
	}
	t.addr = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	return t, nil
}

// multiFlag collects a repeated string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("load", "--target NAME=ADDR:PORT[@PID] [--exec NAME=COMMAND] [flags]", loadAbout, stderr)
	var targetFlags, execFlags multiFlag
	fs.Var(&targetFlags, "target", "NAME=ADDR:PORT[@PID]: a master to measure (several allowed)")
	fs.Var(&execFlags, "exec", "NAME=COMMAND: start this master for target NAME, measure it, stop it")
	servers := fs.Int("servers", loadgen.DefaultServers, "emulated game servers to register")
	perAddr := fs.Int("per-addr", loadgen.DefaultPerAddr, "emulated servers per loopback address")
	fleetBase := fs.String("fleet-base", loadgen.DefaultFleetBase.String(), "first address of the emulated servers")
	fleetPort := fs.Uint("fleet-port", loadgen.DefaultFleetPort, "first port of the emulated servers on each address")
	protocol := fs.Int("protocol", loadgen.DefaultProtocol, "protocol the servers announce and the query asks for")
	query := fs.String("query", "", `list request without the FF FF FF FF prefix (default "getservers PROTOCOL empty full")`)
	hbRate := fs.Int("heartbeat-rate", loadgen.DefaultHeartbeatRate, "heartbeats per second while registering")
	popTimeout := fs.Duration("populate-timeout", time.Minute, "how long registration may take per master")
	sources := fs.Int("sources", loadgen.DefaultSources, "source sockets, each on its own 127.x.y.z address")
	sourceBase := fs.String("source-base", loadgen.DefaultSourceBase.String(), "first source address")
	outstanding := fs.Int("outstanding", loadgen.DefaultOutstanding, "closed loop: requests in flight")
	rate := fs.Float64("rate", 0, "open loop: requests per second (0: closed loop)")
	duration := fs.Duration("duration", loadgen.DefaultDuration, "how long each run sends requests")
	maxRequests := fs.Int("max-requests", 0, "stop each run after this many requests (0: --duration only)")
	runs := fs.Int("runs", 5, "runs per target, taking turns between targets")
	timeout := fs.Duration("timeout", loadgen.DefaultAnswerTimeout, "how long an answer may take")
	startTimeout := fs.Duration("start-timeout", 10*time.Second, "how long an --exec master may take to answer")
	firstMarker := fs.Bool("first-marker-ends", false, "end each answer at its first end marker: reads the marker-on-the-last-packet layout (dpmaster 2.x) only")
	asJSON := fs.Bool("json", false, "print one JSON object per run and one per target summary")
	floodRate := fs.Float64("flood", 0, "spoofed requests per second aimed at --victim (0: no flood; see Flood below)")
	victim := fs.String("victim", "127.77.0.1", "--flood: the victim's address, which the spoofed requests and the refreshing client both use")
	floodPorts := fs.Int("flood-ports", 0, "--flood: source ports the flood uses in turn (0: a fresh port per request)")
	refresh := fs.Duration("refresh", loadgen.DefaultRefresh, "--flood: the victim's client asks for the list this often")
	swarm := fs.Bool("swarm", false, "register --servers IPv4 and --ipv6 IPv6 servers on few sockets with the one target, measure the rate, and stop (see Swarm below)")
	ipv6 := fs.Int("ipv6", 0, "--swarm: servers on ::1, one port each from --port6 (the target must listen on [::1] at its port too)")
	port6 := fs.Uint("port6", loadgen.DefaultSwarmPort6, "--swarm: first port tried for the IPv6 servers")
	sockets := fs.Int("sockets", loadgen.DefaultSwarmSockets, "--swarm: IPv4 sockets (ports) the IPv4 servers share")
	swarmMetrics := fs.String("metrics", "", "--swarm: the master's /metrics URL (its --http), read each second for the servers it lists")
	swarmBase := fs.String("swarm-base", loadgen.DefaultSwarmBase.String(), "--swarm: first address of the IPv4 servers")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "scout-lab load: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if len(targetFlags) == 0 {
		return fail("no --target given")
	}
	if *runs < 1 || *servers < 1 || *fleetPort == 0 || *fleetPort > 65535 {
		return fail("--runs and --servers must be at least 1, --fleet-port a port")
	}
	var targets []*loadTarget
	for _, s := range targetFlags {
		t, err := parseTarget(s)
		if err != nil {
			return fail("%v", err)
		}
		if slices.ContainsFunc(targets, func(o *loadTarget) bool { return o.name == t.name }) {
			return fail("target %q given twice", t.name)
		}
		targets = append(targets, &t)
	}
	for _, s := range execFlags {
		name, cmdline, ok := strings.Cut(s, "=")
		i := slices.IndexFunc(targets, func(t *loadTarget) bool { return t.name == name })
		if !ok || i < 0 || len(strings.Fields(cmdline)) == 0 {
			return fail("--exec %q: want NAME=COMMAND for a NAME given with --target", s)
		}
		if targets[i].pid != 0 {
			return fail("--exec %q: target %q already has a PID", s, name)
		}
		targets[i].argv = strings.Fields(cmdline)
	}
	fb, err := netip.ParseAddr(*fleetBase)
	if err != nil {
		return fail("--fleet-base: %v", err)
	}
	sb, err := netip.ParseAddr(*sourceBase)
	if err != nil {
		return fail("--source-base: %v", err)
	}
	var req []byte
	if *query == "" {
		req, err = q3.GetServers{Protocol: *protocol, Empty: true, Full: true}.AppendBinary(nil)
	} else {
		req = append([]byte(q3.Prefix), *query...)
		_, err = q3.Parse(req)
	}
	if err != nil {
		return fail("--query: %v", err)
	}

	var ss swarmSettings
	if *swarm {
		if len(targets) != 1 {
			return fail("--swarm measures one --target")
		}
		sb, err := netip.ParseAddr(*swarmBase)
		if err != nil {
			return fail("--swarm-base: %v", err)
		}
		if *ipv6 < 0 || *sockets < 1 || *port6 < 1 || *port6 > 65535 {
			return fail("--ipv6 must be at least 0, --sockets at least 1, --port6 a port")
		}
		ss = swarmSettings{
			cfg:  loadgen.SwarmConfig{Servers: *servers, Base: sb, Sockets: *sockets, IPv6: *ipv6, Port6: uint16(*port6)},
			rate: loadgen.DefaultSwarmRate, deadline: *popTimeout, metrics: *swarmMetrics,
		}
		if flagSet(fs, "heartbeat-rate") {
			ss.rate = *hbRate
		}
		if !flagSet(fs, "populate-timeout") {
			ss.deadline = 10 * time.Minute
		}
	}
	defer func() {
		for _, t := range targets {
			stopLaunched(t)
		}
	}()
	for _, t := range targets {
		if t.argv == nil {
			continue
		}
		if err := launchMaster(ctx, t, req, *startTimeout); err != nil {
			fmt.Fprintf(stderr, "scout-lab load: %v\n", err)
			return 1
		}
	}
	for _, t := range targets {
		if t.proc != nil {
			t.rss0, _ = loadgen.ProcRSS(t.pid)
		}
	}

	if *swarm {
		return runSwarm(ctx, stdout, stderr, targets[0], ss)
	}
	fleet, err := loadgen.NewFleet(loadgen.FleetConfig{
		Servers: *servers, PerAddr: *perAddr, Base: fb, Port: uint16(*fleetPort), Protocol: *protocol,
	})
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab load: %v\n", err)
		return 1
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- fleet.Serve(serveCtx) }()
	defer func() {
		stopServe()
		<-served
		fleet.Close()
	}()

	for _, t := range targets {
		began := time.Now()
		n, err := loadgen.Populate(ctx, fleet, t.addr, loadgen.PopulateConfig{Query: req, Rate: *hbRate, Deadline: *popTimeout})
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab load: %s (%v): %v\n", t.name, t.addr, err)
			return 1
		}
		if t.proc != nil {
			t.rss1, _ = loadgen.ProcRSS(t.pid)
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "%s: %d servers listed in %v\n", t.name, n, time.Since(began).Round(time.Millisecond))
		}
	}

	if *floodRate > 0 {
		va, err := netip.ParseAddr(*victim)
		if err != nil {
			return fail("--victim: %v", err)
		}
		return runFlood(ctx, stdout, stderr, targets, loadgen.FloodConfig{
			Victim: va, Query: req, Expect: *servers, Rate: *floodRate, Ports: *floodPorts,
			Refresh: *refresh, Duration: *duration, Timeout: *timeout,
		}, *runs, *asJSON)
	}

	results := make(map[string][]loadgen.Result)
	// Runs are printed as they end, so the columns have fixed widths.
	const runFormat = "%3v %-10.10s %9v %9v %7v %7v %7v %7v %8v %6v %6v %6v %6v %7v %7v\n"
	if !*asJSON {
		fmt.Fprintf(stdout, runFormat, "run", "target", "answers/s", "cpu ms/a", "mstr %", "load %", "pkts/a", "bytes/a",
			"complete", "incmpl", "unansw", "silent", "lost", "p50 ms", "p99 ms")
	}
	enc := json.NewEncoder(stdout)
	for run := 1; run <= *runs; run++ {
		order := slices.Clone(targets)
		if run%2 == 0 {
			slices.Reverse(order)
		}
		for _, t := range order {
			r, err := loadgen.Run(ctx, loadgen.Config{
				Master: t.addr, Query: req, Expect: *servers,
				Sources: *sources, SourceBase: sb, Outstanding: *outstanding, Rate: *rate,
				Duration: *duration, MaxRequests: *maxRequests, Timeout: *timeout,
				Want: fleet.Addrs(), PID: t.pid, FirstMarkerEnds: *firstMarker,
			})
			if err != nil {
				fmt.Fprintf(stderr, "scout-lab load: %s run %d: %v\n", t.name, run, err)
				return 1
			}
			results[t.name] = append(results[t.name], r)
			if *asJSON {
				_ = enc.Encode(struct {
					Run    int    `json:"run"`
					Target string `json:"target"`
					loadgen.Result
					AnswersPerSecond float64 `json:"answers_per_second"`
				}{run, t.name, r, r.AnswersPerSecond()})
				continue
			}
			fmt.Fprintf(stdout, runFormat, run, t.name, fmt.Sprintf("%.0f", r.AnswersPerSecond()), cpuMS(r, t.pid),
				cpuPct(r.MasterCPU, r.Elapsed, t.pid), fmt.Sprintf("%.0f", 100*r.LoadCPU.Seconds()/r.Elapsed.Seconds()),
				r.PacketsPerAnswer, r.BytesPerAnswer, r.Complete, r.Incomplete, r.Unanswered, r.Silent, r.LostPackets,
				fmt.Sprintf("%.2f", ms(r.LatencyP50)), fmt.Sprintf("%.2f", ms(r.LatencyP99)))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return printSummary(stdout, targets, results, *servers, *asJSON)
}

// launchMaster starts t.argv and waits until the master answers the list
// request (an empty list is an answer).
func launchMaster(ctx context.Context, t *loadTarget, req []byte, timeout time.Duration) error {
	cmd := exec.Command(t.argv[0], t.argv[1:]...)
	// Output is discarded: a master logging to a terminal would spend its
	// CPU there.
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	t.proc, t.pid, t.exited = cmd.Process, cmd.Process.Pid, make(chan error, 1)
	go func() { t.exited <- cmd.Wait() }()
	deadline := time.Now().Add(timeout)
	src := netip.AddrFrom4([4]byte{127, 14, 0, 1})
	for {
		select {
		case err := <-t.exited:
			t.proc = nil
			return fmt.Errorf("%s: exited before answering: %v", t.name, err)
		default:
		}
		// Each try waits up to 100 ms for the answer: that is the pacing
		// of the readiness check. Each comes from a new address, so a
		// master's flood protection does not throttle it.
		if _, err := loadgen.ListServers(ctx, t.addr, netip.AddrPortFrom(src, 0), req, 100*time.Millisecond); err == nil {
			return nil
		}
		src = src.Next()
		if time.Now().After(deadline) || ctx.Err() != nil {
			stopLaunched(t)
			return fmt.Errorf("%s: no answer from %v within %v", t.name, t.addr, timeout)
		}
	}
}

// stopLaunched kills an exec'd master and reaps it.
func stopLaunched(t *loadTarget) {
	if t.proc == nil {
		return
	}
	_ = t.proc.Kill()
	<-t.exited
	t.proc = nil
}

// flagSet reports whether the flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func cpuMS(r loadgen.Result, pid int) string {
	if pid == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", ms(r.CPUPerAnswer()))
}

func cpuPct(cpu, elapsed time.Duration, pid int) string {
	if pid == 0 || elapsed <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", 100*cpu.Seconds()/elapsed.Seconds())
}

// summary is one target's medians over its runs.
type summary struct {
	Target           string  `json:"target"`
	Runs             int     `json:"runs"`
	AnswersPerSecond float64 `json:"answers_per_second_median"`
	AnswersMin       float64 `json:"answers_per_second_min"`
	AnswersMax       float64 `json:"answers_per_second_max"`
	CPUPerAnswerMS   float64 `json:"cpu_ms_per_answer_median,omitempty"`
	PacketsPerAnswer int     `json:"packets_per_answer"`
	BytesPerAnswer   int     `json:"bytes_per_answer"`
	LostPackets      int     `json:"lost_packets_total"`
	Incomplete       int     `json:"incomplete_total"`
	Unanswered       int     `json:"unanswered_total"`
	Silent           int     `json:"silent_total"`
	CheckFailed      int     `json:"check_failed_total"`
	RSSPerServer     float64 `json:"rss_bytes_per_server,omitempty"`
	RSSBefore        int64   `json:"rss_bytes_before,omitempty"`
	RSSAfter         int64   `json:"rss_bytes_after,omitempty"`
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func summarize(t *loadTarget, rs []loadgen.Result, servers int) summary {
	s := summary{Target: t.name, Runs: len(rs)}
	var aps, cpu []float64
	for _, r := range rs {
		aps = append(aps, r.AnswersPerSecond())
		if t.pid != 0 && r.Complete > 0 {
			cpu = append(cpu, ms(r.CPUPerAnswer()))
		}
		if s.PacketsPerAnswer == 0 {
			s.PacketsPerAnswer, s.BytesPerAnswer = r.PacketsPerAnswer, r.BytesPerAnswer
		}
		s.LostPackets += r.LostPackets
		s.Incomplete += r.Incomplete
		s.Unanswered += r.Unanswered
		s.Silent += r.Silent
		s.CheckFailed += r.CheckFailed
	}
	s.AnswersPerSecond, s.CPUPerAnswerMS = median(aps), median(cpu)
	if len(aps) > 0 {
		s.AnswersMin, s.AnswersMax = slices.Min(aps), slices.Max(aps)
	}
	if t.rss0 > 0 && t.rss1 > 0 {
		s.RSSBefore, s.RSSAfter = t.rss0, t.rss1
		s.RSSPerServer = float64(t.rss1-t.rss0) / float64(servers)
	}
	return s
}

func printSummary(w io.Writer, targets []*loadTarget, results map[string][]loadgen.Result, servers int, asJSON bool) int {
	var sums []summary
	for _, t := range targets {
		sums = append(sums, summarize(t, results[t.name], servers))
	}
	if asJSON {
		enc := json.NewEncoder(w)
		for _, s := range sums {
			_ = enc.Encode(s)
		}
	} else {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "target\truns\tanswers/s median\t(min-max)\tcpu ms/answer median\tpackets/answer\tbytes/answer\tlost pkts\tincomplete\tunanswered\tsilent\tcheck failed\tRSS bytes/server\t")
		for _, s := range sums {
			cpu, rss := "-", "-"
			if s.CPUPerAnswerMS > 0 {
				cpu = fmt.Sprintf("%.3f", s.CPUPerAnswerMS)
			}
			if s.RSSPerServer != 0 {
				rss = fmt.Sprintf("%.0f", s.RSSPerServer)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t(%.0f-%.0f)\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", s.Target, s.Runs,
				s.AnswersPerSecond, s.AnswersMin, s.AnswersMax, cpu, s.PacketsPerAnswer, s.BytesPerAnswer,
				s.LostPackets, s.Incomplete, s.Unanswered, s.Silent, s.CheckFailed, rss)
		}
		tw.Flush()
		if len(sums) > 1 && sums[0].AnswersPerSecond > 0 {
			base := sums[0]
			for _, s := range sums[1:] {
				fmt.Fprintf(w, "%s / %s: answers/s x%.2f", s.Target, base.Target, s.AnswersPerSecond/base.AnswersPerSecond)
				if base.CPUPerAnswerMS > 0 && s.CPUPerAnswerMS > 0 {
					fmt.Fprintf(w, ", cpu/answer x%.2f", s.CPUPerAnswerMS/base.CPUPerAnswerMS)
				}
				fmt.Fprintln(w)
			}
		}
	}
	for _, s := range sums {
		if s.CheckFailed > 0 {
			return 1
		}
	}
	return 0
}

var _ flag.Value = (*multiFlag)(nil)
