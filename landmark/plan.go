package landmark

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/scout-discovery/scout/adaptive"
)

// Estimator names the estimate a Planner orders its probes by. The stop
// rule does not depend on it (it uses the lower bound): the estimator only
// decides how early each playable server is found.
type Estimator string

const (
	// EstUpper is the triangle upper bound min_k(c_k + s_k): on the real
	// mesh, with hub landmarks, the best single estimator (EVALUATION.md,
	// "Landmarks").
	EstUpper Estimator = "upper"
	// EstMid is the mean of the robust lower bound and the upper bound.
	EstMid Estimator = "mid"
	// EstLower is the robust lower bound itself.
	EstLower Estimator = "lower"
)

// PlanParams are a Planner's constants.
type PlanParams struct {
	// Threshold is the largest playable RTT (ms): 200, Algorithm 2's
	// RTTstop.
	Threshold float64
	// Margin (ms) is subtracted from each server's lower bound before it is
	// compared with Threshold: the safety margin for the triangle
	// inequality's violations, measured on real data (package
	// lab/evaluate).
	Margin float64
	// Drop is LowerBound's drop: how many landmarks with the largest
	// |c_k - s_k| the lower bound leaves out.
	Drop int
	// Repair clips every vector (the client's and the servers') to the
	// paths through other landmarks first (Repair); it needs
	// PlanInput.Landmarks.
	Repair bool
	// KeepClient leaves the client's own vector out of Repair: its RTTs
	// are the paths its packets take, detours included (always so when
	// PlanInput.LandmarksDerived).
	KeepClient bool
	// Estimator orders the probes; "" is EstUpper.
	Estimator Estimator
	// Stop is the quantity the stop rule compares with Threshold + Margin:
	// "" or EstLower, the robust lower bound (a server is left out only
	// when the triangle inequality, give or take the margin, says it is too
	// far); EstUpper or EstMid, an estimate (a server is left out when it
	// is estimated too far: the margin, fitted to real data at a quantile,
	// then sets the share of playable servers that may be missed).
	Stop Estimator
	// Unknown are the adaptive planner's constants for the servers no
	// landmark has measured (see Planner); the zero value takes
	// adaptive.Scout().
	Unknown *adaptive.Params
	// Calibrate, when set, hands the bounded candidates (the servers the
	// stop rule keeps) to the adaptive planner too, with these constants
	// instead of Unknown's: the landmark bound only prunes the servers it
	// shows too far, and Armitage's clustering, calibration and auto-stop
	// choose among the rest. The adaptive stop rule then decides when the
	// candidates are done, so the guarantee of the plain rule (every
	// candidate probed) no longer holds; nil keeps the plain rule.
	Calibrate *adaptive.Params
	// StopAfter, when positive, also ends the probing of the bounded
	// candidates once StopAfter of their outcomes in a row, in the order
	// observed, were unanswered or at or over Threshold for servers
	// estimated at or over Threshold (an unplayable server estimated under
	// it neither counts nor breaks the run; a playable one breaks it):
	// Algorithm 2's idea (the order has passed the playable servers) on
	// the landmark order. It trades the plain rule's guarantee for probes; its misses
	// are playable servers whose estimate ranks them after StopAfter
	// unplayable ones.
	StopAfter int
	// Siblings, when set, skips a server whose answered siblings (servers
	// whose vectors differ from its own by nearly the same amount at every
	// landmark) predict it unplayable (siblings.go); nil probes every
	// candidate.
	Siblings *Siblings
	// Sites, when set, measures instead of trusting the bound: a server
	// the stop rule would leave out (or, with Sites.All, every bounded
	// server) is probed only through its site's representatives
	// (sites.go), and its site comes back when one answers near. nil
	// leaves them out unprobed.
	Sites *SiteCheck
}

// DefaultPlanParams returns the defaults: 200 ms, no margin, drop 0,
// repair on, the upper bound as the estimate. The margin is the caller's
// to measure (EVALUATION.md gives the fitted one).
func DefaultPlanParams() PlanParams {
	return PlanParams{Threshold: 200, Repair: true, Estimator: EstUpper}
}

