package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/population"
)

// PaperRow is one row of the paper's Table 2.
type PaperRow struct {
	Client        string  `json:"client"`
	Countries     int     `json:"countries"`
	Slash8        int     `json:"slash8_clusters"`
	InitialProbes int     `json:"initial_probes"`
	AutoStop      float64 `json:"autostop_s"`
	AutoStopPct   float64 `json:"autostop_pct"`
}

// Table2 returns the paper's Table 2 as printed.
func Table2() []PaperRow {
	return []PaperRow{
		{"AU-ET", 51, 77, 396, 14, 20},
		{"JP-ET", 52, 77, 446, 24, 36},
		{"CH-ET", 50, 79, 492, 68, 100},
		{"AU-CSS", 71, 140, 2136, 24, 12},
		{"JP-CSS", 69, 143, 1694, 60, 28},
		{"DE-CSS", 69, 143, 2159, 208, 98},
	}
}

// Variant is a named set of adaptive parameters.
type Variant struct {
	Name   string
	Params adaptive.Params
}

// Variants returns the paper's parameters ("paper") and the options beyond
// the paper, each alone and combined, ending with adaptive.Scout() ("scout").
// A variant's calibration samples are drawn from a stream of the row's seed
// numbered by its position here, so new variants go at the end: the ones
// before keep their figures.
func Variants() []Variant {
	p := adaptive.Paper()
	as := p
	as.ClusterBy = adaptive.ByCountryAS
	run := p
	run.Stop = adaptive.StopRun
	est := p
	est.Stop = adaptive.StopEstimate
	rr := p
	rr.Rerank = true
	all := as
	all.Rerank, all.Stop = true, adaptive.StopRun
	sc := adaptive.Scout()
	bound := p
	bound.Stop, bound.StopMargin, bound.StopAgree = sc.Stop, sc.StopMargin, sc.StopAgree
	asBound := bound
	asBound.ClusterBy = adaptive.ByCountryAS
	far := p
	far.FarCut = sc.FarCut
	asFar := as
	asFar.FarCut = sc.FarCut
	return []Variant{{"paper", p}, {"as", as}, {"run", run}, {"estimate", est}, {"rerank", rr}, {"as+rerank+run", all},
		{"bound", bound}, {"as+bound", asBound}, {"far", far}, {"as+far", asFar}, {"scout", sc}}
}

// Outcome is one strategy's figures in a row, times in seconds.
type Outcome struct {
	Name         string  `json:"name"`
	Stopped      bool    `json:"stopped"`
	StopTime     float64 `json:"stop_s"`    // auto-stop time, or the end if it never stopped
	StopPct      float64 `json:"stop_pct"`  // StopTime as % of the conventional full probe
	Probes       int     `json:"probes"`    // probes sent by the stop (= flows created: one per server)
	Found        int     `json:"found"`     // playable servers answered by the stop
	FoundPct     float64 `json:"found_pct"` // of the world's playable servers
	LastPlayable float64 `json:"last_playable_s"`
	Initial      int     `json:"initial_probes,omitempty"`
	// Missed and Wasted, for the landmark strategies: the playable servers
	// not found by the stop, and the unplayable servers probed, by the
	// server's region (latency.Region).
	Missed map[string]int `json:"missed_by_region,omitempty"`
	Wasted map[string]int `json:"unplayable_probed_by_region,omitempty"`
}

