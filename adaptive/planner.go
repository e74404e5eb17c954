package adaptive

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// UnknownCountry is the group name of servers whose country is not known
// (Target.Country == ""), after GeoIP's own code for "no country".
const UnknownCountry = "--"

// NoAnswer is how an unanswered probe counts in Algorithm 2's window: an RTT
// above every playable one. StopInfo.Bottom is NoAnswer when the percentile
// fell on lost probes.
const NoAnswer = time.Duration(math.MaxInt64)

// A Target is one server of the master's list.
type Target struct {
	// Addr is the server's address. New unmaps an IPv4-mapped IPv6 address.
	Addr netip.AddrPort
	// Country is the ISO 3166 alpha-2 code geolocation gave the address; ""
	// when geolocation had no answer.
	Country string
	// ASN is the origin autonomous system of the address; 0 when unknown.
	// Only ByAS and ByCountryAS use it.
	ASN uint32
	// Index is the target's position in the master's list given to New; New
	// sets it, and every Target the planner hands out carries it.
	Index int
}

// Phase says which step of Algorithm 1 a probe belongs to, or why Next has
// none.
type Phase uint8

const (
	// Waiting: no probe to send until outstanding calibration or split
	// probes are observed (step 5 needs every cluster's RTT).
	Waiting Phase = iota
	// Calibrate is step 4(c): a sample of a cluster.
	Calibrate
	// Split is step 4(e)iii: the probe of a cluster made by a split.
	Split
	// Reordered is step 6: the re-ordered probe of every remaining server.
	Reordered
	// Master is conventional discovery: the master's order.
	Master
	// Done: nothing left to send, or auto-stop fired.
	Done
)

var phaseNames = [...]string{"waiting", "calibrate", "split", "reordered", "master", "done"}

func (ph Phase) String() string {
	if int(ph) < len(phaseNames) {
		return phaseNames[ph]
	}
	return "Phase(" + strconv.Itoa(int(ph)) + ")"
}

// Errors from New and Observe.
var (
	ErrTarget = errors.New("adaptive: invalid target")
	// ErrUnknown: Observe was given an address that is not in the list.
	ErrUnknown = errors.New("adaptive: address not in the list")
	// ErrNotSent: Observe was given an address that was not handed out by
	// Next, or whose outcome was observed already.
	ErrNotSent = errors.New("adaptive: probe not outstanding")
)

// A Sample is a probe's outcome.
type Sample struct {
	Target   Target
	Phase    Phase
	RTT      time.Duration // meaningful when Answered
	Answered bool
}

// ClusterInfo describes one cluster.
type ClusterInfo struct {
	// ID names the cluster: its group ("AU", "AS1221", "AU AS1221",
	// UnknownCountry), then its prefix for a /8 cluster of step 2(c) or a
	// /16 cluster of step 4(e): "AU 203.0.0.0/8", "AU 203.4.0.0/16".
	ID string
	// Group is the country code, "AS<n>" or "<country> AS<n>".
	Group string
	// Prefix is the /8 (step 2(c)) or /16 (step 4(e)) the cluster is; the
	// zero Prefix for the rest of a group (step 2(d)).
	Prefix netip.Prefix
	// Parent is the index in Clusters() of the cluster this one was split
	// from, or -1.
	Parent int
	// Dissolved reports that step 4(e) split this cluster; its servers now
	// belong to the clusters whose Parent it is.
	Dissolved bool
	// Size is the number of servers in the cluster.
	Size int
	// Samples are the cluster's calibration (step 4(c)) and split (step
	// 4(e)iii) probes whose outcomes are known, in master order.
	Samples []Sample
	// RTT is RTTcluster (steps 4(d) and 4(e)iii), valid when Estimated.
	RTT       time.Duration
	Estimated bool
	// Rank is the 1-based position in step 5's order, 0 before step 5 and
	// for dissolved clusters.
	Rank int
	// Probed counts the cluster's servers handed out so far, all phases.
	Probed int
}

