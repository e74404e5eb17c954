package adaptive

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Key says what servers share before the /8 rule groups them: the paper's
// country code, or (section 5.2) the origin autonomous system.
type Key uint8

const (
	// ByCountry is Algorithm 1 step 2(a): one group per country code.
	ByCountry Key = iota
	// ByAS groups by origin AS in the country's place ("Clustering based on
	// AS numbers (rather than country code) may lead to more accurate
	// RTTcluster estimates", section 5.2). A server with no AS (ASN 0) falls
	// back to its country.
	ByAS
	// ByCountryAS groups by country and AS together, so that an AS present
	// in several countries (a hosting company, a transit network) is not
	// one group. A server with no AS falls back to its country.
	ByCountryAS
)

func (k Key) String() string {
	switch k {
	case ByCountry:
		return "country"
	case ByAS:
		return "as"
	case ByCountryAS:
		return "country+as"
	}
	return fmt.Sprintf("Key(%d)", uint8(k))
}

// Rule is the auto-stop rule of step 6.
type Rule uint8

const (
	// StopPaper is Algorithm 2: stop when the StopPercentile RTT of the last
	// Window step-6 outcomes reaches StopRTT.
	StopPaper Rule = iota
	// StopRun waits until the StopPaper condition has held after StopRun
	// consecutive step-6 outcomes: "waiting for a smooth run of consistently
	// high probe RTTs before stopping" (section 5.2).
	StopRun
	// StopEstimate stops when every cluster that still has unprobed servers
	// and has an RTT estimate is estimated at StopRTT + StopMargin or more,
	// and the last StopAgree step-6 outcomes were all at or above StopRTT (or
	// unanswered). It does not wait for Window step-6 probes: the estimates
	// are the evidence the window otherwise has to gather.
	StopEstimate
	// StopBound stops when the last StopAgree step-6 outcomes were all at
	// or above StopRTT (or unanswered) and every cluster that still has
	// unprobed servers, or probes in flight, has a lower bound of StopRTT + StopMargin or more.
	// A cluster's lower bound is the lowest RTT answered by any of its
	// servers so far (calibration, split and step-6 probes; a cluster made
	// by a split with no answered sample of its own takes its parent's). A
	// cluster none of whose servers answered has no bound and does not hold
	// the stop back (it is ranked last, as in step 5). Unlike StopEstimate it
	// asks the lowest sample, not the median: a cluster whose samples
	// straddle StopRTT is probed to its end, and a cluster that proved
	// nearer than its samples in step 6 holds the stop back at once. It does
	// not wait for Window step-6 probes.
	StopBound
)

func (r Rule) String() string {
	switch r {
	case StopPaper:
		return "paper"
	case StopRun:
		return "run"
	case StopEstimate:
		return "estimate"
	case StopBound:
		return "bound"
	}
	return fmt.Sprintf("Rule(%d)", uint8(r))
}

