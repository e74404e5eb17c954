package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/sim"
	"github.com/scout-discovery/scout/lab/sim/report"
)

func init() {
	register(cli.Command{Name: "sim", Summary: "simulate conventional and adaptive discovery at Internet scale (Table 2)", Run: runSim})
}

const simAbout = `Simulates, in virtual time, a client discovering a world of game servers
built from real data (package population): conventional discovery in the
master's order, Armitage's adaptive search (NETWORKING 2008) with the
paper's constants and with each option beyond the paper, and the oracle
that probes exactly the playable servers, nearest first. Probes are paced
like the real clients (a full ET probe takes 70 s with at most 16
outstanding, a CS:S one 200 s).

--table2 runs the paper's six rows (AU-ET, JP-ET, CH-ET: one ET world of
2,800 servers; AU-CSS, JP-CSS, DE-CSS: one CS:S world of 22,000) and prints
them next to the paper's Table 2. Without it, one row: --client and --game,
and --servers (0: the paper's size for the game).

Columns: countries, clusters (step 3: the /8 clusters of step 2(c) and one
per country for the rest, the reading of the paper's "/8 clusters" column
that its numbers fit), /8 clusters (step 2(c) alone), initial probes (steps 4(c) and
4(e)iii), auto-stop time and its share of the conventional full probe,
playable servers (RTT < 200 ms) found by the auto-stop, time to the last
playable server found (adaptive, conventional, oracle), and probes sent
(each creates one flow: one server, one NAT entry).

--json prints one JSON object per row; --trace FILE writes every probe of
the paper's adaptive run and of conventional discovery as CSV (client,
strategy, seq, sent_s, done_s, rtt_ms, answered, phase, bottom_ms, index) for
plotting. The output is the same for the same seed.

--plot FILE (one row only) draws RTT against probe time like the paper's
Figures 2 to 9, .svg or .png by the name: conventional discovery (master
order) on the left, the paper's re-ordered sequence on the right with its
calibration and split probes marked, the running 2nd percentile of the last
100 probes, RTTstop and the auto-stop line. As in the paper's Figures 4 to
9, the re-ordered sequence is drawn to its end: the probes right of the
auto-stop line are those the stop saved (the same run with auto-stop off;
up to the stop it is the same run, probe for probe). --plot-width and
--plot-height set the picture's size in pixels (0: rttplot's defaults).

--mesh DIR takes every RTT's city-to-city part from WonderProxy's measured
mesh (read from DIR at run time; it is not shipped) plus the model's
server-side offsets, and runs discovery with landmarks beside conventional,
the paper's algorithm, scout and the oracle: K masters in K hub cities
(--landmarks, --landmark-rule) have measured every server (with the same
offsets, as a master's probe would); the client knows its RTT to each.
landmarks-K probes every server whose lower bound minus the margin (fitted
on the mesh at --margin-quantile) is within 200 ms, nearest estimate first;
landmarks-K+run also stops after --stop-after unplayable outcomes in a row;
landmarks-K+scout hands the servers the bound keeps to scout's adaptive
planner. A last table gives every strategy's probes as a share of the full
probe's. EVALUATION.md ("Landmarks") has the figures.`

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, notes, code, ok := parseSimFlags(args, stderr)
	if !ok {
		return code
	}
	if !o.JSON { // --json prints rows only
		for _, n := range notes {
			fmt.Fprintln(stdout, n)
		}
		if len(notes) > 0 {
			fmt.Fprintln(stdout)
		}
	}
	if err := report.Run(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "scout-lab sim: %v\n", err)
		return 1
	}
	return 0
}