// PlanInput is what a client knows before it probes: the master's list
// with every server's landmark vector, its own vector, and the landmarks'
// RTTs to each other. All RTTs are in milliseconds, NaN where unmeasured;
// the live client fills them from the masters' published RTTs and its own
// list queries and pings.
type PlanInput struct {
	Targets []adaptive.Target // the master's list, in master order
	Vectors []Vector          // Vectors[i]: the landmarks' RTTs to Targets[i]
	Client  Vector            // the client's RTT to each landmark
	// Landmarks is the K x K matrix of the landmarks' RTTs to each other,
	// for Repair; nil with Repair off.
	Landmarks [][]float64
	// Remembered, when not nil, holds per target (same order) the RTT
	// (ms) the client remembers of its group, NaN where it remembers none:
	// a site's representative is its remembered member of least RTT first,
	// whose outcome may come without a probe (adaptive.Grouped) and which
	// stands for the site's nearest part as the client measured it.
	Remembered []float64
	// Known, when not nil, holds per target whether the client has seen
	// its group before: remembered with an RTT, or in the list of an
	// earlier run that decided on it without a probe (rttcache.Cache.Known).
	// A site ruled out on remembered answers alone is measured once more
	// through a group not known: a server new since the memory was taken.
	// Nil: only the remembered groups are known.
	Known []bool
	// LandmarksDerived says Landmarks was derived from the servers'
	// vectors (MatrixFromVectors) instead of measured: Repair then clips
	// the servers' vectors but not the client's, whose entries are its own
	// measurements. A derived entry can be shorter than the landmarks' RTT
	// (through a server on a better route than theirs), and clipping the
	// client's entry to it lowers |c_k - s_k| for every server near L_k:
	// in the simulator, Tokyo's European servers (EVALUATION.md,
	// "Landmarks", "What the live client derives").
	LandmarksDerived bool
	// ClientHeight is the client's access delay (ms): the part of every
	// path it has that it shares with none of them, such as a consumer
	// line's first hop. 0 when unknown (the plain triangle bounds). See
	// Planner for what it buys.
	ClientHeight float64
}

// ErrPlan is wrapped by NewPlanner's error for an input it refuses.
var ErrPlan = errors.New("landmark: invalid plan input")

type planSlot struct {
	lo, est float64
	unknown bool // no landmark measured both this server and the client
	sub     bool // handed to the adaptive planner
	status  uint8
}

const (
	slotUnprobed uint8 = iota
	slotOutstanding
	slotObserved
	slotSkipped // predicted by its siblings (siblings.go), not probed
)

// Planner probes the servers a client may find playable in ascending
// estimated RTT and stops when every unprobed server's lower bound, minus
// the margin, is past the threshold: a server is probed exactly when
// LowerBound(client, server, Drop) - Margin <= Threshold, so the number
// of probes does not depend on the order; the estimator only makes the
// near servers come first.
//
// A server that no landmark has measured (or that shares no measured
// landmark with the client) cannot be bounded. Those servers are handed
// to an adaptive.Planner of their own (Armitage's calibration, by default
// with adaptive.Scout's constants, whose auto-stop is a bound over the
// clusters' samples), interleaved by RTT: its probes go out while the RTT
// it last saw answered is no more than the next bounded server's estimate
// (its calibration, before any answer, first). In a fleet whose masters
// measure every server within a few re-probe periods such servers are the
// few that just registered; with no landmark at all, the Planner is
// Armitage's planner. Reusing the adaptive planner, rather than probing
// all of them, keeps its savings when many are unknown (masters just
// restarted), and its own stop rule keeps its guarantee for that subset.
//
// It implements adaptive.Strategy. Pure: no clock, no sockets. Not safe
// for concurrent use.
type Planner struct {
	p       PlanParams
	targets []adaptive.Target
	index   map[netip.AddrPort]int32
	slots   []planSlot
	order   []int32 // bounded candidates, ascending estimate
	next    int
	sub     *adaptive.Planner
	subIdx  []int32 // sub-planner's index -> slot
	slotOf  []int32 // position in PlanInput.Targets -> slot, -1 for a duplicate
	subDone bool
	level   float64 // last RTT the sub-planner saw answered, ms
	subSent int     // probes the sub-planner handed out
	run     int     // consecutive unplayable outcomes of bounded probes
	cut     bool    // StopAfter fired
	out     int     // probes outstanding
	sent    int
	stopped bool
	info    adaptive.StopInfo
	sib     *siblingIndex // nil without PlanParams.Siblings
	sites   *siteIndex    // nil without PlanParams.Sites
}