// Params are the constants of Algorithms 1 and 2 and the options beyond the
// paper. [Paper] returns every constant as the paper gives it; a zero field is
// not replaced by a default (New refuses the ones that make no sense).
type Params struct {
	// Slash8Servers and Slash8Share are step 2(b): a /8 becomes a cluster of
	// its own when it holds more than Slash8Servers servers (10: "i. more
	// than 10 game servers") and more than Slash8Share of its country's
	// servers (0.10: "ii. more than 10% of all game servers from that
	// country"). Both comparisons are strict.
	Slash8Servers int
	Slash8Share   float64

	// Coarse4 and Fine4 are the IPv4 prefix lengths of step 2(b) and step
	// 4(b)/4(e): 8 and 16 ("/8 subnet", "/16 subnet"). Coarse6 and Fine6 are
	// their IPv6 counterparts, 32 and 48; not in the paper, which is IPv4
	// only. Section 5.2 lists "the use of /8 and /16 boundaries" as a
	// question, hence parameters.
	Coarse4, Fine4 int
	Coarse6, Fine6 int

	// SampleScale multiplies step 4(a)'s Nsample = sqrt(Ncluster), rounded
	// up: Nsample = ceil(SampleScale*sqrt(Ncluster)), at least 1 and at most
	// Ncluster. The paper's value is 1; section 5.1: "increasing Nsample will
	// improve the estimation of RTTcluster".
	SampleScale float64

	// SplitSpread, SplitLow and SplitHigh are step 4(e): split a cluster when
	// its SplitHigh and SplitLow percentile samples differ by more than
	// SplitSpread ("If the 20th and 80th percentile measurements making up
	// RTTcluster differ by more than 40ms"): 40 ms, 0.20, 0.80.
	SplitSpread         time.Duration
	SplitLow, SplitHigh float64

	// Window is Algorithm 2's Wautostop ("for example, Wautostop = 100").
	Window int
	// StopRTT is Algorithm 2's RTTstop, the largest playable RTT ("for
	// example, RTTstop = 200ms"). Zero turns auto-stop off: step 6 probes
	// every server, as conventional discovery does.
	StopRTT time.Duration
	// StopPercentile is Algorithm 2's "2nd-percentile RTT over the last
	// Wautostop probes": 0.02.
	StopPercentile float64

	// FarCut, when above zero, draws step 4(c)'s samples in two rounds:
	// first FarFirst samples of every cluster (the first of those step 4(b)
	// chose), then, once every first-round outcome is in, the rest of the
	// samples of every cluster that is not far. A cluster is far when the
	// lowest of its first-round samples that answered is at StopRTT +
	// FarCut or more: it keeps those samples as its RTT and is not split,
	// since it will be probed after every playable-looking cluster whatever
	// its exact RTT, and the paper's sqrt(N) samples would only rank it
	// among the far ones. A cluster none of whose first-round samples
	// answered is sampled in full. It saves most of the calibration of a
	// client far from most servers, at a risk: a far-looking cluster whose
	// first sample missed a near member, or was delayed on its way (a queue,
	// a busy client), goes to the end of the order. 0 (the paper) takes
	// every sample at once. Ignored when StopRTT is 0.
	FarCut time.Duration
	// FarFirst is the number of samples of FarCut's first round (at most
	// the cluster's Nsample; 0 counts as 1): a cluster is far when the
	// lowest of them that answered is at StopRTT + FarCut or more. More than
	// one guards against a single sample delayed on its way (a queue, a busy
	// client) sending a near cluster to the end of the order.
	FarFirst int
	// FarSpread, with FarCut, when above zero, calls a cluster far only if
	// its lowest first-round sample is also within FarSpread of the lowest
	// first-round sample answered in each of its servers' countries: a near
	// network whose one sample was delayed on its way (a queue, a busy
	// client) stands out from its country's and is sampled in full. 0 does
	// not compare.
	FarSpread time.Duration

	// BoundFirst, with Stop == StopBound, changes step 6's order once the
	// next cluster is estimated at StopRTT or more: the clusters whose lower
	// bound is under StopRTT + StopMargin, which the bound rule waits for,
	// are probed first, lowest bound first. Before that point the order is
	// step 5's.
	BoundFirst bool

	// ClusterBy is what step 2(a) groups by: ByCountry in the paper.
	ClusterBy Key
	// Stop is the auto-stop rule: StopPaper in the paper.
	Stop Rule
	// StopRun is the number of consecutive step-6 outcomes after which the
	// StopPaper condition must hold, for Stop == StopRun.
	StopRun int
	// StopMargin and StopAgree are for Stop == StopEstimate and StopBound:
	// how far above StopRTT every remaining cluster's estimate (StopEstimate)
	// or lower bound (StopBound) must be, and how many of the latest step-6
	// outcomes must all be at or above StopRTT.
	StopMargin time.Duration
	StopAgree  int
	// HoldAhead, with Stop == StopBound, keeps step 6 from running ahead
	// of the evidence the stop rule waits for: while every cluster with
	// servers left to hand out has its lower bound at StopRTT + StopMargin
	// or more (or none), no more of their probes are out than the rule's
	// agreeing run needs (StopAgree); Next says Waiting until one comes
	// back. A paced sender at thousands a second would otherwise hand out
	// the whole far tail before the rule's outcomes return; a sender with
	// fewer than StopAgree in flight is held only while something else
	// keeps handed-out probes waiting (group probing's held mates). It
	// never skips a server, only delays.
	HoldAhead bool
	// Rerank, when set, re-estimates a cluster as its step-6 RTTs arrive
	// (the median of all its answered probes) and always continues with the
	// unfinished cluster of lowest estimate, so a cluster that turns out
	// farther than its samples said yields to the next one. The paper ranks
	// once, in step 5.
	Rerank bool
}

// Paper returns the constants of Algorithms 1 and 2 as the paper gives them,
// with every option beyond the paper off. The values the options would use
// when turned on (StopRun, StopMargin, StopAgree) are set too.
func Paper() Params {
	return Params{
		Slash8Servers:  10,   // step 2(b)i: "more than 10 game servers"
		Slash8Share:    0.10, // step 2(b)ii: "more than 10% of all game servers from that country"
		Coarse4:        8,    // step 2(b): "every /8 subnet within each country code"
		Fine4:          16,   // step 4(b): "one from each /16 subnet"; 4(e)ii: "the most significant 16 bits"
		Coarse6:        32,   // not in the paper: a typical registry allocation
		Fine6:          48,   // not in the paper: a typical site
		SampleScale:    1,    // step 4(a): "Set Nsample = sqrt(Ncluster)"
		SplitSpread:    40 * time.Millisecond,
		SplitLow:       0.20, // step 4(e): "the 20th and 80th percentile measurements"
		SplitHigh:      0.80,
		Window:         100,                    // Algorithm 2: "Wautostop = 100"
		StopRTT:        200 * time.Millisecond, // Algorithm 2: "RTTstop = 200ms"
		StopPercentile: 0.02,                   // Algorithm 2: "the 2nd-percentile RTT over the last Wautostop probes"
		ClusterBy:      ByCountry,
		Stop:           StopPaper,
		StopRun:        50,
		StopMargin:     25 * time.Millisecond,
		StopAgree:      20,
	}
}

