package discover

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/probe"
)

// Ordered discovery
//
// [Discover] probes servers in the order the masters list them, starting
// while the lists still arrive: conventional discovery, the Enemy
// Territory client's way. [Ordered] lets an [adaptive.Strategy] choose the
// order instead (Armitage's Algorithms 1 and 2, or the oracle). Adaptive
// ordering clusters the whole list before its first probe (step 2 needs
// every server's country, and step 4 a sample of every cluster), so
// Ordered first collects every master's list to its end, then probes: it
// gives up the overlap of listing and probing that conventional discovery
// has, and wins it back, on a far client, by stopping early.
//
// The prober's window is kept full from the strategy: a target is handed
// to the probe engine only when fewer than Window targets are open, so
// the strategy decides each probe as late as the window allows, with every
// outcome known so far. With Prober.Lookahead (a paced Prober without
// one gets OrderedLookahead) the window is the
// prober's own instead (probe.Prober.EffectiveWindow, as Discover's run
// has it: paced, large enough for the pacer's top rate), the pacer sets
// the rate, and the prober takes a target only while fewer than
// Lookahead wait to be sent, so each is still decided as late as the
// pacing allows. Each outcome, answered with its RTT or unanswered
// after the prober's last timeout, is reported to the strategy's Observe
// (the planner never times a probe out itself). When the strategy says
// Done (auto-stop fired, or every server was handed out) no more targets
// are handed out; the probes in flight still end.

// A Locator geolocates an address for clustering: its country code ("" when
// unknown) and origin AS (0 when unknown). geo.DB's Lookup, adapted, is one.
type Locator func(netip.Addr) (country string, asn uint32)

// A Planner builds the strategy that orders a run, given the complete list
// in master order (each Target's Country and ASN filled by the Locator).
type Planner func(targets []adaptive.Target) (adaptive.Strategy, error)

// Ordering is what an ordered run did, beyond [Summary].
type Ordering struct {
	// Probes are every probe's outcome, in the order the strategy
	// observed them (one given up on, when it was: Outcome.GaveUp).
	Probes []Outcome
	// ProbeStart is when the first probe was handed out, since the start
	// of the run (the lists took that long).
	ProbeStart time.Duration
	// Stopped reports that auto-stop fired; Stop says when and why, and
	// StopAt is the time since the start of the run at which it fired.
	Stopped bool
	Stop    adaptive.StopInfo
	StopAt  time.Duration
	// Clusters are the strategy's clusters at the end (none for the
	// conventional and oracle strategies).
	Clusters []adaptive.ClusterInfo
	// Located counts the targets the Locator placed in a country.
	Located int
	// Refused counts outcomes the strategy refused (a bug if not 0).
	Refused int
	// GaveUp counts the probes the strategy was told had no answer once
	// GiveUpAfter passed, while the prober still retried them; an answer
	// to a retry is still reported, but not to the strategy.
	GaveUp int
}

// Outcome is one probe of a run, for plots and reports.
type Outcome struct {
	Addr  netip.AddrPort
	Phase adaptive.Phase
	// At is when the answered send left (the result's time minus its
	// RTT), or when the target was handed out for one that never
	// answered; since the start of the run.
	At       time.Duration
	RTT      time.Duration // 0 when not answered
	Answered bool
	// GaveUp: the strategy was told this probe had no answer when
	// GiveUpAfter passed (its place in Ordering.Probes is then); Answered
	// and RTT are what the prober's retries got after.
	GaveUp bool
}

// ErrNoPlanner is returned by Ordered without a Planner.
var ErrNoPlanner = errors.New("discover: ordered run without a planner")

