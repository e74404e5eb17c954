package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/evaluate"
	"github.com/scout-discovery/scout/lab/mesh"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/sim"
	"github.com/scout-discovery/scout/landmark"
	"github.com/scout-discovery/scout/latency"
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
	rule := evaluate.Rule(*f.rule)
	if rule != evaluate.Hubs && rule != evaluate.KCenter {
		return nil, nil, fmt.Errorf("--landmark-rule %q: hubs or kcenter", *f.rule)
	}
	est := landmark.Estimator(*f.estimator)
	if est != landmark.EstUpper && est != landmark.EstMid && est != landmark.EstLower {
		return nil, nil, fmt.Errorf("--estimator %q: upper, mid or lower", *f.estimator)
	}
	stop := landmark.Estimator(*f.stop)
	if stop != landmark.EstUpper && stop != landmark.EstMid && stop != landmark.EstLower {
		return nil, nil, fmt.Errorf("--stop-on %q: lower, upper or mid", *f.stop)
	}
	if !(*f.quantile > 0 && *f.quantile <= 1) || *f.drop < 0 || *f.stopAfter < 0 || !(*f.unmeasured >= 0 && *f.unmeasured <= 1) {
		return nil, nil, fmt.Errorf("--margin-quantile in (0, 1], --drop and --stop-after >= 0, and --unmeasured in [0, 1]")
	}
	if !(*f.siblings >= 0) || math.IsInf(*f.siblings, 0) || math.IsNaN(*f.sibMargin) || math.IsInf(*f.sibMargin, 0) || !(*f.sibDelta >= 0) || math.IsInf(*f.sibDelta, 0) || !(*f.sibNear >= 0) || math.IsInf(*f.sibNear, 0) {
		return nil, nil, fmt.Errorf("--siblings: want a tolerance of 0 (off) or more ms, a finite --sibling-margin, and a --sibling-delta and a --sibling-near of 0 or more, finite")
	}
	var ks []int
	for _, s := range strings.Split(*f.landmarks, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 1 || k > len(evaluate.HubCities) || *f.drop >= k {
			return nil, nil, fmt.Errorf("--landmarks %q: want K from 1 to %d, each above --drop", *f.landmarks, len(evaluate.HubCities))
		}
		ks = append(ks, k)
	}
	m, err := mesh.LoadWonderProxy(*f.dir)
	if err != nil {
		return nil, nil, err
	}
	idx := map[string]int{}
	for i, c := range m.Cities {
		idx[c.Country+"/"+c.Name] = i
	}
	byMesh := map[int]latency.City{}
	for _, c := range latency.Cities() {
		if i, ok := idx[c.Country+"/"+c.Name]; ok {
			byMesh[i] = c
		}
	}
	ms := &sim.MeshSpec{Latency: population.MeshLatency{PerPath: *f.perPath, Mesh: func(a, b latency.City) (float64, bool) {
		i, ok1 := idx[a.Country+"/"+a.Name]
		j, ok2 := idx[b.Country+"/"+b.Name]
		if !ok1 || !ok2 {
			return 0, false
		}
		r := m.RTT(i, j)
		return r, r == r
	}}}
	var notes []string
	var runs, calibrated []sim.LandmarkSet
	for _, k := range ks {
		lms, err := evaluate.Place(m, k, rule)
		if err != nil {
			return nil, nil, err
		}
		opt := evaluate.Options{MarginQuantile: *f.quantile, Drop: *f.drop, Repair: *f.repair, KeepClient: *f.keepClient, Stop: string(stop)}
		margin, err := evaluate.StopMargin(m, lms, opt)
		if err != nil {
			return nil, nil, err
		}
		fitted := fmt.Sprintf("the %g quantile over the playable pairs of the mesh's even-indexed cities", *f.quantile)
		if *f.margin != "" {
			margin, err = strconv.ParseFloat(*f.margin, 64)
			if err != nil || math.IsNaN(margin) || math.IsInf(margin, 0) {
				return nil, nil, fmt.Errorf("--margin %q: want a number of ms", *f.margin)
			}
			fitted = "given by --margin"
		}
		ls := sim.LandmarkSet{Name: "landmarks-" + strconv.Itoa(k), Unmeasured: *f.unmeasured, KnowAccess: *f.access, Derive: *f.derive}
		ls.Params = landmark.PlanParams{Threshold: 200, Margin: margin, Drop: *f.drop, Repair: *f.repair, KeepClient: *f.keepClient, Estimator: est, Stop: stop}
		if *f.siblings > 0 {
			ls.Params.Siblings = &landmark.Siblings{Tolerance: *f.siblings, Margin: *f.sibMargin, MaxDelta: *f.sibDelta, Near: *f.sibNear}
		}
		var names []string
		for _, l := range lms {
			c, ok := byMesh[l]
			if !ok {
				return nil, nil, fmt.Errorf("landmark city %s is not in the world model's cities", m.Cities[l].Name)
			}
			ls.Cities = append(ls.Cities, c)
			names = append(names, c.Name)
		}
		ms.Landmarks = append(ms.Landmarks, ls)
		if *f.stopAfter > 0 {
			lr := ls
			lr.Name += "+run"
			lr.Params.StopAfter = *f.stopAfter
			runs = append(runs, lr)
		}
		if *f.calibrate {
			sc := adaptive.Scout()
			lc := ls
			lc.Name += "+scout"
			lc.Params.Calibrate = &sc
			calibrated = append(calibrated, lc)
		}
		notes = append(notes, fmt.Sprintf("%s: %s, stop on %s, margin %.1f ms (%s), drop %d, repair %v, order by %s, client height known %v, derived %v, client kept %v, siblings within %g ms, margin %g ms, differing by at most %g ms, for a client within %g ms of a landmark",
			ls.Name, strings.Join(names, " "), stop, margin, fitted, *f.drop, *f.repair, est, *f.access, *f.derive, *f.keepClient, *f.siblings, *f.sibMargin, *f.sibDelta, *f.sibNear))
	}
	ms.Landmarks = append(append(ms.Landmarks, runs...), calibrated...)
	return ms, notes, nil
}

