package adaptive

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"
)

// Group probing. Servers in one /24 (IPv6: one /64; the ports of one
// address always together) of one country and AS sit in one network,
// nearly always in one room, so their RTTs from a client differ by little
// (a server geolocation does not place, Target.Country "", is grouped
// with its address's other ports only: nothing then says its /24 is one
// network): [Grouped] probes one of
// them first (in the order its inner strategy hands them out) and holds
// the others, its group-mates, until that sample answers. Then:
//
//   - under Threshold: the group is playable, every mate is probed;
//   - at or over Threshold + Margin/k, k the group's answered samples: the
//     mates are skipped, and the inner strategy is told each answered with
//     the least sample, so its clusters see them (a [SkipObserver] is told
//     through ObserveSkipped, which its stop rule does not count: the
//     samples were counted as they came);
//   - in between: further mates are probed, as many at once as the least
//     sample so far needs to rule the group out (the least k with least
//     at or over Threshold + Margin/k), and more whenever a lower sample
//     raises that count; every mate, when its least is under Threshold
//     (remembered just over it, less Drift: no sample can rule it out).
//
// Taking the further samples together costs no probe over taking them one
// at a time, each after the one before answered: that would not decide
// the group far before it had as many samples (the least can only fall),
// and a group one of them finds playable has every mate probed anyway. It
// saves their round trips: a /24 a few ms over the threshold needs up to
// Margin/(least - Threshold) samples, which one at a time took as many
// RTTs near 200 ms at the end of a run. The group is decided far only
// once none is outstanding (each answer tops the count up), so a sample
// under the threshold still on its way is never skipped over.
//
// A single sample can sit well over its path's RTT (queueing); the least
// of k samples sits closer, and for the exponential tail of such delays
// the chance that the least of k exceeds the path's RTT by Margin/k is the
// same for every k (exp(-Margin/mean)). An unanswered probe is not a
// sample: a lost first sample (a server gone since it registered, found
// only after the probe's timeouts) releases every mate, which are then
// probed as without grouping; a lost later one calls another mate.
//
// The client's memory of its own earlier runs ([Prior], per group) counts
// as samples taken Drift ms ago, so their least is lowered by Drift (the
// path may have become shorter since): a group remembered under Threshold
// is probed first, before the inner strategy's order, and whole; one
// remembered far is skipped without a probe; one in between gets fresh
// samples as above. A server the inner strategy hands out after it was
// probed first is not probed again: its outcome is reported to the inner
// strategy as it comes.

// GroupBits4 and GroupBits6 are the prefix lengths of a group.
const (
	GroupBits4 = 24
	GroupBits6 = 64
)

// GroupKey returns the group of address a: its /24, or /64 for IPv6.
func GroupKey(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := GroupBits4
	if a.Is6() {
		bits = GroupBits6
	}
	p, _ := a.Prefix(bits)
	return p
}

// GroupParams are group probing's constants.
type GroupParams struct {
	// Threshold is the largest playable RTT (RTTstop). Zero probes every
	// mate (nothing is far).
	Threshold time.Duration
	// Margin is M: the mates are skipped once the least of k samples is
	// at or over Threshold + M/k.
	Margin time.Duration
	// Drift is taken off a remembered least RTT: how much shorter the
	// path may have become since it was measured.
	Drift time.Duration
	// Within, when set, splits groups further: servers of one /24 are one
	// group only when it gives them the same value (the landmark plan's:
	// their landmark RTTs agree). Servers of one /24 are always split by
	// their country and AS (Target.Country, Target.ASN) too: a /24 that
	// geolocation places in two networks is not taken as one room. The
	// ports of one address stay one group: its first port's value counts.
	Within func(Target) string
}

// groupID is a group: its prefix, the country and AS geolocation gives
// its servers, and GroupParams.Within's value.
type groupID struct {
	prefix  netip.Prefix
	country string
	asn     uint32
	within  string
}

// DefaultGroups returns the constants scout uses: 200 ms, M = 20 ms (the
// risk per group exp(-M/mean) with the simulator's queueing delay of about
// 2 ms near 200 ms: under 1e-4), and 2 ms of drift (the least RTTs of the
// two directions of a WonderProxy path, measured by different nodes over
// the same two days, differ by at most 3 ms for 99% of the paths outside a
// few nodes; EVALUATION.md).
func DefaultGroups() GroupParams {
	return GroupParams{Threshold: 200 * time.Millisecond, Margin: 20 * time.Millisecond, Drift: 2 * time.Millisecond}
}

