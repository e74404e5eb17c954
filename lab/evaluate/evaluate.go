// Package evaluate judges landmark estimates against a real all-pairs
// mesh (package mesh): K cities are made landmarks by a stated rule, every
// city, the landmarks' too, is in turn a client and a server site, and the estimate of
// each client-server RTT is compared with the RTT measured between them.
//
// It reports, per K and per estimator, the error distribution, how often
// the triangle inequality's bounds are violated and by how much, the
// safety margin a stop rule needs (measured on one half of the cities,
// checked on the other), and what a client would probe with it: the share
// of server sites whose lower bound minus the margin is under the playable
// threshold (every one of them must be probed before the stop rule lets
// go), and the playable sites it would miss.
//
// Pure computation over a matrix in memory; the caller reads the files.
package evaluate

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/scout-discovery/scout/lab/mesh"
	"github.com/scout-discovery/scout/landmark"
)

// Rule is how landmark cities are chosen.
type Rule string

const (
	// KCenter is the greedy farthest-point rule: first the city whose
	// largest RTT to any other is smallest (the mesh's centre), then each
	// time the city farthest (by RTT) from every landmark chosen so far.
	// It places landmarks where the network's extremes are, without looking
	// at any client.
	KCenter Rule = "kcenter"
	// Hubs takes the first K of a fixed list of hosting hubs where a game
	// community's masters plausibly run, in order: Frankfurt, New York,
	// Tokyo, Sydney, Los Angeles, Singapore, Sao Paulo, London.
	Hubs Rule = "hubs"
)

// HubCities is the Hubs rule's list (WonderProxy city names).
var HubCities = []string{"Frankfurt", "NewYork", "Tokyo", "Sydney", "LosAngeles", "Singapore", "SaoPaulo", "London"}

