//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/protocol/q3"
)

// Config is one master benchmark: the targets, the emulated fleet that
// registers with each, and the runs of list queries taken in turn.
type Config struct {
	// Targets are measured in turn (the order reversed every other run).
	Targets []*Target
	// Fleet registers with every target, Query is the list request,
	// HeartbeatRate and PopulateTimeout pace and bound the registration,
	// StartTimeout an exec'd target's start.
	Fleet           loadgen.FleetConfig
	Query           []byte
	HeartbeatRate   int
	PopulateTimeout time.Duration
	StartTimeout    time.Duration
	// Runs of Load each (its Master, Want and PID are each target's).
	Runs int
	Load loadgen.Config
	// JSON prints one JSON object per run and per target's summary.
	JSON bool
	// Flood, if not nil, runs reflection attacks instead of the list
	// queries (its Master and Victim are set per run).
	Flood *loadgen.FloodConfig
	// Swarm, if not nil, registers a swarm with the one target instead.
	Swarm *SwarmOptions
}

// ErrCheckFailed reports that an answer failed its check (the summary
// says which target's).
var ErrCheckFailed = errors.New("an answer failed its check")

// Run starts the exec'd targets, then measures them as cfg says, printing
// to stdout (and to stderr what went wrong beside the figures).
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) error {
	defer func() {
		for _, t := range cfg.Targets {
			t.Stop()
		}
	}()
	for _, t := range cfg.Targets {
		if len(t.Argv) == 0 {
			continue
		}
		if err := t.Launch(ctx, cfg.Query, cfg.StartTimeout); err != nil {
			return err
		}
	}
	for _, t := range cfg.Targets {
		if t.proc != nil {
			t.rss0, _ = loadgen.ProcRSS(t.PID)
		}
	}
	if cfg.Swarm != nil {
		if err := runSwarm(ctx, stdout, stderr, cfg.Targets[0], *cfg.Swarm); err != nil || cfg.Flood == nil {
			return err
		}
		// The flood's (or the client's) list: Quake3Arena 68, most of
		// the swarm's servers.
		fl := *cfg.Flood
		fl.Query, _ = q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
		fl.Expect = 0
		for i := range cfg.Swarm.Swarm.Servers {
			if name, proto, _ := loadgen.SwarmGame(i); name == "Quake3Arena" && proto == 68 {
				fl.Expect++
			}
		}
		return runFlood(ctx, stdout, stderr, cfg.Targets, fl, cfg.Runs, cfg.JSON)
	}
	fleet, err := loadgen.NewFleet(cfg.Fleet)
	if err != nil {
		return err
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- fleet.Serve(serveCtx) }()
	defer func() {
		stopServe()
		<-served
		fleet.Close()
	}()
	for _, t := range cfg.Targets {
		began := time.Now()
		n, err := loadgen.Populate(ctx, fleet, t.Addr, loadgen.PopulateConfig{Query: cfg.Query, Rate: cfg.HeartbeatRate, Deadline: cfg.PopulateTimeout})
		if err != nil {
			return fmt.Errorf("%s (%v): %w", t.Name, t.Addr, err)
		}
		if t.proc != nil {
			t.rss1, _ = loadgen.ProcRSS(t.PID)
		}
		if !cfg.JSON {
			fmt.Fprintf(stdout, "%s: %d servers listed in %v\n", t.Name, n, time.Since(began).Round(time.Millisecond))
		}
	}
	if cfg.Flood != nil {
		return runFlood(ctx, stdout, stderr, cfg.Targets, *cfg.Flood, cfg.Runs, cfg.JSON)
	}
	results, err := runs(ctx, cfg, fleet, stdout)
	if err != nil {
		return err
	}
	return printSummary(stdout, cfg.Targets, results, cfg.Fleet.Servers, cfg.JSON)
}

// runs takes cfg.Runs runs of the list queries on each target in turn,
// printing a line per run and target as it ends.
func runs(ctx context.Context, cfg Config, fleet *loadgen.Fleet, stdout io.Writer) (map[string][]loadgen.Result, error) {
	results := make(map[string][]loadgen.Result)
	// Runs are printed as they end, so the columns have fixed widths.
	const runFormat = "%3v %-10.10s %9v %9v %7v %7v %7v %7v %8v %6v %6v %6v %6v %7v %7v\n"
	if !cfg.JSON {
		fmt.Fprintf(stdout, runFormat, "run", "target", "answers/s", "cpu ms/a", "mstr %", "load %", "pkts/a", "bytes/a",
			"complete", "incmpl", "unansw", "silent", "lost", "p50 ms", "p99 ms")
	}
	enc := json.NewEncoder(stdout)
	for run := 1; run <= cfg.Runs; run++ {
		order := slices.Clone(cfg.Targets)
		if run%2 == 0 {
			slices.Reverse(order)
		}
		for _, t := range order {
			lc := cfg.Load
			lc.Master, lc.Want, lc.PID = t.Addr, fleet.Addrs(), t.PID
			r, err := loadgen.Run(ctx, lc)
			if err != nil {
				return nil, fmt.Errorf("%s run %d: %w", t.Name, run, err)
			}
			results[t.Name] = append(results[t.Name], r)
			if cfg.JSON {
				_ = enc.Encode(struct {
					Run    int    `json:"run"`
					Target string `json:"target"`
					loadgen.Result
					AnswersPerSecond float64 `json:"answers_per_second"`
				}{run, t.Name, r, r.AnswersPerSecond()})
				continue
			}
			fmt.Fprintf(stdout, runFormat, run, t.Name, fmt.Sprintf("%.0f", r.AnswersPerSecond()), cpuMS(r, t.PID),
				cpuPct(r.MasterCPU, r.Elapsed, t.PID), fmt.Sprintf("%.0f", 100*r.LoadCPU.Seconds()/r.Elapsed.Seconds()),
				r.PacketsPerAnswer, r.BytesPerAnswer, r.Complete, r.Incomplete, r.Unanswered, r.Silent, r.LostPackets,
				fmt.Sprintf("%.2f", ms(r.LatencyP50)), fmt.Sprintf("%.2f", ms(r.LatencyP99)))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return results, nil
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

func summarize(t *Target, rs []loadgen.Result, servers int) summary {
	s := summary{Target: t.Name, Runs: len(rs)}
	var aps, cpu []float64
	for _, r := range rs {
		aps = append(aps, r.AnswersPerSecond())
		if t.PID != 0 && r.Complete > 0 {
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

func printSummary(w io.Writer, targets []*Target, results map[string][]loadgen.Result, servers int, asJSON bool) error {
	var sums []summary
	for _, t := range targets {
		sums = append(sums, summarize(t, results[t.Name], servers))
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
			return ErrCheckFailed
		}
	}
	return nil
}
