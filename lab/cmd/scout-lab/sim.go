package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/rttplot"
	"github.com/scout-discovery/scout/lab/sim"
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
	fs := newFlags("sim", "[flags]", simAbout, stderr)
	table2 := fs.Bool("table2", false, "run the six rows of the paper's Table 2")
	asJSON := fs.Bool("json", false, "print one JSON object per row")
	client := fs.String("client", "AU", "where the client sits: AU (Melbourne), JP (Tokyo), CH (Zurich), DE (Frankfurt)")
	game := fs.String("game", "et", "the world's game: et or css")
	servers := fs.Int("servers", 0, "servers in the world, 1 to 50000 (0: 2800 for et, 22000 for css)")
	seed := fs.Uint64("seed", 1, "seed of the world and the run")
	loss := fs.Float64("loss", sim.DefaultLoss, "probability that a probe or its reply is lost")
	tracePath := fs.String("trace", "", "write the per-probe trace as CSV to `FILE`")
	plotPath := fs.String("plot", "", "one row: draw RTT against probe time, conventional and adaptive side by side, to `FILE` (.svg or .png)")
	plotW := fs.Int("plot-width", 0, "--plot's width in pixels (0: the default)")
	plotH := fs.Int("plot-height", 0, "--plot's height in pixels (0: the default)")
	plotVariant := fs.String("plot-variant", "paper", "--plot's adaptive panel: paper, or scout (adaptive.Scout, drawn past its auto-stop the same way)")
	seeds := fs.Int("seeds", 1, "with --table2: run seeds --seed to --seed+N-1 and print each row's spread (min, mean, max)")
	modelName := fs.String("model", "vantage", "world model: vantage (the calibrated model with the per-vantage latency residual), global-residual (the same before that fit) or modern")
	meshFlags := addSimMeshFlags(fs)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "scout-lab sim: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if !(*loss >= 0 && *loss <= 1) {
		fmt.Fprintf(stderr, "scout-lab sim: --loss %v: want 0 to 1\n", *loss)
		return 2
	}
	if *seeds < 1 || *seeds > 1000 || *seeds > 1 && (!*table2 || *asJSON || *tracePath != "") {
		fmt.Fprintln(stderr, "scout-lab sim: --seeds N (1 to 1000) goes with --table2, without --json and --trace")
		return 2
	}
	if *plotPath != "" {
		ext := strings.ToLower(filepath.Ext(*plotPath))
		if *table2 || *seeds > 1 || ext != ".svg" && ext != ".png" {
			fmt.Fprintf(stderr, "scout-lab sim: --plot %q: one row only (no --table2 or --seeds), and the name must end in .svg or .png\n", *plotPath)
			return 2
		}
	}
	if *plotVariant != "paper" && *plotVariant != "scout" {
		fmt.Fprintf(stderr, "scout-lab sim: --plot-variant %q: paper or scout\n", *plotVariant)
		return 2
	}
	if *plotW < 0 || *plotH < 0 {
		fmt.Fprintln(stderr, "scout-lab sim: --plot-width and --plot-height must not be negative")
		return 2
	}
	model, ok := sim.Models()[*modelName]
	if !ok {
		fmt.Fprintf(stderr, "scout-lab sim: unknown --model %q (vantage, global-residual, modern)\n", *modelName)
		return 2
	}
	ms, notes, err := meshFlags.spec()
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab sim: %v\n", err)
		return 2
	}
	if ms != nil && *plotPath != "" {
		fmt.Fprintln(stderr, "scout-lab sim: --plot does not go with --mesh")
		return 2
	}
	if !*asJSON { // --json prints rows only
		for _, n := range notes {
			fmt.Fprintln(stdout, n)
		}
		if len(notes) > 0 {
			fmt.Fprintln(stdout)
		}
	}
	if *seeds > 1 {
		return simSeeds(ctx, stdout, stderr, model, *seed, *seeds, ms)
	}
	var specs []sim.Spec
	if *table2 {
		var err error
		if specs, err = sim.Table2SpecsOf(model, *seed); err != nil {
			fmt.Fprintf(stderr, "scout-lab sim: %v\n", err)
			return 1
		}
	} else {
		g := population.Game(strings.ToLower(*game))
		n := *servers
		switch g {
		case population.ET:
			if n == 0 {
				n = population.SizeET
			}
		case population.CSS:
			if n == 0 {
				n = population.SizeCSS
			}
		default:
			fmt.Fprintf(stderr, "scout-lab sim: unknown game %q (et, css)\n", *game)
			return 2
		}
		if n < 1 || n > population.MaxServers {
			fmt.Fprintf(stderr, "scout-lab sim: --servers %d: want 1 to %d\n", n, population.MaxServers)
			return 2
		}
		p := strings.ToUpper(*client)
		if _, ok := population.Places()[p]; !ok {
			fmt.Fprintf(stderr, "scout-lab sim: unknown client %q (AU, JP, CH, DE)\n", *client)
			return 2
		}
		w, err := population.Build(model(g, n, *seed))
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab sim: %v\n", err)
			return 1
		}
		specs = []sim.Spec{{Place: p, Game: g, Servers: len(w.Servers), Seed: *seed, World: w}}
	}
	var trace *csv.Writer
	if *tracePath != "" {
		f, err := os.Create(*tracePath)
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab sim: %v\n", err)
			return 1
		}
		defer f.Close()
		trace = csv.NewWriter(f)
		trace.Write([]string{"client", "strategy", "seq", "sent_s", "done_s", "rtt_ms", "answered", "phase", "bottom_ms", "index"})
	}
	var rows []*sim.Row
	for _, sp := range specs {
		if err := ctx.Err(); err != nil {
			fmt.Fprintf(stderr, "scout-lab sim: %v\n", err)
			return 1
		}
		if *loss != sim.DefaultLoss {
			p := sim.PacingFor(sp.Game, sp.Servers)
			p.Loss = *loss
			sp.Pacing = &p
		}
		sp.Trace = trace != nil || *plotPath != ""
		setMesh(&sp, ms)
		r, err := sim.Simulate(sp)
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab sim: %v\n", err)
			return 1
		}
		rows = append(rows, r)
		if *plotPath != "" {
			if err := writeSimPlot(*plotPath, sp, r, *plotW, *plotH, *plotVariant); err != nil {
				fmt.Fprintf(stderr, "scout-lab sim: %v\n", err)
				return 1
			}
		}
		if trace != nil {
			writeTrace(trace, r.Client, "adaptive", r.AdaptiveTrace)
			writeTrace(trace, r.Client, "conventional", r.ConventionalTrace)
		}
	}
	if trace != nil {
		trace.Flush()
		if err := trace.Error(); err != nil {
			fmt.Fprintf(stderr, "scout-lab sim: trace: %v\n", err)
			return 1
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				fmt.Fprintf(stderr, "scout-lab sim: %v\n", err)
				return 1
			}
		}
		return 0
	}
	printSimTable(stdout, rows)
	if ms != nil {
		fmt.Fprintln(stdout)
		printProbeShares(stdout, rows)
	}
	return 0
}