// printProbeShares prints, per row, every strategy's probes as a share of
// the conventional full probe's, with the share of playable servers found.
func printProbeShares(w io.Writer, rows []*sim.Row) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "Probes % of the full probe's / playable servers found %, per strategy:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "client\tplayable\t")
	for _, v := range rows[0].Variants {
		fmt.Fprintf(tw, "%s\t", v.Name)
	}
	fmt.Fprintln(tw, "oracle\t")
	for _, r := range rows {
		pct := func(o sim.Outcome) string {
			return fmt.Sprintf("%.1f / %.1f", 100*float64(o.Probes)/float64(max(r.Conventional.Probes, 1)), o.FoundPct)
		}
		fmt.Fprintf(tw, "%s\t%d\t", r.Client, r.Playable)
		for _, v := range r.Variants {
			fmt.Fprintf(tw, "%s\t", pct(v))
		}
		fmt.Fprintf(tw, "%s\t\n", pct(r.Oracle))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nLandmark strategies: playable servers missed / unplayable servers probed, by the server's region:")
	for i, v := range rows[0].Variants {
		if v.Missed == nil {
			continue
		}
		fmt.Fprintf(w, "%s:", v.Name)
		for _, r := range rows {
			fmt.Fprintf(w, "  %s %s;", r.Client, regionCounts(r.Variants[i].Missed, r.Variants[i].Wasted))
		}
		fmt.Fprintln(w)
	}
}

// Issue 13's targets, as printTargets checks them per seed.
const (
	farMaxProbesPct  = 5    // far clients: probes, % of the full probe's
	minFoundPct      = 99.5 // every client: playable servers found, %
	nearOverOraclePt = 2    // near clients: probe share over the oracle's, points
)