// NewPlanner plans the discovery of in.Targets. Duplicate addresses are
// dropped, keeping the first (as adaptive.New does); Target.Index of the
// targets handed out is their position in in.Targets. rng feeds the
// adaptive planner of the unbounded servers.
func NewPlanner(in PlanInput, p PlanParams, rng *rand.Rand) (*Planner, error) {
	if len(in.Vectors) != len(in.Targets) {
		return nil, fmt.Errorf("%w: %d targets, %d vectors", ErrPlan, len(in.Targets), len(in.Vectors))
	}
	if !(p.Threshold > 0) || math.IsInf(p.Threshold, 0) || math.IsNaN(p.Margin) || math.IsInf(p.Margin, 0) || p.Drop < 0 || p.StopAfter < 0 {
		return nil, fmt.Errorf("%w: threshold %v, margin %v, drop %d, stop after %d", ErrPlan, p.Threshold, p.Margin, p.Drop, p.StopAfter)
	}
	switch p.Estimator {
	case "":
		p.Estimator = EstUpper
	case EstUpper, EstMid, EstLower:
	default:
		return nil, fmt.Errorf("%w: estimator %q", ErrPlan, p.Estimator)
	}
	switch p.Stop {
	case "", EstLower, EstUpper, EstMid:
	default:
		return nil, fmt.Errorf("%w: stop on %q", ErrPlan, p.Stop)
	}
	if c := p.Sites; c != nil && (!(c.Margin >= 0) || math.IsInf(c.Margin, 0) || !(c.Spread >= 0) || math.IsInf(c.Spread, 0)) {
		return nil, fmt.Errorf("%w: sites' margin %v, spread %v", ErrPlan, c.Margin, c.Spread)
	}
	if in.Remembered != nil && len(in.Remembered) != len(in.Targets) {
		return nil, fmt.Errorf("%w: %d targets, %d remembered RTTs", ErrPlan, len(in.Targets), len(in.Remembered))
	}
	if in.Known != nil && len(in.Known) != len(in.Targets) {
		return nil, fmt.Errorf("%w: %d targets, %d known", ErrPlan, len(in.Targets), len(in.Known))
	}
	if s := p.Siblings; s != nil && (!(s.Tolerance > 0) || math.IsInf(s.Tolerance, 0) || math.IsNaN(s.Margin) || math.IsInf(s.Margin, 0) || !(s.MaxDelta >= 0) || !(s.Near >= 0)) {
		return nil, fmt.Errorf("%w: siblings' tolerance %v, margin %v, largest difference %v, near %v", ErrPlan, s.Tolerance, s.Margin, s.MaxDelta, s.Near)
	}
	if p.Repair && in.Landmarks == nil {
		return nil, fmt.Errorf("%w: repair needs the landmarks' matrix", ErrPlan)
	}
	if len(in.Client) > MaxLandmarks {
		return nil, fmt.Errorf("%w: %d landmarks, at most %d", ErrPlan, len(in.Client), MaxLandmarks)
	}
	if err := checkVector(in.Client); err != nil {
		return nil, fmt.Errorf("%w: client: %v", ErrPlan, err)
	}
	h := in.ClientHeight
	if !(h >= 0) || math.IsInf(h, 0) {
		return nil, fmt.Errorf("%w: client height %v", ErrPlan, h)
	}
	pl := &Planner{p: p, index: make(map[netip.AddrPort]int32, len(in.Targets)), slotOf: make([]int32, len(in.Targets))}
	if p.Sites != nil {
		pl.sites = newSiteIndex(*p.Sites)
	}
	if p.Siblings != nil && (p.Siblings.Near <= 0 || nearest(in.Client)-h <= p.Siblings.Near) {
		pl.sib = newSiblingIndex(*p.Siblings)
	}
	client := in.Client
	if p.Repair && !p.KeepClient && !in.LandmarksDerived {
		client = Repair(client, in.Landmarks)
	}
	if h > 0 {
		client = slices.Clone(client)
		for k, x := range client {
			client[k] = max(0, x-h) // NaN stays NaN
		}
	}
	var unknown []adaptive.Target
	for i, t := range in.Targets {
		if !t.Addr.IsValid() {
			return nil, fmt.Errorf("%w: entry %d: address %v", adaptive.ErrTarget, i, t.Addr)
		}
		t.Addr = netip.AddrPortFrom(t.Addr.Addr().Unmap(), t.Addr.Port())
		if _, dup := pl.index[t.Addr]; dup {
			pl.slotOf[i] = -1
			continue
		}
		v := in.Vectors[i]
		if err := checkVector(v); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrPlan, i, err)
		}
		if len(v) > MaxLandmarks {
			return nil, fmt.Errorf("%w: entry %d: %d landmarks, at most %d", ErrPlan, i, len(v), MaxLandmarks)
		}
		t.Index = i
		s := int32(len(pl.targets))
		pl.index[t.Addr] = s
		pl.slotOf[i] = s
		pl.targets = append(pl.targets, t)
		if pl.sib != nil {
			pl.sib.add(v)
		}
		if p.Repair {
			v = Repair(v, in.Landmarks)
		}
		_, hi, n := Bounds(client, v)
		hi += h
		sl := planSlot{unknown: n == 0}
		if !sl.unknown {
			sl.lo = h + LowerBound(client, v, p.Drop)
			switch p.Estimator {
			case EstUpper:
				sl.est = hi
			case EstMid:
				sl.est = (sl.lo + hi) / 2
			case EstLower:
				sl.est = sl.lo
			}
			stop := sl.lo
			switch p.Stop {
			case EstUpper:
				stop = hi
			case EstMid:
				stop = (sl.lo + hi) / 2
			}
			if pl.sites != nil && (pl.sites.p.All || stop-p.Margin > p.Threshold) {
				mem := math.NaN()
				if in.Remembered != nil {
					mem = in.Remembered[i]
				}
				known := !math.IsNaN(mem) || in.Known != nil && in.Known[i]
				pl.sites.add(s, t, v, mem, known)
			} else if stop-p.Margin <= p.Threshold {
				if p.Calibrate != nil {
					sl.sub = true
					pl.subIdx = append(pl.subIdx, s)
					unknown = append(unknown, t)
				} else {
					pl.order = append(pl.order, s)
				}
			}
		} else {
			sl.sub = true
			pl.subIdx = append(pl.subIdx, s)
			unknown = append(unknown, t)
		}
		pl.slots = append(pl.slots, sl)
	}
	if pl.sites != nil {
		pl.order = append(pl.order, pl.sites.form(pl.slots)...)
	}
	slices.SortStableFunc(pl.order, func(a, b int32) int { return cmp.Compare(pl.slots[a].est, pl.slots[b].est) })
	if len(unknown) > 0 {
		ap := adaptive.Scout()
		if p.Calibrate != nil {
			ap = *p.Calibrate
		} else if p.Unknown != nil {
			ap = *p.Unknown
		}
		if rng == nil {
			return nil, fmt.Errorf("%w: nil rng", ErrPlan)
		}
		sub, err := adaptive.New(unknown, ap, rng)
		if err != nil {
			return nil, err
		}
		pl.sub = sub
	} else {
		pl.subDone = true
	}
	pl.checkStop()
	return pl, nil
}

