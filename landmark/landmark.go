// Package landmark estimates a client's round-trip time to game servers it
// has not probed, from the round-trip times that landmarks (master servers,
// which measure every server they verify and re-probe) measured to those
// servers and the client's own round-trip times to the landmarks.
//
// It is a pure core: vectors of milliseconds in, bounds, coordinates and
// estimates out; no sockets, no clock, no files.
//
// # Bounds
//
// With d the RTT, c_k = d(client, L_k) and s_k = d(L_k, server), the
// triangle inequality gives, for every landmark both measured,
//
//	|c_k - s_k| <= d(client, server) <= c_k + s_k
//
// so lo = max_k |c_k - s_k| and hi = min_k (c_k + s_k). Internet paths break
// the inequality (routes are not shortest paths), so a stop rule that uses
// lo must leave a margin measured on real data (see package
// lab/evaluate and EVALUATION.md).
//
// # Coordinates
//
// Space embeds the landmarks in a Euclidean space with a height per node
// (the "height vector" model of Vivaldi: d(a,b) = |x_a - x_b| + h_a + h_b,
// the height standing for the access link every path of a node shares),
// fitted to the landmarks' own RTTs to each other by minimising the squared
// relative error, as GNP does; Place then fits a host's coordinates to its
// vector. Vivaldi's spring relaxation is offered for the same fit
// (PlaceVivaldi), so the two can be compared on the same data.
//
// # Planning discovery
//
// Planner (plan.go) is the client's strategy (an adaptive.Strategy): it
// probes every server whose robust lower bound, minus a measured margin,
// is within the playable threshold, nearest estimate first, and stops;
// options add a run rule on the estimate order and hand-off to Armitage's
// adaptive planner, which always takes the servers no landmark measured.
// On the real mesh no margin makes the bound both cheap and safe (whole
// cities sit behind detours), so the site check (sites.go) measures what
// the bound would leave out: a site (one AS in one place) is ruled out
// only when its representatives answer far.
package landmark

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/optimize"
)

// Vector holds one host's RTTs in milliseconds to each landmark, in the
// landmarks' order; NaN where that landmark has no measurement.
type Vector []float64

// Missing reports whether v has no measurement at all.
func (v Vector) Missing() bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return false
		}
	}
	return true
}

// Bounds returns the triangle-inequality bounds on the RTT between the hosts
// whose vectors are c and s, over the n landmarks both measured. With n == 0
// it returns 0, +Inf, 0.
func Bounds(c, s Vector) (lo, hi float64, n int) {
	hi = math.Inf(1)
	for k := range min(len(c), len(s)) {
		a, b := c[k], s[k]
		if math.IsNaN(a) || math.IsNaN(b) {
			continue
		}
		n++
		lo = max(lo, math.Abs(a-b))
		hi = min(hi, a+b)
	}
	return lo, hi, n
}

// Coord is a point of a Space: a position and a height (ms).
type Coord struct {
	X []float64
	H float64
}

// Dist returns the modelled RTT between a and b (ms).
func (a Coord) Dist(b Coord) float64 {
	var s float64
	for i := range a.X {
		d := a.X[i] - b.X[i]
		s += d * d
	}
	return math.Sqrt(s) + a.H + b.H
}

// Space is an embedding of the landmarks.
type Space struct {
	Dim       int
	Landmarks []Coord
}

// MaxDim bounds a Space's dimension.
const MaxDim = 8

// Errors.
var (
	ErrTooFew   = errors.New("landmark: too few measurements for the space's dimension")
	ErrBadInput = errors.New("landmark: RTT matrix not square, negative or not finite")
)

// relErr is the fitting objective's term for a modelled RTT m against a
// measured one d: the squared relative error, with a floor of 1 ms on the
// denominator so a sub-millisecond pair cannot dominate.
func relErr(m, d float64) float64 {
	e := (m - d) / max(d, 1)
	return e * e
}

// FitSpace embeds K landmarks in dim dimensions (plus heights) from their
// RTTs to each other (a K x K matrix, NaN where unmeasured). The fit is
// deterministic: it starts from a classical placement along the first
// landmarks' distances and runs Nelder-Mead.
func FitSpace(d [][]float64, dim int) (*Space, error) {
	k := len(d)
	if dim < 1 || dim > MaxDim {
		return nil, fmt.Errorf("landmark: dimension %d outside 1..%d", dim, MaxDim)
	}
	for _, row := range d {
		if len(row) != k {
			return nil, ErrBadInput
		}
		for _, x := range row {
			if x < 0 || math.IsInf(x, 0) {
				return nil, ErrBadInput
			}
		}
	}
	if k < 2 {
		return nil, ErrTooFew
	}
	nv := k * (dim + 1)
	unpack := func(x []float64) []Coord {
		cs := make([]Coord, k)
		for i := range k {
			cs[i] = Coord{X: x[i*(dim+1) : i*(dim+1)+dim], H: math.Abs(x[i*(dim+1)+dim])}
		}
		return cs
	}
	f := func(x []float64) float64 {
		cs := unpack(x)
		var s float64
		for i := range k {
			for j := i + 1; j < k; j++ {
				m := d[i][j]
				if math.IsNaN(m) {
					if m = d[j][i]; math.IsNaN(m) {
						continue
					}
				}
				s += relErr(cs[i].Dist(cs[j]), m)
			}
		}
		return s
	}
	x0 := make([]float64, nv)
	// Start: landmark i on axis (i-1) mod dim at its RTT from landmark 0,
	// a deterministic spread the optimiser then relaxes.
	for i := 1; i < k; i++ {
		r := d[0][i]
		if math.IsNaN(r) {
			r = 100
		}
		x0[i*(dim+1)+(i-1)%dim] = r
	}
	x := minimize(f, x0)
	cs := unpack(x)
	out := &Space{Dim: dim, Landmarks: make([]Coord, k)}
	for i, c := range cs {
		out.Landmarks[i] = Coord{X: append([]float64(nil), c.X...), H: c.H}
	}
	return out, nil
}

