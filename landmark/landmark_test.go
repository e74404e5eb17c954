package landmark

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// points returns n random hosts of a 2-D space with heights, and their
// true distances: a metric, where the triangle inequality holds.
func points(r *rand.Rand, n int) []Coord {
	out := make([]Coord, n)
	for i := range out {
		out[i] = Coord{X: []float64{r.Float64() * 300, r.Float64() * 150}, H: r.Float64() * 10}
	}
	return out
}

func vectorOf(c Coord, lms []Coord) Vector {
	v := make(Vector, len(lms))
	for k, l := range lms {
		v[k] = c.Dist(l)
	}
	return v
}

func TestBounds_HoldInAMetricSpace(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lms := points(r, 5)
	hosts := points(r, 60)
	for i, a := range hosts {
		for _, b := range hosts[i+1:] {
			lo, hi, n := Bounds(vectorOf(a, lms), vectorOf(b, lms))
			d := a.Dist(b)
			// heights make d(a,b) = |x|+ha+hb, still a metric off the diagonal
			if n != 5 || lo > d+1e-9 || hi < d-1e-9 {
				t.Fatalf("d=%v outside [%v, %v] (n=%d)", d, lo, hi, n)
			}
		}
	}
}

func TestBounds_SkipsUnmeasured(t *testing.T) {
	nan := math.NaN()
	lo, hi, n := Bounds(Vector{10, nan, 50}, Vector{30, 5, nan})
	if lo != 20 || hi != 40 || n != 1 {
		t.Errorf("got %v %v %d, want 20 40 1", lo, hi, n)
	}
	lo, hi, n = Bounds(Vector{nan}, Vector{1})
	if lo != 0 || !math.IsInf(hi, 1) || n != 0 {
		t.Errorf("nothing in common: %v %v %d", lo, hi, n)
	}
}

func TestLowerBound_DropLeavesOutTheLargest(t *testing.T) {
	c, s := Vector{100, 10, 50, math.NaN()}, Vector{10, 15, 20, 7}
	if lo, _, _ := Bounds(c, s); LowerBound(c, s, 0) != lo {
		t.Errorf("drop 0: %v, Bounds says %v", LowerBound(c, s, 0), lo)
	}
	if got := LowerBound(c, s, 1); got != 30 {
		t.Errorf("drop 1: %v, want 30 (90 left out)", got)
	}
	if got := LowerBound(c, s, 3); got != 0 {
		t.Errorf("drop 3 of 3: %v, want 0", got)
	}
}

func TestRepair_ClipsADetour(t *testing.T) {
	lm := [][]float64{{0, 20}, {20, 0}}
	// The host is 10 ms from landmark 0, which is 20 ms from landmark 1,
	// yet measured 200 ms to landmark 1: a detour, clipped to 30.
	got := Repair(Vector{10, 200}, lm)
	if got[0] != 10 || got[1] != 30 {
		t.Errorf("got %v, want [10 30]", got)
	}
	got = Repair(Vector{math.NaN(), 200}, lm)
	if !math.IsNaN(got[0]) || got[1] != 200 {
		t.Errorf("got %v: an unmeasured entry neither fills in nor repairs", got)
	}
}

func TestFitSpace_RecoversAMetricSpace(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lms := points(r, 6)
	d := make([][]float64, len(lms))
	for i := range lms {
		d[i] = make([]float64, len(lms))
		for j := range lms {
			if i != j {
				d[i][j] = lms[i].Dist(lms[j])
			}
		}
	}
	sp, err := FitSpace(d, 2)
	if err != nil {
		t.Fatal(err)
	}
	hosts := points(r, 30)
	var relGNP, relViv []float64
	placed := make([]Coord, len(hosts))
	viv := make([]Coord, len(hosts))
	for i, h := range hosts {
		if placed[i], err = sp.Place(vectorOf(h, lms)); err != nil {
			t.Fatal(err)
		}
		if viv[i], err = sp.PlaceVivaldi(vectorOf(h, lms)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range hosts {
		for j := i + 1; j < len(hosts); j++ {
			d := hosts[i].Dist(hosts[j])
			relGNP = append(relGNP, math.Abs(placed[i].Dist(placed[j])-d)/d)
			relViv = append(relViv, math.Abs(viv[i].Dist(viv[j])-d)/d)
		}
	}
	if m := median(relGNP); m > 0.10 {
		t.Errorf("GNP median relative error %.3f in an exact 2-D space", m)
	}
	if m := median(relViv); m > 0.20 {
		t.Errorf("Vivaldi median relative error %.3f in an exact 2-D space", m)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func TestFitSpace_BadInput(t *testing.T) {
	if _, err := FitSpace([][]float64{{0, 1}, {1}}, 1); err == nil {
		t.Error("ragged matrix accepted")
	}
	if _, err := FitSpace([][]float64{{0, -1}, {-1, 0}}, 1); err == nil {
		t.Error("negative RTT accepted")
	}
	if _, err := FitSpace([][]float64{{0}}, 1); err == nil {
		t.Error("one landmark accepted")
	}
	if _, err := FitSpace([][]float64{{0, 1}, {1, 0}}, MaxDim+1); err == nil {
		t.Error("dimension past MaxDim accepted")
	}
	sp, err := FitSpace([][]float64{{0, 10, 20}, {10, 0, 15}, {20, 15, 0}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Place(Vector{5, math.NaN(), math.NaN()}); err != ErrTooFew {
		t.Errorf("one measurement: %v, want ErrTooFew", err)
	}
}

// FuzzBounds: any vectors give bounds and never panic; with one landmark
// (where no other path can contradict) lo <= hi for non-negative RTTs.
func FuzzBounds(f *testing.F) {
	f.Add(10.0, 20.0, 30.0, 5.0, 0)
	f.Add(math.NaN(), math.Inf(1), -3.0, 1e308, 2)
	f.Fuzz(func(t *testing.T, a, b, c, d float64, drop int) {
		x, y := Vector{a, b}, Vector{c, d}
		Bounds(x, y)
		if lo, hi, n := Bounds(Vector{a}, Vector{c}); n == 1 && a >= 0 && c >= 0 && lo > hi {
			t.Fatalf("one landmark: lo %v > hi %v", lo, hi)
		}
		_ = LowerBound(x, y, drop)
		_ = Repair(x, [][]float64{{0, c}, {c, 0}})
	})
}