func checkVector(v Vector) error {
	for k, x := range v {
		if !math.IsNaN(x) && (x < 0 || math.IsInf(x, 0)) {
			return fmt.Errorf("landmark %d: RTT %v", k, x)
		}
	}
	return nil
}

// Next returns the next probe: phase Reordered for a bounded server, the
// adaptive planner's phase for an unbounded one; ok is false with phase
// Waiting when only the adaptive planner has probes left and it waits for
// outcomes, Done when nothing is left.
func (pl *Planner) Next() (adaptive.Target, adaptive.Phase, bool) {
	if pl.stopped {
		return adaptive.Target{}, adaptive.Done, false
	}
	pl.skipSiblings()
	bounded := pl.next < len(pl.order)
	for !pl.subDone && (!bounded || pl.level <= pl.slots[pl.order[pl.next]].est) {
		t, ph, ok := pl.sub.Next()
		if ok {
			s := pl.subIdx[t.Index]
			if pred, skip := pl.predicted(s); skip {
				// Told to the adaptive planner as answered with the
				// prediction, which is at or over the threshold.
				pl.skip(s)
				if err := pl.sub.Observe(t.Addr, time.Duration(pred*float64(time.Millisecond)), true); err == nil {
					if st, _ := pl.sub.Stopped(); st {
						pl.subDone = true
					}
				}
				continue
			}
			pl.hand(s)
			pl.subSent++
			return pl.targets[s], ph, true
		}
		if ph == adaptive.Done {
			pl.subDone = true
			pl.checkStop()
		} else if !bounded {
			return adaptive.Target{}, adaptive.Waiting, false
		}
		break
	}
	if bounded {
		s := pl.order[pl.next]
		pl.next++
		pl.hand(s)
		return pl.targets[s], adaptive.Reordered, true
	}
	if !pl.subDone || pl.sites.waiting() {
		return adaptive.Target{}, adaptive.Waiting, false
	}
	pl.checkStop()
	return adaptive.Target{}, adaptive.Done, false
}

