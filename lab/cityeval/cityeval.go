// Package cityeval evaluates discovery strategies with every WonderProxy
// city as a client, in the simulator (package sim), so that no figure
// rests on the few clients a strategy was tuned on: the constants are
// fitted on one set of client cities and seeds and reported on another
// (client cities held out, not only seeds), in worlds whose servers' own
// delays are the same for every requester and in worlds where they are
// drawn per requester, with the paper's six clients kept as a row. Per
// client city it reports the playable servers found on its worst seed,
// the probes against the oracle's (median and worst) and what the misses
// were. The command is scout-lab evaluate; EVALUATION.md has the figures.
//
// A lab package: it builds worlds and runs strategies in virtual time; the
// strategies are the product's (adaptive, landmark).
package cityeval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/lab/evaluate"
	"github.com/scout-discovery/scout/lab/mesh"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/sim"
	"github.com/scout-discovery/scout/landmark"
	"github.com/scout-discovery/scout/latency"
	"github.com/scout-discovery/scout/rttcache"
)

// Strategy names, as the report gives them.
const (
	Conventional  = "conventional"    // every server in the master's order
	AdaptiveScout = "adaptive-scout"  // Armitage's planner with scout's constants, as before group probing
	BoundOnly     = "landmarks-bound" // the landmark order before the site check: the bound and its fitted margin, siblings
	ScoutGroups   = "scout+groups"    // the default without landmark masters: adaptive-scout with group probing
	Landmarks     = "landmarks"       // --order landmarks, and the default with landmark masters: site check and group probing
	// SiteFloor is not a strategy but a bound on the first runs of the
	// safe ones: the oracle's probes plus one for every (country, AS)
	// site with no playable server. A rule that never rules a site out
	// without measuring it probes at least that many. Its cities also
	// count the countries that make a coarser site unsafe (City.Mixed).
	SiteFloor = "oracle + sites"
	// Remembered is the suffix of a strategy's second run: the same
	// world later (new queueing delays and lost servers, Config.Churn's
	// servers changed), with the client's memory of the first run.
	Remembered = ", remembered"
)

// Model is how the servers' own delays (their AS's and /16's) are drawn.
type Model string

const (
	// Shared draws them once per server: every requester, the client and
	// each landmark, sees the same (population.MeshLatency).
	Shared Model = "shared"
	// PerPath draws them per requester: parts of the client's path no
	// landmark sees (MeshLatency.PerPath).
	PerPath Model = "per-path"
)

// Params are the tuned constants of the product's strategies.
type Params struct {
	GroupMargin float64 `json:"group_margin_ms"` // adaptive.GroupParams.Margin
	Drift       float64 `json:"drift_ms"`        // adaptive.GroupParams.Drift
	SiteMargin  float64 `json:"site_margin_ms"`  // landmark.SiteCheck.Margin
	SiteSpread  float64 `json:"site_spread_ms"`  // landmark.SiteCheck.Spread
	SiteAll     bool    `json:"site_all"`        // landmark.SiteCheck.All
}

// ProductParams returns the constants the product uses
// (adaptive.DefaultGroups, landmark.DefaultSites).
func ProductParams() Params {
	g, s := adaptive.DefaultGroups(), landmark.DefaultSites()
	return Params{GroupMargin: ms(g.Margin), Drift: ms(g.Drift), SiteMargin: s.Margin, SiteSpread: s.Spread, SiteAll: s.All}
}

func (p Params) groups() adaptive.GroupParams {
	return adaptive.GroupParams{Threshold: Playable, Margin: dur(p.GroupMargin), Drift: dur(p.Drift)}
}

func (p Params) sites() *landmark.SiteCheck {
	return &landmark.SiteCheck{Margin: p.SiteMargin, Spread: p.SiteSpread, All: p.SiteAll}
}

// Playable is the largest playable RTT.
const Playable = 200 * time.Millisecond

// MinFound is the found-rate floor (%): every client city, every seed.
const MinFound = 99.5

// FarRTT and FarShare define a far client: more than FarShare of the
// servers over FarRTT away.
const (
	FarRTT   = 150 * time.Millisecond
	FarShare = 0.5
)