// StopInfo says why and when auto-stop fired.
type StopInfo struct {
	Rule Rule
	// Reordered is the number of step-6 outcomes observed when it fired.
	Reordered int
	// Sent is the number of probes handed out, all phases, when it fired.
	Sent int
	// Bottom is RTTbottom over the last Window (or fewer, for StopEstimate)
	// step-6 outcomes; NoAnswer when it fell on lost probes.
	Bottom time.Duration
	// Nearest is the lowest RTT estimate (StopEstimate) or lower bound
	// (StopBound) among the clusters with servers left; NoAnswer when no
	// such cluster has one.
	Nearest time.Duration
	// Unprobed is the number of servers never handed out.
	Unprobed int
}

// Stats counts what the planner handed out and was told.
type Stats struct {
	Targets    int // distinct servers
	Duplicates int // repeated addresses dropped from the list
	Calibrate  int // step 4(c) probes handed out
	Split      int // step 4(e)iii probes handed out
	Reordered  int // step 6 probes handed out
	Observed   int // outcomes accepted
	Refused    int // Observe calls refused (ErrUnknown, ErrNotSent)
}

// Strategy is what the prober and the simulator drive: the adaptive
// [Planner], [Conventional] and [Oracle] all implement it.
type Strategy interface {
	Next() (t Target, ph Phase, ok bool)
	Observe(addr netip.AddrPort, rtt time.Duration, answered bool) error
	Stopped() (bool, StopInfo)
	Clusters() []ClusterInfo
}

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

func (pl *Planner) prefix(a netip.Addr, fine bool) netip.Prefix {
	bits := pl.p.Coarse4
	switch {
	case a.Is4() && fine:
		bits = pl.p.Fine4
	case !a.Is4() && fine:
		bits = pl.p.Fine6
	case !a.Is4():
		bits = pl.p.Coarse6
	}
	pfx, _ := a.Prefix(bits) // bits is within range: Params.check
	return pfx
}

// cluster is step 2: groups (2a), /8 clusters (2b, 2c), the rest (2d).
func (pl *Planner) cluster() {
	type groupKey struct {
		country string
		asn     uint32
	}
	type coarseKey struct {
		group  int32
		prefix netip.Prefix
	}
	groupOf := make([]int32, len(pl.targets))
	groupIdx := make(map[groupKey]int32)
	var groupSize []int
	coarse := make(map[coarseKey]int)
	for i, t := range pl.targets {
		k := groupKey{country: t.Country}
		if k.country == "" {
			k.country = UnknownCountry
		}
		if t.ASN != 0 {
			switch pl.p.ClusterBy {
			case ByAS:
				k = groupKey{asn: t.ASN}
			case ByCountryAS:
				k.asn = t.ASN
			}
		}
		g, ok := groupIdx[k]
		if !ok {
			g = int32(len(pl.groups))
			groupIdx[k] = g
			name := k.country
			switch {
			case k.asn != 0 && k.country == "":
				name = "AS" + strconv.FormatUint(uint64(k.asn), 10)
			case k.asn != 0:
				name = k.country + " AS" + strconv.FormatUint(uint64(k.asn), 10)
			}
			pl.groups = append(pl.groups, name)
			groupSize = append(groupSize, 0)
		}
		groupOf[i] = g
		groupSize[g]++
		coarse[coarseKey{g, pl.prefix(t.Addr.Addr(), false)}]++
	}
	clusterIdx := make(map[coarseKey]int32)
	for i, t := range pl.targets {
		g := groupOf[i]
		k := coarseKey{g, pl.prefix(t.Addr.Addr(), false)}
		if n := coarse[k]; !(n > pl.p.Slash8Servers && share(n, groupSize[g]) > pl.p.Slash8Share) {
			k.prefix = netip.Prefix{} // step 2(d): the rest of the group
		}
		c, ok := clusterIdx[k]
		if !ok {
			c = int32(len(pl.cl))
			clusterIdx[k] = c
			pl.cl = append(pl.cl, cluster{group: g, prefix: k.prefix, parent: -1, heapAt: -1})
		}
		pl.cl[c].members = append(pl.cl[c].members, int32(i))
		pl.slots[i].cluster = c
	}
}