// Row is one measured row of Table 2 with the extra columns.
type Row struct {
	Client    string `json:"client"` // e.g. "AU-ET"
	Place     string `json:"place"`
	Game      string `json:"game"`
	Servers   int    `json:"servers"`
	Seed      uint64 `json:"seed"`
	Countries int    `json:"countries"`
	Slash8    int    `json:"slash8_clusters"` // step 2(c)'s /8 clusters
	// Clusters is the number of clusters step 3 starts from: the /8
	// clusters and one cluster per country for its servers outside them.
	// The paper's "/8 clusters" column matches this reading (EVALUATION.md).
	Clusters      int       `json:"clusters"`
	InitialProbes int       `json:"initial_probes"`
	AutoStop      float64   `json:"autostop_s"`
	AutoStopPct   float64   `json:"autostop_pct"`
	FullProbe     float64   `json:"full_probe_s"`
	Playable      int       `json:"playable"`
	Adaptive      Outcome   `json:"adaptive"`
	Conventional  Outcome   `json:"conventional"`
	Oracle        Outcome   `json:"oracle"`
	Variants      []Outcome `json:"variants"`
	Paper         *PaperRow `json:"paper,omitempty"`
	// Traces of the paper's adaptive run and of conventional discovery,
	// when asked for.
	AdaptiveTrace     []Probe `json:"-"`
	ConventionalTrace []Probe `json:"-"`
	// VariantTrace is the trace of the variant Spec.TraceVariant names.
	VariantTrace []Probe `json:"-"`
}

// Spec says what one row simulates.
type Spec struct {
	Place   string          // a key of population.Places
	Game    population.Game // et or css
	Servers int
	Seed    uint64
	Pacing  *Pacing // nil: PacingFor(Game, Servers)
	World   *population.World
	Trace   bool
	// Variants to run besides the paper's; nil runs Variants().
	Variants []Variant
	// TraceVariant, with Trace, also keeps the trace of the variant of this
	// name (Row.VariantTrace).
	TraceVariant string
	// Mesh, when set, takes every RTT's city-to-city part from a measured
	// mesh and runs its landmark strategies after the variants (their
	// outcomes follow the variants' in Row.Variants).
	Mesh *MeshSpec
}

// Simulate runs conventional discovery, adaptive discovery with each
// variant, and the oracle for one client and world.
func Simulate(sp Spec) (*Row, error) {
	place, ok := population.Places()[sp.Place]
	if !ok {
		return nil, fmt.Errorf("%w: unknown place %q (want AU, JP, CH or DE)", ErrInput, sp.Place)
	}
	w := sp.World
	if w == nil {
		var err error
		if w, err = population.Build(population.FittedVantage(sp.Game, sp.Servers, sp.Seed)); err != nil {
			return nil, err
		}
	}
	pace := PacingFor(sp.Game, len(w.Servers))
	if sp.Pacing != nil {
		pace = *sp.Pacing
	}
	targets := make([]adaptive.Target, len(w.Servers))
	countries := map[string]bool{}
	for i, s := range w.Servers {
		targets[i] = adaptive.Target{Addr: s.Addr, Country: s.Country, ASN: s.ASN, Index: i}
		countries[s.Country] = true
	}
	var rtts []time.Duration
	if sp.Mesh != nil {
		rtts, _ = w.MeshRTTs(sp.Mesh.Latency, place)
	} else {
		rtts = w.RTTs(place)
	}
	const playable = 200 * time.Millisecond
	in := Input{Targets: targets, RTTs: rtts, Pacing: pace, Seed: sp.Seed ^ 0x9e3779b97f4a7c15, Playable: playable}
	row := &Row{
		Client: sp.Place + "-" + map[population.Game]string{population.ET: "ET", population.CSS: "CSS"}[w.Config.Game],
		Place:  sp.Place, Game: string(w.Config.Game), Servers: len(w.Servers), Seed: sp.Seed, Countries: len(countries),
	}
	for i, p := range Table2() {
		if p.Client == row.Client {
			row.Paper = &Table2()[i]
		}
	}

	conv, err := adaptive.NewConventional(targets)
	if err != nil {
		return nil, err
	}
	cr, err := Run(conv, in)
	if err != nil {
		return nil, err
	}
	full := cr.End
	row.FullProbe = full.Seconds()
	row.Playable = cr.Playable
	row.Conventional = outcome("conventional", cr, full)
	if sp.Trace {
		row.ConventionalTrace = cr.Trace
	}

	vs := sp.Variants
	if vs == nil {
		vs = Variants()
	}
	for i, v := range vs {
		pl, err := adaptive.New(targets, v.Params, rand.New(rand.NewPCG(sp.Seed, uint64(i)+1)))
		if err != nil {
			return nil, fmt.Errorf("sim: variant %s: %w", v.Name, err)
		}
		ar, err := Run(pl, in)
		if err != nil {
			return nil, err
		}
		o := outcome(v.Name, ar, full)
		o.Initial = ar.Calibrate + ar.Split
		row.Variants = append(row.Variants, o)
		if sp.Trace && sp.TraceVariant != "" && v.Name == sp.TraceVariant {
			row.VariantTrace = ar.Trace
		}
		if i == 0 {
			row.Adaptive = o
			row.InitialProbes = o.Initial
			row.AutoStop, row.AutoStopPct = o.StopTime, o.StopPct
			for _, c := range ar.Clusters {
				if c.Parent >= 0 {
					continue
				}
				row.Clusters++
				if c.Prefix.IsValid() && c.Prefix.Bits() == v.Params.Coarse4 {
					row.Slash8++
				}
			}
			if sp.Trace {
				row.AdaptiveTrace = ar.Trace
			}
		}
	}

	if sp.Mesh != nil {
		os, err := runLandmarks(w, sp.Mesh, place, targets, in, full, sp.Seed, len(vs))
		if err != nil {
			return nil, err
		}
		row.Variants = append(row.Variants, os...)
	}

	or, err := adaptive.NewOracle(targets, func(t adaptive.Target) (time.Duration, bool) { return rtts[t.Index], true }, playable)
	if err != nil {
		return nil, err
	}
	orr, err := Run(or, in)
	if err != nil {
		return nil, err
	}
	row.Oracle = outcome("oracle", orr, full)
	return row, nil
}

