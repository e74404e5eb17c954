package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/discobench"
	"github.com/scout-discovery/scout/world"
)

func init() {
	register(command{name: "discobench", summary: "measure scout servers against quakestat on an emulated world (loopback only)", run: runDiscobench})
}

const discobenchAbout = `Runs a scout master on 127.0.0.1 and an emulated world of OpenArena
servers (Quake III protocol 71) heartbeating to it from their loopback
addresses, waits until the master lists them all, then, --runs times,
discovers the world through the master with:

  scout-et        scout servers (default et strategy: 16 in flight)
  scout-1000      scout servers --rate 1000 (paced, 1,000 probes/s)
  qstat-default   quakestat -q3m,71 with its defaults
  qstat-fast      quakestat -q3m,71 -maxsim 900 -sendinterval 0 (fastest)

and reports, for each, wall time, servers found, probes and bytes sent,
and RTT error (reported minus injected RTT) at p50 and p99, then the
medians over the runs. The master lists loopback addresses only (no
address translation), so quakestat can take part; nothing leaves
loopback. scout servers is run as this executable's 'servers' command.`

// discobenchClient is one client configuration of a round.
type discobenchClient struct {
	name  string
	scout []string // scout servers arguments; nil for quakestat
	qstat []string // quakestat flags
}

var discobenchClients = []discobenchClient{
	{name: "scout-et", scout: []string{"--game", "q3", "--protocol", "71"}},
	{name: "scout-1000", scout: []string{"--game", "q3", "--protocol", "71", "--rate", "1000"}},
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
	if code, done := parseFlags(fs, args); done {
		return code
	}
	lo, hi, err := world.ParseRange(*delay)
	if err != nil || *runs < 1 || *runs > 20 {
		fmt.Fprintf(stderr, "scout discobench: bad --delay or --runs (1..20)\n")
		return 2
	}
	clients := discobenchClients
	if *only != "" {
		names := strings.Split(*only, ",")
		clients = slices.DeleteFunc(slices.Clone(clients), func(c discobenchClient) bool { return !slices.Contains(names, c.name) })
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "scout discobench: %v\n", err)
		return 1
	}
	reqSize := 0
	if slices.ContainsFunc(clients, func(c discobenchClient) bool { return c.scout == nil }) {
		req, err := discobench.QuakestatRequest(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "scout discobench: capturing quakestat's request: %v\n", err)
			return 1
		}
		reqSize = len(req)
		fmt.Fprintf(stderr, "quakestat's server request: %q (%d bytes)\n", req, reqSize)
	}
	start := time.Now()
	env, err := discobench.Start(ctx, discobench.Config{Servers: *servers, Full: 0.3, Empty: 0.4,
		RTTMin: lo, RTTMax: hi, Loss: *loss, Seed: *seed})
	if err != nil {
		fmt.Fprintf(stderr, "scout discobench: %v\n", err)
		return 1
	}
	defer env.Close()
	if err := env.CheckLoopback(); err != nil {
		fmt.Fprintf(stderr, "scout discobench: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "world of %d servers (delay %v-%v, loss %v, seed %d) listed by %v after %v\n",
		*servers, lo, hi, *loss, *seed, env.Master, time.Since(start).Round(time.Millisecond))

	results := map[string][]discobench.Measurement{}
	enc := json.NewEncoder(stdout)
	for r := range *runs {
		for _, c := range clients {
			var m discobench.Measurement
			if c.scout != nil {
				m, _, err = env.Scout(ctx, c.name, self, c.scout...)
			} else {
				m, _, err = env.Quakestat(ctx, c.name, reqSize, c.qstat...)
			}
			if err != nil {
				fmt.Fprintf(stderr, "scout discobench: %v\n", err)
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
			}
		}
	}
	fmt.Fprintf(stdout, "\nmedians over %d runs (world: %d servers, %v-%v, loss %v):\n", *runs, *servers, lo, hi, *loss)
	fmt.Fprintln(stdout, "| client | wall s | found | probes | bytes | RTT err p50 | RTT err p99 |")
	fmt.Fprintln(stdout, "|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range clients {
		ms := results[c.name]
		if len(ms) == 0 {
			continue
		}
		fmt.Fprintf(stdout, "| %s | %.2f (%.2f-%.2f) | %d/%d | %d | %d | %s | %s |\n", c.name,
			medianOf(ms, func(m discobench.Measurement) float64 { return m.Wall.Seconds() }),
			minOf(ms, func(m discobench.Measurement) float64 { return m.Wall.Seconds() }),
			maxOf(ms, func(m discobench.Measurement) float64 { return m.Wall.Seconds() }),
			int(medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.Found) })), ms[0].Listed,
			int(medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.Probes) })),
			int64(medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.Bytes) })),
			time.Duration(medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.RTTErrP50) })).Round(time.Microsecond),
			time.Duration(medianOf(ms, func(m discobench.Measurement) float64 { return float64(m.RTTErrP99) })).Round(time.Microsecond))
	}
	return 0
}

func discobenchLine(m discobench.Measurement) string {
	return fmt.Sprintf("wall %7.2fs  found %d/%d  probes %d (client says %d)  bytes %d  RTT err p50 %v p99 %v max %v",
		m.Wall.Seconds(), m.Found, m.Listed, m.Probes, m.ClientProbes, m.Bytes,
		m.RTTErrP50.Round(time.Microsecond), m.RTTErrP99.Round(time.Microsecond), m.RTTErrMax.Round(time.Microsecond))
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
