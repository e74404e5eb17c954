//go:build linux

package demo_test

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/demo"
	"github.com/scout-discovery/scout/latency"
)

// TestDemo_Invariants runs the demo package directly on a small world and
// checks the report against the world's ground truth (see demo.Found),
// with what holds whatever the machine's load: the master lists the world,
// conventional and the oracle find every playable server the master
// listed (one retry makes a server lost to 1% loss twice rare: at most one
// is allowed), the oracle probes only playable servers, every RTT measured
// is at least the path's (the emulator never answers early) and the
// run's median is within 50 ms of it (a busy client reads replies late,
// but they are timed by the kernel), and the adaptive runs, the default
// without landmarks (group probing over the scout variant) and the
// landmark run (three landmark masters, scout servers --order landmarks'
// planner, which hears from all three) find no more than the playable
// servers, miss more than one only when their auto-stop fired, probe no
// server conventional did not, hand none out twice, and, the paper's
// and the scout variant, stop only when the run's own measurements met
// their stop rule (stopHeld).
//
// How many playable servers an auto-stopping run finds, and how many
// probes it saves, follow its RTTs, which a loaded machine inflates: a
// scout run once stopped after 9 of 50 playable servers, and a paper run
// that did not stop sent 305 probes to conventional's 303 (retries of
// lost replies, 1% each). Those figures are TestDemo_SimulatedFigures',
// on the simulator, for this world.
func TestDemo_Invariants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 300-server world for several seconds")
	}
	cfg := demo.Config{Servers: 300, Seed: 5, DefaultRun: true, LandmarkRun: true}
	w, _, err := demo.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	truth := map[netip.AddrPort]time.Duration{}
	for _, s := range w.Servers {
		truth[s.Public] = time.Duration(s.Link.RTT)
	}
	rep, err := demo.Demo(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 6 {
		t.Fatalf("%d runs", len(rep.Runs))
	}
	conv, paper, scout, def, lm, oracle := rep.Runs[0], rep.Runs[1], rep.Runs[2], rep.Runs[3], rep.Runs[4], rep.Runs[5]
	if def.Name != "default, no landmarks" {
		t.Fatalf("run %s: want the default without landmarks", def.Name)
	}
	if lm.Name != "landmarks" || oracle.Name != "oracle" {
		t.Fatalf("runs %s, %s: want landmarks, oracle", lm.Name, oracle.Name)
	}
	t.Logf("listed %d, playable %d; found: conventional %d, paper %d, scout %d, landmarks %d (%d probes, landmarks %v), oracle %d",
		rep.Listed, rep.Playable, conv.Found, paper.Found, scout.Found, lm.Found, lm.Summary.Probe.Sent, lm.Landmarks, oracle.Found)
	if len(lm.Landmarks) != len(demo.DefaultLandmarks) {
		t.Errorf("the landmark run heard from %v, want the %d landmark masters", lm.Landmarks, len(demo.DefaultLandmarks))
	}
	checkMeasuredMatrix(t, rep, lm)
	if rep.Listed < rep.Servers*95/100 {
		t.Errorf("master listed %d of %d", rep.Listed, rep.Servers)
	}
	if rep.Playable < 3 || rep.Playable > rep.WorldPlayable {
		t.Errorf("%d playable listed, %d in the world: the test needs some", rep.Playable, rep.WorldPlayable)
	}
	if conv.Summary.Listed != rep.Listed || len(conv.Ordering.Probes) != rep.Listed {
		t.Errorf("conventional listed %d and probed %d of %d", conv.Summary.Listed, len(conv.Ordering.Probes), rep.Listed)
	}
	for _, r := range []demo.Run{conv, oracle} {
		if r.Found < rep.Playable-1 || r.Found > rep.Playable {
			t.Errorf("%s found %d playable of %d listed", r.Name, r.Found, rep.Playable)
		}
	}
	// Requests sent for the first time, retries of lost ones aside: one
	// per server handed out.
	first := func(r demo.Run) int { return r.Summary.Probe.Sent - r.Summary.Probe.Retries }
	for _, a := range []demo.Run{paper, scout, def, lm} {
		if a.Params == nil {
			t.Fatalf("%s has no params", a.Name)
		}
		t.Logf("%s: %d probes (%d retries) to %d servers, stopped %v (%+v); conventional %d (%d retries)", a.Name,
			a.Summary.Probe.Sent, a.Summary.Probe.Retries, a.Summary.Probe.Destinations, a.Ordering.Stopped, a.Ordering.Stop,
			conv.Summary.Probe.Sent, conv.Summary.Probe.Retries)
		if a.Found > rep.Playable || (a.Found < rep.Playable-1 && !a.Ordering.Stopped) {
			t.Errorf("%s found %d playable of %d listed, stopped %v", a.Name, a.Found, rep.Playable, a.Ordering.Stopped)
		}
		if first(a) != a.Summary.Probe.Destinations || a.Summary.Probe.Destinations > conv.Summary.Probe.Destinations {
			t.Errorf("%s sent %d probes (%d retries) to %d servers, conventional to %d: a server handed out twice, or one conventional did not probe",
				a.Name, a.Summary.Probe.Sent, a.Summary.Probe.Retries, a.Summary.Probe.Destinations, conv.Summary.Probe.Destinations)
		}
		if a.Ordering.Located < rep.Listed*9/10 {
			t.Errorf("%s geolocated %d of %d", a.Name, a.Ordering.Located, rep.Listed)
		}
	}
	for _, a := range []demo.Run{paper, scout} {
		if err := stopHeld(a); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
	}
	if paper.Params.ClusterBy == scout.Params.ClusterBy {
		t.Errorf("both adaptive runs cluster by %v: the variants are not the paper's and scout's", paper.Params.ClusterBy)
	}
	if oracle.Summary.Probe.Destinations > rep.Playable {
		t.Errorf("oracle probed %d servers, %d playable", oracle.Summary.Probe.Destinations, rep.Playable)
	}
	for _, r := range rep.Runs {
		if r.Ordering.Refused != 0 {
			t.Errorf("%s: %d outcomes refused", r.Name, r.Ordering.Refused)
		}
		var excess []time.Duration
		for _, o := range r.Ordering.Probes {
			if !o.Answered {
				continue
			}
			want, ok := truth[o.Addr]
			if !ok || o.RTT < want {
				t.Errorf("%s: %v answered in %v, its path's RTT is %v", r.Name, o.Addr, o.RTT, want)
			}
			excess = append(excess, o.RTT-want)
		}
		if len(excess) == 0 {
			t.Errorf("%s: no answer", r.Name)
			continue
		}
		slices.Sort(excess)
		if med := excess[len(excess)/2]; med > 50*time.Millisecond {
			t.Errorf("%s: the median RTT is %v above the path's", r.Name, med)
		}
	}
}

