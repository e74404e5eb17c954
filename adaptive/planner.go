package adaptive

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"
)

type status uint8

const (
	unprobed status = iota
	outstanding
	observed
)

// slot is the planner's state of one target, same index as Planner.targets.
type slot struct {
	rtt      time.Duration
	cluster  int32
	status   status
	phase    Phase
	answered bool
}

type cluster struct {
	group     int32
	prefix    netip.Prefix
	members   []int32 // slot indices, master order
	samples   []int32 // slots probed in steps 4(c) and 4(e)iii, in the order they were chosen
	later     []int32 // FarCut: step 4(b)'s samples held back for the second round
	far       bool    // FarCut: one sample, at StopRTT + FarCut or more; not split
	parent    int32
	pending   int32 // samples whose outcomes are not yet observed
	rtt       time.Duration
	known     bool
	dissolved bool
	rank      int
	cursor    int // step 6: members[:cursor] are handed out
	probed    int
	heapAt    int           // position in Planner.order, -1 when not in it
	est       time.Duration // step-6 ordering key: rtt, or the running median with Rerank
	low       time.Duration // lowest answered RTT of any member, when lowOK (StopBound)
	lowOK     bool
	inflight  int     // members handed out whose outcome is not observed yet
	med       *median // Rerank only
}

// Planner is the adaptive planner: Algorithm 1 and Algorithm 2.
//
// A Planner is not safe for concurrent use: one goroutine calls all its
// methods (the prober's send loop, or the simulator's event loop).
type Planner struct {
	p       Params
	rng     *rand.Rand
	targets []Target
	slots   []slot
	index   map[netip.AddrPort]int32
	groups  []string
	cl      []cluster

	queue   []int32 // calibration and split probes to hand out, FIFO
	qhead   int
	pending int  // calibration and split probes queued or outstanding
	round1  bool // FarCut's first round of samples is out
	ranked  bool
	order   []int32 // step 6: unfinished clusters, a heap by (known, est, first member)

	win     window
	out6    int // step-6 probes handed out whose outcomes are not in
	stopped bool
	info    StopInfo
	stats   Stats
	scratch []int32
	fine    map[netip.Prefix]int32
}

// New plans the discovery of targets, given in master order, with the
// constants p and the random source rng (steps 4(b) and 4(e)iii draw from it;
// the same seed and the same outcomes give the same plan). Duplicate
// addresses are dropped, keeping the first. New refuses a target with an
// invalid address, invalid Params, and a nil rng.
func New(targets []Target, p Params, rng *rand.Rand) (*Planner, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("%w: nil rng", ErrParams)
	}
	l, err := newList(targets)
	if err != nil {
		return nil, err
	}
	pl := &Planner{
		p:       p,
		rng:     rng,
		targets: l.targets,
		index:   l.index,
		fine:    make(map[netip.Prefix]int32),
	}
	pl.stats.Duplicates = l.dups
	pl.win.init(p)
	pl.slots = make([]slot, len(pl.targets))
	pl.stats.Targets = len(pl.targets)
	pl.cluster()
	pl.calibrate()
	if pl.pending == 0 {
		pl.rank()
	}
	return pl, nil
}

// Next returns the next probe to send. ok is false when there is none now:
// phase is then Waiting (calibration outcomes are outstanding; call Next
// again after the next Observe) or Done (every server was handed out, or
// auto-stop fired).
func (pl *Planner) Next() (t Target, ph Phase, ok bool) {
	if pl.stopped {
		return Target{}, Done, false
	}
	if pl.qhead < len(pl.queue) {
		s := pl.queue[pl.qhead]
		pl.qhead++
		return pl.send(s), pl.slots[s].phase, true
	}
	if pl.pending > 0 {
		return Target{}, Waiting, false
	}
	if c := pl.nearest(); c >= 0 {
		if pl.holding() {
			return Target{}, Waiting, false
		}
		if b := pl.blocking(c); b >= 0 {
			c = b
		}
		cl := &pl.cl[c]
		s := cl.members[cl.cursor]
		cl.cursor++
		pl.slots[s].phase = Reordered
		return pl.send(s), Reordered, true
	}
	return Target{}, Done, false
}

func (pl *Planner) send(s int32) Target {
	sl := &pl.slots[s]
	sl.status = outstanding
	pl.cl[sl.cluster].probed++
	pl.cl[sl.cluster].inflight++
	switch sl.phase {
	case Calibrate:
		pl.stats.Calibrate++
	case Split:
		pl.stats.Split++
	case Reordered:
		pl.stats.Reordered++
		pl.out6++
	}
	return pl.targets[s]
}

