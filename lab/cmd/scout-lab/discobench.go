package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/discobench"
	"github.com/scout-discovery/scout/lab/world"
)

func init() {
	register(cli.Command{Name: "discobench", Summary: "measure scout servers against quakestat on an emulated world (loopback only)", Run: runDiscobench})
}

const discobenchAbout = `Runs a scout master on 127.0.0.1 and an emulated world of OpenArena
servers (Quake III protocol 71) heartbeating to it from their loopback
addresses, waits until the master lists them all, then, --runs times,
discovers the world through the master with:

  scout           scout servers (the default: paced by the link)
  scout-et        scout servers --strategy et (Enemy Territory: 16 in flight)
  scout-1000      scout servers --rate 1000 (paced, 1,000 probes/s)
  scout-800k      scout servers --bandwidth 800k (the default, capped at
                  800 kbit/s of requests: 1,960 probes/s)
  qstat-default   quakestat -q3m,71 with its defaults
  qstat-fast      quakestat -q3m,71 -maxsim 900 -sendinterval 0 (fastest)

and reports, for each, wall time, servers found, probes, traffic and RTT
error (reported minus injected RTT) at p50 and p99, then the medians over
the runs, and every client's traffic against qstat-default's as ratios
both ways. Traffic is counted on the loopback interface (a packet
socket: Linux, CAP_NET_RAW): every datagram between the client and the
world's servers and the master, both directions, UDP payload and on the
wire (28 bytes of IPv4 and UDP headers more per datagram), with the
shapes of the requests the servers got. Without the tap, only request
bytes are given: scout's own count, and quakestat's probes times its
request size (an estimate). The master lists loopback addresses only (no
address translation), so quakestat can take part; nothing leaves
loopback. scout servers is run as this executable's 'servers' command.

--baseline BIN adds the client scout-before: BIN's own 'servers' command
with scout's arguments (an earlier build, for before and after in one
run; it runs first in each round).

--link 10mbit --link-queue 250ms gives the clients an access link (see
'scout-lab world -h'); each run then also reports its transfer bound, the
reply bytes over the link's rate plus the world's largest RTT, and the
wall time against it.`

// discobenchClient is one client configuration of a round.
type discobenchClient struct {
	name  string
	scout []string // scout servers arguments; nil for quakestat
	bin   string   // the scout executable; "" for this one
	qstat []string // quakestat flags
}

var discobenchClients = []discobenchClient{
	{name: "scout", scout: []string{"--game", "q3", "--protocol", "71"}},
	{name: "scout-et", scout: []string{"--game", "q3", "--protocol", "71", "--strategy", "et"}},
	{name: "scout-1000", scout: []string{"--game", "q3", "--protocol", "71", "--rate", "1000"}},
	{name: "scout-800k", scout: []string{"--game", "q3", "--protocol", "71", "--bandwidth", "800k"}},
	{name: "qstat-default", qstat: []string{}},
	{name: "qstat-fast", qstat: []string{"-maxsim", "900", "-sendinterval", "0"}},
}

