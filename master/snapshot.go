package master

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scout-discovery/scout/game"
)

// # The answer snapshot
//
// Queries are answered from a snapshot of the listed servers: immutable
// groups of published addresses, one per family, game and protocol, each
// sorted and cut into chunks of at most DefaultChunk entries
// (snapgroup.go), with the encoded replies cached per query shape
// (answer.go).
//
// A change of the listing is not copied into a new snapshot wholesale.
// The registry records each change as it is made (touchLocked: the entry,
// and its removal from the snapshot as the snapshot holds it), and the
// next build (rebuildLocked) puts the changed entries still listed back,
// takes out those that fell silent (the expiry queue, expiryq.go) and
// makes the new snapshot from the last one: a group no change falls in is
// shared as it is, with its cached answers; in a changed group only the
// chunks the changes fall in are merged anew, and its cached answers are
// encoded again from the packets of its unchanged chunks and of the new
// ones. A build costs what changed and the chunks it falls in, not the
// listing: at 1,000,000 servers, one new server of a game with none is
// one group of one entry, and one more server of a game with 700,000 one
// chunk of up to DefaultChunk and its packets (BENCHMARKS.md, "A million
// servers").
// The registry's lock is held while the records are taken and the entries
// read (in batches of buildBatch), not while the groups are built.
//
// What a snapshot keeps of a full rebuild's invariants:
//
//   - Every entry in it is listed until its minExpire at least: a server
//     silent for Timeout leaves the answers at that instant, before
//     Expire runs, and one whose listing a verified reply extended stays.
//     For a listing larger than Config.InlineSnapshot, within a Refresh.
//   - anon (the anonymous game of a protocol, see resolve) is counted
//     over the snapshot's entries, kept from build to build.
//   - byGame lists a game's groups by protocol, for AnyProtocol.
//   - The cached answers of a snapshot stay within MaxCachedAnswers and
//     MaxCachedAnswerBytes; those carried over count again.
//
// TestSnapshot_IncrementalMatchesFullRebuild checks the snapshot against
// one built from scratch over random sequences of changes.

// snapshot is an immutable view of the listed servers, grouped by game and
// protocol. Every entry in it is listed until minExpire at least, unless
// a change is recorded since (Registry.dirty): the snapshot is built
// again when a query's now reaches it, so a server silent for Timeout
// leaves the answers at once, before Expire runs. minExpire is the one
// field a build may move on in place, when nothing else changed.
//
// answers caches the encoded replies of this listing, one per query shape
// (see answer.go); those of unchanged groups are carried to the next.
type snapshot struct {
	groups    map[groupKey]*group
	byGame    map[gameKey][]*group // for AnyProtocol, each by protocol
	minExpire atomic.Int64         // unix ns; math.MaxInt64 if nothing expires
	// anon is, per family and protocol, the anonymous game an anonymous
	// query for a protocol no game lists is answered with (see
	// anonymousGames), from anonCounts.
	anon       map[protoKey]string
	anonCounts map[anonCount]int
	listed     int // servers in groups

	answers     sync.Map     // answerKey -> *answer
	nAnswers    atomic.Int32 // entries in answers, at most MaxCachedAnswers
	answerBytes atomic.Int64 // their packets' bytes, at most MaxCachedAnswerBytes
	// prev holds the last snapshots' answers whose groups changed, not
	// encoded for this one yet: their unchanged chunks' packets are taken
	// from them (answer.go). At most MaxCachedAnswers, MaxCachedAnswerBytes.
	prev map[answerKey]*answer
}

func newSnapshot() *snapshot {
	s := &snapshot{groups: map[groupKey]*group{}, byGame: map[gameKey][]*group{}}
	s.minExpire.Store(math.MaxInt64)
	return s
}

type gameKey struct {
	f    game.Family
	game string
}

type protoKey struct {
	f     game.Family
	proto int
}

// snapOp is an entry added to or removed from a snapshot group.
type snapOp struct {
	k    groupKey
	e    snapEntry
	anon *game.Game // the anonymous game it counts for (anonCount); nil if none
	add  bool
}

