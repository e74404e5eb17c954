package adaptive

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// ms is a duration in milliseconds.
func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// ap makes an address:port from a dotted quad.
func ap(s string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(s), 27960) }

// tg makes a target.
func tg(addr, country string) Target { return Target{Addr: ap(addr), Country: country} }

// truth is a world: each target's RTT, or no answer.
type truth func(Target) (time.Duration, bool)

// probe is one hand-out as a driver saw it.
type probe struct {
	t        Target
	ph       Phase
	rtt      time.Duration
	answered bool
}

// drive runs s against the world one probe at a time, observing each
// outcome before asking for the next probe, as a client with one probe in
// flight does. It fails the test on a refused Observe or on a Waiting with
// nothing outstanding.
func drive(t testing.TB, s Strategy, world truth) []probe {
	t.Helper()
	var out []probe
	for {
		tgt, ph, ok := s.Next()
		if !ok {
			if ph != Done {
				t.Fatalf("Next: phase %v with nothing outstanding", ph)
			}
			return out
		}
		rtt, answered := world(tgt)
		out = append(out, probe{tgt, ph, rtt, answered})
		if err := s.Observe(tgt.Addr, rtt, answered); err != nil {
			t.Fatalf("Observe(%v): %v", tgt.Addr, err)
		}
	}
}

// driveBatched runs s with every available probe handed out at once and the
// outcomes observed in an order shuffled by rng, as a client with many
// probes in flight sees them; a nil rng observes them in the order sent.
func driveBatched(t testing.TB, s Strategy, world truth, rng *rand.Rand, inflight int) []probe {
	t.Helper()
	var out []probe
	var flying []probe
	for {
		done := false
		for len(flying) < inflight {
			tgt, ph, ok := s.Next()
			if !ok {
				done = ph == Done
				break
			}
			rtt, answered := world(tgt)
			p := probe{tgt, ph, rtt, answered}
			out = append(out, p)
			flying = append(flying, p)
		}
		if len(flying) == 0 {
			if !done {
				t.Fatalf("Next: waiting with nothing outstanding")
			}
			return out
		}
		p := flying[0]
		if rng == nil {
			flying = flying[1:]
		} else {
			i := rng.IntN(len(flying))
			p = flying[i]
			flying[i] = flying[len(flying)-1]
			flying = flying[:len(flying)-1]
		}
		if err := s.Observe(p.t.Addr, p.rtt, p.answered); err != nil {
			t.Fatalf("Observe(%v): %v", p.t.Addr, err)
		}
	}
}

// byCountry is a world where every server of a country has the same RTT.
func byCountry(rtts map[string]time.Duration) truth {
	return func(t Target) (time.Duration, bool) {
		r, ok := rtts[t.Country]
		return r, ok
	}
}

// addrs makes n targets of country cc from the /16 a.b: a.b.0.1, a.b.0.2, ...
func addrs(cc string, a, b, n int) []Target {
	out := make([]Target, n)
	for i := range out {
		out[i] = tg(fmt.Sprintf("%d.%d.%d.%d", a, b, i/250, i%250+1), cc)
	}
	return out
}

func newPlanner(t testing.TB, ts []Target, p Params, seed uint64) *Planner {
	t.Helper()
	pl, err := New(ts, p, rand.New(rand.NewPCG(seed, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// live returns the clusters that step 5 ranks (not dissolved), by ID.
func live(cs []ClusterInfo) map[string]ClusterInfo {
	m := make(map[string]ClusterInfo)
	for _, c := range cs {
		if !c.Dissolved {
			m[c.ID] = c
		}
	}
	return m
}

func phases(ps []probe, ph Phase) []probe {
	var out []probe
	for _, p := range ps {
		if p.ph == ph {
			out = append(out, p)
		}
	}
	return out
}

func ids(cs map[string]ClusterInfo) []string {
	var out []string
	for id := range cs {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
