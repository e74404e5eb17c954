package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/demo"
	"github.com/scout-discovery/scout/world"
)

func init() {
	register(command{name: "demo", summary: "conventional and adaptive discovery side by side against an emulated world on loopback", run: runDemo})
}

const demoAbout = `Runs, in this process and on loopback only, a master and an emulated world of
Enemy Territory servers (2,000 by default) placed in real networks of real
countries (the population model: 2008 prefixes and ASes, real server lists'
country mix) with the delays a player in Melbourne sees (--place: AU, JP, CH,
DE), 1% loss and jitter. The servers register with the master by heartbeat;
then three clients discover the world side by side over real sockets:

  conventional  master order, probing while the list arrives, 16 in flight
                (the Enemy Territory client)
  adaptive      Armitage's Algorithms 1 and 2 (NETWORKING 2008): the whole
                list, clusters by country, calibration probes, the nearest
                clusters first, auto-stop when the 2nd-percentile RTT of the
                last 100 probes reaches 200 ms
  oracle        exactly the playable servers, nearest first (it knows the true
                RTTs, which no client does: the bound)

and prints the comparison (time to the last playable server, probes sent,
flows created, where auto-stop fired, playable servers found) and writes the
plot of RTT against probe time (scout-demo.svg and .png in --out).
Nothing leaves 127.0.0.0/8: the master and the clients see the servers'
public addresses through a translation table (package loopnat).`

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", "[flags]", demoAbout, stderr)
	var cfg demo.Config
	fs.IntVar(&cfg.Servers, "servers", demo.DefaultServers, "servers in the world")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the world, its losses and the planner")
	fs.StringVar(&cfg.Place, "place", demo.DefaultPlace, "where the player sits: AU (Melbourne), JP (Tokyo), CH (Zurich), DE (Frankfurt)")
	fs.Float64Var(&cfg.Loss, "loss", demo.DefaultLoss, "each reply's chance of being lost")
	fs.IntVar(&cfg.Window, "window", 16, "probes in flight, every run (the ET client's 16)")
	autoStop := fs.Duration("auto-stop", adaptive.Paper().StopRTT, "RTTstop: the largest playable RTT; adaptive stops when the 2nd percentile reaches it")
	by := fs.String("cluster-by", "country", "adaptive clusters by country, as or country+as")
	out := fs.String("out", ".", "directory for scout-demo.svg and scout-demo.png")
	maxTime := fs.Duration("max-time", 3*time.Minute, "stop everything after this long")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "scout demo: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if cfg.Servers < 1 || cfg.Window < 1 || *autoStop <= 0 || !(cfg.Loss >= 0 && cfg.Loss <= 1) || *maxTime <= 0 {
		return bad("--servers and --window must be positive, --auto-stop and --max-time positive, --loss in [0, 1]")
	}
	cfg.NoLoss = cfg.Loss == 0
	p := adaptive.Paper()
	p.StopRTT = *autoStop
	switch *by {
	case "country":
	case "as":
		p.ClusterBy = adaptive.ByAS
	case "country+as":
		p.ClusterBy = adaptive.ByCountryAS
	default:
		return bad("unknown --cluster-by %q", *by)
	}
	cfg.Params = &p
	cfg.Log = stdout
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "scout demo: --out: %v\n", err)
		return 1
	}
	// As scout world does: more Ps than cores and rarer collections, so
	// that the emulated delays hold while three discoveries share the
	// process (world.TuneRuntime; GOMAXPROCS and GOGC still win).
	defer world.TuneRuntime()()
	ctx, cancel := context.WithTimeout(ctx, *maxTime)
	defer cancel()
	rep, err := demo.Demo(ctx, cfg)
	if len(rep.Runs) > 0 {
		printDemo(stdout, rep)
		svg, png := filepath.Join(*out, "scout-demo.svg"), filepath.Join(*out, "scout-demo.png")
		for _, path := range []string{svg, png} {
			if perr := writeDemoPlot(path, rep); perr != nil {
				err = errors.Join(err, perr)
			}
		}
		fmt.Fprintf(stdout, "plot: %s, %s\n", svg, png)
	}
	if err != nil {
		fmt.Fprintf(stderr, "scout demo: %v\n", err)
		return 1
	}
	return 0
}

func writeDemoPlot(path string, rep demo.Report) error {
	conv, adapt := rep.Runs[0], rep.Runs[1]
	title := fmt.Sprintf("scout demo: %d ET servers seen from %s", rep.Servers, rep.Place.City.Name)
	return writePlot(path, title, rep.StopRTT,
		plotSeries("conventional (master order)", conv.Ordering.Probes, 0, rep.Params),
		plotSeries("adaptive", adapt.Ordering.Probes, adapt.Ordering.StopAt, rep.Params))
}

// printDemo prints the comparison table and what adaptive did.
func printDemo(w io.Writer, rep demo.Report) {
	s := func(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
	fmt.Fprintf(w, "\n%d servers listed of %d (registration %s); %d playable from %s (RTT < %v)\n\n",
		rep.Listed, rep.Servers, s(rep.Registration), rep.Playable, rep.Place.City.Name, rep.StopRTT)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tlast playable\twhole run\tprobes\tflows\tplayable found\t")
	for _, r := range rep.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d of %d\t\n", r.Name, s(r.LastPlayable), s(r.Summary.Took),
			r.Summary.Probe.Sent, r.Summary.Probe.Destinations, r.Playable, rep.Playable)
	}
	tw.Flush()
	conv, a := rep.Runs[0], rep.Runs[1]
	fmt.Fprintln(w)
	clusters, initial := 0, 0
	for _, c := range a.Ordering.Clusters {
		if !c.Dissolved {
			clusters++
		}
	}
	for _, o := range a.Ordering.Probes {
		if o.Phase == adaptive.Calibrate || o.Phase == adaptive.Split {
			initial++
		}
	}
	fmt.Fprintf(w, "adaptive: list complete at %s, %d of %d servers geolocated, %d clusters (by %s), %d initial probes\n",
		s(a.Ordering.ProbeStart), a.Ordering.Located, a.Summary.Listed, clusters, rep.Params.ClusterBy, initial)
	if a.Ordering.Stopped {
		share := 100 * float64(a.Ordering.Stop.Sent) / float64(max(a.Summary.Listed, 1))
		fmt.Fprintf(w, "auto-stop fired at %s after %d probes (%.1f%% of the list; conventional took %s for all of it)\n",
			s(a.Ordering.StopAt), a.Ordering.Stop.Sent, share, s(conv.Summary.Took))
	} else {
		fmt.Fprintln(w, "auto-stop did not fire: adaptive probed every server")
	}
	if conv.Summary.Probe.Sent > 0 && conv.LastPlayable > 0 {
		fmt.Fprintf(w, "adaptive found the last playable server in %.0f%% of conventional's time with %.0f%% of its probes\n",
			100*a.LastPlayable.Seconds()/conv.LastPlayable.Seconds(), 100*float64(a.Summary.Probe.Sent)/float64(conv.Summary.Probe.Sent))
	}
	for _, r := range rep.Runs[:2] {
		if r.Playable < rep.Playable {
			fmt.Fprintf(w, "%s missed %d playable servers (lost replies, jitter across %v, or auto-stop)\n", r.Name, rep.Playable-r.Playable, rep.StopRTT)
		}
	}
}
