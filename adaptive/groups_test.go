package adaptive

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// recorder is a Strategy that passes its inner one's hand-outs through and
// counts what it is told, so a test can check that the inner strategy
// hears of every server it handed out exactly once.
type recorder struct {
	Strategy
	told map[netip.AddrPort]int
	rtt  map[netip.AddrPort]time.Duration
}

func newRecorder(s Strategy) *recorder {
	return &recorder{Strategy: s, told: map[netip.AddrPort]int{}, rtt: map[netip.AddrPort]time.Duration{}}
}

func (r *recorder) Observe(a netip.AddrPort, rtt time.Duration, answered bool) error {
	r.told[a]++
	r.rtt[a] = rtt
	return r.Strategy.Observe(a, rtt, answered)
}

func grouped(t testing.TB, ts []Target, prior map[netip.Prefix]Prior) (*Grouped, *recorder) {
	t.Helper()
	c, err := NewConventional(ts)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(c)
	g, err := NewGrouped(rec, ts, DefaultGroups(), prior)
	if err != nil {
		t.Fatal(err)
	}
	return g, rec
}

// fixed is a world of given RTTs by address; missing ones never answer.
func fixed(rtts map[string]float64) truth {
	return func(t Target) (time.Duration, bool) {
		r, ok := rtts[t.Addr.Addr().String()]
		return ms(r), ok
	}
}

func sent(ps []probe) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.t.Addr.Addr().String())
	}
	return out
}