// share is n/total. Division is rounded to the nearest float64 like the
// literal 0.10 is, so exactly 10% compares equal to 0.10, not above it.
func share(n, total int) float64 { return float64(n) / float64(total) }

// nsample is step 4(a): ceil(SampleScale*sqrt(n)), within [1, n].
func (pl *Planner) nsample(n int) int {
	k := int(math.Ceil(pl.p.SampleScale*math.Sqrt(float64(n)) - 1e-9))
	return min(max(k, 1), n)
}

// byFine groups members by their /16, in the order each /16 first appears
// and in master order within one: grouped[bounds[b]:bounds[b+1]] is /16 b.
func (pl *Planner) byFine(members []int32, grouped []int32) ([]int32, []int32) {
	clear(pl.fine)
	bucketOf := pl.scratch[:0]
	var counts []int32
	for _, s := range members {
		f := pl.prefix(pl.targets[s].Addr.Addr(), true)
		b, ok := pl.fine[f]
		if !ok {
			b = int32(len(counts))
			pl.fine[f] = b
			counts = append(counts, 0)
		}
		counts[b]++
		bucketOf = append(bucketOf, b)
	}
	pl.scratch = bucketOf
	bounds := make([]int32, len(counts)+1)
	for b, n := range counts {
		bounds[b+1] = bounds[b] + n
	}
	next := slices.Clone(bounds[:len(counts)])
	grouped = slices.Grow(grouped[:0], len(members))[:len(members)]
	for i, s := range members {
		b := bucketOf[i]
		grouped[next[b]] = s
		next[b]++
	}
	return grouped, bounds
}

// calibrate is step 4(a)-(c) for every cluster: choose the samples and queue
// them in master order.
func (pl *Planner) calibrate() {
	var grouped []int32
	for ci := range pl.cl {
		c := &pl.cl[ci]
		var bounds []int32
		grouped, bounds = pl.byFine(c.members, grouped)
		want := pl.nsample(len(c.members))
		perm := pl.rng.Perm(len(bounds) - 1)
		for round := int32(0); len(c.samples) < want; round++ {
			for _, b := range perm {
				lo, hi := bounds[b]+round, bounds[b+1]
				if lo >= hi {
					continue
				}
				j := lo + pl.rng.Int32N(hi-lo)
				grouped[lo], grouped[j] = grouped[j], grouped[lo]
				c.samples = append(c.samples, grouped[lo])
				if len(c.samples) == want {
					break
				}
			}
		}
		if k := max(pl.p.FarFirst, 1); pl.p.FarCut > 0 && pl.p.StopRTT > 0 && len(c.samples) > k {
			c.later = slices.Clone(c.samples[k:])
			c.samples = c.samples[:k]
		}
		c.pending = int32(len(c.samples))
		pl.queue = append(pl.queue, c.samples...)
	}
	slices.Sort(pl.queue)
	for _, s := range pl.queue {
		pl.slots[s].phase = Calibrate
	}
	pl.pending = len(pl.queue)
	pl.round1 = pl.pending > 0 && pl.p.FarCut > 0 && pl.p.StopRTT > 0
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
	}
	return pl.targets[s]
}

// nearest returns the first cluster in step 6's order that has a server not
// yet handed out, or -1; it drops finished clusters from the order.
func (pl *Planner) nearest() int32 {
	for len(pl.order) > 0 {
		c := &pl.cl[pl.order[0]]
		for c.cursor < len(c.members) && pl.slots[c.members[c.cursor]].status != unprobed {
			c.cursor++ // calibration probes are not repeated
		}
		if c.cursor < len(c.members) {
			return pl.order[0]
		}
		heap.Pop(clusterOrder{pl})
	}
	return -1
}

