//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/lab/loadgen/bench"
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
	var cfg bench.WebConfig
	masterAddr := fs.String("master", "127.0.0.1:27950", "the master's UDP address (loopback)")
	httpAddr := fs.String("http", "127.0.0.1:8080", "the master's HTTP address (loopback)")
	execCmd := fs.String("exec", "", "COMMAND: start this master, measure it, stop it")
	pid := fs.Int("pid", 0, "the master's PID, for its CPU time (with an already running master)")
	fs.IntVar(&cfg.Fleet.Servers, "servers", 5000, "emulated game servers to register")
	fleetBase := fs.String("fleet-base", "127.48.0.1", "first address of the emulated servers")
	fleetPort := fs.Uint("fleet-port", loadgen.DefaultFleetPort, "first port of the emulated servers on each address")
	fs.IntVar(&cfg.Sources, "sources", loadgen.DefaultSources, "UDP source sockets")
	fs.IntVar(&cfg.Outstanding, "outstanding", loadgen.DefaultOutstanding, "UDP requests in flight")
	fs.IntVar(&cfg.Clients, "clients", 8, "HTTP connections")
	fs.Float64Var(&cfg.ListRate, "list-rate", 100, "udp+list: list pages asked per second")
	fs.Float64Var(&cfg.CondRate, "cond-rate", 1000, "udp+304: conditional requests per second")
	fs.IntVar(&cfg.PerPage, "per-page", web.MaxPerPage, "servers per page of the list")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "length of each phase")
	fs.IntVar(&cfg.Runs, "runs", 3, "runs of the five phases")
	fs.BoolVar(&cfg.JSON, "json", false, "one JSON object per run and phase")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	fail := func(format string, a ...any) int {
		return cli.UsageError(fs, ""+format+"", a...)
	}
	ma, err := netip.ParseAddrPort(*masterAddr)
	if err != nil || !ma.Addr().Is4() || !ma.Addr().IsLoopback() {
		return fail("--master %q: want an IPv4 loopback ADDR:PORT", *masterAddr)
	}
	if cfg.HTTP, err = netip.ParseAddrPort(*httpAddr); err != nil || !cfg.HTTP.Addr().IsLoopback() {
		return fail("--http %q: want a loopback ADDR:PORT", *httpAddr)
	}
	if cfg.Fleet.Base, err = netip.ParseAddr(*fleetBase); err != nil {
		return fail("--fleet-base: %v", err)
	}
	if cfg.Runs < 1 || cfg.Fleet.Servers < 1 || cfg.Clients < 1 || cfg.PerPage < 1 || cfg.PerPage > web.MaxPerPage || fs.NArg() > 0 {
		return fail("bad arguments (see -h)")
	}
	if *fleetPort == 0 || *fleetPort > 65535 {
		return fail("--fleet-port %d: want a port", *fleetPort)
	}
	cfg.Fleet.Port = uint16(*fleetPort)
	cfg.Target = &bench.Target{Name: "master", Addr: ma, PID: *pid, Argv: strings.Fields(*execCmd)}
	if err := bench.Web(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "scout-lab webload: %v\n", err)
		return 1
	}
	return 0
}
