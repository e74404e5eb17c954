package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/evaluate"
	"github.com/scout-discovery/scout/lab/mesh"
	"github.com/scout-discovery/scout/latency"
)

func init() {
	register(cli.Command{Name: "landmarks", Summary: "evaluate landmark RTT estimates on real all-pairs measurements (WonderProxy, RIPE Atlas)", Run: runLandmarks})
}

const landmarksAbout = `Masters measure their RTT to every server they verify; a client measures its
RTT to the masters. With K masters as landmarks, the client can bound and
estimate its RTT to every server before probing it. This command judges those
estimates on WonderProxy's real city-to-city mesh (246 cities, July 2020):
K cities become landmarks (--rule), every city is in turn a client and a
server site, and each estimate is compared with the RTT measured between the
two. It prints, per K: the estimators' errors, the triangle inequality's
violations, the stop rule's safety margin (fitted on half the clients,
checked on the other half), and the share of server sites each of the
paper's clients would probe before the stop rule (lower bound minus margin
past --threshold) lets it go. --ripe repeats the picture on RIPE Atlas's
country-to-country matrix, landmarks at the countries of the same cities.

The data is read from --data (the shared data folder beside the
repository); no RTT pair is shipped with scout.`

func runLandmarks(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("landmarks", "[flags]", landmarksAbout, stderr)
	data := fs.String("data", "../shared/data", "the folder holding WonderProxy's and RIPE Atlas's files")
	kmin := fs.Int("k", 1, "the fewest landmarks")
	kmax := fs.Int("k-max", 8, "the most landmarks")
	rule := fs.String("rule", "hubs", "where landmarks are: hubs (Frankfurt, New York, Tokyo, Sydney, Los Angeles, Singapore, Sao Paulo, London, in that order) or kcenter (greedy farthest-point by RTT)")
	drop := fs.Int("drop", 0, "landmarks the stop rule's lower bound leaves out (the largest differences)")
	repair := fs.Bool("repair", true, "clip each vector entry to the path through another landmark before bounding")
	keepClient := fs.Bool("keep-client", false, "with --repair: leave the client's own vector as measured (only the servers' are clipped)")
	threshold := fs.Float64("threshold", 200, "playable RTT, ms")
	quant := fs.Float64("margin-quantile", 0.999, "quantile of the fitting half's excess that sets the margin")
	ripe := fs.Bool("ripe", false, "also evaluate on RIPE Atlas's country matrix")
	rtt := fs.String("rtt", "", "only print the mesh's RTTs from a city to others, `FROM:TO,TO...` (WonderProxy names, e.g. Melbourne:LosAngeles,Chicago), and exit")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "scout-lab landmarks: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *kmin < 1 || *kmax < *kmin || *kmax > len(evaluate.HubCities) {
		fmt.Fprintf(stderr, "scout-lab landmarks: --k %d --k-max %d: want 1 <= k <= k-max <= %d\n", *kmin, *kmax, len(evaluate.HubCities))
		return 2
	}
	r := evaluate.Rule(*rule)
	if r != evaluate.Hubs && r != evaluate.KCenter {
		fmt.Fprintf(stderr, "scout-lab landmarks: --rule %q: hubs or kcenter\n", *rule)
		return 2
	}
	if *drop < 0 || *drop >= *kmax {
		fmt.Fprintf(stderr, "scout-lab landmarks: --drop %d: want 0 to k-max-1\n", *drop)
		return 2
	}
	if !(*threshold > 0) || !(*quant > 0 && *quant <= 1) {
		fmt.Fprintln(stderr, "scout-lab landmarks: --threshold must be positive and --margin-quantile in (0, 1]")
		return 2
	}
	m, err := mesh.LoadWonderProxy(*data)
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab landmarks: %v\n", err)
		return 1
	}
	if *rtt != "" {
		return printMeshRTTs(m, *rtt, stdout, stderr)
	}
	opt := evaluate.Options{Threshold: *threshold, MarginQuantile: *quant, Region: latency.Region, Drop: *drop, Repair: *repair, KeepClient: *keepClient}
	fmt.Fprintf(stdout, "WonderProxy mesh, %d cities; rule %s, repair %v, client kept %v, drop %d, threshold %.0f ms, margin at the %.4g quantile\n\n", m.Len(), r, *repair, *keepClient, *drop, *threshold, *quant)
	var results []*evaluate.Result
	for k := *kmin; k <= *kmax; k++ {
		if ctx.Err() != nil {
			return 1
		}
		res, err := evaluate.Run(m, k, r, opt)
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab landmarks: K=%d: %v\n", k, err)
			return 1
		}
		results = append(results, res)
	}
	printLandmarkResults(stdout, results)
	if *ripe {
		c, err := mesh.LoadRIPE(*data)
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab landmarks: %v\n", err)
			return 1
		}
		cm := evaluate.CountryMesh(c)
		copt := opt
		copt.Clients = []string{"AU", "JP", "CH", "DE"}
		fmt.Fprintf(stdout, "\nRIPE Atlas country matrix, %d countries; landmarks at the countries of the same cities\n\n", cm.Len())
		var cres []*evaluate.Result
		var prev []int
		for k := *kmin; k <= *kmax; k++ {
			lms, err := evaluate.Place(m, k, r)
			if err != nil {
				fmt.Fprintf(stderr, "scout-lab landmarks: %v\n", err)
				return 1
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
			res, err := evaluate.RunAt(cm, idx, copt)
			if err != nil {
				fmt.Fprintf(stderr, "scout-lab landmarks: RIPE K=%d: %v\n", k, err)
				return 1
			}
			cres = append(cres, res)
		}
		printLandmarkResults(stdout, cres)
	}
	return 0
}