func runDiscobench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("discobench", "[flags]", discobenchAbout, stderr)
	servers := fs.Int("servers", 5000, "emulated servers in the world")
	delay := fs.String("delay", "10ms-400ms", "injected round-trip times, LOW-HIGH")
	loss := fs.Float64("loss", 0.01, "probability that a reply datagram is lost")
	seed := fs.Uint64("seed", 1, "world seed")
	runs := fs.Int("runs", 3, "rounds of every client")
	only := fs.String("only", "", "comma-separated client names to run (default: all)")
	asJSON := fs.Bool("json", false, "print every measurement as a JSON line")
	lf := addLinkFlags(fs)
	baseline := fs.String("baseline", "", "a scout executable `BIN` (an earlier build) run as the client scout-before with scout's arguments")
	tune := fs.Bool("tune", true, "run the world as scout-lab world --realtime does: world.TuneRuntime (more Ps, rarer GC) and its releaser on a SCHED_FIFO thread where allowed")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	lo, hi, err := world.ParseRange(*delay)
	if err != nil || *runs < 1 || *runs > 20 {
		fmt.Fprintf(stderr, "scout-lab discobench: bad --delay or --runs (1..20)\n")
		return 2
	}
	access, err := lf.link()
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab discobench: %v\n", err)
		return 2
	}
	clients := discobenchClients
	if *baseline != "" {
		if _, err := os.Stat(*baseline); err != nil {
			fmt.Fprintf(stderr, "scout-lab discobench: --baseline: %v\n", err)
			return 2
		}
		before := discobenchClients[0]
		before.name, before.bin = "scout-before", *baseline
		clients = append([]discobenchClient{before}, clients...)
	}
	if *only != "" {
		names := strings.Split(*only, ",")
		clients = slices.DeleteFunc(slices.Clone(clients), func(c discobenchClient) bool { return !slices.Contains(names, c.name) })
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab discobench: %v\n", err)
		return 1
	}
	reqSize := 0
	if slices.ContainsFunc(clients, func(c discobenchClient) bool { return c.scout == nil }) {
		req, err := discobench.QuakestatRequest(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab discobench: capturing quakestat's request: %v\n", err)
			return 1
		}
		reqSize = len(req)
		fmt.Fprintf(stderr, "quakestat's server request: %q (%d bytes)\n", req, reqSize)
	}
	if *tune {
		defer world.TuneRuntime()()
	}
	start := time.Now()
	env, err := discobench.Start(ctx, discobench.Config{Servers: *servers, Full: 0.3, Empty: 0.4,
		RTTMin: lo, RTTMax: hi, Loss: *loss, Seed: *seed, RealTime: *tune, Access: access})
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab discobench: %v\n", err)
		return 1
	}
	defer env.Close()
	if err := env.CheckLoopback(); err != nil {
		fmt.Fprintf(stderr, "scout-lab discobench: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "world of %d servers (delay %v-%v, loss %v, seed %d, %s) listed by %v after %v\n",
		*servers, lo, hi, *loss, *seed, linkString(access), env.Master, time.Since(start).Round(time.Millisecond))
	if env.TapErr != nil {
		fmt.Fprintf(stderr, "traffic not counted on loopback (%v): request bytes from the clients' counts and an estimate\n", env.TapErr)
	}

	results := map[string][]discobench.Measurement{}
	enc := json.NewEncoder(stdout)
	for r := range *runs {
		for _, c := range clients {
			var m discobench.Measurement
			if c.scout != nil {
				m, _, err = env.Scout(ctx, c.name, cmp.Or(c.bin, self), c.scout...)
			} else {
				m, _, err = env.Quakestat(ctx, c.name, reqSize, c.qstat...)
			}
			if err != nil {
				fmt.Fprintf(stderr, "scout-lab discobench: %v\n", err)
				if errors.Is(ctx.Err(), context.Canceled) {
					return 1
				}
				continue
			}
			results[c.name] = append(results[c.name], m)
			if *asJSON {
				enc.Encode(map[string]any{"run": r + 1, "measurement": m})
			} else {
				fmt.Fprintf(stdout, "run %d %-13s %s\n", r+1, c.name, discobenchLine(m))
				if t := m.Traffic; t != nil {
					fmt.Fprintf(stdout, "      %-13s %s\n", "", trafficLine(*t))
				}
			}
		}
	}
	fmt.Fprintf(stdout, "\nmedians over %d runs (world: %d servers, %v-%v, loss %v, %s):\n", *runs, *servers, lo, hi, *loss, linkString(access))
	fmt.Fprintln(stdout, "| client | wall s | found | probes | bytes | RTT err p50 | RTT err p99 | wall / link bound |")
	fmt.Fprintln(stdout, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range clients {
		ms := results[c.name]
		if len(ms) == 0 {
			continue
		}
		bound := "-"
		if access.Rate > 0 {
			if r := medianOf(ms, linkRatio); r > 0 {
				bound = fmt.Sprintf("%.2f", r)
			}
		}
		fmt.Fprintf(stdout, "| %s | %.2f (%.2f-%.2f) | %d/%d | %d | %d | %s | %s | %s |\n", c.name,
			medianOf(ms, func(m discobench.Measurement) float64 { return m.Wall.Seconds() }),
			minOf(ms, func(m discobench.Measurement) float64 { return m.Wall.Seconds() }),
			maxOf(ms, func(m discobench.Measurement) float64 { return m.Wall.Seconds() }),
			int(medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.Found) })), ms[0].Listed,
			int(medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.Probes) })),
			int64(medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.Bytes) })),
			time.Duration(medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.RTTErrP50) })).Round(time.Microsecond),
			time.Duration(medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.RTTErrP99) })).Round(time.Microsecond), bound)
	}
	printTraffic(stdout, clients, results)
	return 0
}

// linkRatio is a run's wall time over its access link's transfer bound;
// 0 without one.
func linkRatio(m discobench.Measurement) float64 {
	if m.LinkBound <= 0 {
		return 0
	}
	return m.Wall.Seconds() / m.LinkBound.Seconds()
}

func discobenchLine(m discobench.Measurement) string {
	link := ""
	if m.LinkBound > 0 || m.LinkDropped > 0 || m.LinkWaitMean > 0 {
		link = fmt.Sprintf("\n      link: bound %.2fs (wall %.2fx), replies dropped by the queue %d, queueing delay mean %v",
			m.LinkBound.Seconds(), linkRatio(m), m.LinkDropped, m.LinkWaitMean.Round(time.Microsecond))
	}
	return runLine(m) + link
}