// Config says what to evaluate.
type Config struct {
	// Mesh is WonderProxy's measured matrix for the city-to-city part of
	// every RTT; nil takes the fitted latency model's (latency.CityRTT,
	// no residual), which needs no data.
	Mesh    *mesh.Mesh
	Game    population.Game
	Servers int // 0: the paper's size for the game
	// Access is every city client's access delay (a consumer line); the
	// paper's six clients keep theirs (population.Places).
	Access time.Duration
	// Landmarks is how many hub landmarks (evaluate.HubCities) the
	// landmark strategies have.
	Landmarks int
	// BoundMargin is landmarks-bound's margin (ms); NaN fits it on the
	// mesh's fit cities at the 0.995 quantile (evaluate.StopMargin), 0
	// without a mesh.
	BoundMargin float64
	FitCities   []latency.City
	FitSeeds    []uint64
	// ReportCities and ReportSeeds are the held-out ones the figures are
	// reported on.
	ReportCities []latency.City
	ReportSeeds  []uint64
	Models       []Model
	// Grid are the candidate constants; the cheapest whose strategies find
	// at least MinFound on every fit city and seed in every model is
	// reported. Empty: ProductParams, not fitted.
	Grid []Params
	// Paper adds the paper's six clients (AU-ET, JP-ET, CH-ET, AU-CSS,
	// JP-CSS, DE-CSS) at the report seeds.
	Paper bool
	// Churn is the share of servers replaced before a remembered run.
	Churn float64
	// RouteChange is the share of remembered groups whose path became up
	// to RouteShorter ms shorter before a remembered run.
	RouteChange  float64
	RouteShorter float64
	// Workers run cities in parallel (0: GOMAXPROCS).
	Workers int
}

// Split returns the fit and report sets of the WonderProxy cities: the
// fit set is the even-indexed cities (as the landmark margin's fit uses)
// and the cities named in seen; the report set is the rest.
func Split(cities []latency.City, seen ...string) (fit, report []latency.City) {
	for i, c := range cities {
		if i%2 == 0 || slices.Contains(seen, c.Name) {
			fit = append(fit, c)
		} else {
			report = append(report, c)
		}
	}
	return fit, report
}

// Examined are the cities looked at while the group probing and the site
// check were designed (the far clients and the paper's): they are
// fit cities whatever their index.
var Examined = []string{"Melbourne", "Tokyo", "Zurich", "Frankfurt", "Seoul", "Johannesburg", "Santiago", "Lagos", "Dubai", "Perth"}

// DefaultGrid are the candidates scout-lab evaluate fits over.
func DefaultGrid() []Params {
	var out []Params
	for _, all := range []bool{true, false} {
		for _, sm := range []float64{20, 30, 40} {
			for _, gm := range []float64{20, 30} {
				out = append(out, Params{GroupMargin: gm, Drift: 2, SiteMargin: sm, SiteSpread: 30, SiteAll: all})
			}
		}
	}
	return out
}

// Report is the evaluation's result: scout-lab evaluate --json.
type Report struct {
	Game         string    `json:"game"`
	Servers      int       `json:"servers"`
	Latency      string    `json:"latency"` // "wonderproxy-mesh" or "model"
	AccessMs     float64   `json:"access_ms"`
	Landmarks    []string  `json:"landmarks"`
	BoundMargin  float64   `json:"bound_margin_ms"`
	Churn        float64   `json:"churn"`
	RouteChange  float64   `json:"route_change"`
	RouteShorter float64   `json:"route_shorter_ms"`
	Fit          Fit       `json:"fit"`
	Params       Params    `json:"params"`  // fitted (or the product's, not fitted)
	Product      Params    `json:"product"` // the product's constants
	Results      []Results `json:"results"`
}

// Fit is what was fitted on what.
type Fit struct {
	Cities []string  `json:"cities"`
	Seeds  []uint64  `json:"seeds"`
	Models []Model   `json:"models"`
	Grid   []GridRow `json:"grid"`
}

// GridRow is one candidate on the fit set.
type GridRow struct {
	Params Params `json:"params"`
	// Safe: both default strategies (ScoutGroups, Landmarks) and their
	// remembered runs found at least MinFound on every fit city and seed
	// in every model.
	Safe       bool    `json:"safe"`
	WorstFound float64 `json:"worst_found_pct"`
	// FarRatio is Landmarks' median over the far fit cities of their
	// median probes / the oracle's (the cost the fit minimises).
	FarRatio  float64 `json:"far_ratio_median"`
	NearRatio float64 `json:"near_ratio_median"`
}

// Results are one strategy's figures in one model on one set of clients.
type Results struct {
	Strategy string   `json:"strategy"`
	Model    Model    `json:"model"`
	Set      string   `json:"set"` // "report" (held-out cities) or "paper" (the six clients)
	Seeds    []uint64 `json:"seeds"`
	Summary  Summary  `json:"summary"`
	Cities   []City   `json:"cities"`
}