// Observe reports the outcome of a probe handed out by Next: its RTT when
// answered, or no answer (the caller's timeout expired). The planner reads
// no clock, so a probe that is never observed keeps calibration waiting.
// Observe refuses an address not in the list (ErrUnknown) and one that is
// not outstanding (ErrNotSent); a refusal changes nothing but Stats.
func (pl *Planner) Observe(addr netip.AddrPort, rtt time.Duration, answered bool) error {
	return pl.observe(addr, rtt, answered, false)
}

// ObserveSkipped records a server handed out by Next and not probed, ruled
// out at least (SkipObserver): its cluster counts it as answered at least;
// step 6's stop rule and re-ranking do not see it.
func (pl *Planner) ObserveSkipped(addr netip.AddrPort, least time.Duration) error {
	return pl.observe(addr, least, true, true)
}

func (pl *Planner) observe(addr netip.AddrPort, rtt time.Duration, answered, skipped bool) error {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	s, ok := pl.index[addr]
	if !ok {
		pl.stats.Refused++
		return fmt.Errorf("%w: %v", ErrUnknown, addr)
	}
	sl := &pl.slots[s]
	if sl.status != outstanding {
		pl.stats.Refused++
		return fmt.Errorf("%w: %v", ErrNotSent, addr)
	}
	if !answered || rtt < 0 {
		rtt = 0 // an unanswered probe has no RTT; a negative one is a clock glitch
	}
	sl.status, sl.rtt, sl.answered = observed, rtt, answered
	pl.stats.Observed++
	c := sl.cluster
	pl.cl[c].inflight--
	if answered {
		pl.lower(c, rtt)
	}
	switch sl.phase {
	case Calibrate:
		if pl.cl[c].pending--; pl.cl[c].pending == 0 && !pl.round1 {
			pl.estimate(c)
		}
		pl.calibrationDone()
	case Split:
		pl.cl[c].pending--
		pl.estimateSplit(c, s)
		pl.calibrationDone()
	case Reordered:
		pl.out6--
		if skipped {
			break
		}
		if pl.p.Rerank && answered {
			pl.rerank(c, rtt)
		}
		if !pl.stopped {
			pl.win.push(sl.rtt, sl.answered)
			pl.checkStop()
		}
	}
	return nil
}

// holding is HoldAhead: every cluster with servers left to hand out is
// bounded far (or has no bound), and StopAgree of their probes are out,
// as many as the stop rule's agreeing run needs.
func (pl *Planner) holding() bool {
	agree := max(pl.p.StopAgree, 1)
	if !pl.p.HoldAhead || pl.p.Stop != StopBound || pl.out6 < agree {
		return false
	}
	need, far := pl.p.StopRTT+pl.p.StopMargin, 0
	for i := range pl.cl {
		c := &pl.cl[i]
		if c.dissolved {
			continue
		}
		near := c.lowOK && c.low < need
		if near && c.probed < len(c.members) {
			return false // what comes next is not speculative
		}
		if !near {
			far += c.inflight
		}
	}
	return far >= agree
}

// Stopped reports whether auto-stop fired, and when and why.
func (pl *Planner) Stopped() (bool, StopInfo) { return pl.stopped, pl.info }

// Calibrated reports whether step 5 is done: every cluster's RTT is known
// (or known to be unknown) and step 6 has begun.
func (pl *Planner) Calibrated() bool { return pl.ranked }

// Stats returns the planner's counters.
func (pl *Planner) Stats() Stats { return pl.stats }

// Clusters describes every cluster made so far, in the order they were made
// (step 2's clusters in the order their first server appears in the master's
// list, then those made by splits). Parent indexes this slice.
func (pl *Planner) Clusters() []ClusterInfo {
	out := make([]ClusterInfo, len(pl.cl))
	for i := range pl.cl {
		c := &pl.cl[i]
		id := pl.groups[c.group]
		if c.prefix.IsValid() {
			id += " " + c.prefix.String()
		}
		ci := ClusterInfo{
			ID: id, Group: pl.groups[c.group], Prefix: c.prefix,
			Parent: int(c.parent), Dissolved: c.dissolved, Size: len(c.members),
			RTT: c.rtt, Estimated: c.known, Rank: c.rank, Probed: c.probed,
		}
		if c.dissolved {
			ci.Rank = 0
		}
		samples := slices.Clone(c.samples)
		slices.Sort(samples)
		for _, s := range samples {
			if sl := pl.slots[s]; sl.status == observed {
				ci.Samples = append(ci.Samples, Sample{Target: pl.targets[s], Phase: sl.phase, RTT: sl.rtt, Answered: sl.answered})
			}
		}
		out[i] = ci
	}
	return out
}