func (pl *Planner) hand(s int32) {
	pl.slots[s].status = slotOutstanding
	pl.out++
	pl.sent++
}

// Observe records the outcome of a probe handed out by Next. It refuses an
// address not in the list (adaptive.ErrUnknown) and one not outstanding
// (adaptive.ErrNotSent).
func (pl *Planner) Observe(addr netip.AddrPort, rtt time.Duration, answered bool) error {
	return pl.observe(addr, rtt, answered, false)
}

// ObserveSkipped records a server handed out by Next and not probed, ruled
// out at least by its group's answers (adaptive.SkipObserver): it counts
// as answered at least, but not toward the stop rules' runs of far
// outcomes (the sub-planner's, and StopAfter).
func (pl *Planner) ObserveSkipped(addr netip.AddrPort, least time.Duration) error {
	return pl.observe(addr, least, true, true)
}

func (pl *Planner) observe(addr netip.AddrPort, rtt time.Duration, answered, skipped bool) error {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	s, ok := pl.index[addr]
	if !ok {
		return fmt.Errorf("%w: %v", adaptive.ErrUnknown, addr)
	}
	sl := &pl.slots[s]
	if sl.status != slotOutstanding {
		return fmt.Errorf("%w: %v", adaptive.ErrNotSent, addr)
	}
	sl.status = slotObserved
	pl.out--
	if pl.sites != nil {
		if more := pl.sites.observed(s, rtt, answered, pl.p.Threshold); len(more) > 0 {
			pl.order = slices.Insert(pl.order, pl.next, more...)
		}
	}
	if pl.sib != nil && answered {
		pl.sib.observed(s, rtt)
	}
	if sl.sub {
		var err error
		if skipped {
			err = pl.sub.ObserveSkipped(addr, rtt)
		} else {
			err = pl.sub.Observe(addr, rtt, answered)
		}
		if err != nil {
			return err
		}
		if answered {
			pl.level = float64(rtt) / float64(time.Millisecond)
		}
		if st, _ := pl.sub.Stopped(); st {
			pl.subDone = true
		}
	} else if pl.p.StopAfter > 0 && !skipped {
		if answered && float64(rtt) < pl.p.Threshold*float64(time.Millisecond) {
			pl.run = 0
		} else if sl.est < pl.p.Threshold {
			// an estimate under the threshold that was wrong: a detour of
			// the landmarks' paths, not a sign the order passed the
			// playable servers
		} else if pl.run++; pl.run >= pl.p.StopAfter && pl.next < len(pl.order) {
			pl.cut, pl.next = true, len(pl.order)
		}
	}
	pl.checkStop()
	return nil
}

