//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/web"
)

// WebConfig is the JSON API benchmark: a master (Target: exec'd with
// Argv, or running with its PID) at Target.Addr (UDP) and HTTP (its API),
// a fleet of Fleet.Servers registered with it, and Runs runs of the
// phases (webPhases) of Duration each.
type WebConfig struct {
	Target      *Target
	HTTP        netip.AddrPort
	Fleet       loadgen.FleetConfig
	Sources     int
	Outstanding int
	// Clients HTTP connections ask PerPage servers a page; ListRate and
	// CondRate are the paced phases' requests per second.
	Clients            int
	ListRate, CondRate float64
	PerPage            int
	Duration           time.Duration
	Runs               int
	JSON               bool
}

// webRow is one run of one phase.
type webRow struct {
	Run      int                 `json:"run"`
	Phase    string              `json:"phase"`
	UDP      *loadgen.Result     `json:"udp,omitempty"`
	HTTP     *loadgen.HTTPResult `json:"http,omitempty"`
	UDPPerS  float64             `json:"udp_answers_per_second,omitempty"`
	HTTPPerS float64             `json:"http_requests_per_second,omitempty"`
	// MasterCPU is the master's CPU time over the phase (with a PID).
	MasterCPU time.Duration `json:"master_cpu_ns,omitempty"`
}

// webPhase is one load of the benchmark: UDP list queries, HTTP requests
// (conditional ones, at rate per second or as fast as answered), or both.
type webPhase struct {
	name      string
	udp, http bool
	cond      bool
	rate      float64
}

func webPhases(cfg WebConfig) []webPhase {
	return []webPhase{
		{"udp", true, false, false, 0}, {"udp+list", true, true, false, cfg.ListRate}, {"udp+304", true, true, true, cfg.CondRate},
		{"udp+list!", true, true, false, 0}, {"udp+304!", true, true, true, 0}, {"list!", false, true, false, 0}, {"304!", false, true, true, 0},
	}
}

// webFormat is a run's line.
const webFormat = "%3v %-9s %9v %7v %10v %8v %7v %7v %6v %6v %5v %6v %6v %7v %8v\n"

// Web registers the fleet with the master, waits until its API lists
// every server, measures the phases run after run, printing a line per
// run and phase (or a JSON object), and then the medians.
func Web(ctx context.Context, cfg WebConfig, stdout io.Writer) error {
	t := cfg.Target
	req, _ := q3.GetServers{Protocol: loadgen.DefaultProtocol, Empty: true, Full: true}.AppendBinary(nil)
	if len(t.Argv) > 0 {
		if err := t.Launch(ctx, req, 10*time.Second); err != nil {
			return err
		}
		defer t.Stop()
	}
	fleet, err := loadgen.NewFleet(cfg.Fleet)
	if err != nil {
		return err
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- fleet.Serve(serveCtx) }()
	defer func() { stopServe(); <-served; fleet.Close() }()
	if _, err := loadgen.Populate(ctx, fleet, t.Addr, loadgen.PopulateConfig{Query: req, Deadline: time.Minute}); err != nil {
		return fmt.Errorf("registering: %w", err)
	}
	base := "http://" + cfg.HTTP.String() + "/api/v1/servers"
	if err := waitListed(ctx, base, cfg.Fleet.Servers); err != nil {
		return err
	}
	pages := (cfg.Fleet.Servers + cfg.PerPage - 1) / cfg.PerPage
	var urls []string
	for p := 1; p <= pages; p++ {
		urls = append(urls, fmt.Sprintf("%s?per_page=%d&page=%d", base, cfg.PerPage, p))
	}
	if !cfg.JSON {
		fmt.Fprintf(stdout, "%d servers listed; the full list is %d pages of %d\n", cfg.Fleet.Servers, pages, cfg.PerPage)
		fmt.Fprintf(stdout, webFormat, "run", "phase", "udp ans/s", "udp p99", "http req/s", "lists/s", "p50 ms", "p99 ms", "200", "304", "late", "other", "mstr %", "us/req", "ans/cpu-s")
	}
	byPhase := map[string][]webRow{}
	enc := json.NewEncoder(stdout)
	for run := 1; run <= cfg.Runs && ctx.Err() == nil; run++ {
		order := webPhases(cfg)
		if run%2 == 0 {
			slices.Reverse(order) // drift over a run weighs on every phase alike
		}
		for _, ph := range order {
			r, elapsed, err := webRun(ctx, cfg, ph, run, req, urls, fleet)
			if err != nil {
				return err
			}
			byPhase[ph.name] = append(byPhase[ph.name], r)
			if cfg.JSON {
				_ = enc.Encode(r)
				continue
			}
			printWebRow(stdout, r, ph, elapsed, pages, t.PID)
		}
	}
	if !cfg.JSON {
		printWebMedians(stdout, cfg, byPhase)
	}
	return nil
}