// printMeshRTTs prints the mesh's RTT from one city to each of a list, as
// --rtt FROM:TO,TO... names them.
func printMeshRTTs(m *mesh.Mesh, spec string, stdout, stderr io.Writer) int {
	from, tos, ok := strings.Cut(spec, ":")
	i := m.Index(from)
	if !ok || i < 0 {
		fmt.Fprintf(stderr, "scout-lab landmarks: --rtt %q: want FROM:TO,TO... with WonderProxy city names\n", spec)
		return 2
	}
	for _, to := range strings.Split(tos, ",") {
		j := m.Index(to)
		if j < 0 {
			fmt.Fprintf(stderr, "scout-lab landmarks: --rtt: no city %q in the mesh\n", to)
			return 2
		}
		fmt.Fprintf(stdout, "%s -> %s: %.0f ms\n", m.Cities[i].Name, m.Cities[j].Name, m.RTT(i, j))
	}
	return 0
}

func printLandmarkResults(w io.Writer, results []*evaluate.Result) {
	fmt.Fprintln(w, "| K | landmarks | lower bound violated | excess p50 / p99 / max ms | upper violated | margin ms | held-out playable pairs missed |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range results {
		fmt.Fprintf(w, "| %d | %s | %.1f%% | %.0f / %.0f / %.0f | %.1f%% | %.0f | %d of %d |\n", r.K, strings.Join(r.Landmarks, " "),
			100*r.Low.Share, r.Low.P50, r.Low.P99, r.Low.Max, 100*r.High.Share, r.Margin, r.MissedHeldOut, r.PlayableHeld)
	}
	fmt.Fprintln(w, "\nEstimate error, |estimate - measured| median / p90 ms (median relative error), and the mean per-client rank correlation:")
	fmt.Fprintf(w, "\n| K |")
	for _, e := range evaluate.Estimators {
		fmt.Fprintf(w, " %s |", e)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(evaluate.Estimators)))
	for _, r := range results {
		fmt.Fprintf(w, "| %d |", r.K)
		for _, name := range evaluate.Estimators {
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
	fmt.Fprintf(w, "\nBy server region, K=%d, the %s estimate, |error| median / p90 ms:\n\n", last.K, evaluate.GNP)
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