// Summary sums up Results.
type Summary struct {
	Cities     int     `json:"cities"`
	BelowFloor int     `json:"below_floor"` // cities with a seed found < MinFound
	WorstFound float64 `json:"worst_found_pct"`
	Far        int     `json:"far_cities"`
	// FarRatio* are over the far cities: the median and 90th percentile
	// of their median probes / the oracle's, and the largest worst.
	FarRatioMedian float64 `json:"far_ratio_median"`
	FarRatioP90    float64 `json:"far_ratio_p90"`
	FarRatioMax    float64 `json:"far_ratio_max"`
	// NearRatio and NearRatioP90 are the same over the near cities.
	NearRatio    float64 `json:"near_ratio_median"`
	NearRatioP90 float64 `json:"near_ratio_p90"`
	// NearOverConventional counts the near (city, seed) runs that probed
	// more than conventional discovery.
	NearOverConventional int `json:"near_over_conventional"`
	// MixedCities counts the cities with City.Mixed (SiteFloor only).
	MixedCities int `json:"mixed_cities,omitempty"`
}

// City is one client city's figures over the seeds.
type City struct {
	Name     string  `json:"city"`
	Country  string  `json:"country"`
	Far      bool    `json:"far"`
	FarShare float64 `json:"far_share"` // servers over FarRTT, median over seeds
	Playable int     `json:"playable"`  // median over seeds
	// FoundWorst is the lowest share of playable servers found (%), on
	// WorstSeed.
	FoundWorst float64 `json:"found_worst_pct"`
	WorstSeed  uint64  `json:"worst_seed"`
	// RatioMedian and RatioWorst are probes / the oracle's over the seeds.
	RatioMedian float64 `json:"ratio_median"`
	RatioWorst  float64 `json:"ratio_worst"`
	// OverConventional counts the seeds with more probes than conventional.
	OverConventional int    `json:"over_conventional,omitempty"`
	Misses           []Miss `json:"misses,omitempty"`
	// Mixed (SiteFloor only) is the most countries, over the seeds, that
	// hold an AS with a playable server and an AS whose nearest server is
	// MixedFar or more away: a site of a whole country, ruled out through
	// a representative of the far AS, would lose the playable one.
	Mixed int `json:"mixed_countries,omitempty"`
}

// MixedFar is the RTT at which a site check's first representative rules
// its site out: the threshold and twice the product's site margin.
const MixedFar = 240 * time.Millisecond

// Miss is a server city whose playable servers a strategy did not find,
// summed over the seeds.
type Miss struct {
	City    string `json:"server_city"`
	Country string `json:"country"`
	Servers int    `json:"servers"`
	Seeds   int    `json:"seeds"`
	Why     string `json:"why"`
	// TrueMs is the range of the missed servers' RTTs from the client;
	// FigureMs the range of the figure that ruled them out (the lower
	// bound, the site's or the group's least sample), when there is one.
	TrueMs   [2]float64  `json:"true_ms"`
	FigureMs *[2]float64 `json:"figure_ms,omitempty"`
}

// Why a playable server was missed.
const (
	WhyBound    = "left out by the bound (figure: its lower bound)"
	WhySite     = "its site was ruled out (figure: the representatives' least RTT)"
	WhyGroup    = "skipped with its group (figure: the group's least sample)"
	WhySibling  = "skipped: siblings predicted it unplayable"
	WhyStop     = "not reached before the stop"
	WhyLate     = "answered after the stop"
	WhyNoAnswer = "probed, no answer"
)

// ErrConfig is wrapped by Run's error for a Config it refuses.
var ErrConfig = errors.New("cityeval: invalid config")

