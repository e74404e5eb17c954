package sim

import (
	"math"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/lab/mesh"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/landmark"
	"github.com/scout-discovery/scout/latency"
)

// kmMesh is a metric mesh: 1 ms per 100 km of great circle.
func kmMesh(a, b latency.City) (float64, bool) {
	return latency.GreatCircleKm(a.Lat, a.Lon, b.Lat, b.Lon) / 100, true
}

func cities(t *testing.T, names ...string) []latency.City {
	t.Helper()
	var out []latency.City
	for _, n := range names {
		for _, c := range latency.Cities() {
			if c.Name == n {
				out = append(out, c)
				break
			}
		}
	}
	if len(out) != len(names) {
		t.Fatalf("cities %v: found %d", names, len(out))
	}
	return out
}

// TestSimulate_MeshLandmarksOnAMetricMesh: on a metric mesh with the
// server-side offsets shared by every requester, the landmark vectors keep
// the triangle inequality (give or take the measurement jitter, which a
// margin of 5 ms covers), so the plain rule finds every playable server,
// with and without the client's height, for every client.
func TestSimulate_MeshLandmarksOnAMetricMesh(t *testing.T) {
	w, err := population.Build(population.FittedVantage(population.ET, 1500, 3))
	if err != nil {
		t.Fatal(err)
	}
	p := landmark.DefaultPlanParams()
	p.Margin = 5
	ms := &MeshSpec{Latency: population.MeshLatency{Mesh: kmMesh}, Landmarks: []LandmarkSet{
		{Name: "lm3", Cities: cities(t, "Frankfurt", "NewYork", "Tokyo"), Params: p},
		{Name: "lm3h", Cities: cities(t, "Frankfurt", "NewYork", "Tokyo"), Params: p, KnowAccess: true},
		{Name: "lm3u", Cities: cities(t, "Frankfurt", "NewYork", "Tokyo"), Params: p, KnowAccess: true, Unmeasured: 0.05},
	}}
	for _, place := range []string{"AU", "JP", "CH"} {
		row, err := Simulate(Spec{Place: place, Game: population.ET, Servers: len(w.Servers), Seed: 3, World: w, Mesh: ms,
			Variants: []Variant{{"paper", adaptive.Paper()}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(row.Variants) != 4 {
			t.Fatalf("%d outcomes, want paper and 3 landmark sets", len(row.Variants))
		}
		for _, o := range row.Variants[1:] {
			if o.FoundPct != 100 || !o.Stopped || o.Probes > row.Conventional.Probes {
				t.Errorf("%s %s: %+v (playable %d)", place, o.Name, o, row.Playable)
			}
		}
		if place == "AU" && row.Variants[2].Probes > row.Variants[1].Probes {
			t.Errorf("AU: %d probes knowing the access delay, %d without", row.Variants[2].Probes, row.Variants[1].Probes)
		}
	}
}

// TestMeshRTTs_OffsetsAreTheServers: in the mesh mode a server's offsets
// are the same for every requester (unless PerPath), so the difference
// between two requesters' RTTs is the mesh's difference plus their access
// delays.
func TestMeshRTTs_OffsetsAreTheServers(t *testing.T) {
	w, err := population.Build(population.FittedVantage(population.ET, 300, 5))
	if err != nil {
		t.Fatal(err)
	}
	pl := population.Places()
	a, b := pl["AU"], pl["CH"]
	for _, perPath := range []bool{false, true} {
		ml := population.MeshLatency{Mesh: kmMesh, PerPath: perPath}
		ra, fa := w.MeshRTTs(ml, a)
		rb, fb := w.MeshRTTs(ml, b)
		if fa != 0 || fb != 0 {
			t.Fatalf("fallbacks %d %d from a full mesh", fa, fb)
		}
		differ := 0
		for i := range ra {
			c := w.City(i)
			da, _ := kmMesh(a.City, c)
			db, _ := kmMesh(b.City, c)
			offA := ra[i] - a.Access - time.Duration(da*float64(time.Millisecond))
			offB := rb[i] - b.Access - time.Duration(db*float64(time.Millisecond))
			if d := offA - offB; d > time.Microsecond || d < -time.Microsecond {
				differ++
			}
			if offA < 0 {
				t.Fatalf("server %d: negative offset %v", i, offA)
			}
		}
		if !perPath && differ > 0 || perPath && differ < len(ra)/2 {
			t.Errorf("per-path %v: %d of %d servers' offsets differ between requesters", perPath, differ, len(ra))
		}
	}
	ml := population.MeshLatency{Mesh: func(a, b latency.City) (float64, bool) { return math.NaN(), false }}
	if _, fb := w.MeshRTTs(ml, a); fb != len(w.Servers) {
		t.Errorf("empty mesh: %d fallbacks of %d", fb, len(w.Servers))
	}
}

// TestSimulate_RealMesh runs a small world on WonderProxy's mesh with the
// hub landmarks: every row has its landmark outcomes, none probes more than
// conventional discovery.
func TestSimulate_RealMesh(t *testing.T) {
	m, err := mesh.LoadWonderProxy(peer.SharedData(t, mesh.WonderProxyPings))
	if err != nil {
		t.Fatal(err)
	}
	real := m.ByCity()
	w, err := population.Build(population.FittedVantage(population.ET, 1000, 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, fb := w.MeshRTTs(population.MeshLatency{Mesh: real}, population.Places()["AU"]); fb > len(w.Servers)/20 {
		t.Errorf("%d of %d servers' city pairs missing from the mesh", fb, len(w.Servers))
	}
	p := landmark.DefaultPlanParams()
	p.Margin = 40
	ms := &MeshSpec{Latency: population.MeshLatency{Mesh: real}, Landmarks: []LandmarkSet{
		{Name: "lm8", Cities: cities(t, "Frankfurt", "NewYork", "Tokyo", "Sydney", "LosAngeles", "Singapore", "SaoPaulo", "London"), Params: p, KnowAccess: true},
	}}
	for _, place := range []string{"AU", "DE"} {
		row, err := Simulate(Spec{Place: place, Game: population.ET, Servers: len(w.Servers), Seed: 2, World: w, Mesh: ms, Variants: []Variant{}})
		if err != nil {
			t.Fatal(err)
		}
		o := row.Variants[len(row.Variants)-1]
		if o.Name != "lm8" || !o.Stopped || o.Probes > row.Conventional.Probes || o.FoundPct < 95 {
			t.Errorf("%s: %+v", place, o)
		}
	}
}
