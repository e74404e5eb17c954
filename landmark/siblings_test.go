package landmark

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/scout-discovery/scout/adaptive"
)

// siblingWorld is a metric world whose servers sit in a few sites, each
// server at its site plus a delay of its own that every path to it
// shares (a height): siblings in the sense of siblings.go.
func siblingWorld(r *rand.Rand, k, sites, perSite int) planWorld {
	w, client, lms := landmarkWorld(r, k)
	for _, s := range points(r, sites) {
		for range perSite {
			own := s
			own.H += r.Float64() * 30
			w.addServer(client, own, lms, "C")
		}
	}
	return w
}

// With exact siblings the planner skips servers (fewer probes than
// without) and misses none: a sibling's prediction is exact, and it skips
// only what is predicted at or over the threshold. Skipped servers are
// never handed out, and Skipped counts them.
func TestPlanner_SiblingsSkipExactly(t *testing.T) {
	skipped, probes := 0, 0
	for seed := range uint64(20) {
		w := siblingWorld(rand.New(rand.NewPCG(seed, 5)), 4, 12, 20)
		p := DefaultPlanParams()
		p.Threshold = slices.Sorted(slices.Values(w.true))[len(w.true)/3] // a third playable
		run := func(sib *Siblings) (sent []probed, pl *Planner) {
			p.Siblings = sib
			pl, err := NewPlanner(w.in, p, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				t.Fatal(err)
			}
			return drive(t, pl, w, 1, nil), pl
		}
		all, _ := run(nil)
		some, pl := run(&Siblings{Tolerance: 0.5})
		skipped, probes = skipped+pl.Skipped(), probes+len(all)
		if pl.Skipped() == 0 {
			t.Errorf("seed %d: nothing skipped of %d probes", seed, len(all))
		}
		if len(some)+pl.Skipped() > len(all) || len(some) > len(all) {
			t.Errorf("seed %d: %d probes and %d skipped, against %d without siblings", seed, len(some), pl.Skipped(), len(all))
		}
		probedSet := indexes(some)
		for i, d := range w.true {
			if d < p.Threshold && !probedSet[i] {
				t.Errorf("seed %d: playable server %d (%.1f ms) skipped", seed, i, d)
			}
		}
	}
	t.Logf("%d of %d probes skipped", skipped, probes)
}

// A server whose vector is not parallel to an answered one's (beyond the
// tolerance) is not its sibling; a margin keeps a prediction just over
// the threshold from skipping.
func TestSiblingIndex_Predict(t *testing.T) {
	x := newSiblingIndex(Siblings{Tolerance: 2})
	x.add(Vector{100, 150, 200}) // 0: answered at 190
	x.add(Vector{120, 170, 221}) // 1: +20 everywhere, within 1 ms
	x.add(Vector{120, 150, 200}) // 2: not parallel
	x.add(Vector{105, 155, 205}) // 3: +5
	x.observed(0, 190e6)
	if p, skip := x.predict(1, 200); !skip || p != 210 {
		t.Errorf("sibling +20: predicted %v, skip %v; want 210, skip", p, skip)
	}
	if _, skip := x.predict(2, 200); skip {
		t.Error("a vector that is not parallel was taken for a sibling")
	}
	if p, skip := x.predict(3, 200); skip || p != 195 {
		t.Errorf("sibling +5: predicted %v, skip %v; want 195, no skip", p, skip)
	}
	if _, skip := x.predict(1, 215); skip {
		t.Error("skipped under the margin")
	}
	x.p.MaxDelta = 15
	if _, skip := x.predict(1, 200); skip {
		t.Error("a sibling 20 ms behind taken with MaxDelta 15")
	}
}

// With Calibrate the adaptive planner hands the candidates out; a
// skipped one is told to it as answered with the prediction, and the run
// ends as without siblings, with fewer probes.
func TestPlanner_SiblingsWithCalibrate(t *testing.T) {
	skipped := 0
	for seed := range uint64(10) {
		w := siblingWorld(rand.New(rand.NewPCG(seed, 6)), 4, 12, 20)
		p := DefaultPlanParams()
		p.Threshold = slices.Sorted(slices.Values(w.true))[len(w.true)/3]
		sc := adaptive.Scout()
		sc.StopRTT = 0 // probe every candidate: the adaptive stop aside
		p.Calibrate = &sc
		p.Siblings = &Siblings{Tolerance: 0.5}
		pl, err := NewPlanner(w.in, p, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		probed := indexes(drive(t, pl, w, 4, nil))
		for i, d := range w.true {
			if d < p.Threshold && !probed[i] {
				t.Errorf("seed %d: playable server %d (%.1f ms) not probed", seed, i, d)
			}
		}
		skipped += pl.Skipped()
	}
	if skipped == 0 {
		t.Error("nothing skipped")
	}
}
