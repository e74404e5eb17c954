//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/web"
)

func init() {
	register(cli.Command{Name: "webload", Summary: "measure scout master's JSON API (full list, 304s) and its UDP answers/s while the API is loaded", Run: runWebload})
}

const webloadAbout = `Registers --servers emulated game servers with a scout master (started
with --exec, or already running at --master and --http with --pid), waits
until its JSON API lists them all, then, --runs times, measures seven
phases of --duration each, in this order (reversed in even runs):

  udp         full-list UDP queries alone (as scout-lab load: closed loop,
              --outstanding in flight from --sources addresses)
  udp+list    the same, while --clients HTTP connections ask the full list
              of the API (/api/v1/servers, per_page=--per-page, every page
              in turn), gzip accepted, at --list-rate requests/s in all
  udp+304     the same with If-None-Match of each page's ETag (trackers
              polling an unchanged list: every answer a 304), at
              --cond-rate requests/s
  udp+list!   udp+list as fast as answered (closed loop): the HTTP side
  udp+304!    saturated, sharing the master's CPU with the UDP side
  list!, 304! the HTTP load alone, as fast as answered

and prints per run and phase the UDP answers/s and p99, the HTTP requests
answered per second (200 and 304), full lists per second (pages / pages
per list), p50 and p99 latency, statuses, and with a PID the master's CPU
(% of one core, per HTTP request in the HTTP-only phases, and UDP answers
per second of master CPU: what the master answers when it has its core,
which other processes on a shared machine do not change); then the
medians per phase and, for each loaded phase, its UDP answers/s and
answers per CPU-second over those of the "udp" phase of the same run: the
median of the runs' ratios (paired, so that the machine's drift between
runs cancels), with their range. The master must not limit the API per client (scout master
--http-no-limit): all requests come from one address.

Traffic goes to loopback only.`