// meshSlack bounds how much a landmark master's measured RTT to another
// may exceed the model's RTT between their cities: the ping waits for the
// master's next tick to be read, and a loaded 2-core machine reads and
// forwards late (the path itself adds exactly the model's RTT).
const meshSlack = 150 * time.Millisecond

// checkMeasuredMatrix checks that the demo's landmark masters measured
// their RTTs to each other through their paths and that the landmark run
// planned with them: every master has a row for every other, each RTT
// not below the model's RTT between the two cities (the path never
// answers early) and within meshSlack above it, and the run's matrix
// says measured (no pair derived from the servers' vectors), with every
// pair within the same bounds (the masters' published medians, which
// move as they keep pinging during the runs, the smaller direction).
func checkMeasuredMatrix(t *testing.T, rep demo.Report, lm demo.Run) {
	t.Helper()
	cities := map[string]latency.City{}
	measured := map[[2]string]time.Duration{}
	for _, m := range rep.Masters {
		cities[m.City.Name] = m.City
	}
	for _, m := range rep.Masters {
		if len(m.PeerRTTs) != len(rep.Masters)-1 {
			t.Errorf("%s measured %v, want its RTTs to the %d other masters", m.City.Name, m.PeerRTTs, len(rep.Masters)-1)
		}
		for _, e := range m.PeerRTTs {
			c, ok := cities[e.Landmark]
			if !ok {
				t.Errorf("%s measured %s, not a master of the demo", m.City.Name, e.Landmark)
				continue
			}
			model := latency.CityRTT(m.City, c)
			if e.RTT < model || e.RTT > model+meshSlack {
				t.Errorf("%s's RTT to %s: %v measured, the model's %v", m.City.Name, e.Landmark, e.RTT, model)
			}
			measured[[2]string{m.City.Name, e.Landmark}] = e.RTT
		}
	}
	mx := lm.Matrix
	t.Logf("the landmark run's matrix: %v %v, derived %v", mx.Landmarks, mx.RTTs, mx.Derived)
	if mx.Derived || len(mx.Landmarks) != len(rep.Masters) || len(mx.RTTs) != len(mx.Landmarks) {
		t.Fatalf("the landmark run's matrix: %+v, want the %d masters' measured RTTs", mx, len(rep.Masters))
	}
	for j, a := range mx.Landmarks {
		for k, b := range mx.Landmarks {
			if j == k {
				continue
			}
			got := mx.RTTs[j][k]
			if model := latency.CityRTT(cities[a], cities[b]); got < model || got > model+meshSlack {
				t.Errorf("the landmark run's RTT %s-%s is %v, the model's %v (the masters measured %v and %v when discovery began)",
					a, b, got, model, measured[[2]string{a, b}], measured[[2]string{b, a}])
			}
		}
	}
}

