package demo

import (
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/world"
)

// TestFound_CountsGroundTruthNotMeasuredRTT feeds Found outcomes whose
// measured RTTs fall on the other side of 200 ms from the servers' true
// RTTs (as the emulator's jitter makes them do) and checks that the true
// RTT decides: a server at 199 ms measured at 201 ms is found, one at
// 205 ms measured (impossibly) at 199 ms is not, an unanswered playable
// server is not, a server answering twice is counted once at its first
// answer, and an address outside the world is not counted. Counting the
// answers measured under 200 ms (the demo's count before) gives 6 here,
// and the last at 4.102 s.
func TestFound_CountsGroundTruthNotMeasuredRTT(t *testing.T) {
	ms := time.Millisecond
	ap := func(i byte) netip.AddrPort { return netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, i}), 27960) }
	truth := map[netip.AddrPort]time.Duration{
		ap(1): 199 * ms, // playable; its probe measures 201 ms
		ap(2): 205 * ms, // not playable; its probe measures 199 ms
		ap(3): 100 * ms, // playable; answers twice
		ap(4): 150 * ms, // playable; never answers
		ap(5): 200 * ms, // not playable: the bound is exclusive
		ap(7): 60 * ms,  // playable; answers
	}
	probes := []discover.Outcome{
		{Addr: ap(3), At: 0, RTT: 100 * ms, Answered: true},
		{Addr: ap(7), At: 500 * ms, RTT: 61 * ms, Answered: true},
		{Addr: ap(2), At: 1000 * ms, RTT: 199 * ms, Answered: true},
		{Addr: ap(4), At: 1500 * ms, Answered: false},
		{Addr: ap(4), At: 2500 * ms, Answered: false},
		{Addr: ap(5), At: 2600 * ms, RTT: 200 * ms, Answered: true},
		{Addr: ap(1), At: 3000 * ms, RTT: 201 * ms, Answered: true},
		{Addr: ap(3), At: 4000 * ms, RTT: 102 * ms, Answered: true},           // a second answer: found already
		{Addr: ap(9), At: 4500 * ms, RTT: 50 * ms, Answered: true},            // not in the world
		{Addr: ap(1), At: 5000 * ms, RTT: 1 * ms, Answered: false},            // lost later: still found
		{Addr: netip.AddrPort{}, At: 5100 * ms, RTT: 10 * ms, Answered: true}, // zero address
	}
	n, last := Found(probes, truth, 200*ms)
	if n != 3 || last != 3201*ms {
		t.Errorf("Found = %d servers, last at %v; want 3 (199, 100 and 60 ms), last at 3.201s", n, last)
	}
	if n, last := Found(nil, truth, 200*ms); n != 0 || last != 0 {
		t.Errorf("no probes: %d, %v", n, last)
	}
	// A lower bound makes the 199 ms server unplayable.
	if n, last := Found(probes, truth, 150*ms); n != 2 || last != 561*ms {
		t.Errorf("stop 150ms: %d, %v; want 2, 561ms", n, last)
	}
}

// TestBuild_TruthIsTheSimulatorsModel checks that the demo's world is the
// simulator's (population.FittedVantage, what scout-lab sim's tables use), not
// the global-residual model: every server's emulated RTT is the model's
// RTT from the place (capped at world.MaxRTT), the jitter only adds to it,
// and for seed 5 the two models differ.
func TestBuild_TruthIsTheSimulatorsModel(t *testing.T) {
	cfg := Config{Servers: 300, Seed: 5}
	w, place, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pop, err := population.Build(population.FittedVantage(population.ET, 300, 5))
	if err != nil {
		t.Fatal(err)
	}
	global, err := population.Build(population.Fitted(population.ET, 300, 5))
	if err != nil {
		t.Fatal(err)
	}
	want, other := pop.RTTs(place), global.RTTs(place)
	if len(w.Servers) != len(want) {
		t.Fatalf("%d servers, model has %d", len(w.Servers), len(want))
	}
	differ := 0
	for i, s := range w.Servers {
		if s.Public != pop.Servers[i].Addr || time.Duration(s.Link.RTT) != min(want[i], world.MaxRTT) {
			t.Fatalf("server %d: %v at %v, model %v at %v", i, s.Public, s.Link.RTT, pop.Servers[i].Addr, want[i])
		}
		if s.Link.Jitter <= 0 || s.Link.Loss != DefaultLoss {
			t.Errorf("server %d: jitter %v, loss %v", i, s.Link.Jitter, s.Link.Loss)
		}
		if want[i] != other[i] {
			differ++
		}
	}
	if differ == 0 {
		t.Error("the vantage and global-residual models give the same RTTs: the test cannot tell them apart")
	}
}

// TestMissed_SplitsUnprobedFromUnanswered feeds Missed a run's outcomes
// and the playable servers listed: one answered at its second probe (not
// missed), one probed twice without an answer, one answering once of
// two, two never probed, and an unplayable server unanswered (not
// counted).
func TestMissed_SplitsUnprobedFromUnanswered(t *testing.T) {
	ap := func(i byte) netip.AddrPort { return netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, i}), 27960) }
	probes := []discover.Outcome{
		{Addr: ap(1)}, {Addr: ap(1), Answered: true},
		{Addr: ap(2)}, {Addr: ap(2)},
		{Addr: ap(3), Answered: true}, {Addr: ap(3)},
		{Addr: ap(9)},
	}
	unprobed, unanswered := Missed(probes, []netip.AddrPort{ap(1), ap(2), ap(3), ap(4), ap(5)})
	if unprobed != 2 || unanswered != 1 {
		t.Errorf("Missed = %d unprobed, %d unanswered; want 2, 1", unprobed, unanswered)
	}
	if u, n := Missed(nil, nil); u != 0 || n != 0 {
		t.Errorf("Missed of nothing = %d, %d", u, n)
	}
}