// parseSimFlags reads scout-lab sim's flags into the run's options, with
// the notes on the mesh's fitted margins; when it returns !ok, the caller
// returns code at once.
func parseSimFlags(args []string, stderr io.Writer) (o report.Options, notes []string, code int, ok bool) {
	fs := newFlags("sim", "[flags]", simAbout, stderr)
	fs.BoolVar(&o.Table2, "table2", false, "run the six rows of the paper's Table 2")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per row")
	client := fs.String("client", "AU", "where the client sits: AU (Melbourne), JP (Tokyo), CH (Zurich), DE (Frankfurt)")
	game := fs.String("game", "et", "the world's game: et or css")
	fs.IntVar(&o.Servers, "servers", 0, "servers in the world, 1 to 50000 (0: 2800 for et, 22000 for css)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the world and the run")
	loss := fs.Float64("loss", sim.DefaultLoss, "probability that a probe or its reply is lost")
	fs.StringVar(&o.Trace, "trace", "", "write the per-probe trace as CSV to `FILE`")
	fs.StringVar(&o.Plot, "plot", "", "one row: draw RTT against probe time, conventional and adaptive side by side, to `FILE` (.svg or .png)")
	fs.IntVar(&o.PlotWidth, "plot-width", 0, "--plot's width in pixels (0: the default)")
	fs.IntVar(&o.PlotHeight, "plot-height", 0, "--plot's height in pixels (0: the default)")
	fs.StringVar(&o.PlotVariant, "plot-variant", "paper", "--plot's adaptive panel: paper, or scout (adaptive.Scout, drawn past its auto-stop the same way)")
	fs.IntVar(&o.Seeds, "seeds", 1, "with --table2: run seeds --seed to --seed+N-1 and print each row's spread (min, mean, max)")
	modelName := fs.String("model", "vantage", "world model: vantage (the calibrated model with the per-vantage latency residual), global-residual (the same before that fit) or modern")
	meshFlags := addSimMeshFlags(fs)
	if code, done := parseFlags(fs, args); done {
		return o, nil, code, false
	}
	bad := func(format string, a ...any) (report.Options, []string, int, bool) {
		return o, nil, cli.UsageError(fs, format, a...), false
	}
	var err error
	if err = checkSimFlags(fs, &o, *loss); err != nil {
		return bad("%v", err)
	}
	if model, ok := sim.Models()[*modelName]; ok {
		o.Model = model
	} else {
		return bad("unknown --model %q (vantage, global-residual, modern)", *modelName)
	}
	if o.Mesh, notes, err = meshFlags.spec(); err != nil {
		return bad("%v", err)
	}
	if o.Mesh != nil && o.Plot != "" {
		return bad("--plot does not go with --mesh")
	}
	if !o.Table2 && o.Seeds == 1 {
		if err := simRow(&o, *game, *client); err != nil {
			return bad("%v", err)
		}
	}
	return o, notes, 0, true
}

// checkSimFlags checks the flags of the run's shape: --loss, --seeds,
// --plot and its size.
func checkSimFlags(fs *flag.FlagSet, o *report.Options, loss float64) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case !(loss >= 0 && loss <= 1):
		return fmt.Errorf("--loss %v: want 0 to 1", loss)
	case o.Seeds < 1 || o.Seeds > 1000 || o.Seeds > 1 && (!o.Table2 || o.JSON || o.Trace != ""):
		return fmt.Errorf("--seeds N (1 to 1000) goes with --table2, without --json and --trace")
	}
	if loss != sim.DefaultLoss {
		o.Loss = &loss
	}
	if o.Plot != "" {
		ext := strings.ToLower(filepath.Ext(o.Plot))
		if o.Table2 || o.Seeds > 1 || ext != ".svg" && ext != ".png" {
			return fmt.Errorf("--plot %q: one row only (no --table2 or --seeds), and the name must end in .svg or .png", o.Plot)
		}
	}
	if o.PlotVariant != "paper" && o.PlotVariant != "scout" {
		return fmt.Errorf("--plot-variant %q: paper or scout", o.PlotVariant)
	}
	if o.PlotWidth < 0 || o.PlotHeight < 0 {
		return fmt.Errorf("--plot-width and --plot-height must not be negative")
	}
	return nil
}

// simRow reads --game, --servers and --client for a one-row run.
func simRow(o *report.Options, game, client string) error {
	o.Game = population.Game(strings.ToLower(game))
	switch o.Game {
	case population.ET:
		o.Servers = cmp.Or(o.Servers, population.SizeET)
	case population.CSS:
		o.Servers = cmp.Or(o.Servers, population.SizeCSS)
	default:
		return fmt.Errorf("unknown game %q (et, css)", game)
	}
	if o.Servers < 1 || o.Servers > population.MaxServers {
		return fmt.Errorf("--servers %d: want 1 to %d", o.Servers, population.MaxServers)
	}
	o.Place = strings.ToUpper(client)
	if _, ok := population.Places()[o.Place]; !ok {
		return fmt.Errorf("unknown client %q (AU, JP, CH, DE)", client)
	}
	return nil
}