// writeSimPlot draws row r of spec sp (run with its traces) the way the
// live runs are drawn (rttplot.RunSeries): conventional discovery and
// the paper's adaptive run side by side. The adaptive panel shows the whole
// re-ordered sequence, as the paper's Figures 4 to 9 do, from a second run
// of the same spec with auto-stop off; r's auto-stop time marks where the
// paper's run stopped.
func writeSimPlot(path string, sp sim.Spec, r *sim.Row, width, height int, variant string) error {
	p := adaptive.Paper()
	all := p
	all.StopRTT = 0
	sp.Variants, sp.Trace = []sim.Variant{{Name: "paper, no auto-stop", Params: all}}, true
	stopped, stopTime := r.Adaptive.Stopped, r.Adaptive.StopTime
	if variant != "paper" {
		vs, err := neverStop(variant)
		if err != nil {
			return err
		}
		sp.Variants, sp.TraceVariant = vs, variant
		stopped = false
		for _, v := range r.Variants {
			if v.Name == variant {
				stopped, stopTime = v.Stopped, v.StopTime
			}
		}
	}
	full, err := sim.Simulate(sp)
	if err != nil {
		return err
	}
	trace := full.AdaptiveTrace
	if variant != "paper" {
		trace = full.VariantTrace
	}
	var stopAt time.Duration
	if stopped {
		stopAt = time.Duration(stopTime * float64(time.Second))
	}
	city := population.Places()[sp.Place].City.Name
	title := fmt.Sprintf("scout-lab sim: %s, %d servers seen from %s, seed %d", r.Client, r.Servers, city, r.Seed)
	name := "adaptive (re-ordered)"
	if variant != "paper" {
		title += ", variant " + variant
		name = variant + " (re-ordered)"
	}
	if stopAt > 0 {
		title += " (adaptive drawn past its auto-stop, as in the paper)"
	}
	c := rttplot.Chart{Title: title, Layout: rttplot.SideBySide, StopRTT: p.StopRTT, Width: width, Height: height,
		Series: []rttplot.Series{
			rttplot.RunSeries("conventional (master order)", simOutcomes(r.ConventionalTrace), 0, p),
			rttplot.RunSeries(name, simOutcomes(trace), stopAt, p),
		}}
	if err := rttplot.Write(path, c); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	return nil
}

