package rttplot

import (
	"fmt"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
)

// PhaseOf maps a planner phase to the chart's.
func PhaseOf(ph adaptive.Phase) Phase {
	switch ph {
	case adaptive.Calibrate:
		return Calibrate
	case adaptive.Split:
		return Split
	case adaptive.Reordered:
		return Reordered
	}
	return Conventional
}

// RunSeries draws a discovery run: its probes by phase, Algorithm 2's
// running percentile over them with p's window (the paper's where p has
// none), and the auto-stop line at stopAt (none for 0).
func RunSeries(name string, probes []discover.Outcome, stopAt time.Duration, p adaptive.Params) Series {
	s := Series{Name: name, StopAt: stopAt}
	for _, o := range probes {
		s.Probes = append(s.Probes, Probe{At: o.At, RTT: o.RTT, Answered: o.Answered, Phase: PhaseOf(o.Phase)})
	}
	w, pct := p.Window, p.StopPercentile
	if w < 1 || !(pct > 0 && pct <= 1) {
		w, pct = adaptive.Paper().Window, adaptive.Paper().StopPercentile
	}
	s.Bottom = Bottom(s.Probes, w, pct)
	return s
}

// WriteRuns writes one chart of series side by side to path (.svg or
// .png).
func WriteRuns(path, title string, stopRTT time.Duration, series ...Series) error {
	c := Chart{Title: title, Series: series, StopRTT: stopRTT}
	if len(series) > 1 {
		c.Layout = SideBySide
	}
	if err := Write(path, c); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	return nil
}