// Place returns the indexes of k landmark cities of m by rule.
func Place(m *mesh.Mesh, k int, rule Rule) ([]int, error) {
	if k < 1 || k > m.Len() {
		return nil, fmt.Errorf("evaluate: %d landmarks for %d cities", k, m.Len())
	}
	switch rule {
	case Hubs:
		if k > len(HubCities) {
			return nil, fmt.Errorf("evaluate: rule %s has %d cities, not %d", rule, len(HubCities), k)
		}
		var out []int
		for _, name := range HubCities[:k] {
			i := m.Index(name)
			if i < 0 {
				return nil, fmt.Errorf("evaluate: no city %q in the mesh", name)
			}
			out = append(out, i)
		}
		return out, nil
	case KCenter:
		n := m.Len()
		centre, best := -1, math.Inf(1)
		for i := range n {
			worst := 0.0
			for j := range n {
				if r := m.RTT(i, j); !math.IsNaN(r) {
					worst = max(worst, r)
				}
			}
			if worst < best {
				centre, best = i, worst
			}
		}
		out := []int{centre}
		near := make([]float64, n) // RTT to the nearest landmark so far
		for j := range n {
			near[j] = nanInf(m.RTT(centre, j))
		}
		for len(out) < k {
			far := -1
			for j := range n {
				if !math.IsInf(near[j], 1) && (far < 0 || near[j] > near[far]) && !slices.Contains(out, j) {
					far = j
				}
			}
			if far < 0 {
				return nil, fmt.Errorf("evaluate: no measured city left for landmark %d", len(out)+1)
			}
			out = append(out, far)
			for j := range n {
				near[j] = min(near[j], nanInf(m.RTT(far, j)))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("evaluate: unknown rule %q (want %s or %s)", rule, KCenter, Hubs)
}

func nanInf(x float64) float64 {
	if math.IsNaN(x) {
		return math.Inf(1)
	}
	return x
}

// Estimator names.
const (
	Lower   = "lower"   // the triangle lower bound
	Upper   = "upper"   // the triangle upper bound
	Mid     = "mid"     // the mean of the two bounds
	GNP     = "gnp"     // coordinates fitted by least relative error
	Vivaldi = "vivaldi" // coordinates by spring relaxation
	Clamped = "gnp-clamped"
)

// Estimators lists the estimators in report order.
var Estimators = []string{Lower, Upper, Mid, GNP, Vivaldi, Clamped}

// Errors summarises one estimator's error (estimate - measured, ms).
type Errors struct {
	N                  int
	MedAbs, P90Abs     float64 // |error| median and 90th percentile, ms
	MedRel, P90Rel     float64 // |error| / measured
	Bias               float64 // median signed error, ms
	RankCorr           float64 // mean per-client Spearman correlation of estimate and measured
	unusable           int
	abs, rel, signed   []float64
	perClientCorrSum   float64
	perClientCorrCount int
}

// Violation summarises how often and by how much one bound fails.
type Violation struct {
	Share              float64 // of the pairs
	P50, P99, Max      float64 // excess of the violating pairs, ms
	excesses           []float64
	count, pairsTested int
}

// Cost is what a client would probe with the stop rule "stop when every
// unprobed server's lower bound minus Margin exceeds the threshold".
type Cost struct {
	Client   string
	Probed   float64 // share of server sites probed
	Oracle   float64 // share of server sites that are playable
	Missed   int     // playable sites the rule would never probe
	Playable int
}

// Result is one K's evaluation.
type Result struct {
	K         int
	Rule      Rule
	Landmarks []string
	Dim       int // the coordinates' dimension (0: too few landmarks)
	Pairs     int
	Est       map[string]*Errors
	Low, High Violation
	// Margin is how far the stop rule's lower bound of a playable pair
	// (measured RTT under the threshold) rises above the threshold, at the
	// MarginQuantile over the pairs of the fitting half of the cities
	// (clients with an even index), 0 if it never
	// does; MissedHeldOut counts the playable pairs of the other half that
	// lower bound minus Margin would still exclude.
	Margin        float64
	MissedHeldOut int
	PlayableHeld  int
	Costs         []Cost
	ByRegion      map[string]*Errors // the chosen estimator's error by server region
}

// Options configure Run.
type Options struct {
	Threshold      float64  // playable RTT, ms; default 200
	MarginQuantile float64  // default 0.999
	Clients        []string // cities whose probe cost is reported; default the paper's four
	Region         func(cc string) string
	Chosen         string // estimator reported by region; default GNP
	// Drop is how many landmarks the stop rule's lower bound leaves out
	// (landmark.LowerBound); Repair clips vectors to the paths through
	// other landmarks first (landmark.Repair).
	Drop   int
	Repair bool
	// KeepClient leaves the client's own vector out of Repair (the
	// servers' are still repaired): a client's RTTs are the paths its
	// packets take (landmark.PlanParams.KeepClient). The bounds, the
	// estimates, the margin and the costs then take each city's vector as
	// measured when it is the client.
	KeepClient bool
	// Stop is the quantity StopMargin fits the margin of: Lower (""),
	// Upper or Mid. Run always reports the lower bound's.
	Stop string
}

func (o *Options) defaults() {
	if o.Threshold == 0 {
		o.Threshold = 200
	}
	if o.MarginQuantile == 0 {
		o.MarginQuantile = 0.999
	}
	if o.Clients == nil {
		o.Clients = []string{"Melbourne", "Tokyo", "Zurich", "Frankfurt"}
	}
	if o.Chosen == "" {
		o.Chosen = GNP
	}
	if o.Region == nil {
		o.Region = func(cc string) string { return cc }
	}
}

// Dim returns the coordinate dimension used with k landmarks: a host's
// position and height need dim+2 measurements, and 3 dimensions are
// enough for the Internet's picture (more overfits 8 landmarks).
func Dim(k int) int { return min(k-2, 3) }

// Run evaluates k landmarks chosen by rule on m.
func Run(m *mesh.Mesh, k int, rule Rule, opt Options) (*Result, error) {
	lms, err := Place(m, k, rule)
	if err != nil {
		return nil, err
	}
	res, err := RunAt(m, lms, opt)
	if res != nil {
		res.Rule = rule
	}
	return res, err
}

// CountryMesh returns RIPE Atlas's country matrix as a mesh whose "cities"
// are countries (Name and Country the code), for Run and RunAt.
func CountryMesh(c *mesh.Countries) *mesh.Mesh {
	m := &mesh.Mesh{Matrix: c.Matrix}
	for i, cc := range c.Codes {
		m.Cities = append(m.Cities, mesh.City{ID: i, Name: cc, Country: cc})
	}
	return m
}

// RunAt evaluates the landmarks at the given indexes of m.
func RunAt(m *mesh.Mesh, lms []int, opt Options) (*Result, error) {
	opt.defaults()
	lmat, vs, raw, err := vectors(m, lms, opt.Repair)
	if err != nil {
		return nil, err
	}
	cv := clientVectors(vs, raw, opt)
	k := len(lms)
	res := &Result{K: k, Est: map[string]*Errors{}, ByRegion: map[string]*Errors{}}
	for _, l := range lms {
		res.Landmarks = append(res.Landmarks, m.Cities[l].Name)
	}
	for _, e := range Estimators {
		res.Est[e] = &Errors{}
	}
	var sp *landmark.Space
	if d := Dim(k); d >= 1 {
		if sp, err = landmark.FitSpace(lmat, d); err != nil {
			return nil, err
		}
		res.Dim = d
	}
	// Every city is a client and a server site, the landmark cities too (a
	// master's city hosts game servers and players as well; their vector
	// holds a 0).
	place := func(vs []landmark.Vector) (gnp, viv []*landmark.Coord) {
		gnp = make([]*landmark.Coord, m.Len())
		viv = make([]*landmark.Coord, m.Len())
		for i := range vs {
			if sp != nil {
				if c, err := sp.Place(vs[i]); err == nil {
					gnp[i] = &c
				}
				if c, err := sp.PlaceVivaldi(vs[i]); err == nil {
					viv[i] = &c
				}
			}
		}
		return gnp, viv
	}
	gnp, viv := place(vs)
	gnpC, vivC := gnp, viv
	if opt.KeepClient {
		gnpC, vivC = place(cv)
	}
	estimate := func(c, s int) map[string]float64 {
		lo, hi, n := landmark.Bounds(cv[c], vs[s])
		out := map[string]float64{}
		if n == 0 {
			return out
		}
		out[Lower], out[Upper], out[Mid] = lo, hi, (lo+hi)/2
		if gnpC[c] != nil && gnp[s] != nil {
			g := gnpC[c].Dist(*gnp[s])
			out[GNP], out[Clamped] = g, min(max(g, lo), hi)
		}
		if vivC[c] != nil && viv[s] != nil {
			out[Vivaldi] = vivC[c].Dist(*viv[s])
		}
		return out
	}
	var fitLow []float64
	type heldPair struct{ lo, t float64 }
	var held []heldPair
	for c := range m.Len() {
		ests := map[string][]float64{}
		var truth []float64
		for s := range m.Len() {
			t := m.RTT(c, s)
			if s == c || math.IsNaN(t) {
				continue
			}
			e := estimate(c, s)
			if len(e) == 0 {
				continue
			}
			res.Pairs++
			lo, hi := e[Lower], e[Upper]
			res.Low.tested(lo - t)
			res.High.tested(t - hi)
			if t < opt.Threshold {
				stop := landmark.LowerBound(cv[c], vs[s], opt.Drop)
				if c%2 == 0 {
					fitLow = append(fitLow, stop-opt.Threshold)
				} else {
					held = append(held, heldPair{stop, t})
				}
			}
			truth = append(truth, t)
			for _, name := range Estimators {
				x, ok := e[name]
				if !ok {
					res.Est[name].unusable++
					ests[name] = append(ests[name], math.NaN())
					continue
				}
				res.Est[name].add(x, t)
				ests[name] = append(ests[name], x)
				if name == opt.Chosen {
					r := opt.Region(m.Cities[s].Country)
					if res.ByRegion[r] == nil {
						res.ByRegion[r] = &Errors{}
					}
					res.ByRegion[r].add(x, t)
				}
			}
		}
		for name, xs := range ests {
			if rho, ok := spearman(xs, truth); ok {
				res.Est[name].perClientCorrSum += rho
				res.Est[name].perClientCorrCount++
			}
		}
	}
	for _, e := range res.Est {
		e.finish()
	}
	for _, e := range res.ByRegion {
		e.finish()
	}
	res.Low.finish()
	res.High.finish()
	res.Margin = max(0, quantile(fitLow, opt.MarginQuantile))
	for _, p := range held {
		res.PlayableHeld++
		if p.lo-res.Margin > opt.Threshold {
			res.MissedHeldOut++
		}
	}
	for _, name := range opt.Clients {
		c := m.Index(name)
		if c < 0 {
			continue // not in the mesh
		}
		cost := Cost{Client: name}
		var sites, probed, playable int
		for s := range m.Len() {
			t := m.RTT(c, s)
			if s == c || math.IsNaN(t) {
				continue
			}
			sites++
			lo := landmark.LowerBound(cv[c], vs[s], opt.Drop)
			in := lo-res.Margin <= opt.Threshold
			if in {
				probed++
			}
			if t < opt.Threshold {
				playable++
				if !in {
					cost.Missed++
				}
			}
		}
		cost.Probed = float64(probed) / float64(sites)
		cost.Oracle = float64(playable) / float64(sites)
		cost.Playable = playable
		res.Costs = append(res.Costs, cost)
	}
	return res, nil
}

func (v *Violation) tested(excess float64) {
	v.pairsTested++
	if excess > 0 {
		v.count++
		v.excesses = append(v.excesses, excess)
	}
}

func (v *Violation) finish() {
	if v.pairsTested > 0 {
		v.Share = float64(v.count) / float64(v.pairsTested)
	}
	v.P50, v.P99 = quantile(v.excesses, 0.5), quantile(v.excesses, 0.99)
	v.Max = quantile(v.excesses, 1)
}

func (e *Errors) add(est, t float64) {
	e.N++
	d := est - t
	e.signed = append(e.signed, d)
	e.abs = append(e.abs, math.Abs(d))
	e.rel = append(e.rel, math.Abs(d)/max(t, 1))
}

func (e *Errors) finish() {
	e.MedAbs, e.P90Abs = quantile(e.abs, 0.5), quantile(e.abs, 0.9)
	e.MedRel, e.P90Rel = quantile(e.rel, 0.5), quantile(e.rel, 0.9)
	e.Bias = quantile(e.signed, 0.5)
	if e.perClientCorrCount > 0 {
		e.RankCorr = e.perClientCorrSum / float64(e.perClientCorrCount)
	}
	e.abs, e.rel, e.signed = nil, nil, nil
}

// quantile returns the q-quantile of xs (the empirical distribution's
// inverse), NaN when empty. It sorts xs.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return stat.Quantile(q, stat.Empirical, xs, nil)
}

// spearman returns the rank correlation of the pairs where x is a number.
func spearman(x, y []float64) (float64, bool) {
	var xs, ys []float64
	for i := range x {
		if !math.IsNaN(x[i]) {
			xs, ys = append(xs, x[i]), append(ys, y[i])
		}
	}
	if len(xs) < 3 {
		return 0, false
	}
	rx, ry := ranks(xs), ranks(ys)
	rho := stat.Correlation(rx, ry, nil)
	return rho, !math.IsNaN(rho)
}

// ranks returns the average ranks of xs (ties share their mean rank).
func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// StopMargin is Run's Margin alone, without the estimators' fits: the
// stop rule's margin for the landmarks at indexes lms of m, fitted on the
// playable pairs of the clients with an even index (opt's Threshold,
// MarginQuantile, Drop and Repair). With opt.Stop Upper or Mid it is the
// margin of a stop rule on that estimate instead of the lower bound
// (landmark.PlanParams.Stop).
func StopMargin(m *mesh.Mesh, lms []int, opt Options) (float64, error) {
	opt.defaults()
	_, vs, raw, err := vectors(m, lms, opt.Repair)
	if err != nil {
		return 0, err
	}
	cv := clientVectors(vs, raw, opt)
	var fit []float64
	for c := 0; c < m.Len(); c += 2 {
		for s := range m.Len() {
			t := m.RTT(c, s)
			if s == c || math.IsNaN(t) || t >= opt.Threshold {
				continue
			}
			_, hi, n := landmark.Bounds(cv[c], vs[s])
			if n == 0 {
				continue
			}
			x := landmark.LowerBound(cv[c], vs[s], opt.Drop)
			switch opt.Stop {
			case Upper:
				x = hi
			case Mid:
				x = (x + hi) / 2
			}
			fit = append(fit, x-opt.Threshold)
		}
	}
	return max(0, quantile(fit, opt.MarginQuantile)), nil
}

// vectors checks the landmark indexes lms of m and returns the landmarks'
// RTTs to each other and every city's vector to them, each clipped by
// landmark.Repair with repair.
func vectors(m *mesh.Mesh, lms []int, repair bool) (lmat [][]float64, vs, raw []landmark.Vector, err error) {
	k := len(lms)
	if k < 1 {
		return nil, nil, nil, fmt.Errorf("evaluate: no landmark")
	}
	for _, l := range lms {
		if l < 0 || l >= m.Len() {
			return nil, nil, nil, fmt.Errorf("evaluate: landmark %d outside the mesh", l)
		}
	}
	lmat = make([][]float64, k)
	for i := range k {
		lmat[i] = make([]float64, k)
		for j := range k {
			lmat[i][j] = m.RTT(lms[i], lms[j])
		}
	}
	vs = make([]landmark.Vector, m.Len())
	raw = make([]landmark.Vector, m.Len())
	for i := range vs {
		v := make(landmark.Vector, k)
		for j, l := range lms {
			v[j] = m.RTT(i, l)
		}
		raw[i], vs[i] = v, v
		if repair {
			vs[i] = landmark.Repair(v, lmat)
		}
	}
	return lmat, vs, raw, nil
}

// clientVectors returns the vectors a city has as a client: the
// repaired ones, or with opt.KeepClient the measured ones.
func clientVectors(vs, raw []landmark.Vector, opt Options) []landmark.Vector {
	if opt.KeepClient {
		return raw
	}
	return vs
}