// Ordered asks cfg.Masters for their lists on masterConn, waits until
// every list has ended, geolocates every server listed with locate, and
// probes them from probeConn in the order the strategy plan builds
// chooses, reporting each event to each (never concurrently). cfg.Extra
// are appended to the list after the masters' servers. It returns when
// the strategy has nothing more to send and every probe handed out has
// ended, or when ctx ends. It must be the only reader of both conns.
func Ordered(ctx context.Context, masterConn, probeConn probe.Conn, cfg Config, locate Locator, plan Planner, each func(Event)) (Summary, Ordering, error) {
	start := time.Now()
	var sum Summary
	var ord Ordering
	if plan == nil {
		return sum, ord, ErrNoPlanner
	}
	if cfg.Prober.Pace != nil && cfg.Prober.Lookahead == 0 {
		cfg.Prober.Lookahead = OrderedLookahead // each target decided just before it is sent
	}
	s := newSession(cfg, start)
	cerr := collect(ctx, masterConn, s, each)
	s.addExtra()
	sum = s.summary(time.Now())
	order := s.order
	finish := func(err error) (Summary, Ordering, error) {
		sum.Took = time.Since(start)
		if err != nil {
			return sum, ord, fmt.Errorf("discover: %w", err)
		}
		return sum, ord, nil
	}
	if ctx.Err() != nil {
		return finish(errors.Join(cerr, ctx.Err()))
	}

	targets := make([]adaptive.Target, len(order))
	for i, ap := range order {
		targets[i] = adaptive.Target{Addr: ap}
		if locate != nil {
			targets[i].Country, targets[i].ASN = locate(ap.Addr())
			if targets[i].Country != "" {
				ord.Located++
			}
		}
	}
	st, err := plan(targets)
	if err != nil {
		return finish(errors.Join(cerr, err))
	}
	ord.ProbeStart = time.Since(start)

	firstResult := time.Duration(0)
	dialect := func(ap netip.AddrPort) probe.Dialect { return s.seen[ap].dialect }
	m := newMeter(&cfg, time.Now())
	observe := func(t adaptive.Target, rtt time.Duration, answered bool) {
		if err := st.Observe(t.Addr, rtt, answered); err != nil {
			ord.Refused++
		}
		if !ord.Stopped {
			if stopped, info := st.Stopped(); stopped {
				ord.Stopped, ord.Stop, ord.StopAt = true, info, time.Since(start)
			}
		}
	}
	given := map[netip.AddrPort]int{} // given up on: its place in ord.Probes
	gaveUp := func(t adaptive.Target, ph adaptive.Phase, sent time.Time) {
		ord.GaveUp++
		given[t.Addr] = len(ord.Probes)
		ord.Probes = append(ord.Probes, Outcome{Addr: t.Addr, Phase: ph, At: sent.Sub(start), GaveUp: true})
		observe(t, 0, false)
	}
	counts, perr := drive(ctx, probeConn, cfg.Prober, st, dialect, &m, gaveUp, func(t adaptive.Target, ph adaptive.Phase, sent time.Time, r probe.Result, late bool) {
		now := time.Now()
		o := Outcome{Addr: t.Addr, Phase: ph, At: sent.Sub(start), Answered: r.Answered(), GaveUp: late}
		if o.Answered {
			o.RTT = r.RTT
			o.At = now.Sub(start) - r.RTT
			if firstResult == 0 {
				firstResult = now.Sub(start)
			}
		}
		if late {
			ord.Probes[given[t.Addr]] = o // in the order the strategy saw it
		} else {
			ord.Probes = append(ord.Probes, o)
			observe(t, r.RTT, o.Answered)
		}
		sv := Server{Result: r}
		if l := s.seen[t.Addr]; l != nil {
			sv.Masters = append([]string(nil), l.masters...)
		}
		each(Probed{sv})
	})
	if !ord.Stopped {
		// A strategy told of servers it will not probe (a group skipped)
		// can stop while handing out, after its last outcome.
		if stopped, info := st.Stopped(); stopped {
			ord.Stopped, ord.Stop, ord.StopAt = true, info, time.Since(start)
		}
	}
	ord.Clusters = st.Clusters()
	sum.Probe = counts
	sum.FirstResult = firstResult
	return finish(errors.Join(cerr, perr))
}

// GiveUpAfter is how long after a target was handed out the strategy is
// told it had no answer, when the prober's retries would make it wait
// longer: the prober's Timeout (DefaultTimeout, 1 s, unless set), the
// wait the simulator's evaluation gives an unanswered probe. A strategy
// that waits on a sample (calibration, a group's representative) then
// waits for a server that is gone no longer than that, not for every
// retry (about 2 s paced, 3 s with the default Timeout and Attempts).
func GiveUpAfter(p probe.Prober) time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return probe.DefaultTimeout
}

