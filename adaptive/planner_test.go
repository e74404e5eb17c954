package adaptive

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestAlgorithm1_CalibrationWaits checks that step 6 waits for every
// calibration and split outcome, and that outcomes may arrive in any order.
func TestAlgorithm1_CalibrationWaits(t *testing.T) {
	ts := append(addrs("AU", 1, 1, 30), addrs("US", 2, 1, 30)...)
	pl := newPlanner(t, ts, Paper(), 1)
	var out []Target
	for {
		tg, ph, ok := pl.Next()
		if !ok {
			if ph != Waiting {
				t.Fatalf("phase %v, want Waiting", ph)
			}
			break
		}
		if ph != Calibrate {
			t.Fatalf("phase %v before calibration is done", ph)
		}
		out = append(out, tg)
	}
	if len(out) != 12 || pl.Calibrated() {
		t.Fatalf("%d calibration probes (want 12), calibrated %v", len(out), pl.Calibrated())
	}
	if !slices.IsSortedFunc(out, func(a, b Target) int { return a.Index - b.Index }) {
		t.Errorf("calibration probes not in master order")
	}
	for i := len(out) - 1; i > 0; i-- {
		if err := pl.Observe(out[i].Addr, ms(10), true); err != nil {
			t.Fatal(err)
		}
		if _, ph, ok := pl.Next(); ok || ph != Waiting {
			t.Fatalf("with %d outstanding: Next = %v, %v", i, ph, ok)
		}
	}
	if err := pl.Observe(out[0].Addr, ms(10), false); err != nil {
		t.Fatal(err)
	}
	if _, ph, ok := pl.Next(); !ok || ph != Reordered || !pl.Calibrated() {
		t.Fatalf("after calibration: Next = %v, %v", ph, ok)
	}
}

// TestObserve_Refusals checks the outcomes Observe refuses.
func TestObserve_Refusals(t *testing.T) {
	ts := addrs("AU", 1, 1, 4)
	pl := newPlanner(t, ts, Paper(), 1)
	first, _, _ := pl.Next()
	if err := pl.Observe(ap("9.9.9.9"), ms(1), true); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown address: %v", err)
	}
	var notSent Target
	for _, x := range ts {
		if x.Addr != first.Addr {
			notSent = x
		}
	}
	if err := pl.Observe(notSent.Addr, ms(1), true); !errors.Is(err, ErrNotSent) {
		t.Errorf("not handed out: %v", err)
	}
	mapped := netip.AddrPortFrom(netip.AddrFrom16(first.Addr.Addr().As16()), first.Addr.Port())
	if err := pl.Observe(mapped, ms(1), true); err != nil {
		t.Errorf("IPv4-mapped form of a handed-out address: %v", err)
	}
	if err := pl.Observe(first.Addr, ms(1), true); !errors.Is(err, ErrNotSent) {
		t.Errorf("observed twice: %v", err)
	}
	if s := pl.Stats(); s.Refused != 3 || s.Observed != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestNew_Refusals checks what New refuses, and that duplicates are dropped.
func TestNew_Refusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	if _, err := New([]Target{{Country: "AU"}}, Paper(), rng); !errors.Is(err, ErrTarget) {
		t.Errorf("zero address: %v", err)
	}
	if _, err := New(nil, Paper(), nil); !errors.Is(err, ErrParams) {
		t.Errorf("nil rng: %v", err)
	}
	for name, edit := range map[string]func(*Params){
		"Window 0":          func(p *Params) { p.Window = 0 },
		"SampleScale 0":     func(p *Params) { p.SampleScale = 0 },
		"Fine4 = Coarse4":   func(p *Params) { p.Fine4 = 8 },
		"Fine6 129":         func(p *Params) { p.Fine6 = 129 },
		"SplitLow > High":   func(p *Params) { p.SplitLow = 0.9 },
		"StopPercentile 0":  func(p *Params) { p.StopPercentile = 0 },
		"Slash8Share 1.5":   func(p *Params) { p.Slash8Share = 1.5 },
		"StopRun 0":         func(p *Params) { p.Stop, p.StopRun = StopRun, 0 },
		"StopAgree 0":       func(p *Params) { p.Stop, p.StopAgree = StopEstimate, 0 },
		"ClusterBy unknown": func(p *Params) { p.ClusterBy = 9 },
	} {
		p := Paper()
		edit(&p)
		if _, err := New(nil, p, rng); !errors.Is(err, ErrParams) {
			t.Errorf("%s: %v", name, err)
		}
	}
	p := Paper()
	p.StopRTT, p.Window = 0, 0 // auto-stop off: Window unused
	if _, err := New(nil, p, rng); err != nil {
		t.Errorf("auto-stop off with Window 0: %v", err)
	}
	ts := []Target{tg("1.1.1.1", "AU"), tg("2.2.2.2", "AU"), tg("1.1.1.1", "NZ"),
		{Addr: netip.MustParseAddrPort("[::ffff:2.2.2.2]:27960"), Country: "AU"}}
	pl := newPlanner(t, ts, Paper(), 1)
	ps := drive(t, pl, byCountry(map[string]time.Duration{"AU": ms(5)}))
	if len(ps) != 2 || pl.Stats().Duplicates != 2 || ps[0].t.Index != 0 || ps[1].t.Index != 1 {
		t.Errorf("duplicates: %d probes %+v, stats %+v", len(ps), ps, pl.Stats())
	}
}

// TestPlanner_Empty checks that an empty list is done at once.
func TestPlanner_Empty(t *testing.T) {
	pl := newPlanner(t, nil, Paper(), 1)
	if _, ph, ok := pl.Next(); ok || ph != Done || !pl.Calibrated() {
		t.Errorf("Next = %v, %v", ph, ok)
	}
}

// TestPlanner_Deterministic checks that a seed and a sequence of outcomes
// give one plan, and that the seed matters.
func TestPlanner_Deterministic(t *testing.T) {
	w := randomWorld(rand.New(rand.NewPCG(5, 5)), 2000)
	run := func(seed uint64) []netip.AddrPort {
		pl := newPlanner(t, w.targets, Paper(), seed)
		var out []netip.AddrPort
		for _, p := range drive(t, pl, w.truth) {
			out = append(out, p.t.Addr)
		}
		return out
	}
	a, b, c := run(1), run(1), run(2)
	if !slices.Equal(a, b) {
		t.Error("same seed, different plans")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds, same plan")
	}
}
