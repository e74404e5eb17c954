package report

import (
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

// MeshOptions are the mesh latency mode of scout-lab sim and its landmark
// strategies.
type MeshOptions struct {
	// Dir holds WonderProxy's measured mesh (../shared/data; not shipped).
	Dir string
	// Landmarks are the strategies' K (masters, 1 to 8), placed by Rule.
	Landmarks []int
	Rule      evaluate.Rule
	// Quantile of the lower bound's excess over the playable pairs of half
	// the mesh's cities is the stop margin, unless Margin is given (ms).
	Quantile float64
	Margin   *float64
	// Drop, Repair, KeepClient, Estimator and Stop are the planner's
	// (landmark.PlanParams).
	Drop       int
	Repair     bool
	KeepClient bool
	Estimator  landmark.Estimator
	Stop       landmark.Estimator
	// PerPath draws the server-side offsets per requester instead of once
	// per server.
	PerPath bool
	// Unmeasured is the share of servers no landmark has measured yet.
	Unmeasured float64
	// KnowAccess tells the client its access delay; Derive has it derive
	// the landmarks' matrix and its access delay as the live client does.
	KnowAccess, Derive bool
	// Calibrate adds each K with scout's planner for the candidates the
	// bound keeps (landmarks-K+scout); StopAfter, above 0, each K with the
	// run rule (landmarks-K+run).
	Calibrate bool
	StopAfter int
	// Siblings, above 0, skips servers whose answered siblings predict
	// them unplayable (landmark.Siblings: Tolerance, Margin, MaxDelta,
	// Near).
	Siblings, SibMargin, SibDelta, SibNear float64
}

// MeshSpec builds the mesh spec o describes; the lines it returns say
// what was fitted (the margins).
func MeshSpec(o MeshOptions) (*sim.MeshSpec, []string, error) {
	if !(o.Quantile > 0 && o.Quantile <= 1) || o.Drop < 0 || o.StopAfter < 0 || !(o.Unmeasured >= 0 && o.Unmeasured <= 1) {
		return nil, nil, fmt.Errorf("--margin-quantile in (0, 1], --drop and --stop-after >= 0, and --unmeasured in [0, 1]")
	}
	if !(o.Siblings >= 0) || math.IsInf(o.Siblings, 0) || math.IsNaN(o.SibMargin) || math.IsInf(o.SibMargin, 0) || !(o.SibDelta >= 0) || math.IsInf(o.SibDelta, 0) || !(o.SibNear >= 0) || math.IsInf(o.SibNear, 0) {
		return nil, nil, fmt.Errorf("--siblings: want a tolerance of 0 (off) or more ms, a finite --sibling-margin, and a --sibling-delta and a --sibling-near of 0 or more, finite")
	}
	for _, k := range o.Landmarks {
		if k < 1 || k > len(evaluate.HubCities) || o.Drop >= k {
			return nil, nil, fmt.Errorf("--landmarks %v: want K from 1 to %d, each above --drop", o.Landmarks, len(evaluate.HubCities))
		}
	}
	m, err := mesh.LoadWonderProxy(o.Dir)
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
	ms := &sim.MeshSpec{Latency: population.MeshLatency{PerPath: o.PerPath, Mesh: m.ByCity()}}
	var notes []string
	var runs, calibrated []sim.LandmarkSet
	for _, k := range o.Landmarks {
		ls, note, err := landmarkSet(m, byMesh, k, o)
		if err != nil {
			return nil, nil, err
		}
		ms.Landmarks = append(ms.Landmarks, ls)
		if o.StopAfter > 0 {
			lr := ls
			lr.Name += "+run"
			lr.Params.StopAfter = o.StopAfter
			runs = append(runs, lr)
		}
		if o.Calibrate {
			sc := adaptive.Scout()
			lc := ls
			lc.Name += "+scout"
			lc.Params.Calibrate = &sc
			calibrated = append(calibrated, lc)
		}
		notes = append(notes, note)
	}
	ms.Landmarks = append(append(ms.Landmarks, runs...), calibrated...)
	return ms, notes, nil
}

// landmarkSet is the strategy of K landmarks on mesh m (byMesh: the
// model's city of each of m's cities), with the note that says how its
// margin was fitted.
func landmarkSet(m *mesh.Mesh, byMesh map[int]latency.City, k int, o MeshOptions) (sim.LandmarkSet, string, error) {
	lms, err := evaluate.Place(m, k, o.Rule)
	if err != nil {
		return sim.LandmarkSet{}, "", err
	}
	opt := evaluate.Options{MarginQuantile: o.Quantile, Drop: o.Drop, Repair: o.Repair, KeepClient: o.KeepClient, Stop: string(o.Stop)}
	margin, err := evaluate.StopMargin(m, lms, opt)
	if err != nil {
		return sim.LandmarkSet{}, "", err
	}
	fitted := fmt.Sprintf("the %g quantile over the playable pairs of the mesh's even-indexed cities", o.Quantile)
	if o.Margin != nil {
		margin, fitted = *o.Margin, "given by --margin"
	}
	ls := sim.LandmarkSet{Name: "landmarks-" + strconv.Itoa(k), Unmeasured: o.Unmeasured, KnowAccess: o.KnowAccess, Derive: o.Derive}
	ls.Params = landmark.PlanParams{Threshold: 200, Margin: margin, Drop: o.Drop, Repair: o.Repair, KeepClient: o.KeepClient, Estimator: o.Estimator, Stop: o.Stop}
	if o.Siblings > 0 {
		ls.Params.Siblings = &landmark.Siblings{Tolerance: o.Siblings, Margin: o.SibMargin, MaxDelta: o.SibDelta, Near: o.SibNear}
	}
	var names []string
	for _, l := range lms {
		c, ok := byMesh[l]
		if !ok {
			return sim.LandmarkSet{}, "", fmt.Errorf("landmark city %s is not in the world model's cities", m.Cities[l].Name)
		}
		ls.Cities = append(ls.Cities, c)
		names = append(names, c.Name)
	}
	note := fmt.Sprintf("%s: %s, stop on %s, margin %.1f ms (%s), drop %d, repair %v, order by %s, client height known %v, derived %v, client kept %v, siblings within %g ms, margin %g ms, differing by at most %g ms, for a client within %g ms of a landmark",
		ls.Name, strings.Join(names, " "), o.Stop, margin, fitted, o.Drop, o.Repair, o.Estimator, o.KnowAccess, o.Derive, o.KeepClient, o.Siblings, o.SibMargin, o.SibDelta, o.SibNear)
	return ls, note, nil
}

// PrintProbeShares prints, per row, every strategy's probes as a share of
// the conventional full probe's, with the share of playable servers found.
func PrintProbeShares(w io.Writer, rows []*sim.Row) {
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

// The bounds PrintBounds counts seeds within: what a landmark strategy
// should do for it to be worth the probes it saves.
const (
	farMaxProbesPct  = 5    // far clients: probes, % of the full probe's
	minFoundPct      = 99.5 // every client: playable servers found, %
	nearOverOraclePt = 2    // near clients: probe share over the oracle's, points
)

// PrintBounds prints, per row and strategy, on how many seeds it stayed
// within the bounds: for the far clients (AU, JP) at most 5% of the full
// probe's probes and at least 99.5% of the playable servers found; for
// the near ones (CH, DE) no more probes than conventional discovery, at
// most 2 points of probes over the oracle's and 99.5% found. It also gives
// the most probes over the oracle's (points) and the mean ratio to them,
// and on how many seeds the oracle itself probes at most 5%.
func PrintBounds(w io.Writer, results [][]*sim.Row, first uint64) {
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
	fmt.Fprintf(w, "\nSeeds %d to %d within the bounds (far AU, JP: probes <= %d%% of the full probe's and found >= %.1f%%; near CH, DE: probes <= conventional's and <= the oracle's + %d points, found >= %.1f%%): seeds within | most points of probes over the oracle | mean probes / oracle's\n",
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

// SetMesh puts sp in the mesh mode of ms, with the paper's and scout's
// variants beside the landmark strategies.
func SetMesh(sp *sim.Spec, ms *sim.MeshSpec) {
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
