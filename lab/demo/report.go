package demo

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/rttplot"
	"github.com/scout-discovery/scout/lab/world"
)

// PlotWidth and PlotHeight are the plot's size, in pixels: three rows of
// two panels.
const PlotWidth, PlotHeight = 1200, 1260

// WritePlots writes the chart of rep (Chart) into dir as scout-demo.svg
// and scout-demo.png, and returns their paths.
func WritePlots(dir string, rep Report) (svg, png string, err error) {
	svg, png = filepath.Join(dir, "scout-demo.svg"), filepath.Join(dir, "scout-demo.png")
	chart := Chart(rep)
	for _, path := range []string{svg, png} {
		err = errors.Join(err, rttplot.Write(path, chart))
	}
	return svg, png, err
}

// TuneRuntime sets the runtime up for a demo in this process as scout
// world does (world.TuneRuntime: more Ps than cores and rarer
// collections, so that the emulated delays hold while three discoveries
// share the process; GOMAXPROCS and GOGC still win), and returns the
// function that puts it back.
func TuneRuntime() (undo func()) { return world.TuneRuntime() }

// Chart draws every run in its own panel, two to a row: probes, the
// running RTTbottom (for conventional and adaptive: what Algorithm 2 sees),
// auto-stop, and a mark where each run found its last playable server.
func Chart(rep Report) rttplot.Chart {
	var series []rttplot.Series
	window := adaptive.Paper().Window
	for _, r := range rep.Runs {
		p := adaptive.Paper()
		var stopAt time.Duration
		if r.Params != nil {
			p, stopAt = *r.Params, r.Ordering.StopAt
		}
		s := rttplot.RunSeries(r.Name, r.Ordering.Probes, stopAt, p)
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
		Width:   PlotWidth,
		Height:  PlotHeight,
		Key:     true,
		Caption: fmt.Sprintf("RTTbottom: the 2nd-percentile RTT of the last %d probes (Armitage's Algorithm 2); the paper's adaptive run stops when it reaches "+
			"RTTstop, scout's by its bound rule, landmarks' when every site the bound leaves out has been measured far. Playable: the RTT the emulator gives the server before jitter is under %s; "+
			"a run found it when the server answered, whatever RTT jitter gave the reply. The oracle probes exactly the playable servers, nearest first.",
			window, strconv.FormatFloat(float64(rep.StopRTT)/float64(time.Millisecond), 'f', -1, 64)+" ms"),
	}
}

// Print prints the comparison table and what the adaptive runs did.
func Print(w io.Writer, rep Report) {
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
	if o := rep.Runs[len(rep.Runs)-1]; o.Name == "oracle" && o.Summary.Probe.Destinations > 0 {
		fmt.Fprint(w, "\nprobes (flows) / the oracle's:")
		for _, r := range rep.Runs[:len(rep.Runs)-1] {
			fmt.Fprintf(w, " %s %.2f;", r.Name, float64(r.Summary.Probe.Destinations)/float64(o.Summary.Probe.Destinations))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	conv := rep.Runs[0]
	for _, a := range rep.Runs {
		if a.Params == nil {
			continue
		}
		// The landmark run stops by its bound rule, the adaptive runs by
		// auto-stop; the rest of their lines is the same.
		stopped, notStopped := "auto-stop at", "auto-stop did not fire"
		if strings.HasPrefix(a.Name, "landmarks") {
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
func matrixText(m LandmarkMatrix) string {
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
func missedText(r Run, playable int) string {
	never := "never probed"
	if r.Params != nil && r.Ordering.Stopped {
		never = "never probed (after its stop)"
	}
	return fmt.Sprintf("%s missed %d of %d playable: %d %s, %d probed with every reply lost",
		r.Name, playable-r.Found, playable, r.Unprobed, never, r.Unanswered)
}
