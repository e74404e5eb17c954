package discover

import (
	"maps"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/landmark"
)

// The landmark client's plan: from the masters' reports of a run with
// Config.Landmarks (their published RTTs to the servers and to each other,
// and the client's own RTT to each) to the landmark planner
// (landmark.Planner) that orders and stops the probes. scout servers
// --order landmarks and the demo's landmark run both build theirs here.

// LandmarkMargin is the landmark plan's safety margin (ms) for the
// triangle inequality's violations: the real-mesh evaluation's for three
// hub landmarks at the 0.999 quantile (EVALUATION.md, "Landmarks":
// Frankfurt, New York, Tokyo).
const LandmarkMargin = 54

// landmarkSeedStream is the planner's random stream for a given seed.
const landmarkSeedStream = 0x1a4d

// LandmarkPlanParams are the landmark plan's planner constants for an
// auto-stop at autoStop: LandmarkMargin, the threshold (none for 0: the
// largest float, which the planner takes, where +Inf it refuses), for the
// servers no landmark measured adaptive.Scout's constants with the same
// RTTstop, and the site check (landmark.DefaultSites): the bound only
// orders, and sites are ruled out by measuring them, never by the bound
// alone. Sibling skipping is off (a caller may set
// landmark.DefaultSiblings): it skips on one answer, and one answer can
// sit tens of ms over its path's RTT (EVALUATION.md, "Safe by default").
//
// Repair clips the client's own vector too when the matrix is measured,
// as the margin was fitted (EVALUATION.md, "Leaving the client's own
// vector unrepaired": on the real mesh keeping it raises the violations
// and the margin); a derived matrix leaves it alone
// (landmark.PlanInput.LandmarksDerived).
func LandmarkPlanParams(autoStop time.Duration) landmark.PlanParams {
	p := landmark.DefaultPlanParams()
	p.Margin = LandmarkMargin
	p.Threshold = millis(autoStop)
	if autoStop == 0 {
		p.Threshold = math.MaxFloat64
	}
	ap := adaptive.Scout()
	ap.StopRTT = autoStop
	p.Unknown = &ap
	sites := landmark.DefaultSites()
	p.Sites = &sites
	return p
}

// LandmarkPlan is a landmark run's planner and what it was built from.
type LandmarkPlan struct {
	Planner *landmark.Planner
	// Input is the planner's input: the landmarks' RTTs to each other
	// (Input.Landmarks, and whether some were derived), the client's
	// access delay (Input.ClientHeight).
	Input landmark.PlanInput
	// Landmarks are the landmarks' ids, in the input's order.
	Landmarks []string
}

// PlanLandmarks builds the landmark planner for targets from the masters'
// reports (LandmarkInput) with the constants p, its random choices drawn
// from seed; remembered and known, if not nil, are the client's memory
// per target (landmark.PlanInput.Remembered and Known; Remembered,
// KnownTargets).
func PlanLandmarks(targets []adaptive.Target, reports []MasterReport, p landmark.PlanParams, seed uint64, remembered []float64, known []bool) (LandmarkPlan, error) {
	in, names := LandmarkInput(targets, reports)
	in.Remembered, in.Known = remembered, known
	pl, err := landmark.NewPlanner(in, p, rand.New(rand.NewPCG(seed, landmarkSeedStream)))
	return LandmarkPlan{Planner: pl, Input: in, Landmarks: names}, err
}

// LandmarkInput builds the landmark planner's input from the masters'
// reports: each master that answered as a landmark is one, and the
// client's RTT to it is the least of its list query's round trip and its
// pings' (MasterReport.BestRTT); the other landmarks a master published (a
// fleet instance's peers, MasterReport.OtherLandmarks) are more, with no
// client RTT: they serve Repair and the landmarks' matrix. A server's
// vector holds each landmark's published RTT to it, NaN where that
// landmark has not measured it. The landmarks' RTTs to each other, for
// Repair, are the ones the masters measured and published
// (MasterReport.PeerRTTs: the smaller of the two directions); a pair none
// measured is bounded from the servers' vectors instead
// (landmark.MatrixFromVectors: no packet more), and the input then says
// the matrix was derived. The client's access delay is estimated from its
// vector and that matrix (landmark.AccessHeight). At most
// landmark.MaxLandmarks landmarks are used, the measured ones first. It
// returns the landmarks' ids in the input's order.
func LandmarkInput(ts []adaptive.Target, reps []MasterReport) (landmark.PlanInput, []string) {
	in := landmark.PlanInput{Targets: ts}
	var names []string
	var rtts []map[netip.AddrPort]time.Duration
	index := map[string]int{}
	add := func(id string, client float64, m map[netip.AddrPort]time.Duration) {
		if k, ok := index[id]; ok {
			if math.IsNaN(in.Client[k]) && !math.IsNaN(client) {
				in.Client[k], rtts[k] = client, m
			}
			return
		}
		if len(names) >= landmark.MaxLandmarks {
			return
		}
		index[id] = len(names)
		names = append(names, id)
		in.Client = append(in.Client, client)
		rtts = append(rtts, m)
	}
	for _, r := range reps {
		if r.Landmark != "" && r.BestRTT() > 0 {
			add(r.Landmark, millis(r.BestRTT()), r.LandmarkRTTs)
		}
	}
	for _, r := range reps {
		if r.Landmark != "" && r.BestRTT() <= 0 {
			add(r.Landmark, math.NaN(), r.LandmarkRTTs)
		}
		for _, id := range slices.Sorted(maps.Keys(r.OtherLandmarks)) {
			add(id, math.NaN(), r.OtherLandmarks[id])
		}
	}
	in.Vectors = make([]landmark.Vector, len(ts))
	for i, t := range ts {
		v := make(landmark.Vector, len(names))
		for k, m := range rtts {
			v[k] = math.NaN()
			if d, ok := m[t.Addr]; ok {
				v[k] = millis(d)
			}
		}
		in.Vectors[i] = v
	}
	in.Landmarks, in.LandmarksDerived = landmarkMatrix(names, reps, in.Vectors)
	in.ClientHeight = landmark.AccessHeight(in.Client, in.Landmarks)
	return in, names
}

// landmarkMatrix returns the landmarks' RTTs to each other (ms, 0 on the
// diagonal, NaN where unknown): those the masters published, the smaller
// of the two directions where both came, and where neither did the bound
// through the servers (landmark.MatrixFromVectors); derived reports that
// some pair is.
func landmarkMatrix(names []string, reps []MasterReport, vs []landmark.Vector) (lm [][]float64, derived bool) {
	lm = landmark.MatrixFromVectors(vs, len(names))
	measured := func(a, b string) float64 {
		best := math.NaN()
		for _, r := range reps {
			for _, d := range []time.Duration{r.PeerRTTs[a][b], r.PeerRTTs[b][a]} {
				if d > 0 && !(millis(d) >= best) {
					best = millis(d)
				}
			}
		}
		return best
	}
	for j := range names {
		for k := j + 1; k < len(names); k++ {
			if d := measured(names[j], names[k]); !math.IsNaN(d) {
				lm[j][k], lm[k][j] = d, d
			} else {
				derived = true
			}
		}
	}
	return lm, derived
}

// millis is d in milliseconds.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