// Run evaluates cfg.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Servers == 0 {
		cfg.Servers = paperSize(cfg.Game)
	}
	if cfg.Landmarks < 1 || cfg.Landmarks > len(evaluate.HubCities) || len(cfg.ReportCities) == 0 || len(cfg.ReportSeeds) == 0 || len(cfg.Models) == 0 ||
		!(cfg.Churn >= 0 && cfg.Churn <= 1) || !(cfg.RouteChange >= 0 && cfg.RouteChange <= 1) || !(cfg.RouteShorter >= 0) {
		return nil, fmt.Errorf("%w: landmarks %d (1 to %d), %d report cities, %d report seeds, %d models, churn %v, route change %v by %v ms",
			ErrConfig, cfg.Landmarks, len(evaluate.HubCities), len(cfg.ReportCities), len(cfg.ReportSeeds), len(cfg.Models), cfg.Churn, cfg.RouteChange, cfg.RouteShorter)
	}
	if len(cfg.Grid) > 1 && (len(cfg.FitCities) == 0 || len(cfg.FitSeeds) == 0) {
		return nil, fmt.Errorf("%w: a grid needs fit cities and seeds", ErrConfig)
	}
	e, err := newEvaluator(cfg)
	if err != nil {
		return nil, err
	}
	rep := &Report{Game: string(cfg.Game), Servers: cfg.Servers, Latency: "model", AccessMs: ms(cfg.Access), BoundMargin: e.boundMargin,
		Churn: cfg.Churn, RouteChange: cfg.RouteChange, RouteShorter: cfg.RouteShorter, Product: ProductParams()}
	if cfg.Mesh != nil {
		rep.Latency = "wonderproxy-mesh"
	}
	for _, c := range e.lms {
		rep.Landmarks = append(rep.Landmarks, c.Name)
	}
	rep.Params = rep.Product
	rep.Fit = Fit{Seeds: cfg.FitSeeds, Models: cfg.Models}
	for _, c := range cfg.FitCities {
		rep.Fit.Cities = append(rep.Fit.Cities, c.Name)
	}
	if len(cfg.Grid) > 0 {
		best := -1
		for _, p := range cfg.Grid {
			row, err := e.fitRow(ctx, p)
			if err != nil {
				return nil, err
			}
			rep.Fit.Grid = append(rep.Fit.Grid, row)
			if row.Safe && (best < 0 || row.FarRatio < rep.Fit.Grid[best].FarRatio) {
				best = len(rep.Fit.Grid) - 1
			}
		}
		if best < 0 {
			return rep, fmt.Errorf("cityeval: no candidate of the grid found %.1f%% on every fit city and seed", MinFound)
		}
		rep.Params = rep.Fit.Grid[best].Params
	}
	strategies := []string{Conventional, AdaptiveScout, BoundOnly, ScoutGroups, Landmarks, SiteFloor, ScoutGroups + Remembered, Landmarks + Remembered}
	for _, m := range cfg.Models {
		outs, err := e.runSet(ctx, m, clients(cfg.ReportCities, cfg.Access), cfg.ReportSeeds, rep.Params, strategies, true)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, collect(outs, strategies, m, "report", cfg.ReportSeeds)...)
	}
	if cfg.Paper {
		for _, m := range cfg.Models {
			outs, err := e.runPaper(ctx, m, rep.Params, strategies)
			if err != nil {
				return nil, err
			}
			rep.Results = append(rep.Results, collect(outs, strategies, m, "paper", cfg.ReportSeeds)...)
		}
	}
	return rep, nil
}

// client is a client place and the name its figures go under.
type client struct {
	name  string
	place population.Place
	game  population.Game // "" is Config.Game
}

func clients(cs []latency.City, access time.Duration) []client {
	out := make([]client, len(cs))
	for i, c := range cs {
		out[i] = client{name: c.Name, place: population.Place{Name: c.Name, City: c, Access: access}}
	}
	return out
}

// outcome is one strategy's run for one client and seed.
type outcome struct {
	client, country string
	seed            uint64
	found           float64 // %
	probes, oracle  int
	conv            int
	playable        int
	farShare        float64
	mixed           int // SiteFloor: City.Mixed's count for this seed
	misses          []missed
	strategy        string
}

type missed struct {
	city, country, why string
	rtt, figure        float64 // ms; figure NaN when none
}

type evaluator struct {
	cfg         Config
	ml          func(Model) population.MeshLatency
	lms         []latency.City
	boundMargin float64
	worlds      sync.Map // worldKey -> *population.World
}

type worldKey struct {
	game population.Game
	n    int
	seed uint64
}

