package cityeval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Print prints the report as tables: the fit, the summaries, then the
// client cities under the floor with their misses.
func Print(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "%s worlds of %d servers, city-to-city RTTs from the %s, every city client %.0f ms of access; landmarks %s (landmarks-bound margin %.1f ms)\n",
		rep.Game, rep.Servers, rep.Latency, rep.AccessMs, strings.Join(rep.Landmarks, " "), rep.BoundMargin)
	if len(rep.Fit.Grid) > 0 {
		fmt.Fprintf(w, "\nFitted on %d cities, seeds %v, models %v (far: probes / oracle's, landmarks, median over the far cities):\n", len(rep.Fit.Cities), rep.Fit.Seeds, rep.Fit.Models)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "group margin\tsite margin\tall through sites\tsafe\tworst found %\tfar\tnear\t")
		for _, g := range rep.Fit.Grid {
			fmt.Fprintf(tw, "%.0f\t%.0f\t%v\t%v\t%.1f\t%.2f\t%.2f\t\n", g.Params.GroupMargin, g.Params.SiteMargin, g.Params.SiteAll, g.Safe, g.WorstFound, g.FarRatio, g.NearRatio)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nConstants reported: %+v (the product's: %+v)\n", rep.Params, rep.Product)
	if rep.Churn > 0 || rep.RouteChange > 0 {
		fmt.Fprintf(w, "Remembered runs: %.0f%% of the servers replaced, %.1f%% of the remembered paths shorter by up to %.0f ms\n", 100*rep.Churn, 100*rep.RouteChange, rep.RouteShorter)
	}
	fmt.Fprintf(w, "\nHeld out: found (%% of playable, worst city and seed), cities under %.1f%%, probes / oracle's: far cities median, p90, worst; near median, p90; near runs over conventional:\n", MinFound)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "set\tmodel\tstrategy\tcities\tworst found\tunder floor\tfar\tfar median\tfar p90\tfar worst\tnear median\tnear p90\tnear > conv\t")
	for _, r := range rep.Results {
		s := r.Summary
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t\n", r.Set, r.Model, r.Strategy, s.Cities, s.WorstFound, s.BelowFloor, s.Far, s.FarRatioMedian, s.FarRatioP90, s.FarRatioMax, s.NearRatio, s.NearRatioP90, s.NearOverConventional)
	}
	tw.Flush()
	for _, r := range rep.Results {
		if r.Strategy == SiteFloor {
			fmt.Fprintf(w, "%s %s %s: %d of %d cities see a country with a playable AS and an AS whose nearest server is %v or more away (a site of a whole country is not safe there)\n",
				r.Set, r.Model, r.Strategy, r.Summary.MixedCities, r.Summary.Cities, MixedFar)
		}
	}
	fmt.Fprintln(w, "\nCities under the floor, and why:")
	for _, r := range rep.Results {
		for _, c := range r.Cities {
			if c.FoundWorst >= MinFound {
				continue
			}
			var ms []string
			for _, m := range c.Misses {
				fig := ""
				if m.FigureMs != nil {
					fig = fmt.Sprintf(" %.0f-%.0f ms", m.FigureMs[0], m.FigureMs[1])
				}
				ms = append(ms, fmt.Sprintf("%s (%s) %d servers at %.0f-%.0f ms on %d seeds: %s%s", m.City, m.Country, m.Servers, m.TrueMs[0], m.TrueMs[1], m.Seeds, m.Why, fig))
			}
			fmt.Fprintf(w, "  %s %s %s, %s: %.1f%% on seed %d; %s\n", r.Set, r.Model, r.Strategy, c.Name, c.FoundWorst, c.WorstSeed, strings.Join(ms, "; "))
		}
	}
}