func outcome(name string, r *Result, full time.Duration) Outcome {
	o := Outcome{Name: name, Stopped: r.Stopped, Probes: r.Sent, Found: r.Found, LastPlayable: r.LastPlayable.Seconds()}
	end := r.End
	if r.Stopped {
		end, o.Probes = r.StopTime, r.StopSent
	}
	o.StopTime = end.Seconds()
	if full > 0 {
		o.StopPct = 100 * float64(end) / float64(full)
	}
	if r.Playable > 0 {
		o.FoundPct = 100 * float64(r.Found) / float64(r.Playable)
	}
	return o
}

// Table2Specs returns the six rows of Table 2 for a seed: one ET world and
// one CS:S world of the paper's sizes, shared by the clients of each game.
func Table2Specs(seed uint64) ([]Spec, error) { return Table2SpecsOf(population.FittedVantage, seed) }

// Models are the world models Table2SpecsOf can build, by name: "vantage"
// (population.FittedVantage, the default), "global-residual"
// (population.Fitted, the latency model before the per-vantage residual
// fit, which scout demo uses) and "modern" (population.Modern).
func Models() map[string]func(g population.Game, servers int, seed uint64) population.Config {
	return map[string]func(population.Game, int, uint64) population.Config{
		"vantage": population.FittedVantage, "global-residual": population.Fitted, "modern": population.Modern,
	}
}

// Table2SpecsOf is Table2Specs with the worlds of model.
func Table2SpecsOf(model func(g population.Game, servers int, seed uint64) population.Config, seed uint64) ([]Spec, error) {
	et, err := population.Build(model(population.ET, population.SizeET, seed))
	if err != nil {
		return nil, err
	}
	css, err := population.Build(model(population.CSS, population.SizeCSS, seed))
	if err != nil {
		return nil, err
	}
	var out []Spec
	for _, r := range []struct {
		place string
		w     *population.World
	}{{"AU", et}, {"JP", et}, {"CH", et}, {"AU", css}, {"JP", css}, {"DE", css}} {
		out = append(out, Spec{Place: r.place, Game: r.w.Config.Game, Servers: len(r.w.Servers), Seed: seed, World: r.w})
	}
	return out, nil
}