// opOf returns e's entry in the snapshot as e holds it now.
func (r *Registry) opOf(e *entry, add bool) snapOp {
	pub, _ := r.conf().AddrMap.Map(e.Addr)
	var st uint8
	if e.Empty() {
		st |= stateEmpty
	}
	if e.Full() {
		st |= stateFull
	}
	if e.flags&flagClone != 0 {
		st |= stateClone
	}
	op := snapOp{k: groupKey{e.Family, e.Game, int(e.Protocol)}, add: add,
		e: snapEntry{ip: pub.Addr().As16(), port: pub.Port(), gametype: e.Gametype, state: st, v6: pub.Addr().Is6()}}
	if e.hbGame != nil && e.hbGame.Name == e.Game {
		op.anon = e.hbGame
	}
	return op
}

// touchLocked records, before any field of e the snapshot holds changes
// (listing, family, game, protocol, gametype, clients or slots, the game
// its heartbeat named) or e is removed, that the next build must look at
// e; and, if e is in the snapshot, its removal as the snapshot holds it.
func (r *Registry) touchLocked(e *entry) {
	if e.flags&flagTouched != 0 {
		return
	}
	e.flags |= flagTouched
	r.touched = append(r.touched, e)
	if e.flags&flagInSnap != 0 {
		e.flags &^= flagInSnap
		r.inSnap--
		r.leaving = append(r.leaving, r.opOf(e, false))
	}
	r.dirty.Store(true)
}

// noteChangeLocked is called before a verification of e (here or by
// another instance) that sets its last verification to v, listing set if
// it changes what the snapshot holds of e. A verification that changes
// nothing else is not recorded when e is in the snapshot and its silence
// only moves later: the expiry queue finds that out when e's time comes.
func (r *Registry) noteChangeLocked(e *entry, listing bool, v stamp) {
	early := v < e.LastVerified
	if listing || early || e.flags&flagInSnap == 0 {
		r.touchLocked(e)
	}
	if early {
		e.flags |= flagEarly
	}
}

// DefaultInlineSnapshot is Config.InlineSnapshot's default: a listing
// of up to 65,536 servers is brought up to date by the query that finds
// its snapshot stale, whatever changed; a larger one by Refresh, off the
// path of queries, except for a few changes to small groups (see
// current).
const DefaultInlineSnapshot = 65536

// MaxInlineChanges bounds the changes a query applies itself to the
// snapshot of a listing larger than Config.InlineSnapshot: at most this
// many servers changed and as many fallen silent since the last build,
// and only those of groups of at most MaxInlineGroup servers (a copy of
// at most MaxInlineGroup entries each); the rest wait for Refresh. So a
// new server of a small game is in the answers at the next query, and a
// query never does a large listing's work on the socket loop.
const (
	MaxInlineChanges = 64
	MaxInlineGroup   = 256
)

// maxDeferred bounds the changes of large groups queries' builds leave
// for Refresh: beyond it a query's build gives up, and the changes wait
// in the registry's records, one per server at most, so that a shell
// that calls Refresh late (or never) does not make them grow with every
// change.
const maxDeferred = 64 * MaxInlineChanges

// buildBatch is how many entries a build reads per hold of the
// registry's lock (a restart's million are read in steps, between which
// the socket loop registers).
const buildBatch = 4096

// yieldLocked lets go of the registry's lock and takes it again before
// a build reads its i-th entry, every buildBatch entries.
func (r *Registry) yieldLocked(i int) {
	if i > 0 && i%buildBatch == 0 {
		r.mu.Unlock()
		r.mu.Lock()
	}
}

// current returns the snapshot valid at now, bringing it up to date if
// the listing changed or an entry's listing ran out. For a listing larger
// than Config.InlineSnapshot it applies only a few changes of small
// groups itself (MaxInlineChanges, MaxInlineGroup), and none while a
// build runs: it returns the last snapshot, which Refresh brings up to
// date.
func (r *Registry) current(now time.Time) *snapshot {
	nowNS := now.UnixNano()
	s := r.snap.Load()
	if !r.dirty.Load() && nowNS < s.minExpire.Load() {
		return s
	}
	if r.conf().InlineSnapshot >= 0 && s.listed > r.conf().InlineSnapshot {
		if r.build.TryLock() {
			r.rebuildLocked(nowNS, true, false)
			r.build.Unlock()
		}
		return r.snap.Load()
	}
	r.build.Lock()
	r.rebuildLocked(nowNS, false, false)
	r.build.Unlock()
	return r.snap.Load()
}

