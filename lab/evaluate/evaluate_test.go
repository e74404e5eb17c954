package evaluate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/lab/mesh"
)

// planar returns a mesh of n cities on a plane, RTT = distance: a metric,
// so no bound is ever violated. Cities 0-7 carry the hub names.
func planar(n int) *mesh.Mesh {
	r := rand.New(rand.NewPCG(7, 8))
	m := &mesh.Mesh{Matrix: mesh.NewMatrix(n)}
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range n {
		xs[i], ys[i] = r.Float64()*400, r.Float64()*200
		name := "c" + string(rune('A'+i%26)) + string(rune('A'+i/26))
		if i < len(HubCities) {
			name = HubCities[i]
		}
		m.Cities = append(m.Cities, mesh.City{ID: i, Name: name, Country: "XX"})
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			m.Set(i, j, math.Hypot(xs[i]-xs[j], ys[i]-ys[j]))
		}
	}
	return m
}

func TestRun_MetricMeshHasNoViolationAndNoMiss(t *testing.T) {
	m := planar(60)
	for _, rule := range []Rule{KCenter, Hubs} {
		r, err := Run(m, 4, rule, Options{Clients: []string{"cAC", "cBC"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Low.Share != 0 || r.High.Share != 0 || r.Margin != 0 || r.MissedHeldOut != 0 {
			t.Errorf("%s: violations %v/%v margin %v missed %d in a metric space", rule, r.Low.Share, r.High.Share, r.Margin, r.MissedHeldOut)
		}
		for _, c := range r.Costs {
			if c.Missed != 0 || c.Probed < c.Oracle {
				t.Errorf("%s %s: %+v", rule, c.Client, c)
			}
		}
		if r.Est[GNP].RankCorr < 0.9 {
			t.Errorf("%s: GNP rank correlation %.3f on a plane", rule, r.Est[GNP].RankCorr)
		}
	}
}

func TestPlace_KCenterSpreads(t *testing.T) {
	m := planar(40)
	lms, err := Place(m, 3, KCenter)
	if err != nil {
		t.Fatal(err)
	}
	// Each landmark after the first is the city farthest from those before.
	for step := 1; step < len(lms); step++ {
		far := func(c int) float64 {
			d := math.Inf(1)
			for _, l := range lms[:step] {
				d = min(d, m.RTT(c, l))
			}
			return d
		}
		for c := range m.Len() {
			if far(c) > far(lms[step])+1e-9 {
				t.Fatalf("landmark %d is not the farthest city", step)
			}
		}
	}
	if _, err := Place(m, 0, KCenter); err == nil {
		t.Error("0 landmarks accepted")
	}
	if _, err := Place(m, 2, "nearest"); err == nil {
		t.Error("unknown rule accepted")
	}
}

func TestRun_RealMesh(t *testing.T) {
	m, err := mesh.LoadWonderProxy(peer.SharedData(t, mesh.WonderProxyPings))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(m, 3, Hubs, Options{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Costs) != 4 || r.Pairs < 50000 {
		t.Errorf("%d costs, %d pairs", len(r.Costs), r.Pairs)
	}
	lms, err := Place(m, 3, Hubs)
	if err != nil {
		t.Fatal(err)
	}
	if mg, err := StopMargin(m, lms, Options{Repair: true}); err != nil || mg != r.Margin || mg <= 0 {
		t.Errorf("StopMargin %v (%v), Run's margin %v", mg, err, r.Margin)
	}
}

// With KeepClient a client's own detour to a landmark stays in its
// vector: on a planar mesh where one client's RTT to the second landmark
// is made a 2,000 ms detour, the repaired vector clips it through the first
// landmark, the kept one violates the lower bound for more of that
// client's pairs and the margin grows.
func TestRunAt_KeepClientKeepsTheClientsDetour(t *testing.T) {
	m := planar(40)
	lms := []int{0, 1}
	const client = 10
	m.Set(client, lms[1], 2000) // more than any path through the other landmark on the plane
	rep, err := RunAt(m, lms, Options{Repair: true, Clients: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := RunAt(m, lms, Options{Repair: true, KeepClient: true, Clients: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if kept.Low.Share <= rep.Low.Share {
		t.Errorf("lower bound violated for %.4f of the pairs kept, %.4f repaired: want more kept", kept.Low.Share, rep.Low.Share)
	}
	mr, err := StopMargin(m, lms, Options{Repair: true, MarginQuantile: 1})
	if err != nil {
		t.Fatal(err)
	}
	mk, err := StopMargin(m, lms, Options{Repair: true, KeepClient: true, MarginQuantile: 1})
	if err != nil {
		t.Fatal(err)
	}
	if mk <= mr {
		t.Errorf("margin %.1f ms kept, %.1f repaired: want larger kept", mk, mr)
	}
}
