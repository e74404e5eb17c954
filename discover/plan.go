package discover

import (
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/landmark"
)

// The default plan: scout servers' --order auto (its default) and
// --order landmarks, and the demo's runs of them. With landmark RTTs from
// the masters (some master answered as a landmark) it is the landmark
// plan with the site check (LandmarkPlanParams); without, Armitage's
// planner with scout's constants (adaptive.Scout). Either way group
// probing wraps it (adaptive.Grouped: one server per /24 first, its mates
// probed or skipped on its answers) with the client's memory of its own
// earlier runs (package rttcache) as the groups' priors. EVALUATION.md,
// "Safe by default", measures it with every WonderProxy city as a client.

// PlanOptions are what a default plan is built from besides the list.
type PlanOptions struct {
	// AutoStop is the largest playable RTT; 0 probes every server.
	AutoStop time.Duration
	// Seed seeds the planners' random choices.
	Seed uint64
	// Landmarks uses the masters' landmark RTTs when some master
	// answered as a landmark.
	Landmarks bool
	// Siblings turns the landmark plan's sibling skipping on
	// (landmark.DefaultSiblings).
	Siblings bool
	// Prior is the client's memory, per group (nil: none).
	Prior map[netip.Prefix]adaptive.Prior
	// Known are the groups the client has seen before: remembered, or in
	// the list of an earlier run that decided on them without a probe
	// (rttcache.Cache.Known; nil: the groups of Prior).
	Known map[netip.Prefix]bool
}

// Plan is a default plan.
type Plan struct {
	// Groups is what to drive (Strategy): group probing over the plan.
	Groups *adaptive.Grouped
	// Landmark is the landmark plan under it; nil when no master answered
	// as a landmark (or PlanOptions.Landmarks is off): then Armitage's
	// planner with scout's constants is.
	Landmark *LandmarkPlan
}

// Strategy returns the plan's strategy, Groups; nil when there is none.
func (pl Plan) Strategy() adaptive.Strategy {
	if pl.Groups == nil {
		return nil
	}
	return pl.Groups
}

// PlanDefault builds the default plan for targets from the masters'
// reports.
func PlanDefault(targets []adaptive.Target, reports []MasterReport, o PlanOptions) (Plan, error) {
	var pl Plan
	var inner adaptive.Strategy
	if o.Landmarks && anyLandmark(reports) {
		p := LandmarkPlanParams(o.AutoStop)
		if o.Siblings {
			sib := landmark.DefaultSiblings()
			p.Siblings = &sib
		}
		lp, err := PlanLandmarks(targets, reports, p, o.Seed, Remembered(targets, o.Prior), KnownTargets(targets, o.Known))
		if err != nil {
			return pl, err
		}
		pl.Landmark, inner = &lp, lp.Planner
	} else {
		ap := adaptive.Scout()
		ap.StopRTT = o.AutoStop
		a, err := adaptive.New(targets, ap, rand.New(rand.NewPCG(o.Seed, AdaptiveSeedStream)))
		if err != nil {
			return pl, err
		}
		inner = a
	}
	gp := adaptive.DefaultGroups()
	gp.Threshold = o.AutoStop
	if lp := pl.Landmark; lp != nil {
		gp.Within = VectorGroups(lp.Input.Vectors)
	}
	g, err := adaptive.NewGrouped(inner, targets, gp, o.Prior)
	if err != nil {
		return pl, err
	}
	pl.Groups = g
	return pl, nil
}

// AdaptiveSeedStream is the default plan's adaptive planner's random
// stream for a given seed (scout servers --order adaptive's).
const AdaptiveSeedStream = 0x5c0

// anyLandmark reports whether some master answered as a landmark.
func anyLandmark(reports []MasterReport) bool {
	for _, r := range reports {
		if r.Landmark != "" {
			return true
		}
	}
	return false
}

// Vantage returns the client's RTT to each master that answered (the
// least of its list's round trip and its pings): where the client is, as
// its memory checks it (rttcache.Cache.Matches).
func Vantage(reports []MasterReport) map[netip.AddrPort]time.Duration {
	v := map[netip.AddrPort]time.Duration{}
	for _, r := range reports {
		if d := r.BestRTT(); d > 0 && r.Addr.IsValid() {
			v[r.Addr] = d
		}
	}
	return v
}

// Remembered returns, per target, the least RTT (ms) the client
// remembers of its group, NaN where none (landmark.PlanInput.Remembered);
// nil without a memory.
func Remembered(targets []adaptive.Target, prior map[netip.Prefix]adaptive.Prior) []float64 {
	if len(prior) == 0 {
		return nil
	}
	out := make([]float64, len(targets))
	for i, t := range targets {
		out[i] = math.NaN()
		if p, ok := prior[adaptive.GroupKey(t.Addr.Addr())]; ok {
			out[i] = millis(p.Least)
		}
	}
	return out
}

// KnownTargets returns, per target, whether its group is in known
// (landmark.PlanInput.Known); nil when known is.
func KnownTargets(targets []adaptive.Target, known map[netip.Prefix]bool) []bool {
	if known == nil {
		return nil
	}
	out := make([]bool, len(targets))
	for i, t := range targets {
		out[i] = known[adaptive.GroupKey(t.Addr.Addr())]
	}
	return out
}

// GroupBucket (ms) is how coarsely the landmark plan's groups compare the
// servers' landmark RTTs: servers of one /24 whose RTTs from some landmark
// fall in different GroupBucket-wide bins are not one group (a /24 in two
// places, as the landmarks see it).
const GroupBucket = 25.0

// VectorGroups returns adaptive.GroupParams.Within for the landmark
// plan: each target's landmark RTTs in GroupBucket bins (by
// Target.Index into vs, the plan's vectors as measured).
func VectorGroups(vs []landmark.Vector) func(adaptive.Target) string {
	return func(t adaptive.Target) string {
		if t.Index < 0 || t.Index >= len(vs) {
			return ""
		}
		b := make([]byte, 0, 4*len(vs[t.Index]))
		for _, x := range vs[t.Index] {
			if math.IsNaN(x) {
				b = append(b, '-', ',')
				continue
			}
			b = strconv.AppendInt(b, int64(math.Floor(x/GroupBucket)), 10)
			b = append(b, ',')
		}
		return string(b)
	}
}