// predicted reports whether slot s is skipped: its answered siblings
// predict it at or over Threshold + Siblings.Margin; pred is the
// prediction (ms).
func (pl *Planner) predicted(s int32) (pred float64, skip bool) {
	if pl.sib == nil {
		return 0, false
	}
	return pl.sib.predict(s, pl.p.Threshold+pl.sib.p.Margin)
}

// skipSiblings passes over the bounded candidates next in order that
// their siblings predict unplayable.
func (pl *Planner) skipSiblings() {
	for pl.sib != nil && pl.next < len(pl.order) {
		s := pl.order[pl.next]
		if _, skip := pl.predicted(s); !skip {
			return
		}
		pl.skip(s)
		pl.next++
	}
}

// skip marks slot s skipped: its siblings predict it unplayable.
func (pl *Planner) skip(s int32) {
	pl.slots[s].status = slotSkipped
	pl.sib.skipped++
}

// Skipped returns how many servers the planner skipped as their siblings
// predicted them unplayable (PlanParams.Siblings).
func (pl *Planner) Skipped() int {
	if pl.sib == nil {
		return 0
	}
	return pl.sib.skipped
}

// checkStop stops once every candidate was handed out, the adaptive
// planner is done and no probe is outstanding.
func (pl *Planner) checkStop() {
	if pl.stopped || pl.next < len(pl.order) || !pl.subDone || pl.out > 0 {
		return
	}
	pl.stopped = true
	nearest := adaptive.NoAnswer
	for s := range pl.slots {
		if sl := pl.slots[s]; sl.status == slotUnprobed && !sl.unknown {
			nearest = min(nearest, time.Duration(sl.lo*float64(time.Millisecond)))
		}
	}
	pl.info = adaptive.StopInfo{Rule: adaptive.StopBound, Reordered: pl.sent - pl.subSent, Sent: pl.sent,
		Bottom: adaptive.NoAnswer, Nearest: nearest, Unprobed: len(pl.targets) - pl.sent}
}

// Stopped reports whether discovery is over: every server whose lower
// bound minus the margin is within the threshold has been probed and
// observed, and the adaptive planner of the unbounded servers stopped or
// ran out. StopInfo.Nearest is the smallest lower bound left unprobed;
// its Rule is adaptive.StopBound, the family this rule belongs to.
func (pl *Planner) Stopped() (bool, adaptive.StopInfo) { return pl.stopped, pl.info }

// Clusters are the adaptive planner's clusters of the unbounded servers
// (nil when every server is bounded).
func (pl *Planner) Clusters() []adaptive.ClusterInfo {
	if pl.sub == nil {
		return nil
	}
	return pl.sub.Clusters()
}

// Candidates returns how many bounded servers the stop rule keeps and
// probes in estimate order, and how many servers are handed to Armitage's
// planner (the unbounded ones, and with Calibrate the kept ones too).
func (pl *Planner) Candidates() (ordered, adaptive int) {
	return len(pl.order), len(pl.subIdx)
}

// Estimate returns the planner's estimate and lower bound for target i
// (its position in PlanInput.Targets) in ms; ok is false for a duplicate
// and for a server no landmark bounds.
func (pl *Planner) Estimate(i int) (est, lo float64, ok bool) {
	if i < 0 || i >= len(pl.slotOf) || pl.slotOf[i] < 0 {
		return 0, 0, false
	}
	sl := pl.slots[pl.slotOf[i]]
	return sl.est, sl.lo, !sl.unknown
}

var _ adaptive.Strategy = (*Planner)(nil)
