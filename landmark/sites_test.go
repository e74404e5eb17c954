package landmark

import (
	"errors"
	"math"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
)

// detourWorld is the Seoul-Kazan case in miniature: two landmarks, a
// client 30 ms from the first, and two sites of one AS each. Site A's
// servers are 150 ms from the client, but both landmarks reach them
// through a detour (their vectors say 400 and 390 ms), so the lower bound
// puts them at 370 ms; site B's are truly far (400 ms from the client).
func detourWorld() (PlanInput, []float64) {
	in := PlanInput{Client: Vector{30, 60}, Landmarks: [][]float64{{0, 40}, {40, 0}}}
	var rtt []float64
	add := func(a netip.Addr, asn uint32, v Vector, d float64) {
		in.Targets = append(in.Targets, adaptive.Target{Addr: netip.AddrPortFrom(a, 27960), Country: "RU", ASN: asn})
		in.Vectors = append(in.Vectors, v)
		rtt = append(rtt, d)
	}
	for i := range 6 {
		add(netip.AddrFrom4([4]byte{10, 1, byte(i / 3), byte(1 + i)}), 1, Vector{400, 390}, 150)
	}
	for i := range 6 {
		add(netip.AddrFrom4([4]byte{10, 2, byte(i / 3), byte(1 + i)}), 2, Vector{430, 420}, 400)
	}
	return in, rtt
}

