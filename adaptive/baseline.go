package adaptive

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// list is the master's list as every strategy keeps it: addresses unmapped,
// duplicates dropped (the first keeps its place), Index set.
type list struct {
	targets []Target
	index   map[netip.AddrPort]int32
	state   []status
	dups    int
}

func newList(targets []Target) (list, error) {
	l := list{
		targets: make([]Target, 0, len(targets)),
		index:   make(map[netip.AddrPort]int32, len(targets)),
	}
	for i, t := range targets {
		if !t.Addr.IsValid() {
			return list{}, fmt.Errorf("%w: entry %d: address %v", ErrTarget, i, t.Addr)
		}
		t.Addr = netip.AddrPortFrom(t.Addr.Addr().Unmap(), t.Addr.Port())
		if _, dup := l.index[t.Addr]; dup {
			l.dups++
			continue
		}
		t.Index = i
		l.index[t.Addr] = int32(len(l.targets))
		l.targets = append(l.targets, t)
	}
	l.state = make([]status, len(l.targets))
	return l, nil
}

// observe marks an outstanding target observed and returns its slot.
func (l *list) observe(addr netip.AddrPort) (int32, error) {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	s, ok := l.index[addr]
	if !ok {
		return -1, fmt.Errorf("%w: %v", ErrUnknown, addr)
	}
	if l.state[s] != outstanding {
		return -1, fmt.Errorf("%w: %v", ErrNotSent, addr)
	}
	l.state[s] = observed
	return s, nil
}

// Conventional is conventional discovery: every server in the master's
// order, no auto-stop. It is the paper's baseline. Not safe for concurrent
// use.
type Conventional struct {
	l    list
	next int
}

// NewConventional plans conventional discovery of targets, given in master
// order. Duplicate addresses are dropped, keeping the first.
func NewConventional(targets []Target) (*Conventional, error) {
	l, err := newList(targets)
	if err != nil {
		return nil, err
	}
	return &Conventional{l: l}, nil
}

// Next returns the next server in master order, phase Master; ok is false
// (phase Done) after the last.
func (c *Conventional) Next() (Target, Phase, bool) {
	if c.next == len(c.l.targets) {
		return Target{}, Done, false
	}
	c.l.state[c.next] = outstanding
	c.next++
	return c.l.targets[c.next-1], Master, true
}

// Observe records a probe's outcome; it refuses what Planner.Observe refuses.
func (c *Conventional) Observe(addr netip.AddrPort, rtt time.Duration, answered bool) error {
	_, err := c.l.observe(addr)
	return err
}

// Stopped is always false: conventional discovery probes every server.
func (c *Conventional) Stopped() (bool, StopInfo) { return false, StopInfo{} }

// Clusters is nil: conventional discovery makes none.
func (c *Conventional) Clusters() []ClusterInfo { return nil }

// Oracle probes exactly the playable servers, nearest first, and stops: the
// best any ordering could do, given the true RTTs no client has. Not safe for
// concurrent use.
type Oracle struct {
	l        list
	order    []int32 // playable slots, ascending true RTT, then master order
	next     int
	observed int
}

// NewOracle plans the oracle's discovery of targets, given in master order.
// rtt gives each target's true RTT, and whether it answers at all; a
// playable server answers with an RTT of at most stopRTT (Algorithm 2: "the
// maximum RTT considered playable"). Duplicate addresses are dropped,
// keeping the first.
func NewOracle(targets []Target, rtt func(Target) (time.Duration, bool), stopRTT time.Duration) (*Oracle, error) {
	l, err := newList(targets)
	if err != nil {
		return nil, err
	}
	o := &Oracle{l: l}
	rtts := make([]time.Duration, len(l.targets))
	for i, t := range l.targets {
		if r, ok := rtt(t); ok && r <= stopRTT {
			rtts[i] = r
			o.order = append(o.order, int32(i))
		}
	}
	slices.SortStableFunc(o.order, func(a, b int32) int { return cmp.Compare(rtts[a], rtts[b]) })
	return o, nil
}

// Next returns the next playable server, phase Reordered; ok is false (phase
// Done) after the last.
func (o *Oracle) Next() (Target, Phase, bool) {
	if o.next == len(o.order) {
		return Target{}, Done, false
	}
	s := o.order[o.next]
	o.next++
	o.l.state[s] = outstanding
	return o.l.targets[s], Reordered, true
}

// Observe records a probe's outcome; it refuses what Planner.Observe refuses.
func (o *Oracle) Observe(addr netip.AddrPort, rtt time.Duration, answered bool) error {
	if _, err := o.l.observe(addr); err != nil {
		return err
	}
	o.observed++
	return nil
}

// Stopped reports true once every playable server has been handed out and
// observed.
func (o *Oracle) Stopped() (bool, StopInfo) {
	if o.observed < len(o.order) {
		return false, StopInfo{}
	}
	return true, StopInfo{Reordered: o.observed, Sent: o.next, Unprobed: len(o.l.targets) - o.next, Bottom: NoAnswer, Nearest: NoAnswer}
}

// Clusters is nil: the oracle needs none.
func (o *Oracle) Clusters() []ClusterInfo { return nil }