// Refresh brings the answer snapshot up to date at now if the listing
// changed or an entry's listing ran out, and reports whether it did.
// The shell calls it off the socket loop (masterd does every
// masterd.SnapshotRefreshInterval), so that a listing larger than
// Config.InlineSnapshot reaches the answers within that interval plus
// one build; the answers cached for the last snapshot are encoded again
// here for the groups that changed (their unchanged chunks' packets
// reused), so that the first query of each shape does not encode on the
// socket loop.
//
// A listing of at most Config.InlineSnapshot servers is left to the
// queries: Refresh does nothing.
func (r *Registry) Refresh(now time.Time) bool {
	nowNS := now.UnixNano()
	s := r.snap.Load()
	if !r.dirty.Load() && !r.waiting.Load() && nowNS < s.minExpire.Load() {
		return false
	}
	if r.conf().InlineSnapshot < 0 {
		return false
	}
	r.mu.Lock()
	n := len(r.servers)
	r.mu.Unlock()
	if n <= r.conf().InlineSnapshot && s.listed <= r.conf().InlineSnapshot {
		return false
	}
	r.build.Lock()
	defer r.build.Unlock()
	return r.rebuildLocked(nowNS, false, true)
}

// rebuildLocked builds the snapshot at nowNS from the last one and the
// changes recorded since, and reports whether it changed anything. r.build
// must be held. inline is a query's build: it gives up if more than
// MaxInlineChanges servers changed, takes out at most as many fallen
// silent, and leaves the changes of groups larger than MaxInlineGroup to
// the next build that is not (deferred). prewarm encodes again the
// cached answers of the groups that changed.
func (r *Registry) rebuildLocked(nowNS int64, inline, prewarm bool) bool {
	base := r.snap.Load()
	if !r.dirty.Load() && (inline || !r.waiting.Load()) && nowNS < base.minExpire.Load() {
		return false
	}
	r.mu.Lock()
	if inline && (len(r.touched) > MaxInlineChanges || len(r.deferred) > maxDeferred) {
		r.mu.Unlock()
		return false
	}
	touched, leaving := r.touched, r.leaving
	r.touched, r.leaving = nil, nil
	r.dirty.Store(false)
	d := newDelta()
	if inline {
		ops := leaving
		for _, e := range touched {
			if op, ok := r.addBackLocked(nowNS, e); ok {
				ops = append(ops, op)
			}
		}
		r.expireSnapLocked(nowNS, MaxInlineChanges, func(op snapOp) { ops = append(ops, op) })
		minExp := r.expq.min()
		// The changes of large groups wait for a build that is not a
		// query's; so do, until it, every later change of those groups.
		var later []snapOp
		for _, op := range ops {
			if g := base.groups[op.k]; g != nil && g.n > r.inlineGroup {
				later = append(later, op)
			} else {
				d.put(op)
			}
		}
		if len(later) > 0 {
			r.deferred = append(r.deferred, later...)
			r.waiting.Store(true)
		}
		r.mu.Unlock()
		return r.publish(base, d, minExp, prewarm)
	}
	for _, op := range leaving {
		d.put(op)
	}
	for _, op := range r.deferred {
		d.put(op)
	}
	r.deferred = nil
	r.waiting.Store(false)
	if len(touched) > buildBatch {
		r.presizeLocked(nowNS, touched, d)
	}
	for i, e := range touched {
		r.yieldLocked(i)
		if op, ok := r.addBackLocked(nowNS, e); ok {
			d.put(op)
		}
	}
	r.expireSnapLocked(nowNS, 0, d.put)
	r.compactLocked()
	minExp := r.expq.min()
	r.mu.Unlock()
	return r.publish(base, d, minExp, prewarm)
}

// publish stores the snapshot base with d applied, or, if d is empty,
// moves base's minExpire on; it reports whether it stored one.
func (r *Registry) publish(base *snapshot, d *delta, minExp int64, prewarm bool) bool {
	if len(d.groups) == 0 {
		base.minExpire.Store(minExp)
		return false
	}
	s := r.nextSnapshot(base, d, minExp)
	if prewarm {
		r.prewarm(s)
	}
	r.snap.Store(s)
	return true
}