// Observe reports the outcome of a probe handed out by Next: its RTT when
// answered, or no answer (the caller's timeout expired). The planner reads
// no clock, so a probe that is never observed keeps calibration waiting.
// Observe refuses an address not in the list (ErrUnknown) and one that is
// not outstanding (ErrNotSent); a refusal changes nothing but Stats.
func (pl *Planner) Observe(addr netip.AddrPort, rtt time.Duration, answered bool) error {
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

// endRound1 ends FarCut's first round, all of whose outcomes are in: every
// cluster whose lowest answered first-round sample is at StopRTT + FarCut or
// more (and, with FarSpread, within FarSpread of the lowest first-round
// sample of each of its members' countries) is far and estimated from those
// samples; every other cluster with samples held back has them queued.
func (pl *Planner) endRound1() {
	cut := pl.p.StopRTT + pl.p.FarCut
	countryLow := map[string]time.Duration{}
	if pl.p.FarSpread > 0 {
		for ci := range pl.cl {
			for _, s := range pl.cl[ci].samples {
				sl := pl.slots[s]
				if !sl.answered {
					continue
				}
				cc := pl.targets[s].Country
				if v, ok := countryLow[cc]; !ok || sl.rtt < v {
					countryLow[cc] = sl.rtt
				}
			}
		}
	}
	n := len(pl.cl) // estimate may append clusters made by splits
	for ci := range n {
		cl := &pl.cl[ci]
		if len(cl.later) == 0 {
			pl.estimate(int32(ci))
			continue
		}
		rtts := pl.answeredRTTs(cl.samples)
		far := len(rtts) > 0 && rtts[0] >= cut
		if far && pl.p.FarSpread > 0 {
			for _, s := range cl.members {
				if v, ok := countryLow[pl.targets[s].Country]; ok && rtts[0]-v > pl.p.FarSpread {
					far = false
					break
				}
			}
		}
		later := cl.later
		cl.later = nil
		if far {
			cl.far = true
			pl.estimate(int32(ci))
			continue
		}
		for _, s := range later {
			pl.slots[s].phase = Calibrate
		}
		cl.samples = append(cl.samples, later...)
		cl.pending += int32(len(later))
		pl.queue = append(pl.queue, later...)
		pl.pending += len(later)
	}
}

func (pl *Planner) calibrationDone() {
	if pl.pending--; pl.pending > 0 {
		return
	}
	if pl.round1 {
		pl.round1 = false
		pl.endRound1()
	}
	if pl.pending == 0 {
		pl.rank()
	}
}

// answeredRTTs returns the sorted RTTs of the answered slots among ss.
func (pl *Planner) answeredRTTs(ss []int32) []time.Duration {
	var rtts []time.Duration
	for _, s := range ss {
		if sl := pl.slots[s]; sl.status == observed && sl.answered {
			rtts = append(rtts, sl.rtt)
		}
	}
	slices.Sort(rtts)
	return rtts
}

// estimate is steps 4(d) and 4(e) for cluster c, all of whose samples are in.
func (pl *Planner) estimate(c int32) {
	rtts := pl.answeredRTTs(pl.cl[c].samples)
	if len(rtts) == 0 {
		return // no estimate: ranked last
	}
	pl.cl[c].rtt, pl.cl[c].known = medianOf(rtts), true
	if pl.cl[c].far {
		return // FarCut: one sample says nothing of the spread
	}
	// Only step 2's clusters get here: a cluster made by a split has one
	// split probe (estimateSplit) and is not split again.
	spread := percentile(rtts, pl.p.SplitHigh) - percentile(rtts, pl.p.SplitLow)
	if spread <= pl.p.SplitSpread {
		return
	}
	grouped, bounds := pl.byFine(pl.cl[c].members, nil)
	if len(bounds)-1 < 2 {
		return // one /16: nothing to split along
	}
	pl.cl[c].dissolved = true
	for b := range len(bounds) - 1 {
		members := grouped[bounds[b]:bounds[b+1]:bounds[b+1]]
		child := int32(len(pl.cl))
		parent := &pl.cl[c]
		pl.cl = append(pl.cl, cluster{
			group:  parent.group,
			prefix: pl.prefix(pl.targets[members[0]].Addr.Addr(), true),
			parent: c, members: members, heapAt: -1,
		})
		fresh := 0
		for _, s := range members {
			pl.slots[s].cluster = child
			switch pl.slots[s].status {
			case unprobed:
				fresh++
			default:
				pl.cl[child].samples = append(pl.cl[child].samples, s)
				pl.cl[child].probed++
				if sl := pl.slots[s]; sl.status == observed && sl.answered {
					pl.lower(child, sl.rtt)
				}
			}
		}
		if fresh == 0 {
			pl.fallback(child)
			continue
		}
		k := pl.rng.IntN(fresh) // step 4(e)iii: one previously unprobed server, at random
		for _, s := range members {
			if pl.slots[s].status != unprobed {
				continue
			}
			if k == 0 {
				pl.slots[s].phase = Split
				pl.cl[child].samples = append(pl.cl[child].samples, s)
				pl.cl[child].pending = 1
				pl.queue = append(pl.queue, s)
				pl.pending++
				break
			}
			k--
		}
	}
}

// lower folds an answered RTT into cluster c's lower bound.
func (pl *Planner) lower(c int32, rtt time.Duration) {
	if cl := &pl.cl[c]; !cl.lowOK || rtt < cl.low {
		cl.low, cl.lowOK = rtt, true
	}
}

// estimateSplit is step 4(e)iii's "The probed RTT becomes RTTcluster".
func (pl *Planner) estimateSplit(c, s int32) {
	if sl := pl.slots[s]; sl.answered {
		pl.cl[c].rtt, pl.cl[c].known = sl.rtt, true
		return
	}
	pl.fallback(c)
}

// fallback estimates a cluster made by a split that has no split probe RTT:
// the median of its own answered calibration samples, else its parent's RTT.
func (pl *Planner) fallback(c int32) {
	cl := &pl.cl[c]
	if rtts := pl.answeredRTTs(cl.samples); len(rtts) > 0 {
		cl.rtt, cl.known = medianOf(rtts), true
		return
	}
	parent := pl.cl[cl.parent]
	cl.rtt, cl.known = parent.rtt, parent.known
	if !cl.lowOK {
		cl.low, cl.lowOK = parent.low, parent.lowOK
	}
}

// medianOf returns the median of sorted, non-empty rtts: the middle one, or
// the mean of the two middle ones.
func medianOf(rtts []time.Duration) time.Duration {
	n := len(rtts)
	if n%2 == 1 {
		return rtts[n/2]
	}
	a, b := rtts[n/2-1], rtts[n/2]
	return a + (b-a)/2
}

// rank returns the nearest-rank position (1-based) of the p-th quantile in n
// samples: ceil(p*n), within [1, n]. The tolerance absorbs the float error of
// p*n (0.02*100 must be 2, not 3).
func rank(p float64, n int) int {
	k := int(math.Ceil(p*float64(n) - 1e-9))
	return min(max(k, 1), n)
}

// percentile is the nearest-rank p-th quantile of sorted, non-empty rtts.
func percentile(rtts []time.Duration, p float64) time.Duration {
	return rtts[rank(p, len(rtts))-1]
}

// less is step 5's order: estimated clusters first, by ascending RTT, then by
// the master position of the first server.
func (pl *Planner) less(a, b int32) bool {
	ca, cb := &pl.cl[a], &pl.cl[b]
	if ca.known != cb.known {
		return ca.known
	}
	if ca.known && ca.est != cb.est {
		return ca.est < cb.est
	}
	return ca.members[0] < cb.members[0]
}

// rank is step 5.
func (pl *Planner) rank() {
	pl.ranked = true
	pl.order = pl.order[:0]
	for c := range pl.cl {
		cl := &pl.cl[c]
		if cl.dissolved {
			continue
		}
		cl.est = cl.rtt
		if pl.p.Rerank {
			cl.med = &median{}
			for _, r := range pl.answeredRTTs(cl.samples) {
				cl.med.push(r)
			}
		}
		pl.order = append(pl.order, int32(c))
	}
	slices.SortFunc(pl.order, func(a, b int32) int {
		if pl.less(a, b) {
			return -1
		}
		return 1 // clusters are distinct, and so are their first servers
	})
	for i, c := range pl.order {
		pl.cl[c].rank = i + 1
		pl.cl[c].heapAt = i // a sorted slice is a heap
	}
}

// rerank folds a step-6 RTT into cluster c's estimate and restores the heap.
func (pl *Planner) rerank(c int32, rtt time.Duration) {
	cl := &pl.cl[c]
	cl.med.push(rtt)
	cl.est, cl.known = cl.med.value(), true
	if cl.heapAt >= 0 {
		heap.Fix(clusterOrder{pl}, cl.heapAt)
	}
}

// clusterOrder is Planner.order as a container/heap: the unfinished
// clusters by Planner.less, each keeping its position in heapAt.
type clusterOrder struct{ pl *Planner }

func (h clusterOrder) Len() int           { return len(h.pl.order) }
func (h clusterOrder) Less(i, j int) bool { return h.pl.less(h.pl.order[i], h.pl.order[j]) }
func (h clusterOrder) Swap(i, j int) {
	o := h.pl.order
	o[i], o[j] = o[j], o[i]
	h.pl.cl[o[i]].heapAt = i
	h.pl.cl[o[j]].heapAt = j
}

func (h clusterOrder) Push(x any) {
	c := x.(int32)
	h.pl.cl[c].heapAt = len(h.pl.order)
	h.pl.order = append(h.pl.order, c)
}

func (h clusterOrder) Pop() any {
	n := len(h.pl.order) - 1
	c := h.pl.order[n]
	h.pl.cl[c].heapAt = -1
	h.pl.order = h.pl.order[:n]
	return c
}

// checkStop runs the auto-stop rule after a step-6 outcome.
func (pl *Planner) checkStop() {
	if pl.p.StopRTT == 0 {
		return
	}
	w := &pl.win
	fire := false
	nearest := NoAnswer
	switch pl.p.Stop {
	case StopPaper:
		fire = w.full() && w.bottom() >= pl.p.StopRTT
	case StopRun:
		fire = w.run >= pl.p.StopRun
	case StopEstimate:
		if w.high >= pl.p.StopAgree {
			if c := pl.nearest(); c >= 0 && pl.cl[c].known {
				nearest = pl.cl[c].est
			}
			fire = nearest >= pl.p.StopRTT+pl.p.StopMargin
		}
	case StopBound:
		if w.high >= pl.p.StopAgree {
			nearest = pl.lowestBound()
			fire = nearest >= pl.p.StopRTT+pl.p.StopMargin
		}
	}
	if !fire {
		return
	}
	pl.stopped = true
	sent := pl.stats.Calibrate + pl.stats.Split + pl.stats.Reordered
	pl.info = StopInfo{
		Rule:      pl.p.Stop,
		Reordered: w.n,
		Sent:      sent,
		Bottom:    w.bottom(),
		Nearest:   nearest,
		Unprobed:  len(pl.targets) - sent,
	}
}

// blocking is BoundFirst: when c, the next cluster in step 6's order, is
// estimated at StopRTT or more, the cluster with servers not yet handed out
// whose lower bound is lowest and under StopRTT + StopMargin (the bound rule
// waits for it), if there is one and it is not c; else -1. Its cursor is
// moved past servers already handed out.
func (pl *Planner) blocking(c int32) int32 {
	if !pl.p.BoundFirst || pl.p.Stop != StopBound || !pl.cl[c].known || pl.cl[c].est < pl.p.StopRTT {
		return -1
	}
	best, low := int32(-1), pl.p.StopRTT+pl.p.StopMargin
	for i := range pl.cl {
		cl := &pl.cl[i]
		if cl.dissolved || !cl.lowOK || cl.low >= low || cl.probed >= len(cl.members) {
			continue
		}
		for cl.cursor < len(cl.members) && pl.slots[cl.members[cl.cursor]].status != unprobed {
			cl.cursor++
		}
		if cl.cursor < len(cl.members) {
			best, low = int32(i), cl.low
		}
	}
	if best == c {
		return -1
	}
	return best
}

// lowestBound is the lowest lower bound among the clusters with servers not
// yet handed out or whose outcomes are not all in (StopBound); NoAnswer when
// none of them has one.
func (pl *Planner) lowestBound() time.Duration {
	low := NoAnswer
	for i := range pl.cl {
		c := &pl.cl[i]
		if !c.dissolved && c.lowOK && (c.probed < len(c.members) || c.inflight > 0) && c.low < low {
			low = c.low
		}
	}
	return low
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