// printTargets prints, per row and strategy, on how many seeds issue 13's
// targets held: for the far clients (AU, JP) at most 5% of the full
// probe's probes and at least 99.5% of the playable servers found; for
// the near ones (CH, DE) no more probes than conventional discovery, at
// most 2 points of probes over the oracle's and 99.5% found. It also gives
// the most probes over the oracle's (points) and the mean ratio to them,
// and on how many seeds the oracle itself probes at most 5%.
func printTargets(w io.Writer, results [][]*sim.Row, first uint64) {
	type acc struct {
		met, seeds   int
		overMax, sum float64
	}
	st := strategyAccs[acc]{fresh: func() *acc { return &acc{overMax: math.Inf(-1)} }}
	oracleUnder := map[string]int{}
	for _, rows := range results {
		for _, r := range rows {
			st.client(r.Client)
			conv := float64(max(r.Conventional.Probes, 1))
			po := 100 * float64(r.Oracle.Probes) / conv
			if po <= farMaxProbesPct {
				oracleUnder[r.Client]++
			}
			far := r.Place == "AU" || r.Place == "JP"
			for _, o := range r.Variants {
				a := st.get(r.Client, o.Name)
				p := 100 * float64(o.Probes) / conv
				ok := o.FoundPct >= minFoundPct
				if far {
					ok = ok && p <= farMaxProbesPct
				} else {
					ok = ok && o.Probes <= r.Conventional.Probes && p-po <= nearOverOraclePt
				}
				if ok {
					a.met++
				}
				a.seeds++
				a.overMax = max(a.overMax, p-po)
				a.sum += float64(o.Probes) / float64(max(r.Oracle.Probes, 1))
			}
		}
	}
	clients, names, accs := st.clients, st.names, st.accs
	if len(clients) == 0 {
		return
	}
	fmt.Fprintf(w, "\nSeeds %d to %d, issue 13's targets (far AU, JP: probes <= %d%% of the full probe's and found >= %.1f%%; near CH, DE: probes <= conventional's and <= the oracle's + %d points, found >= %.1f%%): seeds met | most points of probes over the oracle | mean probes / oracle's\n",
		first, first+uint64(len(results))-1, farMaxProbesPct, minFoundPct, nearOverOraclePt, minFoundPct)
	tw := strategyTable(w, "oracle <= 5%\t", names)
	for _, c := range clients {
		a0 := accs[c][names[0]]
		fmt.Fprintf(tw, "%s\t%d/%d\t", c, oracleUnder[c], a0.seeds)
		for _, nm := range names {
			a := accs[c][nm]
			fmt.Fprintf(tw, "%d/%d | %.1f | %.2f\t", a.met, a.seeds, a.overMax, a.sum/float64(a.seeds))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func spreadDecimal(v []float64) string {
	lo, hi, sum := v[0], v[0], 0.0
	for _, x := range v {
		lo, hi, sum = min(lo, x), max(hi, x), sum+x
	}
	return fmt.Sprintf("%.1f %.1f %.1f", lo, sum/float64(len(v)), hi)
}

// regionCounts prints missed/wasted per region, regions in a fixed order.
func regionCounts(missed, wasted map[string]int) string {
	var parts []string
	for _, reg := range []string{"EU", "NA", "SA", "AS", "OC", "AF", ""} {
		if missed[reg] == 0 && wasted[reg] == 0 {
			continue
		}
		name := reg
		if name == "" {
			name = "other"
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d", name, missed[reg], wasted[reg]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// setMesh puts sp in the mesh mode of ms, with the paper's and scout's
// variants beside the landmark strategies.
func setMesh(sp *sim.Spec, ms *sim.MeshSpec) {
	if ms == nil {
		return
	}
	sp.Mesh = ms
	for _, v := range sim.Variants() {
		if v.Name == "paper" || v.Name == "scout" {
			sp.Variants = append(sp.Variants, v)
		}
	}
}
