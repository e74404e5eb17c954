package evaluate

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/scout-discovery/scout/lab/mesh"
)

// Sweep runs the evaluation (Run) on m for every K from kmin to kmax,
// landmarks placed by rule.
func Sweep(ctx context.Context, m *mesh.Mesh, kmin, kmax int, rule Rule, opt Options) ([]*Result, error) {
	var results []*Result
	for k := kmin; k <= kmax; k++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, err := Run(m, k, rule, opt)
		if err != nil {
			return nil, fmt.Errorf("with K=%d: %w", k, err)
		}
		results = append(results, res)
	}
	return results, nil
}

// SweepCountries repeats Sweep on the country matrix cm (CountryMesh),
// the landmarks at the countries of the cities rule places on m, the
// paper's four clients' countries as clients; a K whose new city's
// country is a landmark already is left out.
func SweepCountries(ctx context.Context, m, cm *mesh.Mesh, kmin, kmax int, rule Rule, opt Options) ([]*Result, error) {
	opt.Clients = []string{"AU", "JP", "CH", "DE"}
	var results []*Result
	var prev []int
	for k := kmin; k <= kmax; k++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lms, err := Place(m, k, rule)
		if err != nil {
			return nil, err
		}
		var idx []int
		for _, l := range lms {
			if i := cm.Index(m.Cities[l].Country); i >= 0 && !slices.Contains(idx, i) {
				idx = append(idx, i)
			}
		}
		if slices.Equal(idx, prev) {
			continue // the new city's country is a landmark already
		}
		prev = idx
		res, err := RunAt(cm, idx, opt)
		if err != nil {
			return nil, fmt.Errorf("RIPE with K=%d: %w", k, err)
		}
		results = append(results, res)
	}
	return results, nil
}

// Print prints results (one per K) as the tables of scout-lab landmarks:
// the bounds' violations and margins, each estimator's error, the share of
// server sites each client probes before the stop rule lets go, and the
// error by server region at the largest K.
func Print(w io.Writer, results []*Result) {
	fmt.Fprintln(w, "| K | landmarks | lower bound violated | excess p50 / p99 / max ms | upper violated | margin ms | held-out playable pairs missed |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range results {
		fmt.Fprintf(w, "| %d | %s | %.1f%% | %.0f / %.0f / %.0f | %.1f%% | %.0f | %d of %d |\n", r.K, strings.Join(r.Landmarks, " "),
			100*r.Low.Share, r.Low.P50, r.Low.P99, r.Low.Max, 100*r.High.Share, r.Margin, r.MissedHeldOut, r.PlayableHeld)
	}
	fmt.Fprintln(w, "\nEstimate error, |estimate - measured| median / p90 ms (median relative error), and the mean per-client rank correlation:")
	fmt.Fprintf(w, "\n| K |")
	for _, e := range Estimators {
		fmt.Fprintf(w, " %s |", e)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(Estimators)))
	for _, r := range results {
		fmt.Fprintf(w, "| %d |", r.K)
		for _, name := range Estimators {
			e := r.Est[name]
			if e.N == 0 {
				fmt.Fprint(w, " - |")
				continue
			}
			fmt.Fprintf(w, " %.0f / %.0f (%.2f) rho %.2f |", e.MedAbs, e.P90Abs, e.MedRel, e.RankCorr)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "\nServer sites a client probes before the stop rule lets go (share of all sites), against the sites it finds playable (the oracle's share), and playable sites never probed:")
	fmt.Fprintln(w)
	if len(results) == 0 {
		return
	}
	fmt.Fprint(w, "| K |")
	for _, c := range results[0].Costs {
		fmt.Fprintf(w, " %s |", c.Client)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(results[0].Costs)))
	for _, r := range results {
		fmt.Fprintf(w, "| %d |", r.K)
		for _, c := range r.Costs {
			fmt.Fprintf(w, " %.1f%% (oracle %.1f%%, missed %d of %d) |", 100*c.Probed, 100*c.Oracle, c.Missed, c.Playable)
		}
		fmt.Fprintln(w)
	}
	last := results[len(results)-1]
	fmt.Fprintf(w, "\nBy server region, K=%d, the %s estimate, |error| median / p90 ms:\n\n", last.K, GNP)
	var regions []string
	for reg := range last.ByRegion {
		regions = append(regions, reg)
	}
	slices.Sort(regions)
	fmt.Fprintln(w, "| region | pairs | median | p90 | bias |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, reg := range regions {
		e := last.ByRegion[reg]
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %+.0f |\n", reg, e.N, e.MedAbs, e.P90Abs, e.Bias)
	}
}
