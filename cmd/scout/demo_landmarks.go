package main

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/lab/demo"
	"github.com/scout-discovery/scout/landmark"
)

// demoLandmarkPlan is the demo's landmark run: scout servers --order
// landmarks' planner (landmarkInput, landmarkMargin, its seed stream),
// auto-stopping at autoStop; it says which landmarks' RTTs to each other
// the planner was given, measured by the masters or derived.
func demoLandmarkPlan(autoStop time.Duration, seed uint64) demo.LandmarkPlan {
	return func(ts []adaptive.Target, reps []discover.MasterReport) (adaptive.Strategy, demo.LandmarkMatrix, error) {
		in, names := landmarkInput(ts, reps)
		m := demo.LandmarkMatrix{Landmarks: names, Derived: in.LandmarksDerived}
		for _, row := range in.Landmarks {
			var r []time.Duration
			for _, v := range row {
				d := time.Duration(-1) // unknown
				if !math.IsNaN(v) {
					d = time.Duration(v * float64(time.Millisecond))
				}
				r = append(r, d)
			}
			m.RTTs = append(m.RTTs, r)
		}
		st, err := landmark.NewPlanner(in, landmarkPlanParams(autoStop), rand.New(rand.NewPCG(seed, 0x1a4d)))
		return st, m, err
	}
}
