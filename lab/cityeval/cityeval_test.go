package cityeval

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/latency"
)

func cities(t *testing.T, names ...string) []latency.City {
	t.Helper()
	var out []latency.City
	for _, n := range names {
		for _, c := range latency.Cities() {
			if c.Name == n {
				out = append(out, c)
			}
		}
	}
	if len(out) != len(names) {
		t.Fatalf("cities %v: %d found", names, len(out))
	}
	return out
}

// small is the CI configuration: the fitted latency model (no data), 600
// Enemy Territory servers, clients on every continent, near and far.
func small(t *testing.T) Config {
	return Config{
		Game: population.ET, Servers: 600, Access: 20 * time.Millisecond, Landmarks: 8, BoundMargin: math.NaN(),
		ReportCities: cities(t, "Seoul", "Johannesburg", "Santiago", "Lagos", "Perth", "Reykjavik", "Honolulu", "Vladivostok", "Zurich", "Dallas"),
		ReportSeeds:  []uint64{1, 2},
		Models:       []Model{Shared, PerPath},
	}
}

// TestRun_DefaultStrategiesFindThePlayableServers is the found-rate floor
// on a small configuration: the product's default strategies (with and
// without landmark masters) and their remembered runs find at least
// MinFound of the playable servers for every client city and seed, in
// both models.
func TestRun_DefaultStrategiesFindThePlayableServers(t *testing.T) {
	rep, err := Run(context.Background(), small(t))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range rep.Results {
		switch r.Strategy {
		case ScoutGroups, Landmarks, ScoutGroups + Remembered, Landmarks + Remembered:
		default:
			continue
		}
		checked++
		for _, c := range r.Cities {
			if c.FoundWorst < MinFound {
				t.Errorf("%s, %s: %s found %.1f%% on seed %d; misses %+v", r.Strategy, r.Model, c.Name, c.FoundWorst, c.WorstSeed, c.Misses)
			}
		}
		if r.Summary.Cities != 10 {
			t.Errorf("%s, %s: %d cities", r.Strategy, r.Model, r.Summary.Cities)
		}
	}
	if checked != 8 {
		t.Errorf("%d default strategy results, want 4 in 2 models", checked)
	}
	b, _ := json.Marshal(rep)
	t.Logf("%d bytes of JSON", len(b))
}