// neverStop returns sim.Variants() with the named variant's stop made one
// that never fires (StopBound waiting for more agreeing outcomes than there
// are servers), at its own place in the list, so that its calibration
// samples are drawn from the same stream: up to its stop, the same run.
func neverStop(variant string) ([]sim.Variant, error) {
	vs := sim.Variants()
	for i := range vs {
		if vs[i].Name == variant && vs[i].Params.Stop == adaptive.StopBound {
			vs[i].Params.StopAgree = math.MaxInt32
			return vs, nil
		}
	}
	return nil, fmt.Errorf("--plot-variant %s: no such variant with the bound rule", variant)
}

// simOutcomes turns a simulated trace into the outcomes live discovery
// reports, in the same order (the order outcomes arrived), so that both are
// drawn by rttplot.RunSeries.
func simOutcomes(tr []sim.Probe) []discover.Outcome {
	out := make([]discover.Outcome, len(tr))
	for i, p := range tr {
		out[i] = discover.Outcome{Phase: p.Phase, At: p.Sent, RTT: p.RTT, Answered: p.Answered}
	}
	return out
}

func writeTrace(w *csv.Writer, client, strategy string, tr []sim.Probe) {
	ms := func(d time.Duration) string {
		if d == adaptive.NoAnswer {
			return "inf"
		}
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
	}
	for i, p := range tr {
		rtt, bottom := "", ""
		if p.Answered {
			rtt = ms(p.RTT)
		}
		if p.Bottom != 0 {
			bottom = ms(p.Bottom)
		}
		w.Write([]string{client, strategy, strconv.Itoa(i), strconv.FormatFloat(p.Sent.Seconds(), 'f', 6, 64),
			strconv.FormatFloat(p.Done.Seconds(), 'f', 6, 64), rtt, strconv.FormatBool(p.Answered), p.Phase.String(), bottom, strconv.Itoa(p.Index)})
	}
}

func printSimTable(w io.Writer, rows []*sim.Row) {
	paper := func(r *sim.Row, f func(*sim.PaperRow) string) string {
		if r.Paper == nil {
			return "-"
		}
		return f(r.Paper)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tservers\tcountries\tclusters\t/8 clusters\tinitial probes\tauto-stop s\tauto-stop %\tfound %\tlast playable s (adaptive/conv/oracle)\tprobes (adaptive/conv/oracle)\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d (%s)\t%d (%s)\t%d\t%d (%s)\t%.1f (%s)\t%.0f (%s)\t%.1f\t%.1f / %.1f / %.1f\t%d / %d / %d\t\n",
			r.Client, r.Servers,
			r.Countries, paper(r, func(p *sim.PaperRow) string { return strconv.Itoa(p.Countries) }),
			r.Clusters, paper(r, func(p *sim.PaperRow) string { return strconv.Itoa(p.Slash8) }), r.Slash8,
			r.InitialProbes, paper(r, func(p *sim.PaperRow) string { return strconv.Itoa(p.InitialProbes) }),
			r.AutoStop, paper(r, func(p *sim.PaperRow) string { return strconv.FormatFloat(p.AutoStop, 'f', 0, 64) }),
			r.AutoStopPct, paper(r, func(p *sim.PaperRow) string { return strconv.FormatFloat(p.AutoStopPct, 'f', 0, 64) }),
			r.Adaptive.FoundPct, r.Adaptive.LastPlayable, r.Conventional.LastPlayable, r.Oracle.LastPlayable,
			r.Adaptive.Probes, r.Conventional.Probes, r.Oracle.Probes)
	}
	tw.Flush()
	fmt.Fprintln(w, "(the paper's Table 2 in brackets; playable: RTT < 200 ms)")
	fmt.Fprintln(w)
	if len(rows) == 0 || len(rows[0].Variants) == 0 {
		return
	}
	for i, v := range rows[0].Variants {
		if v.Name == "scout" {
			printVariantRows(w, rows, i)
		}
	}
	fmt.Fprintln(w, "Auto-stop % of the full probe / playable servers found %, per variant:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "client\t")
	for _, v := range rows[0].Variants {
		fmt.Fprintf(tw, "%s\t", v.Name)
	}
	fmt.Fprintln(tw, "oracle\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t", r.Client)
		for _, v := range r.Variants {
			fmt.Fprintf(tw, "%.0f / %.1f\t", v.StopPct, v.FoundPct)
		}
		fmt.Fprintf(tw, "%.0f / %.1f\t\n", r.Oracle.StopPct, r.Oracle.FoundPct)
	}
	tw.Flush()
}

