package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/demo"
)

func init() {
	register(cli.Command{Name: "demo", Summary: "conventional and adaptive discovery side by side against an emulated world on loopback", Run: runDemo})
}

const demoAbout = `Runs, in this process and on loopback only, a master and an emulated world of
Enemy Territory servers (2,000 by default) placed in real networks of real
countries with the delays a player in Melbourne sees (--place: AU, JP, CH,
DE): the world model of scout-lab sim's tables (2008 prefixes and ASes, real
server lists' country mix, the latency model with its per-vantage residual),
1% loss and jitter. Three masters in Frankfurt, New York and Tokyo (each on a
loopback IP of its own, which the world answers with its city's RTTs) are
landmarks: the servers register with each by heartbeat, each measures its
RTT to every server as it verifies it, and each pings the other two through
a path delayed by the latency model's RTT between their cities (scout master
--landmark-peer), once a second. Once every master has measured the others,
seven runs discover the world side by side over real sockets:

  conventional     master order, probing while the list arrives, 16 in
                   flight (the Enemy Territory client)
  adaptive, paper  Armitage's Algorithms 1 and 2 (NETWORKING 2008): the whole
                   list, clusters by country, calibration probes, the nearest
                   clusters first, auto-stop when the 2nd-percentile RTT of
                   the last 100 probes (RTTbottom) reaches 200 ms
  adaptive, scout  this project's variant (scout servers --variant scout):
                   country+AS clusters, two-round calibration, bound stop rule
  default, no landmarks
                   scout servers' default order where no master publishes
                   its RTTs (every master but scout's): one server per /24
                   first over the scout variant, its group-mates skipped
                   when it answers far
  landmarks        scout servers --order landmarks (the default order with
                   the masters' RTTs): every master asked for its RTTs (to
                   the servers and to the other masters) with the list,
                   through a path giving the player's RTT to its city; one
                   server per /24 first, by ascending estimate, a site (one
                   AS in one place) left only when its nearest servers
                   answer far; stop when nothing under --auto-stop is left
  landmarks, remembered
                   the same later, with the memory of the run before (per
                   /24 its least RTT and the answers behind it, and the
                   /24s listed, as scout servers keeps it)
  oracle           exactly the playable servers, nearest first (it knows the
                   true RTTs, which no client does: the bound)

A server is playable when the RTT the emulator gives it before jitter is
under --auto-stop (200 ms); a run found it when it probed it and the server
answered, whatever RTT jitter made that reply measure. The comparison (time
to the last playable server, probes sent, flows created, playable servers
found, where auto-stop fired) is printed, and the plot of RTT against probe
time is written to --out (scout-demo.svg and .png). Nothing leaves
127.0.0.0/8: the master and the clients see the servers' public addresses
through a translation table (package loopnat).`

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", "[flags]", demoAbout, stderr)
	var cfg demo.Config
	fs.IntVar(&cfg.Servers, "servers", demo.DefaultServers, "servers in the world")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the world, its losses and the planner")
	fs.StringVar(&cfg.Place, "place", demo.DefaultPlace, "where the player sits: AU (Melbourne), JP (Tokyo), CH (Zurich), DE (Frankfurt)")
	fs.Float64Var(&cfg.Loss, "loss", demo.DefaultLoss, "each reply's chance of being lost")
	fs.IntVar(&cfg.Window, "window", 16, "probes in flight, every run (the ET client's 16)")
	fs.BoolVar(&cfg.Paced, "paced", false, "pace every run as scout servers does by default (the line measured, up to 5,000 probes/s) instead of --window")
	autoStop := fs.Duration("auto-stop", adaptive.Paper().StopRTT, "RTTstop: playable is a true RTT under it; both adaptive variants auto-stop at it")
	by := fs.String("cluster-by", "country", "the paper variant's clusters: country, as or country+as (scout's are country+as)")
	out := fs.String("out", "scout-out", "directory for scout-demo.svg and scout-demo.png (created if missing)")
	maxTime := fs.Duration("max-time", 3*time.Minute, "stop everything after this long")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	bad := func(format string, a ...any) int {
		return cli.UsageError(fs, ""+format+"", a...)
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if cfg.Servers < 1 || cfg.Window < 1 || *autoStop <= 0 || !(cfg.Loss >= 0 && cfg.Loss <= 1) || *maxTime <= 0 {
		return bad("--servers and --window must be positive, --auto-stop and --max-time positive, --loss in [0, 1]")
	}
	cfg.NoLoss = cfg.Loss == 0
	cfg.StopRTT = *autoStop
	cfg.Variants = demo.DefaultVariants(*autoStop)
	switch *by {
	case "country":
	case "as":
		cfg.Variants[0].Params.ClusterBy = adaptive.ByAS
	case "country+as":
		cfg.Variants[0].Params.ClusterBy = adaptive.ByCountryAS
	default:
		return bad("unknown --cluster-by %q", *by)
	}
	cfg.DefaultRun, cfg.LandmarkRun, cfg.Remembered = true, true, true
	cfg.Log = stdout
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "scout demo: --out: %v\n", err)
		return 1
	}
	defer demo.TuneRuntime()()
	ctx, cancel := context.WithTimeout(ctx, *maxTime)
	defer cancel()
	rep, err := demo.Demo(ctx, cfg)
	if len(rep.Runs) > 0 {
		demo.Print(stdout, rep)
		svg, png, perr := demo.WritePlots(*out, rep)
		err = errors.Join(err, perr)
		fmt.Fprintf(stdout, "plot: %s, %s\n", svg, png)
	}
	if err != nil {
		fmt.Fprintf(stderr, "scout demo: %v\n", err)
		return 1
	}
	return 0
}
