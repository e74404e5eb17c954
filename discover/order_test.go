package discover

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/probe"
)

// orderedWorld lists near servers (country AU, first octet 60, 30 ms)
// among far ones (DE and US, 80 and 90, 300 ms), shuffled as a master
// lists them; silent servers (first octet 100, country NZ) never answer.
// It returns the addresses in master order and a Locator by first octet.
func orderedWorld(n *fakeNet, near, far, silent int) ([]netip.AddrPort, Locator) {
	var all []netip.AddrPort
	add := func(octet byte, i int, delay time.Duration, answers bool) {
		ap := netip.AddrPortFrom(netip.AddrFrom4([4]byte{octet, byte(i / 200), byte(i % 200), 1}), 27960)
		all = append(all, ap)
		if answers {
			n.node(ap, q3Server("x", delay))
		}
	}
	for i := range near {
		add(60, i, 30*time.Millisecond, true)
	}
	for i := range far {
		add(80+10*byte(i%2), i, 300*time.Millisecond, true)
	}
	for i := range silent {
		add(100, i, 0, false)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	countries := map[byte]string{60: "AU", 80: "DE", 90: "US", 100: "NZ"}
	return all, func(a netip.Addr) (string, uint32) { return countries[a.As4()[0]], uint32(a.As4()[0]) }
}

func paperPlanner(targets []adaptive.Target) (adaptive.Strategy, error) {
	return adaptive.New(targets, adaptive.Paper(), rand.New(rand.NewPCG(7, 7)))
}

func TestOrdered_AdaptiveFindsNearServersFirstAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		all, locate := orderedWorld(n, 40, 400, 5)
		n.node(masterA, q3Master(100*time.Millisecond, true, all[:200], all[200:]))
		rec := &recorder{masters: map[string]MasterReport{}, probed: map[netip.AddrPort]Server{}}
		cfg := Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}}
		cfg.Prober.Timeout, cfg.Prober.Attempts = 500*time.Millisecond, 1
		sum, ord, err := Ordered(t.Context(), n.conn(), n.conn(), cfg, locate, paperPlanner, rec.each)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Listed != len(all) || ord.Located != len(all) {
			t.Fatalf("listed %d, located %d, want %d", sum.Listed, ord.Located, len(all))
		}
		// Nothing is probed before the list is complete.
		if ord.ProbeStart < 200*time.Millisecond || sum.ListsTook > ord.ProbeStart {
			t.Errorf("probing began at %v, lists took %v: want after the list", ord.ProbeStart, sum.ListsTook)
		}
		if !ord.Stopped {
			t.Fatalf("auto-stop did not fire: %d probes", len(ord.Probes))
		}
		if ord.Refused != 0 {
			t.Errorf("%d outcomes refused by the planner", ord.Refused)
		}
		if len(ord.Probes) >= len(all) || sum.Probe.Sent != len(ord.Probes) || len(rec.probed) != len(ord.Probes) {
			t.Errorf("%d probes recorded, %d sent, %d events, of %d servers: want fewer than all", len(ord.Probes), sum.Probe.Sent, len(rec.probed), len(all))
		}
		nearFound := 0
		for _, o := range ord.Probes {
			if o.Answered && o.RTT < 200*time.Millisecond {
				nearFound++
				if o.At > ord.StopAt {
					t.Errorf("near server %v probed at %v, after auto-stop at %v", o.Addr, o.At, ord.StopAt)
				}
			}
		}
		t.Logf("%d probes of %d servers, auto-stop at %v (%+v), %d clusters", len(ord.Probes), len(all), ord.StopAt, ord.Stop, len(ord.Clusters))
		if nearFound != 40 {
			t.Errorf("found %d near servers, want 40", nearFound)
		}
		if sum.Probe.PeakInFlight > 16 {
			t.Errorf("peak in flight %d, want at most the window (16)", sum.Probe.PeakInFlight)
		}
		if len(ord.Clusters) < 3 {
			t.Errorf("%d clusters, want one per country at least", len(ord.Clusters))
		}
	})
}