// printVariantRows prints the paper's row figures for variant i of each row.
func printVariantRows(w io.Writer, rows []*sim.Row, i int) {
	fmt.Fprintf(w, "Variant %s (the same worlds and runs):\n", rows[0].Variants[i].Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tinitial probes\tauto-stop s\tauto-stop %\tfound %\tlast playable s\tprobes\t")
	for _, r := range rows {
		if i >= len(r.Variants) {
			continue
		}
		v := r.Variants[i]
		stop := fmt.Sprintf("%.1f", v.StopTime)
		if !v.Stopped {
			stop += " (no stop)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.1f\t%.1f\t%d\t\n", r.Client, v.Initial, stop, v.StopPct, v.FoundPct, v.LastPlayable, v.Probes)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// simSeeds runs Table 2 for n seeds from first and prints, per row and
// strategy, the spread of the auto-stop share and of the playable servers
// found.
func simSeeds(ctx context.Context, stdout, stderr io.Writer, model func(population.Game, int, uint64) population.Config, first uint64, n int, ms *sim.MeshSpec) int {
	type acc struct {
		stop, found, probes []float64
		missed, wasted      map[string]int
	}
	var st strategyAccs[acc]
	// Seeds run on up to two workers (the simulation is single-threaded and
	// deterministic); their rows are gathered in seed order.
	results := make([][]*sim.Row, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(2, runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				specs, err := sim.Table2SpecsOf(model, first+uint64(k))
				if err != nil {
					errs[k] = err
					continue
				}
				for _, sp := range specs {
					setMesh(&sp, ms)
					if err := ctx.Err(); err != nil {
						errs[k] = err
						break
					}
					r, err := sim.Simulate(sp)
					if err != nil {
						errs[k] = err
						break
					}
					results[k] = append(results[k], r)
				}
			}
		}()
	}
	for k := range n {
		next <- k
	}
	close(next)
	wg.Wait()
	for k := range n {
		if errs[k] != nil {
			fmt.Fprintf(stderr, "scout-lab sim: %v\n", errs[k])
			return 1
		}
		for _, r := range results[k] {
			st.client(r.Client)
			for _, o := range append(append([]sim.Outcome(nil), r.Variants...), r.Oracle) {
				a := st.get(r.Client, o.Name)
				a.stop = append(a.stop, o.StopPct)
				a.found = append(a.found, o.FoundPct)
				a.probes = append(a.probes, 100*float64(o.Probes)/float64(max(r.Conventional.Probes, 1)))
				if o.Missed != nil {
					if a.missed == nil {
						a.missed, a.wasted = map[string]int{}, map[string]int{}
					}
					for reg, n := range o.Missed {
						a.missed[reg] += n
					}
					for reg, n := range o.Wasted {
						a.wasted[reg] += n
					}
				}
			}
		}
	}
	clients, names, accs := st.clients, st.names, st.accs
	spread := func(v []float64) string {
		lo, hi, sum := v[0], v[0], 0.0
		for _, x := range v {
			lo, hi, sum = min(lo, x), max(hi, x), sum+x
		}
		return fmt.Sprintf("%.0f %.0f %.0f", lo, sum/float64(len(v)), hi)
	}
	lowest := func(v []float64) string {
		lo := v[0]
		for _, x := range v {
			lo = min(lo, x)
		}
		return fmt.Sprintf("%.1f", lo)
	}
	// table prints one cell per client and strategy.
	table := func(cell func(a *acc) string) {
		tw := strategyTable(stdout, "", names)
		for _, c := range clients {
			fmt.Fprintf(tw, "%s\t", c)
			for _, nm := range names {
				fmt.Fprintf(tw, "%s\t", cell(accs[c][nm]))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	fmt.Fprintf(stdout, "Seeds %d to %d: auto-stop %% of the full probe (min mean max) | lowest %% of playable servers found\n", first, first+uint64(n)-1)
	table(func(a *acc) string { return spread(a.stop) + " | " + lowest(a.found) })
	if ms == nil {
		return 0
	}
	fmt.Fprintf(stdout, "\nSeeds %d to %d: probes %% of the full probe's (min mean max) | lowest %% of playable servers found\n", first, first+uint64(n)-1)
	table(func(a *acc) string { return spreadDecimal(a.probes) + " | " + lowest(a.found) })
	printTargets(stdout, results, first)
	printFarRatios(stdout, results, first)
	fmt.Fprintf(stdout, "\nSeeds %d to %d, landmark strategies: playable servers missed / unplayable servers probed, summed over the seeds, by the server's region\n", first, first+uint64(n)-1)
	for _, nm := range names {
		if accs[clients[0]][nm].missed == nil {
			continue
		}
		fmt.Fprintf(stdout, "%s:", nm)
		for _, c := range clients {
			a := accs[c][nm]
			fmt.Fprintf(stdout, "  %s %s;", c, regionCounts(a.missed, a.wasted))
		}
		fmt.Fprintln(stdout)
	}
	return 0
}
