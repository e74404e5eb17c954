package report

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/rttplot"
	"github.com/scout-discovery/scout/lab/sim"
)

// Options are one run of scout-lab sim: the rows to simulate and what to
// print and write.
type Options struct {
	// Table2 runs the paper's six rows; otherwise one row: Place, Game
	// and Servers.
	Table2  bool
	Place   string // AU, JP, CH or DE
	Game    population.Game
	Servers int
	Seed    uint64
	// Seeds, above 1, runs Table 2 for seeds Seed to Seed+Seeds-1 and
	// prints each row's spread instead (Seeds).
	Seeds int
	// Loss, if not nil, replaces the pacing's loss (sim.DefaultLoss).
	Loss *float64
	// Model builds each world (sim.Models).
	Model func(population.Game, int, uint64) population.Config
	// Mesh, if not nil, puts the worlds on a measured mesh with landmark
	// strategies (MeshSpec).
	Mesh *sim.MeshSpec
	// JSON prints one JSON object per row instead of the tables.
	JSON bool
	// Trace, if not "", is the CSV file of every probe of the paper's
	// adaptive run and of conventional discovery.
	Trace string
	// Plot, if not "", is the chart of a one-row run (.svg or .png),
	// PlotWidth by PlotHeight pixels (0: rttplot's defaults), its
	// adaptive panel PlotVariant's ("paper" or "scout").
	Plot                  string
	PlotWidth, PlotHeight int
	PlotVariant           string
}

// Run simulates the rows o describes and prints them to w: the Table 2
// layout beside the paper's (and, on a mesh, every strategy's probe
// share), or one JSON object per row.
func Run(ctx context.Context, o Options, w io.Writer) error {
	if o.Seeds > 1 {
		return Seeds(ctx, w, o.Model, o.Seed, o.Seeds, o.Mesh)
	}
	var specs []sim.Spec
	if o.Table2 {
		var err error
		if specs, err = sim.Table2SpecsOf(o.Model, o.Seed); err != nil {
			return err
		}
	} else {
		w, err := population.Build(o.Model(o.Game, o.Servers, o.Seed))
		if err != nil {
			return err
		}
		specs = []sim.Spec{{Place: o.Place, Game: o.Game, Servers: len(w.Servers), Seed: o.Seed, World: w}}
	}
	var trace *csv.Writer
	if o.Trace != "" {
		f, err := os.Create(o.Trace)
		if err != nil {
			return err
		}
		defer f.Close()
		trace = csv.NewWriter(f)
		trace.Write([]string{"client", "strategy", "seq", "sent_s", "done_s", "rtt_ms", "answered", "phase", "bottom_ms", "index"})
	}
	var rows []*sim.Row
	for _, sp := range specs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if o.Loss != nil {
			p := sim.PacingFor(sp.Game, sp.Servers)
			p.Loss = *o.Loss
			sp.Pacing = &p
		}
		sp.Trace = trace != nil || o.Plot != ""
		SetMesh(&sp, o.Mesh)
		r, err := sim.Simulate(sp)
		if err != nil {
			return err
		}
		rows = append(rows, r)
		if o.Plot != "" {
			if err := writePlot(o.Plot, sp, r, o.PlotWidth, o.PlotHeight, o.PlotVariant); err != nil {
				return err
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
			return fmt.Errorf("trace: %w", err)
		}
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	PrintTable(w, rows)
	if o.Mesh != nil {
		fmt.Fprintln(w)
		PrintProbeShares(w, rows)
	}
	return nil
}

// writePlot draws row r of spec sp (run with its traces) the way the
// live runs are drawn (rttplot.RunSeries): conventional discovery and
// the paper's adaptive run side by side. The adaptive panel shows the whole
// re-ordered sequence, as the paper's Figures 4 to 9 do, from a second run
// of the same spec with auto-stop off; r's auto-stop time marks where the
// paper's run stopped.
func writePlot(path string, sp sim.Spec, r *sim.Row, width, height int, variant string) error {
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

// PrintTable prints the rows in the layout of the paper's Table 2, the
// paper's figures in brackets, then each variant's auto-stop share and
// playable servers found.
func PrintTable(w io.Writer, rows []*sim.Row) {
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
