//go:build linux

package demo

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/geo"

	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/sim"
	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/latency"
)

// TestDemo_SimulatedFigures runs the demo's runs of TestDemo_Invariants'
// world (300 servers, seed 5, seen from Melbourne) on the simulator: the
// same servers, their true RTTs, the demo's window, timeout and loss, the
// servers placed by the same geolocation, the same planners with the same
// seeds, and the landmark run with the landmark masters' true RTTs to
// every server, the player's to each master and theirs to each other
// (the model's between their cities, as the demo's masters measure and
// publish them). It checks the figures the
// live test asserted until its auto-stops on real sockets were found to
// move with the machine's load (a scout run stopped after 9 of 50
// playable servers, a paper run probed all 300 and sent 305 probes to
// conventional's 303), and more exactly, since here nothing moves: under
// ten draws of the jitter and the loss (the simulator's: a lost server is
// silent), each run finds every playable server that answers, the scout
// variant and the landmark run stop with fewer probes than conventional's
// one per server, and the paper's variant never probes more than
// conventional and stops before it in nine draws of ten (its stop rule,
// the 2nd percentile of the last 100, misses on one: it probes all 300
// then, which is also why the live test cannot ask it to stop early).
func TestDemo_SimulatedFigures(t *testing.T) {
	cfg := Config{Servers: 300, Seed: 5}
	w, place, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopRTT := adaptive.Paper().StopRTT
	ts := make([]adaptive.Target, len(w.Servers))
	rtts := make([]time.Duration, len(w.Servers))
	for i, s := range w.Servers {
		ts[i] = adaptive.Target{Addr: s.Public, Index: i}
		if info, ok := geo.Default().Lookup(s.Public.Addr()); ok {
			ts[i].Country, ts[i].ASN = info.Country, info.ASN
		}
		rtts[i] = time.Duration(s.Link.RTT)
	}
	// The landmark masters' reports: each one's RTT to every server is its
	// city's in the world's model (as the emulator gives it), the
	// player's RTT to it the demo's relay delay.
	pop, err := population.Build(population.FittedVantage(population.ET, cfg.Servers, cfg.Seed))
	if err != nil {
		t.Fatal(err)
	}
	cities := citiesByName()
	city := func(name string) latency.City {
		c, ok := cities[name]
		if !ok {
			t.Fatalf("no city %s", name)
		}
		return c
	}
	var reps []discover.MasterReport
	for _, name := range DefaultLandmarks {
		c := city(name)
		lrtts := pop.RTTs(population.Place{Name: "landmark/" + c.Country + "/" + c.Name, City: c})
		m := map[netip.AddrPort]time.Duration{}
		for i, s := range w.Servers {
			m[s.Public] = min(lrtts[i], world.MaxRTT)
		}
		reps = append(reps, discover.MasterReport{Name: name, Landmark: name, LandmarkRTTs: m,
			RTT: place.Access + latency.CityRTT(place.City, c)})
	}
	// And each one's RTTs to the others, as the demo's masters measure
	// and publish them: the model's between the two cities.
	for j := range reps {
		row := map[string]time.Duration{}
		for k := range reps {
			if k != j {
				row[reps[k].Landmark] = latency.CityRTT(city(reps[j].Landmark), city(reps[k].Landmark))
			}
		}
		reps[j].PeerRTTs = map[string]map[string]time.Duration{reps[j].Landmark: row}
	}

	run := func(st adaptive.Strategy, seed uint64) *sim.Result {
		t.Helper()
		r, err := sim.Run(st, sim.Input{Targets: ts, RTTs: rtts, Seed: seed, Playable: stopRTT,
			Pacing: sim.Pacing{Window: 16, Timeout: DefaultTimeout, Loss: DefaultLoss}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	variants := DefaultVariants(stopRTT)
	paperEarly := 0
	for seed := range uint64(10) {
		conv, err := adaptive.NewConventional(ts)
		if err != nil {
			t.Fatal(err)
		}
		c := run(conv, seed)
		if c.Sent != len(ts) || c.Found != c.Playable {
			t.Fatalf("draw %d: conventional sent %d and found %d of %d", seed, c.Sent, c.Found, c.Playable)
		}
		// The demo's planners, seeded as Demo seeds them.
		var got []string
		for k, v := range variants {
			pl, err := adaptive.New(ts, v.Params, rand.New(rand.NewPCG(cfg.Seed, 0xad+uint64(k))))
			if err != nil {
				t.Fatal(err)
			}
			a := run(pl, seed)
			got = append(got, v.Name+": "+figures(a))
			switch v.Params.ClusterBy {
			case adaptive.Paper().ClusterBy:
				if a.Sent > c.Sent || a.Found != c.Playable {
					t.Errorf("draw %d: %s sent %d probes (conventional %d) and found %d of %d", seed, v.Name, a.Sent, c.Sent, a.Found, c.Playable)
				}
				if a.Sent < c.Sent {
					paperEarly++
				}
			default:
				if !a.Stopped || a.Sent >= c.Sent || a.Found != c.Playable {
					t.Errorf("draw %d: %s stopped %v after %d probes (conventional %d), found %d of %d", seed, v.Name, a.Stopped, a.Sent, c.Sent, a.Found, c.Playable)
				}
			}
		}
		lp, lm, err := landmarkPlan(ts, reps, stopRTT, cfg.Seed, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if lm.Derived || len(lm.Landmarks) != len(reps) {
			t.Fatalf("the landmark run's matrix: %+v, want the %d landmarks' published RTTs", lm, len(reps))
		}
		l := run(lp, seed)
		got = append(got, "landmarks: "+figures(l))
		if !l.Stopped || l.Sent >= c.Sent || l.Found != c.Playable {
			t.Errorf("draw %d: landmarks stopped %v after %d probes (conventional %d), found %d of %d", seed, l.Stopped, l.Sent, c.Sent, l.Found, c.Playable)
		}
		t.Logf("draw %d: %d playable answering; %v", seed, c.Playable, got)
	}
	if paperEarly != 9 {
		t.Errorf("the paper's variant stopped before conventional's end in %d draws of 10, want 9", paperEarly)
	}
}

// figures is a simulated run's probes, stop and finds, for the log.
func figures(r *sim.Result) string {
	return fmt.Sprintf("%d probes, stopped %v, found %d of %d", r.Sent, r.Stopped, r.Found, r.Playable)
}

// citiesByName is the latency model's cities by name.
func citiesByName() map[string]latency.City {
	city := map[string]latency.City{}
	for _, c := range latency.Cities() {
		city[c.Name] = c
	}
	return city
}