// presizeLocked gives each group of d room for the additions of touched
// (counted in a first pass), and the expiry queue for their nodes: a
// restart's million are then copied once, not grown in steps.
func (r *Registry) presizeLocked(nowNS int64, touched []*entry, d *delta) {
	counts := map[groupKey]int{}
	for i, e := range touched {
		r.yieldLocked(i)
		if _, ok := r.snapExpiry(nowNS, e); ok {
			counts[groupKey{e.Family, e.Game, int(e.Protocol)}]++
		}
	}
	for k, n := range counts {
		gd := d.group(k)
		gd.add = slices.Grow(gd.add, n)
	}
	r.expq = slices.Grow(r.expq, len(touched))
}

// snapExpiry returns when e falls silent (unix ns), and whether it
// belongs in the snapshot at nowNS: not removed, listed, and not silent
// for Timeout (Expire removes such a one, or a verification brings it
// back).
func (r *Registry) snapExpiry(nowNS int64, e *entry) (int64, bool) {
	exp := int64(e.expiry(r.conf().Timeout))
	return exp, e.flags&flagRemoved == 0 && e.Listed && nowNS < exp
}

// addBackLocked puts a changed entry back in the snapshot (returns its
// addition) if it is still listed and not silent at nowNS.
func (r *Registry) addBackLocked(nowNS int64, e *entry) (snapOp, bool) {
	e.flags &^= flagTouched
	exp, ok := r.snapExpiry(nowNS, e)
	if !ok {
		return snapOp{}, false
	}
	if e.flags&flagQueued == 0 || e.flags&flagEarly != 0 {
		r.expq.push(exp, e)
		e.flags = e.flags&^flagEarly | flagQueued
	}
	e.flags |= flagInSnap
	r.inSnap++
	return r.opOf(e, true), true
}

// expireSnapLocked takes out of the snapshot (passes their removals to
// put) the entries silent for Timeout at nowNS, popping the expiry
// queue; an entry verified since its node was pushed is pushed again at
// its new time. limit > 0 bounds the nodes popped.
func (r *Registry) expireSnapLocked(nowNS int64, limit int, put func(snapOp)) {
	for n := 0; r.expq.len() > 0 && r.expq.min() <= nowNS; n++ {
		if limit > 0 && n >= limit {
			return
		}
		r.yieldLocked(n)
		e := r.expq.pop().e
		if e.flags&flagRemoved != 0 {
			continue
		}
		e.flags &^= flagQueued
		if e.flags&flagInSnap == 0 {
			continue // out already (its removal recorded when it was touched)
		}
		if exp := int64(e.expiry(r.conf().Timeout)); exp > nowNS {
			r.expq.push(exp, e)
			e.flags |= flagQueued
			continue
		}
		put(r.opOf(e, false))
		e.flags &^= flagInSnap
		r.inSnap--
	}
}

// delta is what a build applies to the last snapshot: per group, the
// entries removed and added; the anonymous servers counted (anonCount),
// and the servers, added less removed.
type delta struct {
	groups map[groupKey]*groupDelta
	anon   map[anonCount]int
	n      int
}

type groupDelta struct{ rem, add []snapEntry }

func newDelta() *delta { return &delta{groups: map[groupKey]*groupDelta{}} }

func (d *delta) group(k groupKey) *groupDelta {
	gd := d.groups[k]
	if gd == nil {
		gd = &groupDelta{}
		d.groups[k] = gd
	}
	return gd
}

func (d *delta) put(op snapOp) {
	gd := d.group(op.k)
	c := -1
	if op.add {
		gd.add, c = append(gd.add, op.e), 1
	} else {
		gd.rem = append(gd.rem, op.e)
	}
	d.n += c
	if op.anon != nil {
		if d.anon == nil {
			d.anon = map[anonCount]int{}
		}
		d.anon[anonCount{protoKey{op.k.f, op.k.proto}, op.anon}] += c
	}
}