func TestOrdered_ConventionalProbesEveryServerInMasterOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		all, locate := orderedWorld(n, 5, 30, 3)
		n.node(masterA, q3Master(10*time.Millisecond, true, all))
		rec := &recorder{masters: map[string]MasterReport{}, probed: map[netip.AddrPort]Server{}}
		cfg := Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}}
		cfg.Prober.Timeout, cfg.Prober.Attempts, cfg.Prober.Window = 500*time.Millisecond, 2, 1
		conventional := func(ts []adaptive.Target) (adaptive.Strategy, error) { return adaptive.NewConventional(ts) }
		_, ord, err := Ordered(t.Context(), n.conn(), n.conn(), cfg, locate, conventional, rec.each)
		if err != nil {
			t.Fatal(err)
		}
		if len(ord.Probes) != len(all) || ord.Stopped || ord.Refused != 0 {
			t.Fatalf("%d probes (want %d), stopped %v, refused %d", len(ord.Probes), len(all), ord.Stopped, ord.Refused)
		}
		silent := 0
		for i, o := range ord.Probes {
			if o.Addr != all[i] {
				t.Fatalf("probe %d to %v, want %v (window 1: master order)", i, o.Addr, all[i])
			}
			if !o.Answered {
				silent++
			}
		}
		if silent != 3 {
			t.Errorf("%d unanswered, want the 3 silent servers", silent)
		}
	})
}

func TestOrdered_WithoutPlannerFails(t *testing.T) {
	n := newNet()
	if _, _, err := Ordered(t.Context(), n.conn(), n.conn(), Config{}, nil, nil, func(Event) {}); err != ErrNoPlanner {
		t.Fatalf("err %v, want ErrNoPlanner", err)
	}
}

// TestOrdered_ListCannotFloodProbes: the ordered run meters what its
// strategy hands out as Discover meters what it lists: 5,000 listed
// addresses that never answer, a window as large as the list and a short
// timeout that frees it every 10 ms, yet no more than DefaultAdmitBurst
// probes in the first instant and DefaultAdmitRate a second after.
func TestOrdered_ListCannotFloodProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		list := servers(5000)
		n.node(masterA, q3Master(10*time.Millisecond, true, list))
		cfg := Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}}
		cfg.Prober.Timeout, cfg.Prober.Attempts, cfg.Prober.Window = 10*time.Millisecond, 1, len(list)
		conventional := func(ts []adaptive.Target) (adaptive.Strategy, error) { return adaptive.NewConventional(ts) }
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_, ord, _ := Ordered(ctx, n.conn(), n.conn(), cfg, nil, conventional, func(Event) {})
		first, sent := ord.ProbeStart, 0
		for _, ap := range list {
			sent += len(n.sends(ap))
		}
		if want := DefaultAdmitBurst + int(DefaultAdmitRate*(2*time.Second-first).Seconds()) + 1; sent > want || len(ord.Probes) > want {
			t.Fatalf("%d probes in the 2 s run (lists took %v), want at most %d", sent, first, want)
		}
		if sent < DefaultAdmitBurst {
			t.Fatalf("%d probes, want the burst at least", sent)
		}
	})
}

// TestOrdered_PacedIsNotHeldToAWindowOf16: with the prober paced (the
// default of scout servers; Ordered gives it OrderedLookahead) an ordered
// run keeps more than a window of 16 probes in flight, as
// Discover's run does, and ends sooner than with the window; the prober
// takes each target only while fewer than OrderedLookahead wait to be
// sent, so auto-stop still fires before every
// server is probed and the near servers are still found before it. It
// probes more servers before auto-stop than the window does (397 against
// 207 here: the probes in flight when it fires are many more).
func TestOrdered_PacedIsNotHeldToAWindowOf16(t *testing.T) {
	run := func(paced bool) (Summary, Ordering, time.Duration) {
		var sum Summary
		var ord Ordering
		var took time.Duration
		synctest.Test(t, func(t *testing.T) {
			n := newNet()
			all, locate := orderedWorld(n, 40, 1200, 5)
			n.node(masterA, q3Master(100*time.Millisecond, true, all))
			rec := &recorder{masters: map[string]MasterReport{}, probed: map[netip.AddrPort]Server{}}
			cfg := Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}}
			cfg.Prober.Timeout, cfg.Prober.Attempts = 500*time.Millisecond, 1
			if paced {
				cfg.Prober.Pace = &probe.Pace{}
			}
			start := time.Now()
			var err error
			sum, ord, err = Ordered(t.Context(), n.conn(), n.conn(), cfg, locate, paperPlanner, rec.each)
			took = time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
		})
		return sum, ord, took
	}
	wsum, word, wtook := run(false)
	psum, pord, ptook := run(true)
	t.Logf("window of 16: %v, %d probes, peak %d in flight; paced: %v, %d probes, peak %d in flight", wtook, len(word.Probes), wsum.Probe.PeakInFlight, ptook, len(pord.Probes), psum.Probe.PeakInFlight)
	if wsum.Probe.PeakInFlight > probe.DefaultWindow || psum.Probe.PeakInFlight <= 2*probe.DefaultWindow || ptook >= wtook {
		t.Errorf("peak in flight %d windowed, %d paced; took %v windowed, %v paced", wsum.Probe.PeakInFlight, psum.Probe.PeakInFlight, wtook, ptook)
	}
	if !pord.Stopped || len(pord.Probes) >= psum.Listed {
		t.Errorf("paced: stopped %v after %d probes of %d servers; want auto-stop before all", pord.Stopped, len(pord.Probes), psum.Listed)
	}
	near := 0
	for _, o := range pord.Probes {
		if o.Answered && o.RTT < 200*time.Millisecond && o.At <= pord.StopAt {
			near++
		}
	}
	if near != 40 {
		t.Errorf("paced: %d of 40 near servers found before auto-stop", near)
	}
}

