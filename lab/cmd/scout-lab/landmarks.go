package main

import (
	"context"
	"flag"
	"fmt"
	"io"
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
	stability := fs.Bool("stability", false, "only print how well the mesh's least RTTs repeat (each pair pinged both ways; the spread within an hour), and exit")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return cli.UsageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *kmin < 1 || *kmax < *kmin || *kmax > len(evaluate.HubCities) {
		return cli.UsageError(fs, "--k %d --k-max %d: want 1 <= k <= k-max <= %d", *kmin, *kmax, len(evaluate.HubCities))
	}
	r := evaluate.Rule(*rule)
	if r != evaluate.Hubs && r != evaluate.KCenter {
		return cli.UsageError(fs, "--rule %q: hubs or kcenter", *rule)
	}
	if *drop < 0 || *drop >= *kmax {
		return cli.UsageError(fs, "--drop %d: want 0 to k-max-1", *drop)
	}
	if !(*threshold > 0) || !(*quant > 0 && *quant <= 1) {
		return cli.UsageError(fs, "--threshold must be positive and --margin-quantile in (0, 1]")
	}
	m, err := mesh.LoadWonderProxy(*data)
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab landmarks: %v\n", err)
		return 1
	}
	if *rtt != "" {
		return printMeshRTTs(fs, m, *rtt, stdout)
	}
	if *stability {
		d, err := mesh.LoadWonderProxyDirections(*data)
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab landmarks: %v\n", err)
			return 1
		}
		evaluate.PrintStability(stdout, evaluate.PathStability(d, evaluate.WorstNodes))
		return 0
	}
	opt := evaluate.Options{Threshold: *threshold, MarginQuantile: *quant, Region: latency.Region, Drop: *drop, Repair: *repair, KeepClient: *keepClient}
	fmt.Fprintf(stdout, "WonderProxy mesh, %d cities; rule %s, repair %v, client kept %v, drop %d, threshold %.0f ms, margin at the %.4g quantile\n\n", m.Len(), r, *repair, *keepClient, *drop, *threshold, *quant)
	results, err := evaluate.Sweep(ctx, m, *kmin, *kmax, r, opt)
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab landmarks: %v\n", err)
		return 1
	}
	evaluate.Print(stdout, results)
	if *ripe {
		c, err := mesh.LoadRIPE(*data)
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab landmarks: %v\n", err)
			return 1
		}
		cm := evaluate.CountryMesh(c)
		fmt.Fprintf(stdout, "\nRIPE Atlas country matrix, %d countries; landmarks at the countries of the same cities\n\n", cm.Len())
		cres, err := evaluate.SweepCountries(ctx, m, cm, *kmin, *kmax, r, opt)
		if err != nil {
			fmt.Fprintf(stderr, "scout-lab landmarks: %v\n", err)
			return 1
		}
		evaluate.Print(stdout, cres)
	}
	return 0
}

// printMeshRTTs prints the mesh's RTT from one city to each of a list, as
// --rtt FROM:TO,TO... names them.
func printMeshRTTs(fs *flag.FlagSet, m *mesh.Mesh, spec string, stdout io.Writer) int {
	from, tos, ok := strings.Cut(spec, ":")
	i := m.Index(from)
	if !ok || i < 0 {
		return cli.UsageError(fs, "--rtt %q: want FROM:TO,TO... with WonderProxy city names", spec)
	}
	for _, to := range strings.Split(tos, ",") {
		j := m.Index(to)
		if j < 0 {
			return cli.UsageError(fs, "--rtt: no city %q in the mesh", to)
		}
		fmt.Fprintf(stdout, "%s -> %s: %.0f ms\n", m.Cities[i].Name, m.Cities[j].Name, m.RTT(i, j))
	}
	return 0
}