// Prior is what the client remembers of a group: the least RTT of its
// recent samples and how many there are.
type Prior struct {
	Least   time.Duration
	Samples int
}

// ErrGroups is wrapped by NewGrouped's error for an input it refuses.
var ErrGroups = errors.New("adaptive: invalid group parameters")

type groupState uint8

const (
	grpOpen     groupState = iota // no sample out: the next server handed out is one
	grpSampling                   // samples are outstanding; mates are held
	grpNear                       // playable: every mate is probed
	grpFar                        // skipped: mates are reported with least
	grpAll                        // its first sample was lost: every mate is probed
)

type group struct {
	state   groupState
	least   time.Duration // least answered sample, remembered ones less Drift
	samples int           // answered samples, remembered ones included
	out     int           // samples outstanding (grpSampling)
	fresh   bool          // an answered sample of this run
	held    []Target      // mates handed out by the inner strategy, not yet sent
}

// own is a probe the wrapper sent before the inner strategy asked for it
// (a remembered playable group's server).
type own struct {
	done      bool // its outcome is in
	asked     bool // the inner strategy has handed it out since
	rtt       time.Duration
	answered  bool
	delivered bool // the outcome was reported to the inner strategy
}

// GroupStats count what group probing saved and spent.
type GroupStats struct {
	Skipped    int `json:"skipped"`    // servers not probed: a sample of their group was far
	Remembered int `json:"remembered"` // servers not probed: their group is remembered far
	First      int `json:"first"`      // servers probed first: their group is remembered playable
	Samples    int `json:"samples"`    // further samples: mates probed to decide a group
}

// Grouped wraps a Strategy with group probing. Pure: no clock, no
// sockets. Not safe for concurrent use.
type Grouped struct {
	in      Strategy
	p       GroupParams
	groups  map[groupID]*group
	ids     map[netip.AddrPort]groupID // every target's group
	queue   []Target                   // to send before asking the inner strategy
	sent    map[netip.AddrPort]bool
	owns    map[netip.AddrPort]*own
	skipped map[netip.AddrPort]time.Duration // what a skipped server was reported at
	handed  int                              // probes handed out
	held    int                              // mates held, over every group
	waiting int                              // owns the inner strategy asked for and was not told of
	stats   GroupStats
}

// NewGrouped wraps inner, built from targets (the same list, so that
// Target.Index agrees), with group probing under p; prior, which may be
// nil, is the client's memory by group.
func NewGrouped(inner Strategy, targets []Target, p GroupParams, prior map[netip.Prefix]Prior) (*Grouped, error) {
	if inner == nil {
		return nil, fmt.Errorf("%w: no strategy", ErrGroups)
	}
	if p.Threshold < 0 || p.Margin < 0 || p.Drift < 0 {
		return nil, fmt.Errorf("%w: threshold %v, margin %v, drift %v", ErrGroups, p.Threshold, p.Margin, p.Drift)
	}
	g := &Grouped{in: inner, p: p, groups: map[groupID]*group{}, ids: make(map[netip.AddrPort]groupID, len(targets)),
		sent: map[netip.AddrPort]bool{}, owns: map[netip.AddrPort]*own{}, skipped: map[netip.AddrPort]time.Duration{}}
	var first []Target
	within := map[netip.Addr]string{} // an address's Within: its first port's
	for i, t := range targets {
		t.Addr = netip.AddrPortFrom(t.Addr.Addr().Unmap(), t.Addr.Port())
		if _, dup := g.ids[t.Addr]; dup || !t.Addr.IsValid() {
			continue
		}
		t.Index = i
		k := GroupKey(t.Addr.Addr())
		id := groupID{k, t.Country, t.ASN, ""}
		located := t.Country != ""
		if !located {
			// Nothing says an unlocated /24 is one network (a lab world's
			// loopback addresses are not): its address alone is a group.
			id.prefix = netip.PrefixFrom(t.Addr.Addr(), t.Addr.Addr().BitLen())
		}
		if p.Within != nil {
			w, ok := within[t.Addr.Addr()]
			if !ok {
				w = p.Within(t)
				within[t.Addr.Addr()] = w
			}
			id.within = w
		}
		g.ids[t.Addr] = id
		gr := g.groups[id]
		if gr == nil {
			gr = &group{}
			// An unlocated server's /24 memory may lead it (remembered
			// playable: probed first) but never skip it.
			if pr, ok := prior[k]; ok && pr.Samples > 0 && pr.Least >= 0 && (located || pr.Least < p.Threshold) {
				gr.least, gr.samples = max(pr.Least-p.Drift, 0), pr.Samples
				g.decide(gr, pr.Least < p.Threshold)
			}
			g.groups[id] = gr
		}
		if gr.state == grpNear && p.Threshold > 0 {
			first = append(first, t)
		}
	}
	slices.SortStableFunc(first, func(a, b Target) int {
		return cmp.Compare(g.groups[g.ids[a.Addr]].least, g.groups[g.ids[b.Addr]].least)
	})
	for _, t := range first {
		g.owns[t.Addr] = &own{}
	}
	g.queue = first
	g.stats.First = len(first)
	return g, nil
}