// cancelEqual drops from rem and add (sorted) the entries both hold: an
// entry taken out and put back as it was (it went empty and back, or
// only its silence moved) changes nothing.
func cancelEqual(rem, add []snapEntry) ([]snapEntry, []snapEntry) {
	i, j, ri, ai := 0, 0, 0, 0
	for i < len(rem) && j < len(add) {
		switch c := compareSnapEntries(rem[i], add[j]); {
		case c == 0:
			i, j = i+1, j+1
		case c < 0:
			rem[ri] = rem[i]
			ri, i = ri+1, i+1
		default:
			add[ai] = add[j]
			ai, j = ai+1, j+1
		}
	}
	ri += copy(rem[ri:], rem[i:])
	ai += copy(add[ai:], add[j:])
	return rem[:ri], add[:ai]
}

// compactSlack is how many nodes of the expiry queue may be stale (their
// entry removed or out of the snapshot, or a second node of an entry
// whose silence moved earlier) beyond as many as the entries in it,
// before compactLocked drops them.
const compactSlack = 1024

// compactLocked drops the expiry queue's stale nodes when they are as
// many as the live ones (plus compactSlack), keeping one node per entry
// of the snapshot at its exact time: one pass over the queue, after as
// many removals or more.
func (r *Registry) compactLocked() {
	if r.expq.len() <= 2*r.inSnap+compactSlack {
		return
	}
	kept := r.expq[:0]
	for _, nd := range r.expq {
		e := nd.e
		switch {
		case e.flags&flagRemoved != 0:
		case e.flags&flagInSnap == 0:
			e.flags &^= flagQueued
		case e.flags&flagKept == 0:
			e.flags |= flagKept
			kept = append(kept, expiryNode{at: int64(e.expiry(r.conf().Timeout)), e: e})
		}
	}
	clear(r.expq[len(kept):])
	for _, nd := range kept {
		nd.e.flags &^= flagKept
	}
	r.expq = kept
	r.expq.init()
}

// nextSnapshot returns base with d applied: the groups it changes built
// again (applyGroup), the others shared; anon counted again; the answers
// of unchanged groups carried over, the others kept in prev.
func (r *Registry) nextSnapshot(base *snapshot, d *delta, minExp int64) *snapshot {
	s := &snapshot{groups: maps.Clone(base.groups), byGame: maps.Clone(base.byGame),
		anon: base.anon, anonCounts: base.anonCounts, listed: base.listed + d.n}
	s.minExpire.Store(minExp)
	if len(d.anon) > 0 {
		s.anonCounts = maps.Clone(base.anonCounts)
		if s.anonCounts == nil {
			s.anonCounts = map[anonCount]int{}
		}
		for k, c := range d.anon {
			if n := s.anonCounts[k] + c; n > 0 {
				s.anonCounts[k] = n
			} else {
				delete(s.anonCounts, k)
			}
		}
		s.anon = anonymousGames(s.anonCounts, r.conf().Catalogue)
	}

	changed := map[groupKey]bool{}
	games := map[gameKey]bool{}
	for k, gd := range d.groups {
		slices.SortFunc(gd.rem, compareSnapEntries)
		slices.SortFunc(gd.add, compareSnapEntries)
		rem, add := cancelEqual(gd.rem, gd.add)
		if len(rem) == 0 && len(add) == 0 {
			continue
		}
		if g := r.applyGroup(base.groups[k], k, rem, add); g != nil {
			s.groups[k] = g
		} else {
			delete(s.groups, k)
		}
		changed[k] = true
		games[gameKey{k.f, k.game}] = true
	}
	for gk := range games {
		var gs []*group
		for _, g := range base.byGame[gk] {
			if !changed[g.key] {
				gs = append(gs, g)
			}
		}
		for k := range changed {
			if k.f == gk.f && k.game == gk.game && s.groups[k] != nil {
				gs = append(gs, s.groups[k])
			}
		}
		slices.SortFunc(gs, func(a, b *group) int { return cmp.Compare(a.key.proto, b.key.proto) })
		if len(gs) > 0 {
			s.byGame[gk] = gs
		} else {
			delete(s.byGame, gk)
		}
	}
	s.carryAnswers(base, changed, games)
	return s
}
