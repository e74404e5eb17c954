package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/scout-discovery/scout/lab/evaluate"
	"github.com/scout-discovery/scout/lab/sim"
	"github.com/scout-discovery/scout/lab/sim/report"
	"github.com/scout-discovery/scout/landmark"
)

// simMeshFlags are scout-lab sim's flags of the mesh latency mode and its
// landmark strategies.
type simMeshFlags struct {
	dir        *string
	landmarks  *string
	rule       *string
	quantile   *float64
	drop       *int
	repair     *bool
	estimator  *string
	perPath    *bool
	unmeasured *float64
	access     *bool
	stop       *string
	calibrate  *bool
	stopAfter  *int
	derive     *bool
	margin     *string
	keepClient *bool
	siblings   *float64
	sibMargin  *float64
	sibDelta   *float64
	sibNear    *float64
}

func addSimMeshFlags(fs *flag.FlagSet) *simMeshFlags {
	return &simMeshFlags{
		dir:        fs.String("mesh", "", "take every RTT's city-to-city part from WonderProxy's measured mesh in `DIR` (../shared/data; not shipped) and add the landmark strategies"),
		landmarks:  fs.String("landmarks", "3,8", "with --mesh: the landmark strategies, a comma-separated list of K (1 to 8 masters)"),
		rule:       fs.String("landmark-rule", "hubs", "with --mesh: where the K masters are: hubs or kcenter (as scout-lab landmarks --rule)"),
		quantile:   fs.Float64("margin-quantile", 0.995, "with --mesh: the stop margin is this quantile of the lower bound's excess over the playable pairs of half the mesh's cities (scout-lab landmarks)"),
		drop:       fs.Int("drop", 0, "with --mesh: landmarks the lower bound leaves out (the largest differences)"),
		repair:     fs.Bool("repair", true, "with --mesh: clip vectors to the paths through other landmarks before bounding"),
		estimator:  fs.String("estimator", "upper", "with --mesh: the landmark planner's probe order: upper, mid or lower"),
		perPath:    fs.Bool("per-path", false, "with --mesh: draw the server-side offsets per requester (client, each landmark) instead of once per server"),
		access:     fs.Bool("know-access", true, "with --mesh: the client knows its access delay (its first hop's RTT) and the planner takes it as the client's height"),
		stop:       fs.String("stop-on", "lower", "with --mesh: what the stop rule compares with 200 ms + margin: lower (the robust lower bound), upper or mid (an estimate, its margin fitted at --margin-quantile)"),
		calibrate:  fs.Bool("calibrate", true, "with --mesh: also run each K with the candidates the bound keeps handed to Armitage's planner with scout's constants (landmarks-K+scout)"),
		stopAfter:  fs.Int("stop-after", 50, "with --mesh: also run each K with the run rule (landmarks-K+run): stop after this many unplayable outcomes in a row of servers estimated unplayable (landmark.PlanParams.StopAfter; 0: no such column)"),
		margin:     fs.String("margin", "", "with --mesh: the stop margin in `MS` for every K instead of the one fitted on the mesh at --margin-quantile (negative: the rule stops before the bound says; for fitting a margin on training seeds)"),
		keepClient: fs.Bool("keep-client", false, "with --mesh: Repair leaves the client's own vector as measured (landmark.PlanParams.KeepClient; always so with --derive), and the margin is fitted on the mesh the same way (with --derive alone it is fitted with the vector repaired)"),
		derive:     fs.Bool("derive", false, "with --mesh: the client derives what the live one derives instead of being told: the landmarks' RTTs to each other from the servers' vectors (landmark.MatrixFromVectors) and its access delay from its vector (landmark.AccessHeight); --know-access is then ignored"),
		siblings:   fs.Float64("siblings", 0, "with --mesh: skip a server whose answered siblings (vectors differing by the same amount at every landmark, within `MS`) predict it unplayable (landmark.Siblings; 0: off)"),
		sibMargin:  fs.Float64("sibling-margin", 0, "with --mesh and --siblings: a sibling's prediction must be at least 200 ms + `MS` to skip"),
		sibNear:    fs.Float64("sibling-near", 0, "with --mesh and --siblings: only for a client within `MS` of a landmark, its access delay aside (0: any client)"),
		sibDelta:   fs.Float64("sibling-delta", 0, "with --mesh and --siblings: siblings' vectors differ by at most `MS` at every landmark (0: any)"),
		unmeasured: fs.Float64("unmeasured", 0, "with --mesh: share of servers no landmark has measured yet (left to Armitage's planner)"),
	}
}

// spec builds the mesh spec the flags describe, nil without --mesh; the
// lines it returns say what was fitted (the margins).
func (f *simMeshFlags) spec() (*sim.MeshSpec, []string, error) {
	if *f.dir == "" {
		return nil, nil, nil
	}
	o := report.MeshOptions{Dir: *f.dir, Rule: evaluate.Rule(*f.rule), Quantile: *f.quantile, Drop: *f.drop, Repair: *f.repair,
		KeepClient: *f.keepClient, Estimator: landmark.Estimator(*f.estimator), Stop: landmark.Estimator(*f.stop), PerPath: *f.perPath,
		Unmeasured: *f.unmeasured, KnowAccess: *f.access, Derive: *f.derive, Calibrate: *f.calibrate, StopAfter: *f.stopAfter,
		Siblings: *f.siblings, SibMargin: *f.sibMargin, SibDelta: *f.sibDelta, SibNear: *f.sibNear}
	if o.Rule != evaluate.Hubs && o.Rule != evaluate.KCenter {
		return nil, nil, fmt.Errorf("--landmark-rule %q: hubs or kcenter", *f.rule)
	}
	for _, e := range []struct {
		flag string
		est  landmark.Estimator
	}{{"--estimator", o.Estimator}, {"--stop-on", o.Stop}} {
		if e.est != landmark.EstUpper && e.est != landmark.EstMid && e.est != landmark.EstLower {
			return nil, nil, fmt.Errorf("%s %q: upper, mid or lower", e.flag, e.est)
		}
	}
	for _, s := range strings.Split(*f.landmarks, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, nil, fmt.Errorf("--landmarks %q: want K from 1 to %d, each above --drop", *f.landmarks, len(evaluate.HubCities))
		}
		o.Landmarks = append(o.Landmarks, k)
	}
	if *f.margin != "" {
		m, err := strconv.ParseFloat(*f.margin, 64)
		if err != nil || math.IsNaN(m) || math.IsInf(m, 0) {
			return nil, nil, fmt.Errorf("--margin %q: want a number of ms", *f.margin)
		}
		o.Margin = &m
	}
	return report.MeshSpec(o)
}
