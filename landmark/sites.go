package landmark

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/scout-discovery/scout/adaptive"
)

// Sites: the safety fallback of the bound (EVALUATION.md, "Safe by
// default"). On the real mesh the triangle inequality breaks by up to
// 200 ms at a few server cities behind detours (the paths into China, a
// Russian city reached through Frankfurt from Tokyo), so no margin both
// keeps the bound cheap and makes it safe. Instead of leaving out the
// servers the bound rules out, the planner measures them cheaply: servers
// of one country and AS whose landmark vectors agree within Spread at
// every landmark are one site (one network in one place, as the
// landmarks see it), and a site is probed through representatives, its
// server of smallest estimate first (the one the client remembers
// nearest, if it remembers any):
//
//   - a representative under Threshold + Margin brings the site back: its
//     other servers are probed as candidates, in estimate order;
//   - the first at or over Threshold + 2*Margin, or a second at or over
//     Threshold + Margin, rules the site out;
//   - the first in between calls a second, from another /16 (or else
//     /24) if the site has one;
//   - an unanswered representative (a server gone) calls the next;
//   - a site ruled out by representatives of groups the client remembers
//     (whose answers may be the memory's) calls one of a group it has not
//     seen before (PlanInput.Known), if it has one: a server new since the
//     memory was taken is measured, not ruled out with its site.
//
// The cost is about one probe per site, a few hundred for a list of
// thousands; the bound and its margin then only order the probes.

// SiteCheck are the constants of the site check.
type SiteCheck struct {
	// Margin (ms, >= 0): how far over the threshold a representative may
	// answer and still bring its site back: the spread of RTTs within one
	// network in one place (its /16s, its hosts) as the client sees it.
	Margin float64
	// Spread (ms, >= 0): servers of one country and AS are one site when
	// their vectors, as measured, differ by at most Spread at every
	// landmark both measured.
	Spread float64
	// All sends every bounded server through its site, not only the ones
	// the stop rule leaves out: the bound then only orders.
	All bool
}

// siteIndex is a Planner's state for SiteCheck.
type siteIndex struct {
	p       SiteCheck
	pending []siteMember          // added, not yet formed into sites
	of      map[int32]*site       // outstanding representative -> its site
	sites   []*site               // every site formed
	heads   map[string][]int      // country/AS -> indexes into sites
	stats   SiteStats             // what the check cost and found
	mem     map[int32]float64     // slots whose group the client remembers: its RTT (ms)
	known   map[int32]bool        // slots whose group the client has seen before
	group   map[int32]groupKeyStr // slot -> its /24 (or /64), for a second representative
	net16   map[int32]groupKeyStr // slot -> its /16 (or /48)
	siteOf  map[int32]*site       // slot -> its site
}

type groupKeyStr string

type siteMember struct {
	s     int32
	key   string
	v     Vector
	mem   float64 // remembered RTT of its group (ms), NaN for none
	known bool    // its group was seen before (PlanInput.Known)
	group groupKeyStr
	net16 groupKeyStr
}

type site struct {
	vec     Vector  // its first member's vector, as measured
	members []int32 // not yet handed out, ascending estimate
	reps    int     // answered representatives
	least   float64 // least answered representative RTT, ms
	lastRep int32   // the last representative's slot, -1 before the first
	done    bool
	back    bool // brought back
	// fresh: a representative of a group the client does not remember
	// answered. Answers of remembered groups may be the memory's, not
	// this run's: they rule out the remembered part of a site only.
	fresh bool
}

// SiteStats counts the site check's work.
type SiteStats struct {
	Sites int `json:"sites"`           // sites formed
	Reps  int `json:"representatives"` // representatives probed
	Back  int `json:"back"`            // sites brought back
}

func newSiteIndex(p SiteCheck) *siteIndex {
	return &siteIndex{p: p, of: map[int32]*site{}, heads: map[string][]int{}, mem: map[int32]float64{}, known: map[int32]bool{}, group: map[int32]groupKeyStr{}, net16: map[int32]groupKeyStr{}, siteOf: map[int32]*site{}}
}

// add records slot s (target t, vector v as measured; mem its group's
// remembered RTT, known whether its group was seen before) for the check.
func (x *siteIndex) add(s int32, t adaptive.Target, v Vector, mem float64, known bool) {
	key := t.Country + "/" + strconv.FormatUint(uint64(t.ASN), 10)
	a := t.Addr.Addr().Unmap()
	bits := 16
	if a.Is6() {
		bits = 48
	}
	p16, _ := a.Prefix(bits)
	x.pending = append(x.pending, siteMember{s: s, key: key, v: v, mem: mem, known: known, group: groupKeyStr(adaptive.GroupKey(a).String()), net16: groupKeyStr(p16.String())})
}

// form makes the sites of the servers added and returns each site's first
// representative.
func (x *siteIndex) form(slots []planSlot) []int32 {
	// Estimate order, so that a site's first member is its nearest.
	slices.SortStableFunc(x.pending, func(a, b siteMember) int { return cmp.Compare(slots[a.s].est, slots[b.s].est) })
	for _, m := range x.pending {
		if !math.IsNaN(m.mem) {
			x.mem[m.s] = m.mem
		}
		if m.known {
			x.known[m.s] = true
		}
		x.group[m.s] = m.group
		x.net16[m.s] = m.net16
		var st *site
		for _, i := range x.heads[m.key] {
			if x.near(x.sites[i].vec, m.v) {
				st = x.sites[i]
				break
			}
		}
		if st == nil {
			st = &site{vec: m.v, least: math.Inf(1), lastRep: -1}
			x.heads[m.key] = append(x.heads[m.key], len(x.sites))
			x.sites = append(x.sites, st)
		}
		st.members = append(st.members, m.s)
		x.siteOf[m.s] = st
	}
	x.pending = nil
	x.stats.Sites = len(x.sites)
	var reps []int32
	for _, st := range x.sites {
		if r, ok := x.nextRep(st); ok {
			reps = append(reps, r)
		}
	}
	return reps
}