func newEvaluator(cfg Config) (*evaluator, error) {
	e := &evaluator{cfg: cfg}
	cityMesh := func(a, b latency.City) (float64, bool) { return 0, false }
	if cfg.Mesh != nil {
		cityMesh = cfg.Mesh.ByCity()
	}
	e.ml = func(m Model) population.MeshLatency {
		return population.MeshLatency{Mesh: cityMesh, PerPath: m == PerPath}
	}
	lms, err := Named(strings.Join(evaluate.HubCities[:cfg.Landmarks], ","))
	if err != nil {
		return nil, fmt.Errorf("cityeval: landmark cities: %w", err)
	}
	e.lms = lms
	e.boundMargin = cfg.BoundMargin
	if math.IsNaN(e.boundMargin) {
		e.boundMargin = 0
		if cfg.Mesh != nil {
			lms, err := evaluate.Place(cfg.Mesh, cfg.Landmarks, evaluate.Hubs)
			if err != nil {
				return nil, err
			}
			if e.boundMargin, err = evaluate.StopMargin(cfg.Mesh, lms, evaluate.Options{MarginQuantile: 0.995, Repair: true}); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

func (e *evaluator) world(g population.Game, n int, seed uint64) (*population.World, error) {
	// Built once per key, however many workers ask for it at once.
	build, _ := e.worlds.LoadOrStore(worldKey{g, n, seed}, sync.OnceValues(func() (*population.World, error) {
		return population.Build(population.FittedVantage(g, n, seed))
	}))
	return build.(func() (*population.World, error))()
}

// fitRow runs the two default strategies with p on the fit set.
func (e *evaluator) fitRow(ctx context.Context, p Params) (GridRow, error) {
	row := GridRow{Params: p, Safe: true, WorstFound: 100}
	strategies := []string{ScoutGroups, Landmarks, ScoutGroups + Remembered, Landmarks + Remembered}
	var far, near []float64
	for _, m := range e.cfg.Models {
		outs, err := e.runSet(ctx, m, clients(e.cfg.FitCities, e.cfg.Access), e.cfg.FitSeeds, p, strategies, false)
		if err != nil {
			return row, err
		}
		for _, r := range collect(outs, strategies, m, "fit", e.cfg.FitSeeds) {
			row.WorstFound = min(row.WorstFound, r.Summary.WorstFound)
			if r.Summary.BelowFloor > 0 {
				row.Safe = false
			}
			if r.Strategy != Landmarks {
				continue
			}
			for _, c := range r.Cities {
				if c.Far {
					far = append(far, c.RatioMedian)
				} else {
					near = append(near, c.RatioMedian)
				}
			}
		}
	}
	row.FarRatio, row.NearRatio = median(far), median(near)
	return row, nil
}

// runSet runs strategies for every client and seed in model m.
func (e *evaluator) runSet(ctx context.Context, m Model, cs []client, seeds []uint64, p Params, strategies []string, explain bool) ([]outcome, error) {
	type job struct {
		c    client
		seed uint64
	}
	var jobs []job
	for _, s := range seeds {
		for _, c := range cs {
			jobs = append(jobs, job{c, s})
		}
	}
	workers := e.cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var (
		mu    sync.Mutex
		outs  []outcome
		first error
		wg    sync.WaitGroup
		next  = make(chan job)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				g := cmp.Or(j.c.game, e.cfg.Game)
				n := e.cfg.Servers
				if j.c.game != "" {
					n = paperSize(g)
				}
				o, err := e.runClient(m, g, n, j.c, j.seed, p, strategies, explain)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				outs = append(outs, o...)
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- j
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return outs, first
}

func paperSize(g population.Game) int {
	if g == population.CSS {
		return population.SizeCSS
	}
	return population.SizeET
}

// runPaper runs the paper's six clients.
func (e *evaluator) runPaper(ctx context.Context, m Model, p Params, strategies []string) ([]outcome, error) {
	pl := population.Places()
	var cs []client
	for _, r := range []struct {
		place string
		game  population.Game
	}{{"AU", population.ET}, {"JP", population.ET}, {"CH", population.ET}, {"AU", population.CSS}, {"JP", population.CSS}, {"DE", population.CSS}} {
		cs = append(cs, client{name: r.place + "-" + map[population.Game]string{population.ET: "ET", population.CSS: "CSS"}[r.game], place: pl[r.place], game: r.game})
	}
	return e.runSet(ctx, m, cs, e.cfg.ReportSeeds, p, strategies, true)
}

// run is one world seen from one client: what every strategy needs.
type run struct {
	w       *population.World
	targets []adaptive.Target
	rtts    []time.Duration
	in      sim.Input
	vs      []landmark.Vector
	client  landmark.Vector
	lm      [][]float64
	height  float64
}

func (e *evaluator) newRun(w *population.World, ml population.MeshLatency, place population.Place, g population.Game, seed uint64) run {
	r := run{w: w}
	r.targets = make([]adaptive.Target, len(w.Servers))
	for i, s := range w.Servers {
		r.targets[i] = adaptive.Target{Addr: s.Addr, Country: s.Country, ASN: s.ASN, Index: i}
	}
	r.rtts, _ = w.MeshRTTs(ml, place)
	r.in = sim.Input{Targets: r.targets, RTTs: r.rtts, Pacing: sim.PacingFor(g, len(w.Servers)), Seed: seed ^ 0x9e3779b97f4a7c15, Playable: Playable}
	r.vs, r.client, r.lm = sim.LandmarkVectors(w, ml, place, e.lms, seed)
	r.height = ms(place.Access)
	return r
}

// oracle runs the oracle on r: exactly its playable servers, the floor
// every strategy's probes are counted against.
func (r run) oracle() (*sim.Result, error) {
	orc, err := adaptive.NewOracle(r.targets, func(t adaptive.Target) (time.Duration, bool) { return r.rtts[t.Index], true }, Playable)
	if err != nil {
		return nil, err
	}
	return sim.Run(orc, r.in)
}

// site is a (country, AS) site, the site check's unit before its
// landmark vectors split it.
type site struct {
	country string
	asn     uint32
}

// nearestBySite returns each site's nearest server's RTT from r's client.
func (r run) nearestBySite() map[site]time.Duration {
	nearest := map[site]time.Duration{}
	for i, t := range r.targets {
		k := site{t.Country, t.ASN}
		if d, ok := nearest[k]; !ok || r.rtts[i] < d {
			nearest[k] = r.rtts[i]
		}
	}
	return nearest
}

// unplayableSites counts the (country, AS) sites none of whose servers is
// playable from r's client.
func (r run) unplayableSites() int {
	n := 0
	for _, d := range r.nearestBySite() {
		if d >= Playable {
			n++
		}
	}
	return n
}

// mixedCountries counts the countries holding an AS with a playable server
// and an AS whose nearest server is MixedFar or more away from r's client.
func (r run) mixedCountries() int {
	near, far := map[string]bool{}, map[string]bool{}
	for k, d := range r.nearestBySite() {
		near[k.country] = near[k.country] || d < Playable
		far[k.country] = far[k.country] || d >= MixedFar
	}
	n := 0
	for c := range near {
		if near[c] && far[c] {
			n++
		}
	}
	return n
}

func (r run) planInput(remembered []float64, known []bool) landmark.PlanInput {
	return landmark.PlanInput{Targets: r.targets, Vectors: r.vs, Client: r.client, Landmarks: r.lm, ClientHeight: r.height, Remembered: remembered, Known: known}
}

// runClient runs every strategy for one client and seed.
func (e *evaluator) runClient(m Model, g population.Game, n int, c client, seed uint64, p Params, strategies []string, explain bool) ([]outcome, error) {
	w, err := e.world(g, n, seed)
	if err != nil {
		return nil, err
	}
	ml := e.ml(m)
	r := e.newRun(w, ml, c.place, g, seed)
	base := outcome{client: c.name, country: c.place.City.Country, seed: seed}
	for _, d := range r.rtts {
		if d > FarRTT {
			base.farShare++
		}
	}
	base.farShare /= float64(max(len(r.rtts), 1))
	ores, err := r.oracle()
	if err != nil {
		return nil, err
	}
	base.oracle, base.playable = ores.Sent, ores.Playable
	conv := len(r.targets)
	base.conv = conv
	var out []outcome
	memo := map[string]*sim.Result{} // first runs, for the remembered ones
	var (
		later       *run        // the world of the remembered runs, made once
		laterOracle *sim.Result // and its oracle
	)
	for _, name := range strategies {
		o := base
		o.strategy = name
		if name == SiteFloor {
			o.probes, o.found = o.oracle+r.unplayableSites(), 100
			o.mixed = r.mixedCountries()
			out = append(out, o)
			continue
		}
		var (
			st  adaptive.Strategy
			res *sim.Result
			rr  = r
		)
		first, remembered := strings.CutSuffix(name, Remembered)
		var (
			prior map[netip.Prefix]adaptive.Prior
			known map[netip.Prefix]bool
		)
		if remembered {
			fr := memo[first]
			if fr == nil {
				return nil, fmt.Errorf("cityeval: %s needs %s run first", name, first)
			}
			prior, known = e.remember(r.targets, fr, seed)
			if later == nil {
				lr := r
				if e.cfg.Churn > 0 {
					w2, err := w.Churned(e.cfg.Churn, seed^0x5eed)
					if err != nil {
						return nil, err
					}
					lr = e.newRun(w2, ml, c.place, g, seed)
				}
				lr.in.Seed ^= 0x77 // later: other queueing delays, other servers gone
				if laterOracle, err = lr.oracle(); err != nil {
					return nil, err
				}
				later = &lr
			}
			rr = *later
			o.oracle, o.playable, o.conv = laterOracle.Sent, laterOracle.Playable, len(rr.targets)
		}
		st, err = e.strategy(first, rr, p, seed, prior, known)
		if err != nil {
			return nil, fmt.Errorf("cityeval: %s: %w", name, err)
		}
		if res, err = sim.Run(st, rr.in); err != nil {
			return nil, err
		}
		if !remembered {
			memo[name] = res
		}
		o.probes = res.Sent
		if res.Stopped {
			o.probes = res.StopSent
		}
		o.found = 100
		if res.Playable > 0 {
			o.found = 100 * float64(res.Found) / float64(res.Playable)
		}
		if explain && res.Found < res.Playable {
			o.misses = explainMisses(rr, st, res)
		}
		out = append(out, o)
	}
	return out, nil
}

// strategy builds the named first-run strategy for rr.
func (e *evaluator) strategy(name string, rr run, p Params, seed uint64, prior map[netip.Prefix]adaptive.Prior, known map[netip.Prefix]bool) (adaptive.Strategy, error) {
	rng := rand.New(rand.NewPCG(seed, discover.AdaptiveSeedStream))
	switch name {
	case Conventional:
		return adaptive.NewConventional(rr.targets)
	case AdaptiveScout:
		return adaptive.New(rr.targets, adaptive.Scout(), rng)
	case BoundOnly:
		lp := landmark.DefaultPlanParams()
		lp.Margin = e.boundMargin
		sib := landmark.DefaultSiblings()
		lp.Siblings = &sib
		return landmark.NewPlanner(rr.planInput(nil, nil), lp, rng)
	case ScoutGroups:
		in, err := adaptive.New(rr.targets, adaptive.Scout(), rng)
		if err != nil {
			return nil, err
		}
		return adaptive.NewGrouped(in, rr.targets, p.groups(), prior)
	case Landmarks:
		lp := landmark.DefaultPlanParams()
		lp.Margin = e.boundMargin
		lp.Sites = p.sites()
		in, err := landmark.NewPlanner(rr.planInput(discover.Remembered(rr.targets, prior), discover.KnownTargets(rr.targets, known)), lp, rng)
		if err != nil {
			return nil, err
		}
		gp := p.groups()
		gp.Within = discover.VectorGroups(rr.vs)
		return adaptive.NewGrouped(in, rr.targets, gp, prior)
	}
	return nil, fmt.Errorf("unknown strategy %q", name)
}

// remember is the client's memory after a first run, as scout servers
// keeps it (rttcache): per group, the least answered RTT of the run and
// how many answers it had, and the groups of its list (known); with Config.RouteChange, a share of the groups' paths became
// shorter since (their remembered RTT is over the path's by up to
// RouteShorter).
func (e *evaluator) remember(ts []adaptive.Target, res *sim.Result, seed uint64) (map[netip.Prefix]adaptive.Prior, map[netip.Prefix]bool) {
	mem := rttcache.New()
	outs := make([]rttcache.Outcome, 0, len(res.Trace))
	for _, pr := range res.Trace {
		outs = append(outs, rttcache.Outcome{Addr: ts[pr.Index].Addr, RTT: pr.RTT, Answered: pr.Answered})
	}
	now := time.Unix(0, 0)
	mem.Record(now, nil, outs)
	listed := make([]netip.AddrPort, len(ts))
	for i, t := range ts {
		listed[i] = t.Addr
	}
	mem.SetListed(now, listed)
	prior := mem.Priors(now)
	if e.cfg.RouteChange > 0 {
		rng := rand.New(rand.NewPCG(seed, 0x7c))
		keys := make([]netip.Prefix, 0, len(prior))
		for k := range prior {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
		for _, k := range keys {
			if rng.Float64() < e.cfg.RouteChange {
				p := prior[k]
				p.Least += dur(rng.Float64() * e.cfg.RouteShorter)
				prior[k] = p
			}
		}
	}
	return prior, mem.Known(now)
}

// explainMisses says, per playable server not found, why.
func explainMisses(rr run, st adaptive.Strategy, res *sim.Result) []missed {
	end := res.End
	if res.Stopped {
		end = res.StopTime
	}
	probed := make([]bool, len(rr.targets))
	answered := make([]bool, len(rr.targets))
	inTime := make([]bool, len(rr.targets)) // answered by the run's stop
	for _, p := range res.Trace {
		probed[p.Index] = true
		answered[p.Index] = answered[p.Index] || p.Answered
		inTime[p.Index] = inTime[p.Index] || p.Answered && p.Done <= end
	}
	g, _ := st.(*adaptive.Grouped)
	var lp *landmark.Planner
	if g != nil {
		lp, _ = g.Inner().(*landmark.Planner)
	} else {
		lp, _ = st.(*landmark.Planner)
	}
	var out []missed
	for i, d := range rr.rtts {
		if d >= Playable || sim.Silent(rr.in.Seed, i, rr.in.Pacing.Loss) {
			continue
		}
		why, fig := "", math.NaN()
		switch {
		case probed[i] && answered[i]:
			if !inTime[i] {
				why = WhyLate
			}
		case probed[i]:
			why = WhyNoAnswer
		default:
			why = WhyStop
			if g != nil {
				if least, ok := g.Skip(rr.targets[i].Addr); ok {
					why, fig = WhyGroup, ms(least)
					break
				}
			}
			if lp != nil {
				switch f := lp.Fate(i); f.Kind {
				case landmark.FateSite:
					why, fig = WhySite, f.Site
				case landmark.FateLeftOut:
					why, fig = WhyBound, f.Lower
				case landmark.FateSibling:
					why = WhySibling
				}
			}
		}
		if why == "" {
			continue
		}
		c := rr.w.City(i)
		out = append(out, missed{city: c.Name, country: c.Country, why: why, rtt: ms(d), figure: fig})
	}
	return out
}

// collect sums outcomes up per strategy.
func collect(outs []outcome, strategies []string, m Model, set string, seeds []uint64) []Results {
	var rs []Results
	for _, name := range strategies {
		by := map[string][]outcome{}
		var order []string
		for _, o := range outs {
			if o.strategy != name {
				continue
			}
			if by[o.client] == nil {
				order = append(order, o.client)
			}
			by[o.client] = append(by[o.client], o)
		}
		sort.Strings(order)
		r := Results{Strategy: name, Model: m, Set: set, Seeds: seeds, Summary: Summary{WorstFound: 100}}
		var farMed, nearMed []float64
		for _, cn := range order {
			os := by[cn]
			slices.SortFunc(os, func(a, b outcome) int { return cmp.Compare(a.seed, b.seed) })
			c := City{Name: cn, Country: os[0].country, FoundWorst: 101}
			var ratios, shares []float64
			var playable []float64
			misses := map[[3]string]*Miss{}
			for _, o := range os {
				if o.found < c.FoundWorst {
					c.FoundWorst, c.WorstSeed = o.found, o.seed
				}
				ratio := float64(o.probes) / float64(max(o.oracle, 1))
				ratios = append(ratios, ratio)
				shares = append(shares, o.farShare)
				playable = append(playable, float64(o.playable))
				if o.probes > o.conv {
					c.OverConventional++
				}
				c.Mixed = max(c.Mixed, o.mixed)
				seen := map[[3]string]bool{}
				for _, x := range o.misses {
					k := [3]string{x.city, x.country, x.why}
					m := misses[k]
					if m == nil {
						m = &Miss{City: x.city, Country: x.country, Why: x.why, TrueMs: [2]float64{x.rtt, x.rtt}}
						misses[k] = m
					}
					m.Servers++
					m.TrueMs = [2]float64{min(m.TrueMs[0], x.rtt), max(m.TrueMs[1], x.rtt)}
					if !math.IsNaN(x.figure) {
						if m.FigureMs == nil {
							m.FigureMs = &[2]float64{x.figure, x.figure}
						}
						m.FigureMs = &[2]float64{min(m.FigureMs[0], x.figure), max(m.FigureMs[1], x.figure)}
					}
					if !seen[k] {
						m.Seeds++
						seen[k] = true
					}
				}
			}
			c.RatioMedian, c.RatioWorst = median(ratios), slices.Max(ratios)
			c.FarShare = median(shares)
			c.Far = c.FarShare > FarShare
			c.Playable = int(median(playable))
			for _, x := range misses {
				c.Misses = append(c.Misses, *x)
			}
			slices.SortFunc(c.Misses, func(a, b Miss) int {
				return cmp.Or(cmp.Compare(b.Servers, a.Servers), cmp.Compare(a.City, b.City), cmp.Compare(a.Why, b.Why))
			})
			if len(c.Misses) > MaxMisses {
				c.Misses = c.Misses[:MaxMisses]
			}
			r.Cities = append(r.Cities, c)
			s := &r.Summary
			s.Cities++
			if c.FoundWorst < MinFound {
				s.BelowFloor++
			}
			s.WorstFound = min(s.WorstFound, c.FoundWorst)
			if c.Mixed > 0 {
				s.MixedCities++
			}
			if c.Far {
				s.Far++
				farMed = append(farMed, c.RatioMedian)
				s.FarRatioMax = max(s.FarRatioMax, c.RatioWorst)
			} else {
				nearMed = append(nearMed, c.RatioMedian)
				s.NearOverConventional += c.OverConventional
			}
		}
		r.Summary.FarRatioMedian, r.Summary.FarRatioP90, r.Summary.NearRatio = median(farMed), quantile(farMed, 0.9), median(nearMed)
		r.Summary.NearRatioP90 = quantile(nearMed, 0.9)
		rs = append(rs, r)
	}
	return rs
}

// MaxMisses bounds the server cities a City lists among its misses.
const MaxMisses = 8

func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile is the nearest-rank quantile q of xs; 0 for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if q == 0.5 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func dur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
