package landmark

import (
	"math"
	"math/rand/v2"
	"testing"
)

// In a metric space every server path L_j -> s -> L_k is at least the
// landmarks' distance, and a server sitting at a landmark (no height)
// makes it exact.
func TestMatrixFromVectors_UpperBoundExactAtALandmark(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lms := points(r, 5)
	hosts := points(r, 40)
	var vs []Vector
	for _, h := range hosts {
		vs = append(vs, vectorOf(h, lms))
	}
	lm := MatrixFromVectors(vs, len(lms))
	for j := range lms {
		for k := range lms {
			d := lms[j].Dist(lms[k])
			if j == k {
				d = 0
			}
			if lm[j][k] < d-1e-9 {
				t.Fatalf("(%d,%d): %v under the true %v", j, k, lm[j][k], d)
			}
		}
	}
	at := Coord{X: lms[2].X} // at landmark 2, height 0
	lm = MatrixFromVectors(append(vs, vectorOf(at, lms)), len(lms))
	for k := range lms {
		if d := lms[2].Dist(lms[k]); k != 2 && math.Abs(lm[2][k]-d) > 1e-9 {
			t.Errorf("(2,%d) = %v with a server at landmark 2, want %v", k, lm[2][k], d)
		}
	}
}

func TestMatrixFromVectors_NaNWhereNoServerSharesTwoLandmarks(t *testing.T) {
	nan := math.NaN()
	lm := MatrixFromVectors([]Vector{{10, nan, 40}, {nan, 5, nan}, {20, nan, 25}}, 3)
	if lm[0][2] != 45 || lm[2][0] != 45 || lm[1][1] != 0 || !math.IsNaN(lm[0][1]) || !math.IsNaN(lm[1][2]) {
		t.Errorf("got %v", lm)
	}
}

// In a metric space with 8 random landmarks the estimate stays within
// 25 ms above the true height (it overstates it by up to 19.5 ms here:
// the pairs by half the client's detour off the best pair's line, the
// embedding by its fit's error); without enough landmarks to place the
// client it is 0.
func TestAccessHeight_NearTheTrueHeight(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	lms := points(r, 8)
	d := make([][]float64, len(lms))
	for j := range d {
		d[j] = make([]float64, len(lms))
		for k := range d[j] {
			if j != k {
				d[j][k] = lms[j].Dist(lms[k])
			}
		}
	}
	var worst float64
	for range 50 {
		c := Coord{X: []float64{r.Float64() * 300, r.Float64() * 150}, H: 5 + r.Float64()*30}
		h := AccessHeight(vectorOf(c, lms), d)
		if h < 0 || h > c.H+25 {
			t.Fatalf("height %v for a true %v", h, c.H)
		}
		worst = max(worst, h-c.H)
	}
	t.Logf("largest overstatement %.1f ms", worst)
	c := Coord{X: []float64{10, 10}, H: 20}
	three := [][]float64{d[0][:3], d[1][:3], d[2][:3]}
	if h := AccessHeight(vectorOf(c, lms[:3]), three); h != 0 {
		t.Errorf("3 landmarks: %v, want 0 (the space cannot place the client)", h)
	}
	if h := AccessHeight(Vector{math.NaN(), 10}, [][]float64{{0, 50}, {50, 0}}); h != 0 {
		t.Errorf("one measured landmark: %v, want 0", h)
	}
}

// With fewer than MinEmbedLandmarks landmarks the embedding is not trusted
// and the estimate is 0, whatever the pairs say.
func TestAccessHeight_TooFewLandmarksToEmbed(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for k := 3; k < MinEmbedLandmarks; k++ {
		lms := points(r, k)
		d := make([][]float64, k)
		for j := range d {
			d[j] = make([]float64, k)
			for o := range d[j] {
				if j != o {
					d[j][o] = lms[j].Dist(lms[o])
				}
			}
		}
		c := Coord{X: []float64{400, 400}, H: 5}
		if h := AccessHeight(vectorOf(c, lms), d); h != 0 {
			t.Errorf("%d landmarks: %v, want 0", k, h)
		}
	}
}