func runLine(m discobench.Measurement) string {
	return fmt.Sprintf("wall %7.2fs  found %d/%d  probes %d (client says %d)  bytes %d (%s)  RTT err p50 %v p99 %v max %v  world late p99 %v p99.9 %v (since start)",
		m.Wall.Seconds(), m.Found, m.Listed, m.Probes, m.ClientProbes, m.Bytes, m.BytesFrom,
		m.RTTErrP50.Round(time.Microsecond), m.RTTErrP99.Round(time.Microsecond), m.RTTErrMax.Round(time.Microsecond),
		m.WorldLateP99, m.WorldLateP999)
}

// trafficLine is one run's traffic: datagrams/payload bytes/wire bytes
// each way, and the request shapes.
func trafficLine(t discobench.Traffic) string {
	f := func(x discobench.Flow) string { return fmt.Sprintf("%d/%d/%d", x.Datagrams, x.Payload, x.Wire()) }
	var req []string
	for _, s := range t.Requests {
		req = append(req, fmt.Sprintf("%q %dB x%d", s.Shape, s.Size, s.Count))
	}
	return fmt.Sprintf("dgrams/payload/wire: to servers %s, from servers %s, to master %s, from master %s; drops %d+%d; requests %s",
		f(t.ToServers), f(t.FromServers), f(t.ToMaster), f(t.FromMaster), t.Drops, t.Overflow, strings.Join(req, ", "))
}

// trafficBase is the client every other's traffic is compared with.
const trafficBase = "qstat-default"

// printTraffic prints the median traffic of every client (sent, received,
// total; payload and wire) and its ratios to trafficBase's, both ways.
func printTraffic(w io.Writer, clients []discobenchClient, results map[string][]discobench.Measurement) {
	type side struct {
		name string
		flow func(discobench.Traffic) discobench.Flow
	}
	sides := []side{{"sent", discobench.Traffic.Sent}, {"received", discobench.Traffic.Received}, {"total", discobench.Traffic.Total}}
	med := func(name string, sd side, wire bool) (float64, bool) {
		var ms []discobench.Measurement
		for _, m := range results[name] {
			if m.Traffic != nil {
				ms = append(ms, m)
			}
		}
		if len(ms) == 0 {
			return 0, false
		}
		return medianOf(ms, func(m discobench.Measurement) float64 {
			f := sd.flow(*m.Traffic)
			if wire {
				return float64(f.Wire())
			}
			return float64(f.Payload)
		}), true
	}
	fmt.Fprintln(w, "\nmedian traffic in bytes, payload / on the wire (+28 per datagram); to and from servers and master:")
	fmt.Fprintln(w, "| client | datagrams sent | datagrams received | sent | received | total |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	any := false
	for _, c := range clients {
		var cells []string
		for _, sd := range sides {
			p, ok := med(c.name, sd, false)
			if !ok {
				break
			}
			wi, _ := med(c.name, sd, true)
			cells = append(cells, fmt.Sprintf("%.0f / %.0f", p, wi))
		}
		if len(cells) != len(sides) {
			continue
		}
		any = true
		var ms []discobench.Measurement
		for _, m := range results[c.name] {
			if m.Traffic != nil {
				ms = append(ms, m)
			}
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %s |\n", c.name,
			medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.Traffic.Sent().Datagrams) }),
			medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.Traffic.Received().Datagrams) }),
			strings.Join(cells, " | "))
	}
	if !any {
		return
	}
	if _, ok := med(trafficBase, sides[0], false); !ok {
		return
	}
	fmt.Fprintf(w, "\nratios of median traffic (payload, wire), client / %s and, after \"inverse\", %s / client:\n", trafficBase, trafficBase)
	for _, c := range clients {
		if c.name == trafficBase {
			continue
		}
		var parts, inv []string
		for _, sd := range sides {
			p, ok := med(c.name, sd, false)
			wi, _ := med(c.name, sd, true)
			bp, _ := med(trafficBase, sd, false)
			bw, _ := med(trafficBase, sd, true)
			if !ok || p == 0 || wi == 0 || bp == 0 || bw == 0 {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %.3fx, %.3fx", sd.name, p/bp, wi/bw))
			inv = append(inv, fmt.Sprintf("%s %.3fx, %.3fx", sd.name, bp/p, bw/wi))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "  %-13s %s; inverse %s\n", c.name, strings.Join(parts, "; "), strings.Join(inv, "; "))
		}
	}
}

func medianOf(ms []discobench.Measurement, f func(discobench.Measurement) float64) float64 {
	v := make([]float64, len(ms))
	for i, m := range ms {
		v[i] = f(m)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func minOf(ms []discobench.Measurement, f func(discobench.Measurement) float64) float64 {
	v := f(ms[0])
	for _, m := range ms[1:] {
		v = min(v, f(m))
	}
	return v
}

func maxOf(ms []discobench.Measurement, f func(discobench.Measurement) float64) float64 {
	v := f(ms[0])
	for _, m := range ms[1:] {
		v = max(v, f(m))
	}
	return v
}
