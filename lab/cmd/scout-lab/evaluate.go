package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/cityeval"
	"github.com/scout-discovery/scout/lab/mesh"
	"github.com/scout-discovery/scout/lab/population"
)

func init() {
	register(cli.Command{Name: "evaluate", Summary: "evaluate the discovery strategies with every WonderProxy city as a client, fitted on some cities, reported on others", Run: runEvaluate})
}

const evaluateAbout = `Every WonderProxy city is in turn a client (with --access of access delay)
of simulated worlds whose city-to-city RTTs are WonderProxy's measured mesh
(--mesh DIR; without it the fitted latency model's, which needs no data),
in two models of the servers' own delays: shared (the same for every
requester) and per-path (drawn per requester). The strategies are
conventional discovery, Armitage's planner with scout's constants
(adaptive-scout), the landmark order as it was (landmarks-bound: the bound
with its margin fitted on the mesh, siblings), the defaults: scout+groups
(no landmark masters) and landmarks (the site check and group probing),
and their remembered runs (a second run of the same world, with --churn of
the servers replaced and --route-change of the remembered paths shorter by
up to --route-shorter ms, using the first run's memory), and the oracle.
A row "oracle + sites" adds to the oracle's probes one per (country, AS)
site with no playable server: the least a first run can probe that never
rules a site out without measuring it.

The tuned constants (group probing's margin, the site check's margin and
whether every server goes through it) are fitted on the fit cities and
--fit-seeds over a grid: the cheapest candidate whose default strategies
find at least 99.5% of the playable servers on every fit city and seed in
both models; the figures are then reported on the other cities and
--seeds. The fit cities are the even-indexed WonderProxy cities and the
cities examined while designing (cityeval.Examined); --no-fit reports the
product's constants instead. --paper adds the paper's six clients as a row.

Per client city: the share of playable servers found on the worst seed,
probes against the oracle's (median and worst over the seeds), and the
server cities behind any misses with why. --json prints the whole report.`

func runEvaluate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("evaluate", "[flags]", evaluateAbout, stderr)
	dir := fs.String("mesh", "", "WonderProxy's mesh in `DIR` (../shared/data; not shipped); empty: the fitted latency model")
	game := fs.String("game", "et", "the worlds' game: et or css")
	servers := fs.Int("servers", 0, "servers per world (0: 2800 for et, 22000 for css)")
	access := fs.Duration("access", 20*time.Millisecond, "every city client's access delay")
	k := fs.Int("landmarks", 8, "hub landmarks (1 to 8)")
	fitSeeds := fs.String("fit-seeds", "1-3", "seeds the constants are fitted on, `A-B` or a list")
	seeds := fs.String("seeds", "101-105", "seeds the figures are reported on, `A-B` or a list")
	cities := fs.String("cities", "", "report only these cities (comma-separated WonderProxy names, or fit: the fit set); default: every city not in the fit set")
	models := fs.String("models", "shared,per-path", "server delay models: shared, per-path")
	noFit := fs.Bool("no-fit", false, "report the product's constants, no fit")
	paper := fs.Bool("paper", false, "add the paper's six clients (AU-ET, JP-ET, CH-ET, AU-CSS, JP-CSS, DE-CSS) as a row")
	churn := fs.Float64("churn", 0, "share of servers replaced before a remembered run (0 to 1)")
	route := fs.Float64("route-change", 0, "share of remembered groups whose path is shorter before a remembered run (0 to 1)")
	shorter := fs.Float64("route-shorter", 80, "how much shorter, up to (ms)")
	workers := fs.Int("workers", 0, "cities simulated at once (0: GOMAXPROCS)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "scout-lab evaluate: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg := cityeval.Config{Game: population.Game(strings.ToLower(*game)), Servers: *servers, Access: *access, Landmarks: *k,
		BoundMargin: math.NaN(), Paper: *paper, Churn: *churn, RouteChange: *route, RouteShorter: *shorter, Workers: *workers}
	if cfg.Game != population.ET && cfg.Game != population.CSS {
		fmt.Fprintf(stderr, "scout-lab evaluate: --game %q: et or css\n", *game)
		return 2
	}
	if *servers < 0 || *servers > population.MaxServers || *access < 0 {
		fmt.Fprintf(stderr, "scout-lab evaluate: --servers 0 to %d and --access >= 0\n", population.MaxServers)
		return 2
	}
	var err error
	if cfg.FitSeeds, err = cityeval.ParseSeeds(*fitSeeds); err != nil {
		fmt.Fprintf(stderr, "scout-lab evaluate: --fit-seeds: %v\n", err)
		return 2
	}
	if cfg.ReportSeeds, err = cityeval.ParseSeeds(*seeds); err != nil {
		fmt.Fprintf(stderr, "scout-lab evaluate: --seeds: %v\n", err)
		return 2
	}
	if cfg.Models, err = cityeval.ParseModels(*models); err != nil {
		fmt.Fprintf(stderr, "scout-lab evaluate: --models: %v\n", err)
		return 2
	}
	if cfg.FitCities, cfg.ReportCities, err = cityeval.FitAndReport(*cities); err != nil {
		fmt.Fprintf(stderr, "scout-lab evaluate: --cities: %v\n", err)
		return 2
	}
	if !*noFit {
		cfg.Grid = cityeval.DefaultGrid()
	}
	if *dir != "" {
		if cfg.Mesh, err = mesh.LoadWonderProxy(*dir); err != nil {
			fmt.Fprintf(stderr, "scout-lab evaluate: %v\n", err)
			return 1
		}
	}
	rep, err := cityeval.Run(ctx, cfg)
	if rep != nil && *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		err = errors.Join(err, enc.Encode(rep))
	} else if rep != nil {
		cityeval.Print(stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab evaluate: %v\n", err)
		return 1
	}
	return 0
}
