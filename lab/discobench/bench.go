package discobench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Client is one client configuration of a round: scout servers with
// Scout's arguments (run by Bin), or quakestat with Qstat's flags.
type Client struct {
	Name  string
	Scout []string // scout servers arguments; nil for quakestat
	Bin   string   // the scout executable; "" for BenchConfig.Self
	Qstat []string // quakestat flags
}

// Clients are the clients a round runs by default. scout probes in the
// masters' order (conventional discovery, --order master), as quakestat
// does: the benchmark measures probing every listed server, not a plan
// that stops early; scout-auto is that plan (scout servers' default
// order), whose found counts the answers of what it chose to probe.
var Clients = []Client{
	{Name: "scout", Scout: []string{"--order", "master", "--game", "q3", "--protocol", "71"}},
	{Name: "scout-et", Scout: []string{"--order", "master", "--game", "q3", "--protocol", "71", "--strategy", "et"}},
	{Name: "scout-1000", Scout: []string{"--order", "master", "--game", "q3", "--protocol", "71", "--rate", "1000"}},
	{Name: "scout-800k", Scout: []string{"--order", "master", "--game", "q3", "--protocol", "71", "--bandwidth", "800k"}},
	{Name: "scout-auto", Scout: []string{"--order", "auto", "--game", "q3", "--protocol", "71"}},
	{Name: "qstat-default", Qstat: []string{}},
	{Name: "qstat-fast", Qstat: []string{"-maxsim", "900", "-sendinterval", "0"}},
}

// BenchConfig is scout-lab discobench's benchmark: the world (Config) and
// Runs rounds of Clients.
type BenchConfig struct {
	Config
	Clients []Client
	Runs    int
	// Self is the scout executable with the servers command (scout-lab)
	// a Client without its own Bin runs.
	Self string
	// JSON prints every measurement as a JSON line.
	JSON bool
}

// Bench starts the world and its master, runs every client Runs times,
// printing each measurement, then the medians over the runs and the
// traffic (printTraffic). A client that fails is reported on stderr and
// the round goes on.
func Bench(ctx context.Context, cfg BenchConfig, stdout, stderr io.Writer) error {
	reqSize := 0
	if slices.ContainsFunc(cfg.Clients, func(c Client) bool { return c.Scout == nil }) {
		req, err := QuakestatRequest(ctx)
		if err != nil {
			return fmt.Errorf("capturing quakestat's request: %w", err)
		}
		reqSize = len(req)
		fmt.Fprintf(stderr, "quakestat's server request: %q (%d bytes)\n", req, reqSize)
	}
	start := time.Now()
	env, err := Start(ctx, cfg.Config)
	if err != nil {
		return err
	}
	defer env.Close()
	if err := env.CheckLoopback(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "world of %d servers (delay %v-%v, loss %v, gone %v, seed %d, %s) listed by %v after %v\n",
		cfg.Servers, cfg.RTTMin, cfg.RTTMax, cfg.Loss, cfg.Gone, cfg.Seed, cfg.Access, env.Master, time.Since(start).Round(time.Millisecond))
	if env.TapErr != nil {
		fmt.Fprintf(stderr, "traffic not counted on loopback (%v): request bytes from the clients' counts and an estimate\n", env.TapErr)
	}
	results, err := rounds(ctx, cfg, env, reqSize, stdout, stderr)
	if err != nil {
		return err
	}
	printMedians(stdout, cfg, results)
	printTraffic(stdout, cfg.Clients, results)
	return nil
}

// rounds runs every client cfg.Runs times, printing each measurement.
func rounds(ctx context.Context, cfg BenchConfig, env *Env, reqSize int, stdout, stderr io.Writer) (map[string][]Measurement, error) {
	results := map[string][]Measurement{}
	enc := json.NewEncoder(stdout)
	for r := range cfg.Runs {
		for _, c := range cfg.Clients {
			var m Measurement
			var err error
			if c.Scout != nil {
				m, _, err = env.Scout(ctx, c.Name, cmp.Or(c.Bin, cfg.Self), c.Scout...)
			} else {
				m, _, err = env.Quakestat(ctx, c.Name, reqSize, c.Qstat...)
			}
			if err != nil {
				if errors.Is(ctx.Err(), context.Canceled) {
					return nil, err
				}
				fmt.Fprintf(stderr, "scout-lab discobench: %v\n", err)
				continue
			}
			results[c.Name] = append(results[c.Name], m)
			if cfg.JSON {
				enc.Encode(map[string]any{"run": r + 1, "measurement": m})
			} else {
				fmt.Fprintf(stdout, "run %d %-13s %s\n", r+1, c.Name, discobenchLine(m))
				if t := m.Traffic; t != nil {
					fmt.Fprintf(stdout, "      %-13s %s\n", "", trafficLine(*t))
				}
			}
		}
	}
	return results, nil
}