// drive probes what st hands out, keeping at most the prober's window of
// targets open and handing out no faster than m admits, and calls done
// (from drive's goroutine) with each target, its phase, when it was handed
// out, its result, and whether gaveUp was called for it already: when a
// target's result is not in GiveUpAfter after it was handed out and the
// prober may retry it (Attempts > 1), gaveUp is called then, and done
// later. It returns when st has nothing more to hand out and nothing is
// open, or ctx ends. The prober runs in a goroutine of its own; drive owns
// the strategy and the meter.
func drive(ctx context.Context, conn probe.Conn, p probe.Prober, st adaptive.Strategy, dialect func(netip.AddrPort) probe.Dialect,
	m *meter, gaveUp func(t adaptive.Target, ph adaptive.Phase, sent time.Time), done func(t adaptive.Target, ph adaptive.Phase, sent time.Time, r probe.Result, late bool)) (probe.Counts, error) {
	window := p.Window
	switch {
	case p.Lookahead > 0:
		window = p.EffectiveWindow()
	case window <= 0:
		window = probe.DefaultWindow
	}
	type result struct {
		i int
		r probe.Result
	}
	results := make(chan result)
	in := make(chan probe.Target)
	probed := make(chan error, 1)
	var counts probe.Counts
	go func() {
		var err error
		counts, err = p.Stream(ctx, conn, in, func(i int, r probe.Result) { results <- result{i, r} })
		probed <- err
	}()

	type handed struct {
		t    adaptive.Target
		ph   adaptive.Phase
		sent time.Time
		// ended: its result is in; given: gaveUp was called for it.
		ended, given bool
	}
	var out []handed // by the prober's target index: the order handed out
	open := 0        // handed out (pending included), no result yet
	giveUp := GiveUpAfter(p)
	if p.Attempts == 1 {
		giveUp = 0 // the result comes when the one send times out
	}
	due := 0 // out[due:] may still be given up on, in the order handed out
	var pending []probe.Target
	inOpen := true
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	stop := ctx.Done()
	for {
		now := time.Now()
		for ; giveUp > 0 && due < len(out); due++ {
			h := &out[due]
			if h.ended {
				continue
			}
			if now.Before(h.sent.Add(giveUp)) {
				break
			}
			h.given = true
			gaveUp(h.t, h.ph, h.sent)
		}
		held := false // by admission
		// One decision ahead of the prober: the next target is chosen
		// when the last one was taken.
		for inOpen && stop != nil && open < window && len(pending) == 0 {
			if !m.allows(now) {
				held = true
				break
			}
			t, ph, ok := st.Next()
			if !ok {
				// Waiting with probes open: calibration outcomes are
				// outstanding, Next is asked again after the next one.
				// Waiting with nothing open would wait forever: a
				// strategy that says so is over.
				if open == 0 {
					close(in)
					inOpen = false
				}
				break
			}
			m.metered++
			out = append(out, handed{t: t, ph: ph, sent: now})
			open++
			pending = append(pending, probe.Target{Addr: t.Addr, Dialect: dialect(t.Addr)})
		}
		var feed chan probe.Target
		var next probe.Target
		if len(pending) > 0 && inOpen {
			feed, next = in, pending[0]
		}
		var wake time.Time
		if w := m.wake(); held && !w.IsZero() {
			wake = w
		}
		if giveUp > 0 && due < len(out) {
			if g := out[due].sent.Add(giveUp); wake.IsZero() || g.Before(wake) {
				wake = g
			}
		}
		if !wake.IsZero() {
			timer.Reset(time.Until(wake))
		} else {
			timer.Stop()
		}
		select {
		case feed <- next:
			pending = pending[1:]
		case r := <-results:
			open--
			if r.r.Answered() {
				m.answered++
			}
			if r.i < len(out) {
				h := &out[r.i]
				h.ended = true
				done(h.t, h.ph, h.sent, r.r, h.given)
			}
		case <-timer.C:
		case <-stop:
			stop = nil // the prober ends what it has with ctx's error
			if inOpen {
				close(in)
				inOpen = false
			}
		case err := <-probed:
			return counts, err
		}
	}
}

// OrderedLookahead is the probe.Prober.Lookahead that Ordered gives a
// paced Prober that has none: the targets decided and waiting to be sent,
// at most.
const OrderedLookahead = 16

// List asks cfg.Masters for their lists on conn and returns when every
// list has ended or ctx ends, probing nothing: each is called with every
// Listed and MasterDone event, and Summary.Listed counts the distinct
// servers listed. cfg.Extra and cfg.Prober are not used.
func List(ctx context.Context, conn probe.Conn, cfg Config, each func(Event)) (Summary, error) {
	start := time.Now()
	s := newSession(cfg, start)
	err := collect(ctx, conn, s, each)
	sum := s.summary(time.Now())
	if err != nil {
		return sum, fmt.Errorf("discover: %w", err)
	}
	return sum, nil
}
