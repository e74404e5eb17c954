package main

import (
	"math/rand/v2"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/demo"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/landmark"
)

// demoLandmarkPlan is the demo's landmark run: scout servers --order
// landmarks' planner (landmarkInput, landmarkMargin, its seed stream),
// auto-stopping at autoStop.
func demoLandmarkPlan(autoStop time.Duration, seed uint64) demo.LandmarkPlan {
	return func(ts []adaptive.Target, reps []discover.MasterReport) (adaptive.Strategy, error) {
		in, _ := landmarkInput(ts, reps)
		return landmark.NewPlanner(in, landmarkPlanParams(autoStop), rand.New(rand.NewPCG(seed, 0x1a4d)))
	}
}