// decide sets a group's state from its samples; near says a sample was
// under the threshold (remembered, or of this run).
func (g *Grouped) decide(gr *group, near bool) {
	switch {
	case g.p.Threshold == 0 || near:
		gr.state = grpNear
	case gr.samples > 0 && gr.least >= g.p.Threshold+g.p.Margin/time.Duration(gr.samples):
		gr.state = grpFar
	default:
		gr.state = grpOpen
	}
}

// need returns how many answered samples rule gr out if none comes in
// under its least so far: the least k with least >= Threshold + Margin/k
// (decide's rule); 1 with none. A group whose least is under Threshold
// and still undecided (remembered just over it, less Drift) can never be
// ruled out: every mate is a sample it needs.
func (g *Grouped) need(gr *group) int {
	over := gr.least - g.p.Threshold
	switch {
	case gr.samples == 0 || g.p.Margin == 0:
		return 1
	case over <= 0:
		return math.MaxInt
	}
	k := max(int(g.p.Margin/over), 1)
	for k > 1 && gr.least >= g.p.Threshold+g.p.Margin/time.Duration(k-1) {
		k--
	}
	for gr.least < g.p.Threshold+g.p.Margin/time.Duration(k) {
		k++
	}
	return k
}

// topUp sends as many of gr's held mates as its samples fall short of
// need, and reports whether any sample is then outstanding.
func (g *Grouped) topUp(gr *group) bool {
	n := min(g.need(gr)-gr.samples-gr.out, len(gr.held))
	if n > 0 {
		g.queue = append(g.queue, gr.held[:n]...)
		gr.held = gr.held[n:]
		g.held -= n
		gr.out += n
		if gr.fresh {
			g.stats.Samples += n
		}
	}
	return gr.out > 0
}

// Next returns the next probe: a remembered playable group's server
// first, a released mate, or what the inner strategy hands out, unless its
// group holds it or skips it. ok false with Waiting while samples are out
// that decide held mates.
func (g *Grouped) Next() (Target, Phase, bool) {
	for {
		if len(g.queue) > 0 {
			t := g.queue[0]
			g.queue = g.queue[1:]
			g.sent[t.Addr] = true
			g.handed++
			return t, Reordered, true
		}
		if st, _ := g.in.Stopped(); st {
			return Target{}, Done, false
		}
		t, ph, ok := g.in.Next()
		if !ok {
			if ph == Done && g.holding() {
				return Target{}, Waiting, false
			}
			return t, ph, false
		}
		if o := g.owns[t.Addr]; o != nil {
			o.asked = true
			g.waiting++
			if o.done {
				if err := g.deliver(t.Addr, o); err != nil {
					return Target{}, Done, false
				}
			}
			continue
		}
		gr := g.groups[g.ids[t.Addr]]
		switch gr.state {
		case grpOpen:
			gr.state = grpSampling
			gr.out = 1
			if gr.fresh {
				g.stats.Samples++
			}
		case grpSampling:
			if gr.samples+gr.out < g.need(gr) {
				gr.out++ // a further sample the group still needs
				if gr.fresh {
					g.stats.Samples++
				}
				break
			}
			gr.held = append(gr.held, t)
			g.held++
			continue
		case grpAll:
		case grpFar:
			if err := g.skip(t.Addr, gr); err != nil {
				return Target{}, Done, false
			}
			continue
		}
		g.sent[t.Addr] = true
		g.handed++
		return t, ph, true
	}
}

// holding reports whether a sample is out whose group holds mates, or a
// probe sent first whose outcome the inner strategy still waits for.
func (g *Grouped) holding() bool { return g.held > 0 || g.waiting > 0 }