// printMedians prints each client's medians over the runs, with the
// range of its wall time.
func printMedians(stdout io.Writer, cfg BenchConfig, results map[string][]Measurement) {
	fmt.Fprintf(stdout, "\nmedians over %d runs (world: %d servers, %v-%v, loss %v, gone %v, %s):\n", cfg.Runs, cfg.Servers, cfg.RTTMin, cfg.RTTMax, cfg.Loss, cfg.Gone, cfg.Access)
	fmt.Fprintf(stdout, "| client | wall s | last playable s (RTT < %v) | found | probes | bytes | RTT err p50 | RTT err p99 | wall / link bound |\n", PlayableRTT)
	fmt.Fprintln(stdout, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range cfg.Clients {
		ms := results[c.Name]
		if len(ms) == 0 {
			continue
		}
		bound := "-"
		if cfg.Access.Rate > 0 {
			if r := medianOf(ms, linkRatio); r > 0 {
				bound = fmt.Sprintf("%.2f", r)
			}
		}
		fmt.Fprintf(stdout, "| %s | %.2f (%.2f-%.2f) | %.2f (%d found) | %d/%d | %d | %d | %s | %s | %s |\n", c.Name,
			medianOf(ms, func(m Measurement) float64 { return m.Wall.Seconds() }),
			minOf(ms, func(m Measurement) float64 { return m.Wall.Seconds() }),
			maxOf(ms, func(m Measurement) float64 { return m.Wall.Seconds() }),
			medianOf(ms, func(m Measurement) float64 { return m.LastPlayable.Seconds() }),
			int(medianOf(ms, func(m Measurement) float64 { return float64(m.Playable) })),
			int(medianOf(ms, func(m Measurement) float64 { return float64(m.Found) })), ms[0].Listed,
			int(medianOf(ms, func(m Measurement) float64 { return float64(m.Probes) })),
			int64(medianOf(ms, func(m Measurement) float64 { return float64(m.Bytes) })),
			time.Duration(medianOf(ms, func(m Measurement) float64 { return float64(m.RTTErrP50) })).Round(time.Microsecond),
			time.Duration(medianOf(ms, func(m Measurement) float64 { return float64(m.RTTErrP99) })).Round(time.Microsecond), bound)
	}
}

// linkRatio is a run's wall time over its access link's transfer bound;
// 0 without one.
func linkRatio(m Measurement) float64 {
	if m.LinkBound <= 0 {
		return 0
	}
	return m.Wall.Seconds() / m.LinkBound.Seconds()
}

func discobenchLine(m Measurement) string {
	link := ""
	if m.LinkBound > 0 || m.LinkDropped > 0 || m.LinkWaitMean > 0 {
		link = fmt.Sprintf("\n      link: bound %.2fs (wall %.2fx), replies dropped by the queue %d, queueing delay mean %v",
			m.LinkBound.Seconds(), linkRatio(m), m.LinkDropped, m.LinkWaitMean.Round(time.Microsecond))
	}
	return runLine(m) + link
}

func runLine(m Measurement) string {
	return fmt.Sprintf("wall %7.2fs  last playable %.2fs (%d)  found %d/%d  probes %d (client says %d)  bytes %d (%s)  RTT err p50 %v p99 %v max %v  world late p99 %v p99.9 %v (since start)",
		m.Wall.Seconds(), m.LastPlayable.Seconds(), m.Playable, m.Found, m.Listed, m.Probes, m.ClientProbes, m.Bytes, m.BytesFrom,
		m.RTTErrP50.Round(time.Microsecond), m.RTTErrP99.Round(time.Microsecond), m.RTTErrMax.Round(time.Microsecond),
		m.WorldLateP99, m.WorldLateP999)
}

// trafficLine is one run's traffic: datagrams/payload bytes/wire bytes
// each way, and the request shapes.
func trafficLine(t Traffic) string {
	f := func(x Flow) string { return fmt.Sprintf("%d/%d/%d", x.Datagrams, x.Payload, x.Wire()) }
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
func printTraffic(w io.Writer, clients []Client, results map[string][]Measurement) {
	type side struct {
		name string
		flow func(Traffic) Flow
	}
	sides := []side{{"sent", Traffic.Sent}, {"received", Traffic.Received}, {"total", Traffic.Total}}
	med := func(name string, sd side, wire bool) (float64, bool) {
		var ms []Measurement
		for _, m := range results[name] {
			if m.Traffic != nil {
				ms = append(ms, m)
			}
		}
		if len(ms) == 0 {
			return 0, false
		}
		return medianOf(ms, func(m Measurement) float64 {
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
			p, ok := med(c.Name, sd, false)
			if !ok {
				break
			}
			wi, _ := med(c.Name, sd, true)
			cells = append(cells, fmt.Sprintf("%.0f / %.0f", p, wi))
		}
		if len(cells) != len(sides) {
			continue
		}
		any = true
		var ms []Measurement
		for _, m := range results[c.Name] {
			if m.Traffic != nil {
				ms = append(ms, m)
			}
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %s |\n", c.Name,
			medianOf(ms, func(m Measurement) float64 { return float64(m.Traffic.Sent().Datagrams) }),
			medianOf(ms, func(m Measurement) float64 { return float64(m.Traffic.Received().Datagrams) }),
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
		if c.Name == trafficBase {
			continue
		}
		var parts, inv []string
		for _, sd := range sides {
			p, ok := med(c.Name, sd, false)
			wi, _ := med(c.Name, sd, true)
			bp, _ := med(trafficBase, sd, false)
			bw, _ := med(trafficBase, sd, true)
			if !ok || p == 0 || wi == 0 || bp == 0 || bw == 0 {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %.3fx, %.3fx", sd.name, p/bp, wi/bw))
			inv = append(inv, fmt.Sprintf("%s %.3fx, %.3fx", sd.name, bp/p, bw/wi))
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "  %-13s %s; inverse %s\n", c.Name, strings.Join(parts, "; "), strings.Join(inv, "; "))
		}
	}
}

func medianOf(ms []Measurement, f func(Measurement) float64) float64 {
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

func minOf(ms []Measurement, f func(Measurement) float64) float64 {
	v := f(ms[0])
	for _, m := range ms[1:] {
		v = min(v, f(m))
	}
	return v
}

func maxOf(ms []Measurement, f func(Measurement) float64) float64 {
	v := f(ms[0])
	for _, m := range ms[1:] {
		v = max(v, f(m))
	}
	return v
}