// TestOrdered_GoneServersDoNotHoldCalibration: the strategy is told that a
// probe had no answer GiveUpAfter after it was handed out, while the
// prober still retries it, so a calibration round with samples of servers
// that are gone ends after one timeout, not after every attempt.
func TestOrdered_GoneServersDoNotHoldCalibration(t *testing.T) {
	const timeout = 500 * time.Millisecond
	run := func(attempts int) Ordering {
		var ord Ordering
		synctest.Test(t, func(t *testing.T) {
			n := newNet()
			all, locate := orderedWorld(n, 40, 400, 20)
			n.node(masterA, q3Master(10*time.Millisecond, true, all))
			cfg := Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}}
			cfg.Prober.Timeout, cfg.Prober.Attempts = timeout, attempts
			rec := &recorder{masters: map[string]MasterReport{}, probed: map[netip.AddrPort]Server{}}
			var err error
			if _, ord, err = Ordered(t.Context(), n.conn(), n.conn(), cfg, locate, paperPlanner, rec.each); err != nil {
				t.Fatal(err)
			}
			near := 0
			for _, sv := range rec.probed {
				if sv.Answered() && sv.RTT < 200*time.Millisecond {
					near++
				}
			}
			if near != 40 || ord.Refused != 0 {
				t.Errorf("%d attempts: %d near servers found (want 40), %d outcomes refused", attempts, near, ord.Refused)
			}
		})
		return ord
	}
	firstReordered := func(ord Ordering) time.Duration {
		for _, o := range ord.Probes {
			if o.Phase == adaptive.Reordered && o.Answered {
				return o.At - ord.ProbeStart
			}
		}
		t.Fatal("no step-6 probe answered")
		return 0
	}
	one, three := run(1), run(3)
	if one.GaveUp != 0 || three.GaveUp == 0 {
		t.Errorf("gave up on %d probes with one attempt (want none), %d with three (want the gone samples)", one.GaveUp, three.GaveUp)
	}
	// Both rounds end when the gone samples' first timeout passes: with
	// three attempts the strategy no longer waits for the other two.
	a, b := firstReordered(one), firstReordered(three)
	t.Logf("step 6 began %v after the list with one attempt, %v with three; %d given up", a, b, three.GaveUp)
	if b > a+timeout/2 {
		t.Errorf("with three attempts step 6 began at %v, with one at %v: the gone samples held calibration", b, a)
	}
	if b < timeout {
		t.Errorf("step 6 began at %v, before a sample could time out", b)
	}
}

// TestOrdered_LateAnswerIsReportedNotObservedTwice: a server that answers
// only its retry, after the strategy was told it had no answer, is still
// reported found, and the strategy is not told twice.
func TestOrdered_LateAnswerIsReportedNotObservedTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		late := netip.MustParseAddrPort("60.0.0.1:27960")
		asked := 0
		answer := q3Server("late", 100*time.Millisecond)
		n.node(late, func(b []byte, reply func([]byte, time.Duration)) {
			if asked++; asked > 1 {
				answer(b, reply)
			}
		})
		all := []netip.AddrPort{late}
		n.node(masterA, q3Master(10*time.Millisecond, true, all))
		cfg := Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}}
		cfg.Prober.Timeout, cfg.Prober.Attempts = 500*time.Millisecond, 3
		rec := &recorder{masters: map[string]MasterReport{}, probed: map[netip.AddrPort]Server{}}
		locate := func(netip.Addr) (string, uint32) { return "AU", 1 }
		_, ord, err := Ordered(t.Context(), n.conn(), n.conn(), cfg, locate, paperPlanner, rec.each)
		if err != nil {
			t.Fatal(err)
		}
		if ord.GaveUp != 1 || ord.Refused != 0 {
			t.Errorf("gave up %d times (want 1), %d outcomes refused (want 0)", ord.GaveUp, ord.Refused)
		}
		if sv := rec.probed[late]; !sv.Answered() || asked != 2 {
			t.Errorf("the server asked %d times, reported %+v: want found on its retry", asked, sv)
		}
		if len(ord.Probes) != 1 || !ord.Probes[0].Answered || !ord.Probes[0].GaveUp {
			t.Errorf("outcomes %+v, want the one answer, given up on", ord.Probes)
		}
	})
}
