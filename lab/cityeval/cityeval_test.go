package cityeval

import (
	"context"
	"encoding/json"
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
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

// TestRun_SiteFloorIsAFloor: the site floor bounds the first runs of the
// safe strategies from below, city by city; if a default found every
// playable server with fewer probes, the floor's premise (a site is ruled
// out only by measuring it) would be false and the row would mislead.
func TestRun_SiteFloorIsAFloor(t *testing.T) {
	rep, err := Run(context.Background(), small(t))
	if err != nil {
		t.Fatal(err)
	}
	floors := map[Model]map[string]City{}
	for _, r := range rep.Results {
		if r.Strategy != SiteFloor {
			continue
		}
		floors[r.Model] = map[string]City{}
		for _, c := range r.Cities {
			if c.FoundWorst != 100 || c.RatioMedian < 1 {
				t.Errorf("%s, %s: floor %+v", r.Model, c.Name, c)
			}
			floors[r.Model][c.Name] = c
		}
	}
	if len(floors) != 2 {
		t.Fatalf("site floor in %d models, want 2", len(floors))
	}
	above := 0
	for _, r := range rep.Results {
		if r.Strategy != ScoutGroups && r.Strategy != Landmarks {
			continue
		}
		for _, c := range r.Cities {
			f := floors[r.Model][c.Name]
			if c.RatioMedian < f.RatioMedian {
				t.Errorf("%s, %s, %s: %.2f× the oracle's probes, under the site floor's %.2f×", r.Model, r.Strategy, c.Name, c.RatioMedian, f.RatioMedian)
			}
			if f.RatioMedian > 1 {
				above++
			}
		}
	}
	if above == 0 {
		t.Error("the site floor is the oracle's count everywhere: no client has a site to rule out")
	}
}

// TestRun_SitesCounted: the site floor's two counts on a hand-made run.
func TestRun_SitesCounted(t *testing.T) {
	ms := time.Millisecond
	r := run{
		targets: []adaptive.Target{
			{Addr: netip.MustParseAddrPort("192.0.2.1:27960"), Country: "DE", ASN: 1},    // playable
			{Addr: netip.MustParseAddrPort("192.0.2.2:27960"), Country: "DE", ASN: 1},    // same site, far
			{Addr: netip.MustParseAddrPort("198.51.100.1:27960"), Country: "DE", ASN: 2}, // far AS of a mixed country
			{Addr: netip.MustParseAddrPort("203.0.113.1:27960"), Country: "FR", ASN: 3},  // far, under MixedFar
			{Addr: netip.MustParseAddrPort("203.0.113.2:27960"), Country: "FR", ASN: 4},  // far
		},
		rtts: []time.Duration{150 * ms, 300 * ms, MixedFar, 230 * ms, 400 * ms},
	}
	if n := r.unplayableSites(); n != 3 {
		t.Errorf("%d unplayable sites, want 3 (DE/2, FR/3, FR/4)", n)
	}
	if n := r.mixedCountries(); n != 1 {
		t.Errorf("%d mixed countries, want 1 (DE)", n)
	}
	r.rtts[2] = MixedFar - ms
	if n := r.mixedCountries(); n != 0 {
		t.Errorf("%d mixed countries with DE's far AS under %v, want 0", n, MixedFar)
	}
}