func (g *Grouped) deliver(a netip.AddrPort, o *own) error {
	o.delivered = true
	g.waiting--
	return g.in.Observe(a, o.rtt, o.answered)
}

// skip reports server a of far group gr to the inner strategy as answered
// at the group's least (unless it no longer listens), and counts it.
func (g *Grouped) skip(a netip.AddrPort, gr *group) error {
	if gr.fresh {
		g.stats.Skipped++
	} else {
		g.stats.Remembered++
	}
	g.skipped[a] = gr.least
	if st, _ := g.in.Stopped(); st {
		return nil
	}
	if so, ok := g.in.(SkipObserver); ok {
		return so.ObserveSkipped(a, gr.least)
	}
	return g.in.Observe(a, gr.least, true)
}

// release queues every mate gr holds.
func (g *Grouped) release(gr *group) {
	g.queue = append(g.queue, gr.held...)
	g.held -= len(gr.held)
	gr.held = nil
}

// Observe records the outcome of a probe handed out by Next. It refuses
// an address not in the list (ErrUnknown) and one not outstanding
// (ErrNotSent).
func (g *Grouped) Observe(addr netip.AddrPort, rtt time.Duration, answered bool) error {
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	if _, ok := g.ids[addr]; !ok {
		return fmt.Errorf("%w: %v", ErrUnknown, addr)
	}
	if !g.sent[addr] {
		return fmt.Errorf("%w: %v", ErrNotSent, addr)
	}
	delete(g.sent, addr)
	gr := g.groups[g.ids[addr]]
	if answered {
		if gr.samples == 0 || rtt < gr.least {
			gr.least = rtt
		}
		gr.samples++
		gr.fresh = true
	}
	if o := g.owns[addr]; o != nil {
		o.done, o.rtt, o.answered = true, rtt, answered
		if o.asked {
			return g.deliver(addr, o)
		}
		return nil
	}
	if err := g.in.Observe(addr, rtt, answered); err != nil {
		return err
	}
	if gr.state != grpSampling {
		return nil
	}
	gr.out--
	switch {
	case answered && rtt < g.p.Threshold:
		g.decide(gr, true)
	case gr.samples == 0 && gr.out == 0:
		// A lost first sample (a server gone since it registered) costs
		// the probe's timeouts; its mates are not held behind another.
		gr.state = grpAll
		g.release(gr)
		return nil
	case gr.out > 0 && g.topUp(gr):
		return nil // undecided until every sample out is in
	default:
		g.decide(gr, false)
	}
	switch gr.state {
	case grpNear:
		g.release(gr)
	case grpFar:
		for _, t := range gr.held {
			if err := g.skip(t.Addr, gr); err != nil {
				return err
			}
		}
		g.held -= len(gr.held)
		gr.held = nil
	case grpOpen:
		// Undecided (or the sample was lost): the mates held go as the
		// further samples it needs; with none held, the next ones handed
		// out will.
		if g.topUp(gr) {
			gr.state = grpSampling
		}
	}
	return nil
}

// Stopped reports whether discovery is over: the inner strategy stopped
// and no probe of the wrapper's own is left to send or to hear from. Its
// StopInfo is the inner strategy's, with the probes counted as sent
// (Sent, Reordered) and not (Unprobed) as they were: a server the inner
// strategy handed out and the wrapper skipped was not probed.
func (g *Grouped) Stopped() (bool, StopInfo) {
	st, info := g.in.Stopped()
	if !st || len(g.queue) > 0 || len(g.sent) > 0 {
		return false, StopInfo{}
	}
	skipped := g.stats.Skipped + g.stats.Remembered
	info.Unprobed += skipped
	info.Sent = g.handed
	info.Reordered = max(info.Reordered-skipped, 0)
	return true, info
}

// Skip reports whether a was skipped, and the least RTT of its group it
// was reported at then (remembered ones less the drift).
func (g *Grouped) Skip(a netip.AddrPort) (least time.Duration, ok bool) {
	least, ok = g.skipped[netip.AddrPortFrom(a.Addr().Unmap(), a.Port())]
	return least, ok
}

// Clusters are the inner strategy's.
func (g *Grouped) Clusters() []ClusterInfo { return g.in.Clusters() }

// Stats returns what group probing saved and spent so far.
func (g *Grouped) Stats() GroupStats { return g.stats }

// Inner returns the wrapped strategy.
func (g *Grouped) Inner() Strategy { return g.in }

var _ Strategy = (*Grouped)(nil)