// stopHeld reports whether an adaptive run's auto-stop, if it fired, fired
// on what the run measured: the step-6 outcomes it had observed when it
// fired (the first Stop.Reordered of Ordering.Probes, in the order the
// strategy was told them) meet the rule. The bound rule: the last
// StopAgree were at or above StopRTT or unanswered, and the nearest
// cluster's bound was StopRTT + StopMargin or more. The paper's rule: the
// StopPercentile (nearest rank) of the last Window is Stop.Bottom, at or
// above StopRTT. On a loaded machine the RTTs are larger and the stop may
// come sooner, but never against them.
func stopHeld(r demo.Run) error {
	if !r.Ordering.Stopped {
		return nil
	}
	st, p := r.Ordering.Stop, *r.Params
	var step6 []time.Duration
	for _, o := range r.Ordering.Probes {
		if o.Phase != adaptive.Reordered || len(step6) == st.Reordered {
			continue
		}
		v := o.RTT
		if !o.Answered || o.GaveUp {
			v = adaptive.NoAnswer // as the planner was told
		}
		step6 = append(step6, v)
	}
	if len(step6) != st.Reordered {
		return fmt.Errorf("stopped at step-6 outcome %d, %d observed", st.Reordered, len(step6))
	}
	switch st.Rule {
	case adaptive.StopBound:
		if len(step6) < p.StopAgree {
			return fmt.Errorf("bound rule fired after %d step-6 outcomes, fewer than %d", len(step6), p.StopAgree)
		}
		for _, v := range step6[len(step6)-p.StopAgree:] {
			if v < p.StopRTT {
				return fmt.Errorf("bound rule fired with an outcome at %v among the last %d: %v", v, p.StopAgree, step6[len(step6)-p.StopAgree:])
			}
		}
		if st.Nearest < p.StopRTT+p.StopMargin {
			return fmt.Errorf("bound rule fired with a cluster bound at %v", st.Nearest)
		}
	case adaptive.StopPaper:
		if len(step6) < p.Window {
			return fmt.Errorf("paper's rule fired after %d step-6 outcomes, fewer than %d", len(step6), p.Window)
		}
		last := slices.Sorted(slices.Values(step6[len(step6)-p.Window:]))
		k := max(1, int(math.Ceil(p.StopPercentile*float64(len(last))-1e-9)))
		if b := last[k-1]; b != st.Bottom || b < p.StopRTT {
			return fmt.Errorf("paper's rule fired with the %v percentile of the last %d at %v (reported %v)", p.StopPercentile, p.Window, b, st.Bottom)
		}
	default:
		return fmt.Errorf("rule %v", st.Rule)
	}
	return nil
}