// near reports whether two vectors agree within Spread at every landmark
// both measured (and share at least one).
func (x *siteIndex) near(a, b Vector) bool {
	n := 0
	for k := range min(len(a), len(b)) {
		if math.IsNaN(a[k]) || math.IsNaN(b[k]) {
			continue
		}
		if math.Abs(a[k]-b[k]) > x.p.Spread {
			return false
		}
		n++
	}
	return n > 0
}

// nextRep takes the site's next representative out of its members: the
// remembered one of least RTT first, then one of another /16 than the
// last representative's, then one of another /24, then the nearest.
func (x *siteIndex) nextRep(st *site) (int32, bool) {
	if len(st.members) == 0 {
		return 0, false
	}
	pick := -1
	for i, s := range st.members {
		if m, ok := x.mem[s]; ok && (pick < 0 || m < x.mem[st.members[pick]]) {
			pick = i
		}
	}
	if pick < 0 && st.lastRep >= 0 {
		for _, other := range []map[int32]groupKeyStr{x.net16, x.group} {
			if pick = slices.IndexFunc(st.members, func(s int32) bool { return other[s] != other[st.lastRep] }); pick >= 0 {
				break
			}
		}
	}
	if pick < 0 {
		pick = 0
	}
	return x.take(st, pick), true
}

// take makes the site's member i its next representative.
func (x *siteIndex) take(st *site, i int) int32 {
	s := st.members[i]
	st.members = slices.Delete(st.members, i, i+1)
	st.lastRep = s
	x.of[s] = st
	x.stats.Reps++
	return s
}

// observed takes slot s's outcome; when s was a representative it
// returns the slots to probe now: the next representative, or the site's
// other servers when it comes back.
func (x *siteIndex) observed(s int32, rtt time.Duration, answered bool, threshold float64) []int32 {
	st := x.of[s]
	if st == nil {
		return nil
	}
	delete(x.of, s)
	if answered {
		st.reps++
		st.least = min(st.least, float64(rtt)/float64(time.Millisecond))
		if _, remembered := x.mem[s]; !remembered {
			st.fresh = true
		}
	}
	switch {
	case st.reps > 0 && st.least < threshold+x.p.Margin:
		st.done, st.back = true, true
		x.stats.Back++
		more := st.members
		st.members = nil
		return more
	case st.reps == 0 || st.reps == 1 && st.least < threshold+2*x.p.Margin:
		if r, ok := x.nextRep(st); ok {
			return []int32{r}
		}
	}
	if !st.fresh {
		// Ruled out on remembered groups alone: a server of a group the
		// client has not seen (new since the memory was taken) is
		// measured before the site is left.
		if i := slices.IndexFunc(st.members, func(m int32) bool { return !x.known[m] }); i >= 0 {
			return []int32{x.take(st, i)}
		}
	}
	st.done = true
	return nil
}

// waiting reports whether a representative is out whose outcome may add
// probes.
func (x *siteIndex) waiting() bool { return x != nil && len(x.of) > 0 }

// SiteStats returns the site check's counts (zero without PlanParams.Sites).
func (pl *Planner) SiteStats() SiteStats {
	if pl.sites == nil {
		return SiteStats{}
	}
	return pl.sites.stats
}

// Fate says what became of a target of the plan.
type Fate struct {
	Kind FateKind
	// Lower is the target's lower bound (ms) as the stop rule compares it
	// (with the client's height), for FateLeftOut.
	Lower float64
	// Site is the least RTT (ms) of its site's representatives, for
	// FateSite; +Inf when none answered.
	Site float64
}

// FateKind is what became of a target.
type FateKind uint8

const (
	FateUnknown  FateKind = iota // not in the plan (a duplicate, or out of range)
	FateProbed                   // handed out
	FateLeftOut                  // left out by the bound (no site check)
	FateSite                     // its site was ruled out by its representatives
	FateSibling                  // skipped: its siblings predicted it unplayable
	FateUnprobed                 // never handed out: the plan stopped first (or the adaptive planner of the unbounded servers did)
)

// Fate returns what became of target i (its position in PlanInput.Targets).
func (pl *Planner) Fate(i int) Fate {
	if i < 0 || i >= len(pl.slotOf) || pl.slotOf[i] < 0 {
		return Fate{}
	}
	s := pl.slotOf[i]
	sl := pl.slots[s]
	switch sl.status {
	case slotOutstanding, slotObserved:
		return Fate{Kind: FateProbed}
	case slotSkipped:
		return Fate{Kind: FateSibling}
	}
	if pl.sites != nil {
		if st := pl.sites.siteOf[s]; st != nil && st.done && !st.back {
			return Fate{Kind: FateSite, Site: st.least}
		}
	}
	if !sl.unknown && !sl.sub && !slices.Contains(pl.order, s) {
		return Fate{Kind: FateLeftOut, Lower: sl.lo}
	}
	return Fate{Kind: FateUnprobed}
}

// DefaultSites returns the site check's constants: every bounded server
// through its site, a 20 ms margin, sites split at 30 ms. The margin and
// All were fitted by scout-lab evaluate on half the WonderProxy cities
// and reported on the other half (EVALUATION.md, "Safe by default").
func DefaultSites() SiteCheck {
	return SiteCheck{Margin: 20, Spread: 30, All: true}
}
