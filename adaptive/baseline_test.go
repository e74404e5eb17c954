package adaptive

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestConventional checks master order, every server once, no stop.
func TestConventional(t *testing.T) {
	w := randomWorld(rand.New(rand.NewPCG(1, 1)), 300)
	c, err := NewConventional(w.targets)
	if err != nil {
		t.Fatal(err)
	}
	ps := drive(t, c, w.truth)
	last := -1
	for _, p := range ps {
		if p.ph != Master || p.t.Index <= last {
			t.Fatalf("%v: phase %v, index %d after %d", p.t.Addr, p.ph, p.t.Index, last)
		}
		last = p.t.Index
	}
	if stopped, _ := c.Stopped(); stopped || len(ps) != len(c.l.targets) {
		t.Errorf("stopped %v, %d of %d probed", stopped, len(ps), len(c.l.targets))
	}
	if err := c.Observe(ps[0].t.Addr, 0, true); !errors.Is(err, ErrNotSent) {
		t.Errorf("second Observe: %v", err)
	}
}

// TestOracle checks that the oracle probes exactly the playable servers,
// nearest first, then stops.
func TestOracle(t *testing.T) {
	w := randomWorld(rand.New(rand.NewPCG(2, 2)), 500)
	o, err := NewOracle(w.targets, w.truth, ms(200))
	if err != nil {
		t.Fatal(err)
	}
	ps := drive(t, o, w.truth)
	playable := 0
	for _, r := range w.rtt {
		if r <= ms(200) {
			playable++
		}
	}
	if len(ps) != playable || playable == 0 {
		t.Fatalf("%d probes, %d playable", len(ps), playable)
	}
	if !slices.IsSortedFunc(ps, func(a, b probe) int { return int(a.rtt - b.rtt) }) {
		t.Error("not nearest first")
	}
	if stopped, info := o.Stopped(); !stopped || info.Sent != playable {
		t.Errorf("stopped %v, %+v", stopped, info)
	}
	var _ Strategy = o
	var _ Strategy = (*Planner)(nil)
	var _ Strategy = (*Conventional)(nil)
	_ = time.Second
}