// webRun measures one run of phase ph.
func webRun(ctx context.Context, cfg WebConfig, ph webPhase, run int, req []byte, urls []string, fleet *loadgen.Fleet) (webRow, time.Duration, error) {
	t := cfg.Target
	r := webRow{Run: run, Phase: ph.name}
	httpDone := make(chan error, 1)
	var cpu0 time.Duration
	if t.PID != 0 {
		cpu0, _ = loadgen.ProcCPU(t.PID)
	}
	began := time.Now()
	if ph.http {
		go func() {
			hr, err := loadgen.HTTPRun(ctx, loadgen.HTTPConfig{URLs: urls, Conditional: ph.cond, Gzip: true, Clients: cfg.Clients, Duration: cfg.Duration, Rate: ph.rate})
			r.HTTP, r.HTTPPerS = &hr, hr.PerSecond()
			httpDone <- err
		}()
	} else {
		httpDone <- nil
	}
	if ph.udp {
		ur, err := loadgen.Run(ctx, loadgen.Config{Master: t.Addr, Query: req, Expect: cfg.Fleet.Servers, Sources: cfg.Sources,
			Outstanding: cfg.Outstanding, Duration: cfg.Duration, Want: fleet.Addrs(), PID: t.PID})
		if err != nil {
			<-httpDone
			return r, 0, fmt.Errorf("run %d %s: %w", run, ph.name, err)
		}
		r.UDP, r.UDPPerS = &ur, ur.AnswersPerSecond()
	}
	if err := <-httpDone; err != nil {
		return r, 0, fmt.Errorf("run %d %s: %w", run, ph.name, err)
	}
	elapsed := time.Since(began)
	if t.PID != 0 {
		cpu1, _ := loadgen.ProcCPU(t.PID)
		r.MasterCPU = cpu1 - cpu0
	}
	return r, elapsed, nil
}

// printWebRow prints a run's line.
func printWebRow(w io.Writer, r webRow, ph webPhase, elapsed time.Duration, pages, pid int) {
	udpS, udpP99, httpS, lists, p50, p99, pct, perReq, perCPU := "-", "-", "-", "-", "-", "-", "-", "-", "-"
	var ok, nm, late, other any = "-", "-", "-", "-"
	if r.UDP != nil {
		udpS, udpP99 = fmt.Sprintf("%.0f", r.UDPPerS), fmt.Sprintf("%.2f", ms(r.UDP.LatencyP99))
	}
	if h := r.HTTP; h != nil {
		httpS, lists = fmt.Sprintf("%.0f", r.HTTPPerS), fmt.Sprintf("%.1f", r.HTTPPerS/float64(pages))
		p50, p99 = fmt.Sprintf("%.2f", ms(h.LatencyP50)), fmt.Sprintf("%.2f", ms(h.LatencyP99))
		ok, nm, late, other = h.OK, h.NotModified, h.Late, h.Other+h.Errors
		if pid != 0 && !ph.udp && h.OK+h.NotModified > 0 {
			perReq = fmt.Sprintf("%.0f", float64(r.MasterCPU.Microseconds())/float64(h.OK+h.NotModified))
		}
	}
	if pid != 0 {
		pct = fmt.Sprintf("%.0f", 100*r.MasterCPU.Seconds()/elapsed.Seconds())
		if r.UDP != nil {
			perCPU = fmt.Sprintf("%.0f", answersPerCPU(r.UDP))
		}
	}
	fmt.Fprintf(w, webFormat, r.Run, ph.name, udpS, udpP99, httpS, lists, p50, p99, ok, nm, late, other, pct, perReq, perCPU)
}

