package evaluate

import (
	"math"
	"testing"

	"github.com/scout-discovery/scout/lab/mesh"
)

// TestPathStability_SetsTheWorstNodesApart: on four nodes whose paths
// repeat to the ms but those of one node, which differ by 30 ms one way
// from the other, the worst node is that one and without it no pair
// differs.
func TestPathStability_SetsTheWorstNodesApart(t *testing.T) {
	n := 4
	d := &mesh.Directions{Cities: []mesh.City{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "bad"}},
		Min: make([]float64, n*n), Avg: make([]float64, n*n), Max: make([]float64, n*n)}
	for i := range n {
		for j := range n {
			k := i*n + j
			if i == j {
				d.Min[k], d.Avg[k], d.Max[k] = math.NaN(), math.NaN(), math.NaN()
				continue
			}
			d.Min[k], d.Avg[k], d.Max[k] = 100, 101, 110
			if i == 3 {
				d.Min[k] = 130
			}
		}
	}
	s := PathStability(d, 1)
	if s.Pairs != 6 || len(s.Worst) != 1 || s.Worst[0].Name != "bad" || s.Worst[0].Pairs != 3 {
		t.Fatalf("%+v", s)
	}
	if s.Over20 != 0.5 || s.BestOver5 != 0 || s.Spread[0] != 1 || s.Range[0] != 10 {
		t.Errorf("over 20 ms %v (want 0.5), without the worst over 5 ms %v, spread %v, range %v", s.Over20, s.BestOver5, s.Spread, s.Range)
	}
}