func sitePlanner(t *testing.T, in PlanInput, sites *SiteCheck) *Planner {
	t.Helper()
	p := DefaultPlanParams()
	p.Margin, p.Sites = 5, sites
	pl, err := NewPlanner(in, p, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// run drives pl one probe at a time with the true RTTs.
func run(t *testing.T, pl *Planner, in PlanInput, rtt []float64) map[int]bool {
	t.Helper()
	sent := map[int]bool{}
	for range 10 * len(rtt) {
		tg, ph, ok := pl.Next()
		if !ok {
			if ph != adaptive.Done {
				t.Fatalf("waiting with nothing out")
			}
			return sent
		}
		sent[tg.Index] = true
		if err := pl.Observe(tg.Addr, ms(rtt[tg.Index]), true); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("no end")
	return nil
}

func TestSites_BringBackASiteTheBoundRulesOut(t *testing.T) {
	in, rtt := detourWorld()
	// Without the check the bound leaves the detoured site out.
	if sent := run(t, sitePlanner(t, in, nil), in, rtt); len(sent) != 0 {
		t.Fatalf("the bound alone probed %d servers; the test world is not what it says", len(sent))
	}
	pl := sitePlanner(t, in, &SiteCheck{Margin: 20, Spread: 30})
	sent := run(t, pl, in, rtt)
	for i := range 6 {
		if !sent[i] {
			t.Errorf("site A's server %d (150 ms) not probed", i)
		}
	}
	if far := probedIn(sent, 6, 12); far != 1 {
		t.Errorf("site B (400 ms): %d probes, want its one representative", far)
	}
	if st := pl.SiteStats(); st.Sites != 2 || st.Back != 1 || st.Reps != 2 {
		t.Errorf("stats %+v, want 2 sites, 2 representatives, 1 brought back", st)
	}
	if f := pl.Fate(7); f.Kind != FateSite || f.Site != 400 {
		t.Errorf("site B's other server: %+v, want ruled out by its site at 400 ms", f)
	}
	if f := pl.Fate(0); f.Kind != FateProbed {
		t.Errorf("site A's server: %+v", f)
	}
}

// TestSites_SecondRepresentativeNearTheEdge: a first representative
// between threshold + margin and threshold + 2*margin calls a second, from
// another /16 or, in a site of one /16, another /24; the site comes back
// when that one answers near.
func TestSites_SecondRepresentativeNearTheEdge(t *testing.T) {
	in, rtt := detourWorld()
	rtt[0] = 230 // site A's nearest-estimated server sits behind a slower host
	pl := sitePlanner(t, in, &SiteCheck{Margin: 20, Spread: 30})
	var order []int
	for {
		tg, ph, ok := pl.Next()
		if !ok {
			if ph != adaptive.Done {
				t.Fatal("waiting with nothing out")
			}
			break
		}
		order = append(order, tg.Index)
		if err := pl.Observe(tg.Addr, ms(rtt[tg.Index]), true); err != nil {
			t.Fatal(err)
		}
	}
	var a []int
	for _, i := range order {
		if i < 6 {
			a = append(a, i)
		}
	}
	if len(a) != 6 || a[0] != 0 || in.Targets[a[1]].Addr.Addr().As4()[2] != 1 {
		t.Errorf("site A probed in order %v: want its first representative, then one of 10.1.1.0/24, then the rest", a)
	}
}

func TestSites_RememberedRepresentativeFirst(t *testing.T) {
	in, _ := detourWorld()
	in.Remembered = noneRemembered(len(in.Targets))
	in.Remembered[10], in.Remembered[9] = 402, 405
	pl := sitePlanner(t, in, &SiteCheck{Margin: 20, Spread: 30, All: true})
	var first []int
	for range 2 {
		tg, _, ok := pl.Next()
		if !ok {
			t.Fatal("no representative")
		}
		first = append(first, tg.Index)
	}
	if first[0] != 0 && first[1] != 0 || first[0] != 10 && first[1] != 10 {
		t.Errorf("representatives %v, want site A's nearest (0) and site B's nearest remembered one (10)", first)
	}
}

// TestSites_NewServersOfARememberedFarSite: a site the client remembers
// only far (its representatives' answers may be the memory's, not this
// run's) is not left before a server of a group it does not remember is
// measured: here a /24 new since, truly near, brings the site back. A
// site whose every group is remembered is left on its remembered
// representative alone.
func TestSites_NewServersOfARememberedFarSite(t *testing.T) {
	in, rtt := detourWorld()
	in.Remembered = noneRemembered(len(in.Targets))
	for i := range 3 { // site A's 10.1.0.0/24: remembered, and still, far
		in.Remembered[i], rtt[i] = 400, 400
	}
	for i := 6; i < 12; i++ { // site B: every server remembered far
		in.Remembered[i] = 430
	}
	pl := sitePlanner(t, in, &SiteCheck{Margin: 20, Spread: 30, All: true})
	sent := run(t, pl, in, rtt)
	for i := 3; i < 6; i++ {
		if !sent[i] {
			t.Errorf("site A's new server %d (150 ms, not remembered) not probed", i)
		}
	}
	if far := probedIn(sent, 6, 12); far != 1 {
		t.Errorf("site B, every group remembered far: %d representatives, want 1", far)
	}
	if st := pl.SiteStats(); st.Back != 1 {
		t.Errorf("stats %+v, want site A brought back", st)
	}
}

// TestSites_KnownGroupsAreNotNew: a site ruled out on remembered answers
// is left without a further probe when its other groups were in an
// earlier run's list (Known: decided on then, without a probe); a group
// new since is still measured.
func TestSites_KnownGroupsAreNotNew(t *testing.T) {
	in, rtt := detourWorld()
	in.Remembered = noneRemembered(len(in.Targets))
	in.Known = make([]bool, len(in.Targets))
	for i := range 3 { // site A: 10.1.0.0/24 remembered far, 10.1.1.0/24 listed before
		in.Remembered[i], rtt[i] = 400, 400
	}
	for i := 3; i < 6; i++ {
		in.Known[i], rtt[i] = true, 400
	}
	for i := 6; i < 9; i++ { // site B: 10.2.0.0/24 remembered far, 10.2.1.0/24 new
		in.Remembered[i] = 430
	}
	pl := sitePlanner(t, in, &SiteCheck{Margin: 20, Spread: 30, All: true})
	sent := run(t, pl, in, rtt)
	for i := 3; i < 6; i++ {
		if sent[i] {
			t.Errorf("site A's server %d, of a group listed before, probed", i)
		}
	}
	if newProbed := probedIn(sent, 9, 12); newProbed != 1 {
		t.Errorf("site B's new group: %d probed, want one representative", newProbed)
	}
	in.Known = []bool{true}
	if _, err := NewPlanner(in, DefaultPlanParams(), rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrPlan) {
		t.Errorf("known of the wrong length: %v", err)
	}
}

// TestSites_SplitByVectors: one AS in two places, as the landmarks see
// it (vectors more than Spread apart), is two sites.
func TestSites_SplitByVectors(t *testing.T) {
	in, _ := detourWorld()
	for i := 6; i < 12; i++ {
		in.Targets[i].ASN = 1
	}
	pl := sitePlanner(t, in, &SiteCheck{Margin: 20, Spread: 20, All: true})
	if st := pl.SiteStats(); st.Sites != 2 {
		t.Errorf("%d sites, want 2 (vectors 30 ms apart, spread 20)", st.Sites)
	}
	pl = sitePlanner(t, in, &SiteCheck{Margin: 20, Spread: 40, All: true})
	if st := pl.SiteStats(); st.Sites != 1 {
		t.Errorf("%d sites, want 1 (vectors 30 ms apart, spread 40)", st.Sites)
	}
}

func TestNewPlanner_RefusesBadSites(t *testing.T) {
	in, _ := detourWorld()
	for _, c := range []SiteCheck{{Margin: -1}, {Spread: -1}, {Margin: math.NaN()}, {Spread: math.Inf(1)}} {
		p := DefaultPlanParams()
		p.Sites = &c
		if _, err := NewPlanner(in, p, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrPlan) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	in.Remembered = []float64{1}
	if _, err := NewPlanner(in, DefaultPlanParams(), rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrPlan) {
		t.Errorf("remembered RTTs of the wrong length: %v", err)
	}
}

// probedIn counts the targets from to to-1 that sent holds.
func probedIn(sent map[int]bool, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if sent[i] {
			n++
		}
	}
	return n
}

// noneRemembered returns PlanInput.Remembered for n targets of which the
// client remembers none.
func noneRemembered(n int) []float64 {
	r := make([]float64, n)
	for i := range r {
		r[i] = math.NaN()
	}
	return r
}

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