// Scout returns the variant this package recommends beyond the paper, named
// "scout" in the simulator (sim.Variants) and in scout servers --order
// adaptive --variant scout: the paper's constants with
//
//   - ClusterBy = ByCountryAS (section 5.2's AS clustering, kept apart per
//     country), so that a cluster is one network in one place and its
//     samples speak for its members;
//   - FarCut = 50 ms: a cluster whose first sample answered at 250 ms or
//     more is not sampled further, unless (FarSpread = 150 ms) that sample
//     is more than 150 ms above the lowest first sample of its country: a
//     near network whose one sample was delayed on its way (a queue, a busy
//     client) is sampled in full;
//   - Stop = StopBound with StopMargin = 5 ms and StopAgree = 20: stop once
//     the last 20 step-6 outcomes were at or above 200 ms (or lost) and no
//     cluster with servers left has answered under 205 ms;
//   - HoldAhead: a paced sender (thousands of probes a second) hands out
//     the far tail only 20 probes ahead of the rule's evidence.
//
// EVALUATION.md measures it against the paper's algorithm and the oracle
// ("What each option buys"); every other field is Paper()'s.
func Scout() Params {
	p := Paper()
	p.ClusterBy = ByCountryAS
	p.FarCut = 50 * time.Millisecond
	p.FarSpread = 150 * time.Millisecond
	p.Stop = StopBound
	p.StopMargin = 5 * time.Millisecond
	p.StopAgree = 20
	p.HoldAhead = true
	return p
}

// ErrParams is wrapped by New's error for a Params it refuses.
var ErrParams = errors.New("adaptive: invalid parameters")

func (p Params) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrParams}, a...)...)
	}
	switch {
	case p.Slash8Servers < 0:
		return bad("Slash8Servers %d < 0", p.Slash8Servers)
	case !(p.Slash8Share >= 0 && p.Slash8Share <= 1):
		return bad("Slash8Share %v not in [0, 1]", p.Slash8Share)
	case p.Coarse4 < 0 || p.Coarse4 >= p.Fine4 || p.Fine4 > 32:
		return bad("IPv4 prefix lengths /%d, /%d: want 0 <= coarse < fine <= 32", p.Coarse4, p.Fine4)
	case p.Coarse6 < 0 || p.Coarse6 >= p.Fine6 || p.Fine6 > 128:
		return bad("IPv6 prefix lengths /%d, /%d: want 0 <= coarse < fine <= 128", p.Coarse6, p.Fine6)
	case !(p.SampleScale > 0) || math.IsInf(p.SampleScale, 1):
		return bad("SampleScale %v: want > 0", p.SampleScale)
	case p.SplitSpread < 0:
		return bad("SplitSpread %v < 0", p.SplitSpread)
	case !(p.SplitLow > 0 && p.SplitLow <= p.SplitHigh && p.SplitHigh <= 1):
		return bad("split percentiles %v, %v: want 0 < low <= high <= 1", p.SplitLow, p.SplitHigh)
	case p.FarCut < 0 || p.FarFirst < 0 || p.FarSpread < 0:
		return bad("FarCut %v, FarFirst %d or FarSpread %v < 0", p.FarCut, p.FarFirst, p.FarSpread)
	case p.StopRTT < 0:
		return bad("StopRTT %v < 0", p.StopRTT)
	case p.ClusterBy > ByCountryAS:
		return bad("ClusterBy %v", p.ClusterBy)
	case p.Stop > StopBound:
		return bad("Stop %v", p.Stop)
	}
	if p.StopRTT == 0 {
		return nil // auto-stop off: the fields below are unused
	}
	switch {
	case p.Window < 1:
		return bad("Window %d < 1", p.Window)
	case !(p.StopPercentile > 0 && p.StopPercentile <= 1):
		return bad("StopPercentile %v not in (0, 1]", p.StopPercentile)
	case p.Stop == StopRun && p.StopRun < 1:
		return bad("StopRun %d < 1", p.StopRun)
	case (p.Stop == StopEstimate || p.Stop == StopBound) && (p.StopAgree < 1 || p.StopMargin < 0):
		return bad("StopAgree %d < 1 or StopMargin %v < 0", p.StopAgree, p.StopMargin)
	}
	return nil
}