func runWebload(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("webload", "(--exec COMMAND | --pid PID) --master ADDR:PORT --http ADDR:PORT [flags]", webloadAbout, stderr)
	masterAddr := fs.String("master", "127.0.0.1:27950", "the master's UDP address (loopback)")
	httpAddr := fs.String("http", "127.0.0.1:8080", "the master's HTTP address (loopback)")
	execCmd := fs.String("exec", "", "COMMAND: start this master, measure it, stop it")
	pid := fs.Int("pid", 0, "the master's PID, for its CPU time (with an already running master)")
	servers := fs.Int("servers", 5000, "emulated game servers to register")
	fleetBase := fs.String("fleet-base", "127.48.0.1", "first address of the emulated servers")
	fleetPort := fs.Uint("fleet-port", loadgen.DefaultFleetPort, "first port of the emulated servers on each address")
	sources := fs.Int("sources", loadgen.DefaultSources, "UDP source sockets")
	outstanding := fs.Int("outstanding", loadgen.DefaultOutstanding, "UDP requests in flight")
	clients := fs.Int("clients", 8, "HTTP connections")
	listRate := fs.Float64("list-rate", 100, "udp+list: list pages asked per second")
	condRate := fs.Float64("cond-rate", 1000, "udp+304: conditional requests per second")
	perPage := fs.Int("per-page", web.MaxPerPage, "servers per page of the list")
	duration := fs.Duration("duration", 5*time.Second, "length of each phase")
	runs := fs.Int("runs", 3, "runs of the five phases")
	asJSON := fs.Bool("json", false, "one JSON object per run and phase")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "scout-lab webload: "+format+"\n", a...)
		return 2
	}
	ma, err := netip.ParseAddrPort(*masterAddr)
	if err != nil || !ma.Addr().Is4() || !ma.Addr().IsLoopback() {
		return fail("--master %q: want an IPv4 loopback ADDR:PORT", *masterAddr)
	}
	ha, err := netip.ParseAddrPort(*httpAddr)
	if err != nil || !ha.Addr().IsLoopback() {
		return fail("--http %q: want a loopback ADDR:PORT", *httpAddr)
	}
	fb, err := netip.ParseAddr(*fleetBase)
	if err != nil {
		return fail("--fleet-base: %v", err)
	}
	if *runs < 1 || *servers < 1 || *clients < 1 || *perPage < 1 || *perPage > web.MaxPerPage || fs.NArg() > 0 {
		return fail("bad arguments (see -h)")
	}
	if *fleetPort == 0 || *fleetPort > 65535 {
		return fail("--fleet-port %d: want a port", *fleetPort)
	}
	req, _ := q3.GetServers{Protocol: loadgen.DefaultProtocol, Empty: true, Full: true}.AppendBinary(nil)
	t := &loadTarget{name: "master", addr: ma, pid: *pid}
	if *execCmd != "" {
		t.argv = strings.Fields(*execCmd)
		if err := launchMaster(ctx, t, req, 10*time.Second); err != nil {
			fmt.Fprintf(stderr, "scout-lab webload: %v\n", err)
			return 1
		}
		defer stopLaunched(t)
	}
	fleet, err := loadgen.NewFleet(loadgen.FleetConfig{Servers: *servers, Base: fb, Port: uint16(*fleetPort)})
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab webload: %v\n", err)
		return 1
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- fleet.Serve(serveCtx) }()
	defer func() { stopServe(); <-served; fleet.Close() }()
	if _, err := loadgen.Populate(ctx, fleet, ma, loadgen.PopulateConfig{Query: req, Deadline: time.Minute}); err != nil {
		fmt.Fprintf(stderr, "scout-lab webload: registering: %v\n", err)
		return 1
	}
	base := "http://" + ha.String() + "/api/v1/servers"
	if err := waitListed(ctx, base, *servers); err != nil {
		fmt.Fprintf(stderr, "scout-lab webload: %v\n", err)
		return 1
	}
	pages := (*servers + *perPage - 1) / *perPage
	var urls []string
	for p := 1; p <= pages; p++ {
		urls = append(urls, fmt.Sprintf("%s?per_page=%d&page=%d", base, *perPage, p))
	}

	type row struct {
		Run      int                 `json:"run"`
		Phase    string              `json:"phase"`
		UDP      *loadgen.Result     `json:"udp,omitempty"`
		HTTP     *loadgen.HTTPResult `json:"http,omitempty"`
		UDPPerS  float64             `json:"udp_answers_per_second,omitempty"`
		HTTPPerS float64             `json:"http_requests_per_second,omitempty"`
		// MasterCPU is the master's CPU time over the phase (with a PID).
		MasterCPU time.Duration `json:"master_cpu_ns,omitempty"`
	}
	phases := []struct {
		name      string
		udp, http bool
		cond      bool
		rate      float64
	}{
		{"udp", true, false, false, 0}, {"udp+list", true, true, false, *listRate}, {"udp+304", true, true, true, *condRate},
		{"udp+list!", true, true, false, 0}, {"udp+304!", true, true, true, 0}, {"list!", false, true, false, 0}, {"304!", false, true, true, 0},
	}
	const format = "%3v %-9s %9v %7v %10v %8v %7v %7v %6v %6v %5v %6v %6v %7v %8v\n"
	if !*asJSON {
		fmt.Fprintf(stdout, "%d servers listed; the full list is %d pages of %d\n", *servers, pages, *perPage)
		fmt.Fprintf(stdout, format, "run", "phase", "udp ans/s", "udp p99", "http req/s", "lists/s", "p50 ms", "p99 ms", "200", "304", "late", "other", "mstr %", "us/req", "ans/cpu-s")
	}
	byPhase := map[string][]row{}
	enc := json.NewEncoder(stdout)
	for run := 1; run <= *runs && ctx.Err() == nil; run++ {
		order := slices.Clone(phases)
		if run%2 == 0 {
			slices.Reverse(order) // drift over a run weighs on every phase alike
		}
		for _, ph := range order {
			var r row
			r.Run, r.Phase = run, ph.name
			httpDone := make(chan error, 1)
			var cpu0 time.Duration
			if t.pid != 0 {
				cpu0, _ = loadgen.ProcCPU(t.pid)
			}
			began := time.Now()
			if ph.http {
				go func() {
					hr, err := loadgen.HTTPRun(ctx, loadgen.HTTPConfig{URLs: urls, Conditional: ph.cond, Gzip: true, Clients: *clients, Duration: *duration, Rate: ph.rate})
					r.HTTP, r.HTTPPerS = &hr, hr.PerSecond()
					httpDone <- err
				}()
			} else {
				httpDone <- nil
			}
			if ph.udp {
				ur, err := loadgen.Run(ctx, loadgen.Config{Master: ma, Query: req, Expect: *servers, Sources: *sources,
					Outstanding: *outstanding, Duration: *duration, Want: fleet.Addrs(), PID: t.pid})
				if err != nil {
					fmt.Fprintf(stderr, "scout-lab webload: run %d %s: %v\n", run, ph.name, err)
					return 1
				}
				r.UDP, r.UDPPerS = &ur, ur.AnswersPerSecond()
			}
			if err := <-httpDone; err != nil {
				fmt.Fprintf(stderr, "scout-lab webload: run %d %s: %v\n", run, ph.name, err)
				return 1
			}
			elapsed := time.Since(began)
			if t.pid != 0 {
				cpu1, _ := loadgen.ProcCPU(t.pid)
				r.MasterCPU = cpu1 - cpu0
			}
			byPhase[ph.name] = append(byPhase[ph.name], r)
			if *asJSON {
				_ = enc.Encode(r)
				continue
			}
			udpS, udpP99, httpS, lists, p50, p99, pct, perReq, perCPU := "-", "-", "-", "-", "-", "-", "-", "-", "-"
			var ok, nm, late, other any = "-", "-", "-", "-"
			if r.UDP != nil {
				udpS, udpP99 = fmt.Sprintf("%.0f", r.UDPPerS), fmt.Sprintf("%.2f", ms(r.UDP.LatencyP99))
			}
			if h := r.HTTP; h != nil {
				httpS, lists = fmt.Sprintf("%.0f", r.HTTPPerS), fmt.Sprintf("%.1f", r.HTTPPerS/float64(pages))
				p50, p99 = fmt.Sprintf("%.2f", ms(h.LatencyP50)), fmt.Sprintf("%.2f", ms(h.LatencyP99))
				ok, nm, late, other = h.OK, h.NotModified, h.Late, h.Other+h.Errors
				if t.pid != 0 && !ph.udp && h.OK+h.NotModified > 0 {
					perReq = fmt.Sprintf("%.0f", float64(r.MasterCPU.Microseconds())/float64(h.OK+h.NotModified))
				}
			}
			if t.pid != 0 {
				pct = fmt.Sprintf("%.0f", 100*r.MasterCPU.Seconds()/elapsed.Seconds())
				if r.UDP != nil {
					perCPU = fmt.Sprintf("%.0f", answersPerCPU(r.UDP))
				}
			}
			fmt.Fprintf(stdout, format, run, ph.name, udpS, udpP99, httpS, lists, p50, p99, ok, nm, late, other, pct, perReq, perCPU)
		}
	}
	if *asJSON {
		return 0
	}
	fmt.Fprintf(stdout, "\nmedians over %d runs:\n", *runs)
	fmt.Fprintf(stdout, "%-9s %9s %16s %10s %8s %8s %9s %16s\n", "phase", "udp ans/s", "udp × (min-max)", "http req/s", "p50 ms", "p99 ms", "ans/cpu-s", "cpu × (min-max)")
	perCPU := func(r row) float64 { return answersPerCPU(r.UDP) }
	perS := func(r row) float64 { return r.UDPPerS }
	// paired is the median, min and max over runs of f(phase) / f(udp).
	paired := func(rs []row, f func(row) float64) string {
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
	for _, ph := range phases {
		rs := byPhase[ph.name]
		udp, ratio, hs, p50, p99, pc, pcRatio := "-", "-", "-", "-", "-", "-", "-"
		if ph.udp {
			udp = fmt.Sprintf("%.0f", median(collect(rs, perS)))
			ratio = paired(rs, perS)
			if t.pid != 0 {
				pc = fmt.Sprintf("%.0f", median(collect(rs, perCPU)))
				pcRatio = paired(rs, perCPU)
			}
		}
		if ph.http {
			hs = fmt.Sprintf("%.0f", median(collect(rs, func(r row) float64 { return r.HTTPPerS })))
			p50 = fmt.Sprintf("%.2f", median(collect(rs, func(r row) float64 { return ms(r.HTTP.LatencyP50) })))
			p99 = fmt.Sprintf("%.2f", median(collect(rs, func(r row) float64 { return ms(r.HTTP.LatencyP99) })))
		}
		fmt.Fprintf(stdout, "%-9s %9s %16s %10s %8s %8s %9s %16s\n", ph.name, udp, ratio, hs, p50, p99, pc, pcRatio)
	}
	return 0
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
