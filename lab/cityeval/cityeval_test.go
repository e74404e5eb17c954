package cityeval

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/latency"
)

func cities(t *testing.T, names ...string) []latency.City {
	t.Helper()
	out, err := Named(strings.Join(names, ","))
	if err != nil {
		t.Fatal(err)
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

// TestRun_ExplainsTheMisses: in the small configuration the landmark
// order as it was (the bound alone, margin 0 without the mesh) leaves out
// playable servers, and the report says which and why: left out by the
// bound, their lower bound over the threshold though their RTT is under
// it. The defaults do not (the floor is checked through the command's
// JSON: scout-lab's TestEvaluate_FoundFloor).
func TestRun_ExplainsTheMisses(t *testing.T) {
	rep, err := Run(context.Background(), small(t))
	if err != nil {
		t.Fatal(err)
	}
	explained := 0
	for _, r := range rep.Results {
		for _, c := range r.Cities {
			if c.FoundWorst < MinFound && len(c.Misses) == 0 {
				t.Errorf("%s %s %s: %.1f%% found, no miss explained", r.Model, r.Strategy, c.Name, c.FoundWorst)
			}
			for _, m := range c.Misses {
				if r.Strategy != BoundOnly {
					continue
				}
				if m.Why != WhyBound || m.FigureMs == nil || m.FigureMs[0] < ms(Playable) || m.TrueMs[1] >= ms(Playable) || m.Servers < 1 || m.Seeds < 1 {
					t.Errorf("%s %s: miss %+v", r.Strategy, c.Name, m)
				}
				explained++
			}
		}
	}
	if explained == 0 {
		t.Error("the bound alone missed nothing: the small configuration no longer tells a safe strategy from an unsafe one")
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
}