func TestGrouped_SkipsTheMatesOfAFarGroup(t *testing.T) {
	ts := []Target{tg("10.0.0.1", "DE"), tg("10.0.0.2", "DE"), tg("10.0.0.3", "DE"), tg("10.0.1.1", "DE")}
	g, rec := grouped(t, ts, nil)
	ps := drive(t, g, fixed(map[string]float64{"10.0.0.1": 250, "10.0.0.2": 250, "10.0.0.3": 250, "10.0.1.1": 30}))
	if got := sent(ps); fmt.Sprint(got) != "[10.0.0.1 10.0.1.1]" {
		t.Errorf("probed %v, want one of the far /24 and the other /24's", got)
	}
	if st := g.Stats(); st.Skipped != 2 {
		t.Errorf("stats %+v, want 2 skipped", st)
	}
	for _, tt := range ts {
		if rec.told[tt.Addr] != 1 {
			t.Errorf("inner strategy told of %v %d times", tt.Addr, rec.told[tt.Addr])
		}
	}
	if r := rec.rtt[ts[2].Addr]; r != ms(250) {
		t.Errorf("a skipped mate was reported at %v, want the sample's 250ms", r)
	}
	// Around a planner that stops, the stop counts the probes sent.
	pl, err := New(ts, Scout(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	g2, err := NewGrouped(pl, ts, DefaultGroups(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ps2 := drive(t, g2, fixed(map[string]float64{"10.0.0.1": 250, "10.0.0.2": 250, "10.0.0.3": 250, "10.0.1.1": 30}))
	if st, info := g2.Stopped(); st && (info.Sent != len(ps2) || info.Sent+info.Unprobed != len(ts)) {
		t.Errorf("stop info %+v after %d probes of %d servers", info, len(ps2), len(ts))
	}
}

func TestGrouped_ProbesEveryMateOfAPlayableGroup(t *testing.T) {
	ts := addrs("AU", 10, 0, 5)
	g, _ := grouped(t, ts, nil)
	rtts := map[string]float64{}
	for _, tt := range ts {
		rtts[tt.Addr.Addr().String()] = 199
	}
	if ps := drive(t, g, fixed(rtts)); len(ps) != 5 {
		t.Errorf("%d probes, want all 5", len(ps))
	}
}

// TestGrouped_SamplesAgainNearTheThreshold: with M = 20 ms, a first sample
// at 212 ms is under 220 and a second at 207 under 210, so a third is
// taken; 207 is at least 200 + 20/3 and the rest are skipped.
func TestGrouped_SamplesAgainNearTheThreshold(t *testing.T) {
	ts := addrs("US", 10, 1, 6)
	g, _ := grouped(t, ts, nil)
	ps := drive(t, g, fixed(map[string]float64{"10.1.0.1": 212, "10.1.0.2": 207, "10.1.0.3": 209, "10.1.0.4": 190, "10.1.0.5": 190, "10.1.0.6": 190}))
	if len(ps) != 3 {
		t.Fatalf("%d probes (%v), want 3 samples", len(ps), sent(ps))
	}
	if st := g.Stats(); st.Skipped != 3 || st.Samples != 2 {
		t.Errorf("stats %+v, want 3 skipped after 2 further samples", st)
	}
}

// handOut returns what g hands out until it has nothing more to send.
func handOut(t *testing.T, g *Grouped) []Target {
	t.Helper()
	var out []Target
	for {
		tt, _, ok := g.Next()
		if !ok {
			return out
		}
		out = append(out, tt)
	}
}

// TestGrouped_FurtherSamplesGoTogether: a first sample at 202 ms needs 10
// samples at that least to rule its /24 out (202 >= 200 + 20/10): the 9
// further ones go at once, not one per round trip, and once they answer
// the rest is skipped, the same 10 probes as one at a time.
func TestGrouped_FurtherSamplesGoTogether(t *testing.T) {
	ts := addrs("US", 10, 8, 12)
	g, _ := grouped(t, ts, nil)
	first := handOut(t, g)
	if len(first) != 1 {
		t.Fatalf("first round %d probes, want the one sample", len(first))
	}
	if err := g.Observe(first[0].Addr, ms(202), true); err != nil {
		t.Fatal(err)
	}
	further := handOut(t, g)
	if len(further) != 9 {
		t.Fatalf("after a sample at 202 ms %d probes at once, want the 9 further samples 202 ms needs", len(further))
	}
	for i, tt := range further {
		if err := g.Observe(tt.Addr, ms(202), true); err != nil {
			t.Fatal(err)
		}
		if more := handOut(t, g); len(more) != 0 {
			t.Fatalf("after further sample %d, %d more probes", i+1, len(more))
		}
	}
	if st := g.Stats(); st.Samples != 9 || st.Skipped != 2 {
		t.Errorf("stats %+v, want 9 further samples and 2 skipped", st)
	}
}

// TestGrouped_NoGroupIsRuledOutWithASampleOut: samples at 205 ms need 4;
// the group is not decided on the answers in while one is still out, and
// that one, at 199 ms, makes it playable: every mate is probed.
func TestGrouped_NoGroupIsRuledOutWithASampleOut(t *testing.T) {
	ts := addrs("US", 10, 9, 8)
	g, _ := grouped(t, ts, nil)
	first := handOut(t, g)
	if err := g.Observe(first[0].Addr, ms(205), true); err != nil {
		t.Fatal(err)
	}
	further := handOut(t, g)
	if len(further) != 3 {
		t.Fatalf("%d further samples at once, want 3 (205 >= 200 + 20/4)", len(further))
	}
	for _, tt := range further[:2] {
		if err := g.Observe(tt.Addr, ms(205), true); err != nil {
			t.Fatal(err)
		}
	}
	if g.Stats().Skipped != 0 {
		t.Fatalf("mates skipped with a sample still out: %+v", g.Stats())
	}
	if err := g.Observe(further[2].Addr, ms(199), true); err != nil {
		t.Fatal(err)
	}
	if rest := handOut(t, g); len(rest) != 4 || g.Stats().Skipped != 0 {
		t.Errorf("after a sample at 199 ms, %d more probes and stats %+v; want the 4 other mates", len(rest), g.Stats())
	}
}

// TestGrouped_TogetherCostsNoProbe: on random worlds of /24s near the
// threshold with no loss, taking the further samples together (every
// probe out at once, answers in the order sent) probes exactly the
// servers that taking them one at a time does.
func TestGrouped_TogetherCostsNoProbe(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var ts []Target
		rtts := map[string]float64{}
		for b := range 1 + rng.IntN(12) {
			for h := range 1 + rng.IntN(30) {
				a := fmt.Sprintf("10.20.%d.%d", b, h+1)
				ts = append(ts, tg(a, "US"))
				rtts[a] = 195 + 30*rng.Float64()
			}
		}
		rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		one, _ := grouped(t, ts, nil)
		together, _ := grouped(t, ts, nil)
		a := sent(drive(t, one, fixed(rtts)))
		b := sent(driveBatched(t, together, fixed(rtts), nil, len(ts)))
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Fatalf("seed %d: one at a time probed %d servers, together %d", seed, len(a), len(b))
		}
		// Samples may differ: mates sent together as samples that one
		// at a time would have gone after a sample found their group
		// playable.
		if one.Stats().Skipped != together.Stats().Skipped {
			t.Fatalf("seed %d: stats %+v one at a time, %+v together", seed, one.Stats(), together.Stats())
		}
	}
}

// TestGrouped_OneSampleUnderTheThresholdKeepsTheGroup: the least sample,
// not the first, decides; any sample under the threshold makes the group
// playable.
func TestGrouped_OneSampleUnderTheThresholdKeepsTheGroup(t *testing.T) {
	ts := addrs("US", 10, 2, 4)
	g, _ := grouped(t, ts, nil)
	ps := drive(t, g, fixed(map[string]float64{"10.2.0.1": 215, "10.2.0.2": 199.5, "10.2.0.3": 203, "10.2.0.4": 201}))
	if len(ps) != 4 {
		t.Errorf("%d probes, want every mate once one answered under 200 ms", len(ps))
	}
}

// TestGrouped_ALostFirstSampleReleasesTheMates: the first is silent (gone
// since it registered, known only after its timeouts): its mates are not
// held behind another sample but probed.
func TestGrouped_ALostFirstSampleReleasesTheMates(t *testing.T) {
	ts := addrs("FR", 10, 3, 3)
	g, _ := grouped(t, ts, nil)
	ps := driveBatched(t, g, fixed(map[string]float64{"10.3.0.2": 300, "10.3.0.3": 300}), rand.New(rand.NewPCG(1, 1)), 16)
	if len(ps) != 3 || g.Stats().Skipped != 0 {
		t.Errorf("probed %v, stats %+v; want every server", sent(ps), g.Stats())
	}
}

// TestGrouped_ALostLaterSampleIsNotASample: after an answer between the
// threshold and the margin, a lost further sample does not count: the
// next mate is asked.
func TestGrouped_ALostLaterSampleIsNotASample(t *testing.T) {
	ts := addrs("FR", 10, 3, 4)
	g, _ := grouped(t, ts, nil)
	ps := drive(t, g, fixed(map[string]float64{"10.3.0.1": 215, "10.3.0.3": 212, "10.3.0.4": 300}))
	if len(ps) != 3 || g.Stats().Skipped != 1 {
		t.Errorf("probed %v, stats %+v; want 3 probes (215, lost, 212: least 212 >= 210) and 1 skipped", sent(ps), g.Stats())
	}
}

func TestGrouped_AnAddressIsOneGroup(t *testing.T) {
	var ts []Target
	for port := range 4 {
		ts = append(ts, Target{Addr: netip.AddrPortFrom(netip.MustParseAddr("2001:db8::1"), uint16(27960+port))})
	}
	ts = append(ts, Target{Addr: netip.AddrPortFrom(netip.MustParseAddr("2001:db8:0:1::1"), 27960)})
	g, _ := grouped(t, ts, nil)
	ps := drive(t, g, fixed(map[string]float64{"2001:db8::1": 300, "2001:db8:0:1::1": 300}))
	if len(ps) != 2 {
		t.Errorf("probed %v, want one per /64", sent(ps))
	}
}

func TestGrouped_RememberedPlayableGroupsFirst(t *testing.T) {
	ts := []Target{tg("10.9.0.1", "DE"), tg("10.9.0.2", "DE"), tg("10.8.0.1", "AU"), tg("10.8.0.2", "AU")}
	prior := map[netip.Prefix]Prior{GroupKey(netip.MustParseAddr("10.8.0.1")): {Least: ms(40), Samples: 3}}
	g, rec := grouped(t, ts, prior)
	ps := drive(t, g, fixed(map[string]float64{"10.9.0.1": 300, "10.9.0.2": 300, "10.8.0.1": 41, "10.8.0.2": 42}))
	if got := fmt.Sprint(sent(ps)); got != "[10.8.0.1 10.8.0.2 10.9.0.1]" {
		t.Errorf("probed %v, want the remembered playable group first, then one of the other", got)
	}
	if st := g.Stats(); st.First != 2 || st.Skipped != 1 {
		t.Errorf("stats %+v", st)
	}
	for _, tt := range ts {
		if rec.told[tt.Addr] != 1 {
			t.Errorf("inner strategy told of %v %d times", tt.Addr, rec.told[tt.Addr])
		}
	}
}

func TestGrouped_RememberedFarGroupIsNotProbed(t *testing.T) {
	ts := addrs("BR", 10, 4, 3)
	prior := map[netip.Prefix]Prior{GroupKey(ts[0].Addr.Addr()): {Least: ms(330), Samples: 1}}
	g, rec := grouped(t, ts, prior)
	if ps := drive(t, g, fixed(nil)); len(ps) != 0 {
		t.Errorf("probed %v, want none", sent(ps))
	}
	if g.Stats().Remembered != 3 || rec.rtt[ts[1].Addr] != ms(328) {
		t.Errorf("stats %+v, reported %v; want 3 remembered, reported at the least less the drift", g.Stats(), rec.rtt[ts[1].Addr])
	}
}

// TestGrouped_DriftKeepsARememberedEdgeOpen: remembered at 221 ms once,
// less 2 ms of drift is 219, under 200 + 20/1: one fresh sample decides.
func TestGrouped_DriftKeepsARememberedEdgeOpen(t *testing.T) {
	ts := addrs("US", 10, 5, 4)
	prior := map[netip.Prefix]Prior{GroupKey(ts[0].Addr.Addr()): {Least: ms(221), Samples: 1}}
	g, _ := grouped(t, ts, prior)
	ps := drive(t, g, fixed(map[string]float64{"10.5.0.1": 222, "10.5.0.2": 222, "10.5.0.3": 222, "10.5.0.4": 222}))
	if len(ps) != 1 {
		t.Errorf("probed %v, want one fresh sample (2 samples, least 219 >= 210)", sent(ps))
	}
}

// TestGrouped_RememberedJustOverIsProbedTogether: remembered at 201 ms,
// less 2 ms of drift is 199: no number of samples at or over that can
// rule the /24 out, so every mate is probed, all at once rather than one
// per round trip.
func TestGrouped_RememberedJustOverIsProbedTogether(t *testing.T) {
	ts := addrs("US", 10, 6, 6)
	prior := map[netip.Prefix]Prior{GroupKey(ts[0].Addr.Addr()): {Least: ms(201), Samples: 1}}
	g, _ := grouped(t, ts, prior)
	if got := handOut(t, g); len(got) != 6 {
		t.Errorf("%d probes at once, want all 6 mates", len(got))
	}
}

func TestNewGrouped_Refuses(t *testing.T) {
	c, _ := NewConventional(addrs("DE", 10, 0, 2))
	for _, p := range []GroupParams{{Threshold: -1}, {Margin: -1}, {Drift: -1}} {
		if _, err := NewGrouped(c, nil, p, nil); !errors.Is(err, ErrGroups) {
			t.Errorf("%+v: %v", p, err)
		}
	}
	if _, err := NewGrouped(nil, nil, DefaultGroups(), nil); !errors.Is(err, ErrGroups) {
		t.Errorf("nil strategy: %v", err)
	}
}

// TestGrouped_Properties: on random lists and worlds where a /24's servers
// share an RTT up to a little queueing, with many probes in flight and
// outcomes in any order, around the adaptive planner: no server is probed
// twice, the inner planner hears of every server it handed out exactly
// once, and a server is skipped only when its group had a sample at or
// over the threshold; with no queueing at all no playable server is
// skipped.
func TestGrouped_Properties(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var ts []Target
		base := map[netip.Prefix]float64{}
		for range 1 + rng.IntN(300) {
			a := netip.AddrFrom4([4]byte{10, byte(rng.IntN(4)), byte(rng.IntN(8)), byte(1 + rng.IntN(3))})
			ts = append(ts, Target{Addr: netip.AddrPortFrom(a, uint16(27960+rng.IntN(4))), Country: []string{"DE", "US", "AU"}[rng.IntN(3)]})
			if _, ok := base[GroupKey(a)]; !ok {
				base[GroupKey(a)] = 150 + 100*rng.Float64()
			}
		}
		jitter := seed%2 == 1
		world := func(tt Target) (time.Duration, bool) {
			if tt.Addr.Addr().As4()[3] == 3 && seed%3 == 0 {
				return 0, false
			}
			r := base[GroupKey(tt.Addr.Addr())]
			if jitter {
				r += 2 * rng.ExpFloat64()
			}
			return ms(r), true
		}
		pl, err := New(ts, Scout(), rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatal(err)
		}
		rec := newRecorder(pl)
		g, err := NewGrouped(rec, ts, DefaultGroups(), nil)
		if err != nil {
			t.Fatal(err)
		}
		ps := driveBatched(t, g, world, rng, 1+rng.IntN(16))
		seen := map[netip.AddrPort]bool{}
		for _, p := range ps {
			if seen[p.t.Addr] {
				t.Fatalf("seed %d: %v probed twice", seed, p.t.Addr)
			}
			seen[p.t.Addr] = true
		}
		for a, n := range rec.told {
			if n != 1 {
				t.Fatalf("seed %d: inner planner told of %v %d times", seed, a, n)
			}
		}
		for _, tt := range ts {
			if rec.told[tt.Addr] == 1 && !seen[tt.Addr] && rec.rtt[tt.Addr] < ms(200) {
				t.Fatalf("seed %d: %v skipped on a sample of %v", seed, tt.Addr, rec.rtt[tt.Addr])
			}
			if !jitter && rec.told[tt.Addr] == 1 && !seen[tt.Addr] && base[GroupKey(tt.Addr.Addr())] < 200 {
				t.Fatalf("seed %d: playable %v skipped", seed, tt.Addr)
			}
		}
	}
}

// groupedWithin is group probing of ts over conventional discovery with
// the default constants and GroupParams.Within.
func groupedWithin(t testing.TB, ts []Target, within func(Target) string) *Grouped {
	t.Helper()
	c, err := NewConventional(ts)
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultGroups()
	p.Within = within
	g, err := NewGrouped(c, ts, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGrouped_PortsOfOneAddressStayTogether: Within cannot split the
// servers of one address (their landmark RTTs, measured apart, may fall
// in different bins): a far answer skips the address's other ports.
func TestGrouped_PortsOfOneAddressStayTogether(t *testing.T) {
	a := netip.MustParseAddr("10.7.0.1")
	var ts []Target
	for port := range uint16(3) {
		ts = append(ts, Target{Addr: netip.AddrPortFrom(a, 27960+port), Country: "DE"})
	}
	g := groupedWithin(t, ts, func(tt Target) string { return fmt.Sprint(tt.Addr.Port()) }) // every port apart
	if ps := drive(t, g, fixed(map[string]float64{"10.7.0.1": 300})); len(ps) != 1 {
		t.Errorf("probed %d ports of one address at 300 ms, want 1", len(ps))
	}
}

// TestGrouped_SplitByNetworkAndWithin: one /24 that geolocation puts in
// two countries is two groups; GroupParams.Within splits further.
func TestGrouped_SplitByNetworkAndWithin(t *testing.T) {
	ts := []Target{tg("10.7.0.1", "DE"), tg("10.7.0.2", "DE"), tg("10.7.0.3", "AU"), tg("10.7.0.4", "AU")}
	world := fixed(map[string]float64{"10.7.0.1": 300, "10.7.0.2": 300, "10.7.0.3": 40, "10.7.0.4": 41})
	g, _ := grouped(t, ts, nil)
	if ps := drive(t, g, world); len(ps) != 3 {
		t.Errorf("probed %v, want one of DE's and both of AU's", sent(ps))
	}
	g2 := groupedWithin(t, ts, func(tt Target) string { return tt.Addr.Addr().String() }) // every server apart
	if ps := drive(t, g2, world); len(ps) != 4 {
		t.Errorf("probed %v, want every server (Within splits them all)", sent(ps))
	}
}

// TestGrouped_UnlocatedServersAreNotGrouped: servers geolocation does not
// place are no group of their /24 (a lab world's consecutive loopback
// addresses hold unrelated servers): a far one skips none of the others,
// and a far memory of their /24 skips none.
func TestGrouped_UnlocatedServersAreNotGrouped(t *testing.T) {
	ts := []Target{tg("127.1.0.1", ""), tg("127.1.0.2", ""), tg("127.1.0.3", ""), tg("127.1.0.4", "")}
	world := fixed(map[string]float64{"127.1.0.1": 390, "127.1.0.2": 40, "127.1.0.3": 380, "127.1.0.4": 60})
	g, _ := grouped(t, ts, nil)
	if ps := drive(t, g, world); len(ps) != 4 {
		t.Errorf("probed %v, want every unlocated server", sent(ps))
	}
	far := map[netip.Prefix]Prior{GroupKey(netip.MustParseAddr("127.1.0.1")): {Least: ms(390), Samples: 4}}
	g, _ = grouped(t, ts, far)
	if ps := drive(t, g, world); len(ps) != 4 {
		t.Errorf("with their /24 remembered far, probed %v, want every unlocated server", sent(ps))
	}
}

// TestGrouped_SkippedMatesAreNoEvidenceForTheStop: one cluster (nothing
// geolocated: each address is its own group), an address with 25 far
// ports, and 200 single servers of which half are playable. When a far
// port is the planner's first sample, its 24 skipped mates used to reach
// the stop rule as 24 agreeing far outcomes, and the run stopped after a
// few probes with the cluster's bound still the far sample's. Whatever
// the seed, every playable server must be found.
func TestGrouped_SkippedMatesAreNoEvidenceForTheStop(t *testing.T) {
	var ts []Target
	rtts := map[netip.AddrPort]float64{}
	for port := range 25 {
		a := netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), uint16(27960+port))
		ts = append(ts, Target{Addr: a})
		rtts[a] = 300
	}
	playable := 0
	for i := range 200 {
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i / 250), byte(i%250 + 1)}), 27960)
		ts = append(ts, Target{Addr: a})
		rtts[a] = 300
		if i%2 == 0 {
			rtts[a] = 100
			playable++
		}
	}
	world := func(tt Target) (time.Duration, bool) { return ms(rtts[tt.Addr]), true }
	firstFar := 0
	for seed := range uint64(100) {
		p := Scout()
		p.StopRTT = ms(200)
		pl, err := New(ts, p, rand.New(rand.NewPCG(seed, 3)))
		if err != nil {
			t.Fatal(err)
		}
		gp := DefaultGroups()
		g, err := NewGrouped(pl, ts, gp, nil)
		if err != nil {
			t.Fatal(err)
		}
		ps := driveBatched(t, g, world, nil, 8)
		if ps[0].t.Addr.Addr() == netip.MustParseAddr("10.0.0.1") {
			firstFar++
		}
		found := 0
		for _, pr := range ps {
			if pr.rtt < ms(200) {
				found++
			}
		}
		if found != playable {
			t.Fatalf("seed %d: found %d of %d playable after %d probes (first %v at %v); stats %+v",
				seed, found, playable, len(ps), ps[0].t.Addr, ps[0].rtt, g.Stats())
		}
	}
	if firstFar == 0 {
		t.Fatal("no seed began with the far address: the case is not exercised")
	}
}