// minimize runs Nelder-Mead on f from x0, restarted once from its result
// (the simplex collapses early on these objectives).
func minimize(f func([]float64) float64, x0 []float64) []float64 {
	p := optimize.Problem{Func: f}
	x := x0
	for range 2 {
		res, err := optimize.Minimize(p, x, &optimize.Settings{MajorIterations: 4000}, &optimize.NelderMead{})
		if res == nil || (err != nil && res.X == nil) {
			break
		}
		x = res.X
	}
	return x
}

// Place fits a host's coordinates to its vector v by least relative error.
// It needs at least dim+2 measurements (a position and a height), else
// ErrTooFew.
func (sp *Space) Place(v Vector) (Coord, error) {
	idx := sp.measured(v)
	if len(idx) < sp.Dim+2 {
		return Coord{}, ErrTooFew
	}
	f := func(x []float64) float64 {
		c := Coord{X: x[:sp.Dim], H: math.Abs(x[sp.Dim])}
		var s float64
		for _, k := range idx {
			s += relErr(c.Dist(sp.Landmarks[k]), v[k])
		}
		return s
	}
	x := minimize(f, sp.start(v, idx))
	return Coord{X: append([]float64(nil), x[:sp.Dim]...), H: math.Abs(x[sp.Dim])}, nil
}

// start is a host's first guess: at its nearest landmark.
func (sp *Space) start(v Vector, idx []int) []float64 {
	best := idx[0]
	for _, k := range idx {
		if v[k] < v[best] {
			best = k
		}
	}
	x0 := make([]float64, sp.Dim+1)
	copy(x0, sp.Landmarks[best].X)
	x0[0] += v[best] / 2 // off the landmark, so the simplex has a gradient
	return x0
}

func (sp *Space) measured(v Vector) []int {
	var idx []int
	for k := range min(len(v), len(sp.Landmarks)) {
		if !math.IsNaN(v[k]) && v[k] >= 0 && !math.IsInf(v[k], 0) {
			idx = append(idx, k)
		}
	}
	return idx
}

// VivaldiRounds is how many passes over a host's landmark samples
// PlaceVivaldi makes.
const VivaldiRounds = 200

// PlaceVivaldi places a host by Vivaldi's spring relaxation against the
// fixed landmark coordinates (Dabek et al., SIGCOMM 2004, with heights):
// each sample moves the host along the spring to that landmark by a step
// that shrinks as the fit settles. Deterministic.
func (sp *Space) PlaceVivaldi(v Vector) (Coord, error) {
	idx := sp.measured(v)
	if len(idx) < 2 {
		return Coord{}, ErrTooFew
	}
	x := sp.start(v, idx)
	c := Coord{X: x[:sp.Dim], H: 0}
	const cc = 0.25              // Vivaldi's c_c
	u := make([]float64, sp.Dim) // unit vector from a landmark to the host
	for r := range VivaldiRounds {
		delta := cc * (1 - float64(r)/VivaldiRounds)
		for _, k := range idx {
			l := sp.Landmarks[k]
			dist := c.Dist(l)
			e := v[k] - dist // > 0: spring pushes the host away
			var norm float64
			for i := range u {
				u[i] = c.X[i] - l.X[i]
				norm += u[i] * u[i]
			}
			norm = math.Sqrt(norm)
			if norm < 1e-9 {
				u[r%sp.Dim], norm = 1, 1 // coincident: push along an axis
			}
			for i := range u {
				c.X[i] += delta * e * u[i] / norm
			}
			c.H = max(0, c.H+delta*e*0.1)
		}
	}
	return Coord{X: append([]float64(nil), c.X...), H: c.H}, nil
}

// LowerBound is Bounds' lower bound made robust to a few bad paths: the
// (drop+1)-th largest |c_k - s_k| over the landmarks both measured, so
// that the drop landmarks whose paths most contradict the others cannot
// alone push the bound up. It returns 0 when fewer than drop+1 landmarks
// measured both.
func LowerBound(c, s Vector, drop int) float64 {
	drop = max(drop, 0)
	var top [MaxLandmarks]float64
	n := 0
	for k := range min(len(c), len(s), MaxLandmarks) {
		a, b := c[k], s[k]
		if math.IsNaN(a) || math.IsNaN(b) {
			continue
		}
		top[n] = math.Abs(a - b)
		n++
	}
	if n <= drop {
		return 0
	}
	xs := top[:n]
	slices.Sort(xs)
	return xs[n-1-drop]
}

// MaxLandmarks bounds the landmarks a vector may have.
const MaxLandmarks = 64

// Repair clips each entry of v to the shortest path through another
// landmark: v_k = min(v_k, min_j v_j + d(L_j, L_k)), with lm the landmarks'
// RTTs to each other. An entry longer than that path is a detour of the
// host's route (the triangle inequality broken at the host), the main
// cause of the lower bound's violations on real data. It returns a copy.
func Repair(v Vector, lm [][]float64) Vector {
	out := slices.Clone(v)
	for k := range out {
		if math.IsNaN(out[k]) {
			continue // a repair is not a measurement
		}
		for j := range v {
			if j == k || math.IsNaN(v[j]) || j >= len(lm) || k >= len(lm[j]) || math.IsNaN(lm[j][k]) {
				continue
			}
			if via := v[j] + lm[j][k]; via < out[k] {
				out[k] = via
			}
		}
	}
	return out
}
