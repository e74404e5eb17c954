package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/demo"
	"github.com/scout-discovery/scout/lab/rttplot"
	"github.com/scout-discovery/scout/lab/world"
)

func init() {
	register(command{name: "demo", summary: "conventional and adaptive discovery side by side against an emulated world on loopback", run: runDemo})
}

const demoAbout = `Runs, in this process and on loopback only, a master and an emulated world of
Enemy Territory servers (2,000 by default) placed in real networks of real
countries with the delays a player in Melbourne sees (--place: AU, JP, CH,
DE): the world model of scout sim's tables (2008 prefixes and ASes, real
server lists' country mix, the latency model with its per-vantage residual),
1% loss and jitter. Three masters in Frankfurt, New York and Tokyo (each on a
loopback IP of its own, which the world answers with its city's RTTs) are
landmarks: the servers register with each by heartbeat, each measures its
RTT to every server as it verifies it, and each pings the other two through
a path delayed by the latency model's RTT between their cities (scout master
--landmark-peer), once a second. Once every master has measured the others,
five clients discover the world side by side over real sockets:

  conventional     master order, probing while the list arrives, 16 in
                   flight (the Enemy Territory client)
  adaptive, paper  Armitage's Algorithms 1 and 2 (NETWORKING 2008): the whole
                   list, clusters by country, calibration probes, the nearest
                   clusters first, auto-stop when the 2nd-percentile RTT of
                   the last 100 probes (RTTbottom) reaches 200 ms
  adaptive, scout  this project's variant (scout servers --variant scout):
                   country+AS clusters, two-round calibration, bound stop rule
  landmarks        scout servers --order landmarks: every master asked for its
                   RTTs (to the servers and to the other masters) with the
                   list, through a path giving the player's RTT to its city;
                   servers probed by ascending estimate, stop when every
                   unprobed server's lower bound less the margin is past
                   --auto-stop
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

// Demo plot size, in pixels: three rows of two panels.
const demoPlotWidth, demoPlotHeight = 1200, 1260

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", "[flags]", demoAbout, stderr)
	var cfg demo.Config
	fs.IntVar(&cfg.Servers, "servers", demo.DefaultServers, "servers in the world")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the world, its losses and the planner")
	fs.StringVar(&cfg.Place, "place", demo.DefaultPlace, "where the player sits: AU (Melbourne), JP (Tokyo), CH (Zurich), DE (Frankfurt)")
	fs.Float64Var(&cfg.Loss, "loss", demo.DefaultLoss, "each reply's chance of being lost")
	fs.IntVar(&cfg.Window, "window", 16, "probes in flight, every run (the ET client's 16)")
	autoStop := fs.Duration("auto-stop", adaptive.Paper().StopRTT, "RTTstop: playable is a true RTT under it; both adaptive variants auto-stop at it")
	by := fs.String("cluster-by", "country", "the paper variant's clusters: country, as or country+as (scout's are country+as)")
	out := fs.String("out", "scout-out", "directory for scout-demo.svg and scout-demo.png (created if missing)")
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
	cfg.LandmarkPlan = demoLandmarkPlan(*autoStop, cfg.Seed)
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
		chart := demoChart(rep)
		for _, path := range []string{svg, png} {
			if perr := rttplot.Write(path, chart); perr != nil {
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

// demoChart draws every run in its own panel, two to a row: probes, the
// running RTTbottom (for conventional and adaptive: what Algorithm 2 sees),
// auto-stop, and a mark where each run found its last playable server.
func demoChart(rep demo.Report) rttplot.Chart {
	var series []rttplot.Series
	window := adaptive.Paper().Window
	for _, r := range rep.Runs {
		p := adaptive.Paper()
		var stopAt time.Duration
		if r.Params != nil {
			p, stopAt = *r.Params, r.Ordering.StopAt
		}
		s := plotSeries(r.Name, r.Ordering.Probes, stopAt, p)
		if r.Name == "oracle" || r.Landmarks != nil {
			s.Bottom = nil // no RTTbottom rule to judge
		}
		s.Name = fmt.Sprintf("%s: %d of %d playable found", r.Name, r.Found, rep.Playable)
		if r.LastPlayable > 0 {
			s.Marks = []rttplot.Mark{{At: r.LastPlayable, Label: "last playable " + fmt.Sprintf("%.1f s", r.LastPlayable.Seconds()),
				Key: "last playable server found"}}
		}
		series = append(series, s)
	}
	return rttplot.Chart{
		Title:   fmt.Sprintf("scout demo: %d ET servers seen from %s, over real sockets on loopback", rep.Servers, rep.Place.City.Name),
		Layout:  rttplot.SideBySide,
		Columns: 2,
		Series:  series,
		StopRTT: rep.StopRTT,
		Width:   demoPlotWidth,
		Height:  demoPlotHeight,
		Key:     true,
		Caption: fmt.Sprintf("RTTbottom: the 2nd-percentile RTT of the last %d probes (Armitage's Algorithm 2); the paper's adaptive run stops when it reaches "+
			"RTTstop, scout's by its bound rule, landmarks' when every unprobed server's lower bound (landmark RTTs, less a margin) is past RTTstop. Playable: the RTT the emulator gives the server before jitter is under %s; "+
			"a run found it when the server answered, whatever RTT jitter gave the reply. The oracle probes exactly the playable servers, nearest first.",
			window, strconv.FormatFloat(float64(rep.StopRTT)/float64(time.Millisecond), 'f', -1, 64)+" ms"),
	}
}

// printDemo prints the comparison table and what the adaptive runs did.
func printDemo(w io.Writer, rep demo.Report) {
	s := func(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
	fmt.Fprintf(w, "\n%d servers listed of %d (registration %s); %d of them playable from %s (true RTT < %v, before jitter)\n\n",
		rep.Listed, rep.Servers, s(rep.Registration), rep.Playable, rep.Place.City.Name, rep.StopRTT)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tlast playable\twhole run\tprobes\tflows\tplayable found\tauto-stop\t")
	for _, r := range rep.Runs {
		stop := "-"
		if r.Params != nil && r.Ordering.Stopped {
			stop = s(r.Ordering.StopAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d of %d\t%s\t\n", r.Name, s(r.LastPlayable), s(r.Summary.Took),
			r.Summary.Probe.Sent, r.Summary.Probe.Destinations, r.Found, rep.Playable, stop)
	}
	tw.Flush()
	fmt.Fprintln(w)
	conv := rep.Runs[0]
	for _, a := range rep.Runs {
		if a.Params == nil {
			continue
		}
		// The landmark run stops by its bound rule, the adaptive runs by
		// auto-stop; the rest of their lines is the same.
		stopped, notStopped := "auto-stop at", "auto-stop did not fire"
		if a.Name == "landmarks" {
			fmt.Fprintf(w, "%s: %d landmarks %v, %s; ", a.Name, len(a.Landmarks), a.Landmarks, matrixText(a.Matrix))
			stopped, notStopped = "stopped at", "the stop rule did not fire"
		} else {
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
			fmt.Fprintf(w, "%s: %d of %d servers geolocated, %d clusters (by %s), %d initial probes; ",
				a.Name, a.Ordering.Located, a.Summary.Listed, clusters, a.Params.ClusterBy, initial)
		}
		if a.Ordering.Stopped {
			share := 100 * float64(a.Ordering.Stop.Sent) / float64(max(a.Summary.Listed, 1))
			fmt.Fprintf(w, "%s %s after %d probes (%.1f%% of the list)\n", stopped, s(a.Ordering.StopAt), a.Ordering.Stop.Sent, share)
		} else {
			fmt.Fprintln(w, notStopped+": it probed every server")
		}
		if conv.Summary.Probe.Sent > 0 && conv.LastPlayable > 0 {
			fmt.Fprintf(w, "  last playable server in %.0f%% of conventional's time, with %.0f%% of its probes\n",
				100*a.LastPlayable.Seconds()/conv.LastPlayable.Seconds(), 100*float64(a.Summary.Probe.Sent)/float64(conv.Summary.Probe.Sent))
		}
	}
	for _, r := range rep.Runs {
		if r.Found < rep.Playable {
			fmt.Fprintln(w, missedText(r, rep.Playable))
		}
	}
}

// matrixText says which landmarks' RTTs to each other the landmark run
// used: measured by the masters (each pair's RTT) or derived from the
// servers' vectors.
func matrixText(m demo.LandmarkMatrix) string {
	if len(m.Landmarks) < 2 {
		return "no matrix"
	}
	var pairs []string
	for j := range m.Landmarks {
		for k := j + 1; k < len(m.Landmarks) && k < len(m.RTTs[j]); k++ {
			v := "?"
			if d := m.RTTs[j][k]; d >= 0 {
				v = fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
			}
			pairs = append(pairs, m.Landmarks[j]+"-"+m.Landmarks[k]+" "+v)
		}
	}
	how := "matrix measured by the masters"
	if m.Derived {
		how = "matrix derived from the servers' RTTs (some pair not measured)"
	}
	return how + " (" + strings.Join(pairs, ", ") + ")"
}

// missedText is the line for a run that found fewer than playable of the
// playable servers listed: how many it never probed (after its stop, if it
// stopped) and how many it probed without an answer (every reply lost).
func missedText(r demo.Run, playable int) string {
	never := "never probed"
	if r.Params != nil && r.Ordering.Stopped {
		never = "never probed (after its stop)"
	}
	return fmt.Sprintf("%s missed %d of %d playable: %d %s, %d probed with every reply lost",
		r.Name, playable-r.Found, playable, r.Unprobed, never, r.Unanswered)
}