// printWebMedians prints the medians per phase and, for each loaded
// phase, its UDP answers/s and answers per CPU-second over those of the
// "udp" phase of the same run: the median of the runs' ratios (paired, so
// that the machine's drift between runs cancels), with their range.
func printWebMedians(stdout io.Writer, cfg WebConfig, byPhase map[string][]webRow) {
	fmt.Fprintf(stdout, "\nmedians over %d runs:\n", cfg.Runs)
	fmt.Fprintf(stdout, "%-9s %9s %16s %10s %8s %8s %9s %16s\n", "phase", "udp ans/s", "udp × (min-max)", "http req/s", "p50 ms", "p99 ms", "ans/cpu-s", "cpu × (min-max)")
	perCPU := func(r webRow) float64 { return answersPerCPU(r.UDP) }
	perS := func(r webRow) float64 { return r.UDPPerS }
	// paired is the median, min and max over runs of f(phase) / f(udp).
	paired := func(rs []webRow, f func(webRow) float64) string {
		var q []float64
		for i, r := range rs {
			if i < len(byPhase["udp"]) {
				if base := f(byPhase["udp"][i]); base > 0 {
					q = append(q, f(r)/base)
				}
			}
		}
		if len(q) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f (%.2f-%.2f)", median(q), slices.Min(q), slices.Max(q))
	}
	for _, ph := range webPhases(cfg) {
		rs := byPhase[ph.name]
		udp, ratio, hs, p50, p99, pc, pcRatio := "-", "-", "-", "-", "-", "-", "-"
		if ph.udp {
			udp = fmt.Sprintf("%.0f", median(collect(rs, perS)))
			ratio = paired(rs, perS)
			if cfg.Target.PID != 0 {
				pc = fmt.Sprintf("%.0f", median(collect(rs, perCPU)))
				pcRatio = paired(rs, perCPU)
			}
		}
		if ph.http {
			hs = fmt.Sprintf("%.0f", median(collect(rs, func(r webRow) float64 { return r.HTTPPerS })))
			p50 = fmt.Sprintf("%.2f", median(collect(rs, func(r webRow) float64 { return ms(r.HTTP.LatencyP50) })))
			p99 = fmt.Sprintf("%.2f", median(collect(rs, func(r webRow) float64 { return ms(r.HTTP.LatencyP99) })))
		}
		fmt.Fprintf(stdout, "%-9s %9s %16s %10s %8s %8s %9s %16s\n", ph.name, udp, ratio, hs, p50, p99, pc, pcRatio)
	}
}

// answersPerCPU is a UDP run's complete answers per second of the
// master's CPU time (its whole process: the HTTP side's too).
func answersPerCPU(r *loadgen.Result) float64 {
	if r == nil || r.MasterCPU <= 0 {
		return 0
	}
	return float64(r.Complete) / r.MasterCPU.Seconds()
}

func collect[T any](rs []T, f func(T) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// waitListed asks the API until it lists n servers (the view follows the
// registry within web.DefaultMinRefresh).
func waitListed(ctx context.Context, base string, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	last := -1
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resp, err := http.Get(base + "?per_page=1")
		if err == nil {
			var l web.ListJSON
			err = json.NewDecoder(resp.Body).Decode(&l)
			resp.Body.Close()
			if err == nil && l.Total == n {
				return nil
			}
			last = l.Total
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("the API lists %d servers, not %d, after 30 s", last, n)
}
