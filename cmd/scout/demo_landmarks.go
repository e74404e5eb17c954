package main

import (
	"math"
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
		p := landmark.DefaultPlanParams()
		p.Margin = landmarkMargin
		p.Threshold = ms(autoStop)
		if autoStop == 0 {
			p.Threshold = math.Inf(1)
		}
		return landmark.NewPlanner(in, p, rand.New(rand.NewPCG(seed, 0x1a4d)))
	}
}
