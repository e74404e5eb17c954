package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

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

  scout           scout servers --order master (every server, in the
                  masters' order; paced by the link, the default)
  scout-et        scout servers --strategy et (Enemy Territory: 16 in flight)
  scout-1000      scout servers --rate 1000 (paced, 1,000 probes/s)
  scout-800k      scout servers --bandwidth 800k (the default, capped at
                  800 kbit/s of requests: 1,960 probes/s)
  scout-auto      scout servers --order auto (the default order: stops
                  once nothing under 200 ms is left; "found" counts the
                  answers of what it probed)
  qstat-default   quakestat -q3m,71 with its defaults
  qstat-fast      quakestat -q3m,71 -maxsim 900 -sendinterval 0 (fastest)

and reports, for each, wall time, when the answer of the last server under
200 ms reached it (the world's record of its replies: what a player waits
for), servers found, probes, traffic and RTT error (reported minus
injected RTT) at p50 and p99, then the medians over
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

func runDiscobench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("discobench", "[flags]", discobenchAbout, stderr)
	cfg := discobench.BenchConfig{Config: discobench.Config{Full: 0.3, Empty: 0.4}}
	fs.IntVar(&cfg.Servers, "servers", 5000, "emulated servers in the world")
	delay := fs.String("delay", "10ms-400ms", "injected round-trip times, LOW-HIGH")
	fs.Float64Var(&cfg.Loss, "loss", 0.01, "probability that a reply datagram is lost")
	fs.Float64Var(&cfg.Gone, "gone", 0, "share of servers that answer the master only: listed, they never answer a client")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "world seed")
	fs.IntVar(&cfg.Runs, "runs", 3, "rounds of every client")
	only := fs.String("only", "", "comma-separated client names to run (default: all)")
	fs.BoolVar(&cfg.JSON, "json", false, "print every measurement as a JSON line")
	lf := addLinkFlags(fs)
	baseline := fs.String("baseline", "", "a scout executable `BIN` (an earlier build) run as the client scout-before with scout's arguments")
	fs.BoolVar(&cfg.RealTime, "tune", true, "run the world as scout-lab world --realtime does: world.TuneRuntime (more Ps, rarer GC) and its releaser on a SCHED_FIFO thread where allowed")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	bad := func(format string, a ...any) int {
		return cli.UsageError(fs, ""+format+"", a...)
	}
	var err error
	if cfg.RTTMin, cfg.RTTMax, err = world.ParseRange(*delay); err != nil || cfg.Runs < 1 || cfg.Runs > 20 {
		return bad("bad --delay or --runs (1..20)")
	}
	if cfg.Access, err = lf.link(); err != nil {
		return bad("%v", err)
	}
	cfg.Clients = discobench.Clients
	if *baseline != "" {
		if _, err := os.Stat(*baseline); err != nil {
			return bad("--baseline: %v", err)
		}
		before := discobench.Clients[0]
		before.Name, before.Bin = "scout-before", *baseline
		cfg.Clients = append([]discobench.Client{before}, cfg.Clients...)
	}
	if *only != "" {
		names := strings.Split(*only, ",")
		cfg.Clients = slices.DeleteFunc(slices.Clone(cfg.Clients), func(c discobench.Client) bool { return !slices.Contains(names, c.Name) })
	}
	if cfg.Self, err = os.Executable(); err != nil {
		fmt.Fprintf(stderr, "scout-lab discobench: %v\n", err)
		return 1
	}
	if cfg.RealTime {
		defer world.TuneRuntime()()
	}
	if err := discobench.Bench(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "scout-lab discobench: %v\n", err)
		return 1
	}
	return 0
}
