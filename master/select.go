package master

import (
	"bytes"
	"cmp"
	"math"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scout-discovery/scout/game"
)

// Query is a client's request for servers: getservers, getserversExt, or
// the Doom 3 family's getServers, as the handler parsed it.
type Query struct {
	Family game.Family // FamilyQ3 or FamilyDoom3
	// Game is the game name the client sent ("getservers Xonotic 3",
	// "getserversExt Quake3Arena 68"); empty for an anonymous client, whose
	// game is found from Protocol.
	Game     string
	Protocol int
	// AnyProtocol matches every protocol of the game (a Doom 3 family
	// getServers that sent version 0).
	AnyProtocol bool
	Empty, Full bool   // include empty / full servers
	Gametype    string // "gametype=X" or its shortcuts; only if HasGametype
	HasGametype bool
	// IPv4 and IPv6 select address families (getserversExt "ipv4",
	// "ipv6"); both false means both. A plain getservers sets IPv4 only.
	IPv4, IPv6 bool
}

// GametypeShortcut maps the Q3A getservers keywords dpmaster accepts to
// gametype values: ffa 0, tourney 1, team 3, ctf 4.
func GametypeShortcut(word string) (string, bool) {
	switch word {
	case "ffa":
		return "0", true
	case "tourney":
		return "1", true
	case "team":
		return "3", true
	case "ctf":
		return "4", true
	}
	return "", false
}

const (
	stateEmpty uint8 = 1 << iota
	stateFull
)

type snapEntry struct {
	ip       [16]byte // the address as published (after -m mapping), As16
	gametype string
	port     uint16
	state    uint8
	v6       bool
}

// addrPort returns the published address. The 16 bytes and the port are
// 40 bytes an entry where a netip.AddrPort (with its zone handle) made
// 56: one per listed server in every snapshot.
func (e *snapEntry) addrPort() netip.AddrPort {
	a := netip.AddrFrom16(e.ip)
	if !e.v6 {
		a = a.Unmap()
	}
	return netip.AddrPortFrom(a, e.port)
}

type groupKey struct {
	f     game.Family
	game  string
	proto int
}

type group struct {
	entries []snapEntry // sorted by published address
	stride  int         // coprime with len(entries), about 0.618 * len
}

// snapshot is an immutable view of the listed servers, grouped by game and
// protocol, rebuilt after the listing changes. Every entry in it is listed
// until minExpire at least: the snapshot is rebuilt when a query's now
// reaches it, so a server silent for Timeout leaves the answers at once,
// before Expire runs, and one whose listing a verified reply extended is
// not left out on the strength of an older expiry time.
//
// answers caches the encoded replies of this listing, one per query shape
// (see answer.go); they die with the snapshot.
type snapshot struct {
	groups    map[groupKey]*group
	byGame    map[gameKey][]*group // for AnyProtocol
	minExpire int64                // unix ns; math.MaxInt64 if nothing expires
	// anon is, per family and protocol, the anonymous game an anonymous
	// query for a protocol no game lists is answered with (see
	// anonymousGame).
	anon map[protoKey]string
	// anonCounts is anon's input between collectLocked and finish.
	anonCounts map[anonCount]int
	listed     int // servers in groups

	answers     sync.Map     // answerKey -> *answer
	nAnswers    atomic.Int32 // entries in answers, at most MaxCachedAnswers
	answerBytes atomic.Int64 // their packets' bytes, at most MaxCachedAnswerBytes
}

type gameKey struct {
	f    game.Family
	game string
}

type protoKey struct {
	f     game.Family
	proto int
}

// DefaultInlineSnapshot is Config.InlineSnapshot's default: a listing
// of up to 65,536 servers is rebuilt by the query that finds it stale
// (tens of milliseconds at most); a larger one by Refresh, off the path
// of queries (about a second of CPU at 1,000,000 servers, issue 11).
const DefaultInlineSnapshot = 65536

// current returns the snapshot valid at now, rebuilding it if the listing
// changed or an entry's listing ran out, unless the last snapshot lists
// more than Config.InlineSnapshot servers: then it returns that one, and
// Refresh rebuilds it.
func (r *Registry) current(now time.Time) *snapshot {
	nowNS := now.UnixNano()
	s := r.snap.Load()
	if !r.dirty.Load() && nowNS < s.minExpire {
		return s
	}
	if r.cfg.InlineSnapshot >= 0 && s.listed > r.cfg.InlineSnapshot {
		return s
	}
	r.rebuild(nowNS)
	return r.snap.Load()
}

// Refresh rebuilds the answer snapshot if the listing changed or an
// entry's listing ran out at now, and reports whether it did. The shell
// calls it off the socket loop (masterd does every
// masterd.SnapshotRefreshInterval), so that a listing larger than
// Config.InlineSnapshot reaches the answers within that interval plus
// one rebuild. The registry's lock is held only while the listed
// entries are copied out, not while they are sorted.
//
// A listing of at most Config.InlineSnapshot servers is left to the
// queries: Refresh does nothing.
func (r *Registry) Refresh(now time.Time) bool {
	nowNS := now.UnixNano()
	s := r.snap.Load()
	if !r.dirty.Load() && nowNS < s.minExpire {
		return false
	}
	if r.cfg.InlineSnapshot < 0 {
		return false
	}
	r.mu.Lock()
	n := len(r.servers)
	r.mu.Unlock()
	if n <= r.cfg.InlineSnapshot && s.listed <= r.cfg.InlineSnapshot {
		return false
	}
	return r.rebuild(nowNS)
}

// rebuild builds and stores the snapshot at nowNS unless another build,
// done while this one waited for its turn, left it fresh. Builds are one
// at a time, so snapshots are stored in the order they were taken.
func (r *Registry) rebuild(nowNS int64) bool {
	r.build.Lock()
	defer r.build.Unlock()
	if s := r.snap.Load(); !r.dirty.Load() && nowNS < s.minExpire {
		return false
	}
	r.mu.Lock()
	r.dirty.Store(false)
	s := r.collectLocked(nowNS)
	r.mu.Unlock()
	s.finish(r.cfg.Catalogue)
	if r.cfg.InlineSnapshot >= 0 && s.listed > r.cfg.InlineSnapshot {
		r.prewarm(s, r.snap.Load())
	}
	r.snap.Store(s)
	return true
}

// prewarm encodes into s the answers cached in old, so that the first
// query of each shape after a rebuild off the socket loop does not encode
// a large listing on it.
func (r *Registry) prewarm(s, old *snapshot) {
	var list []netip.AddrPort
	old.answers.Range(func(k, v any) bool {
		key, prev := k.(answerKey), v.(*answer)
		list = s.appendMatching(key.f, r.rotation.Add(1), list[:0])
		a, err := encodeAnswer(list, key.form, prev.every)
		if err == nil {
			s.cache(key, a)
		}
		return true
	})
}

// collectLocked copies the servers listed at nowNS into a new snapshot's
// groups, unsorted (see finish).
func (r *Registry) collectLocked(nowNS int64) *snapshot {
	s := &snapshot{groups: make(map[groupKey]*group), byGame: make(map[gameKey][]*group), minExpire: math.MaxInt64}
	anon := make(map[anonCount]int)
	for _, e := range r.servers {
		if !e.Listed {
			continue
		}
		exp := int64(e.expiry(r.cfg.Timeout))
		if nowNS >= exp {
			continue // silent for Timeout: Expire removes it at its next run
		}
		s.minExpire = min(s.minExpire, exp)
		if e.hbGame != nil && e.hbGame.Name == e.Game {
			anon[anonCount{protoKey{e.Family, int(e.Protocol)}, e.hbGame}]++
		}
		k := groupKey{e.Family, e.Game, int(e.Protocol)}
		g := s.groups[k]
		if g == nil {
			g = &group{}
			s.groups[k] = g
			gk := gameKey{e.Family, e.Game}
			s.byGame[gk] = append(s.byGame[gk], g)
		}
		pub, _ := r.cfg.AddrMap.Map(e.Addr)
		var st uint8
		if e.Empty() {
			st |= stateEmpty
		}
		if e.Full() {
			st |= stateFull
		}
		g.entries = append(g.entries, snapEntry{ip: pub.Addr().As16(), port: pub.Port(), gametype: e.Gametype, state: st, v6: pub.Addr().Is6()})
		s.listed++
	}
	s.anonCounts = anon
	return s
}

// finish sorts the groups collectLocked filled, without the registry's
// lock.
func (s *snapshot) finish(cat *game.Catalogue) {
	for _, g := range s.groups {
		slices.SortFunc(g.entries, compareSnapEntries)
		g.stride = coprimeStride(len(g.entries))
	}
	s.anon = anonymousGames(s.anonCounts, cat)
	s.anonCounts = nil
}

// compareSnapEntries orders entries by published address, IPv4 before
// IPv6, as netip.AddrPort.Compare does, without building the AddrPorts.
func compareSnapEntries(a, b snapEntry) int {
	if a.v6 != b.v6 {
		if a.v6 {
			return 1
		}
		return -1
	}
	if c := bytes.Compare(a.ip[:], b.ip[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.port, b.port)
}

// anonCount counts the listed servers of one anonymous game (found by its
// heartbeat tag) at one protocol.
type anonCount struct {
	k protoKey
	g *game.Game
}

// anonymousGames picks, for each family and protocol that listed servers
// of anonymous games use, the game an anonymous query for that protocol is
// answered with: the one with the most servers of that protocol, the first
// in catalogue order on a tie. It returns nil when there are none.
func anonymousGames(counts map[anonCount]int, cat *game.Catalogue) map[protoKey]string {
	if len(counts) == 0 {
		return nil
	}
	order := make(map[*game.Game]int)
	for i, g := range cat.Games() {
		order[g] = i
	}
	type best struct {
		g *game.Game
		n int
	}
	pick := make(map[protoKey]best)
	for c, n := range counts {
		b, seen := pick[c.k]
		if !seen || n > b.n || (n == b.n && order[c.g] < order[b.g]) {
			pick[c.k] = best{c.g, n}
		}
	}
	out := make(map[protoKey]string, len(pick))
	for k, b := range pick {
		out[k] = b.g.Name
	}
	return out
}

// coprimeStride returns a step coprime with n near n*0.618, so that
// successive start positions k*stride mod n are spread out and visit every
// position once in n queries.
func coprimeStride(n int) int {
	if n <= 2 {
		return 1
	}
	for s := n * 618 / 1000; s > 1; s-- {
		if gcd(s, n) == 1 {
			return s
		}
	}
	return 1
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// filter is a Query resolved against the catalogue and the game's options:
// everything that decides which servers an answer holds. It is comparable,
// and part of the key of a cached answer.
type filter struct {
	family      game.Family
	game        string
	protocol    int
	anyProtocol bool
	skip        uint8 // states left out
	want4       bool
	want6       bool
	hasGametype bool
	gametype    string
}

// resolve turns q into a filter against snap, or gives a reason to answer
// nothing (unknown game, game policy).
//
// An anonymous query (no game name) is for the anonymous game whose
// protocol list holds q.Protocol. When none does, it is for the anonymous
// game that listed servers use that protocol with (dpmaster's fallback,
// doc/manual.txt "GAME PROPERTIES": protocol numbers are hints, not
// reservations; custom ioquake3 builds, test protocols and old versions
// heartbeat "QuakeArena-1" with a protocol of their own). Where servers
// of several anonymous games use it, the game with the most of them wins,
// the first in catalogue order on a tie (dpmaster takes the game of the
// first such server in its list, which depends on its history). Only
// servers that named their game by heartbeat tag count, as in dpmaster: a
// DarkPlaces-protocol server is asked for by name. The chosen game's
// options (ET's send-empty/full) apply, as to any query for that game.
func (r *Registry) resolve(q Query, snap *snapshot) (filter, Reason) {
	name := q.Game
	var opts game.Options
	if name == "" {
		g, ok := r.cfg.Catalogue.ByProtocol(q.Family, q.Protocol)
		if !ok {
			anon, found := snap.anon[protoKey{q.Family, q.Protocol}]
			if !found {
				return filter{}, ReasonUnknownGame
			}
			g, _ = r.cfg.Catalogue.ByName(anon)
		}
		name, opts = g.Name, g.Options
	} else if g, ok := r.cfg.Catalogue.ByName(name); ok {
		opts = g.Options
	}
	if !r.cfg.Policy.Accepts(name) {
		return filter{}, ReasonGamePolicy
	}
	f := filter{family: q.Family, game: name, protocol: q.Protocol, anyProtocol: q.AnyProtocol,
		want4: q.IPv4, want6: q.IPv6, hasGametype: q.HasGametype}
	if q.HasGametype {
		f.gametype = cutGametype(q.Gametype) // as listed (gametypeOf)
	}
	if !q.Empty && opts&game.SendEmpty == 0 {
		f.skip |= stateEmpty
	}
	if !q.Full && opts&game.SendFull == 0 {
		f.skip |= stateFull
	}
	if !f.want4 && !f.want6 {
		f.want4, f.want6 = true, true
	}
	return f, OK
}

// appendMatching appends the addresses s lists for f, each group starting
// at k*stride modulo its size.
func (s *snapshot) appendMatching(f filter, k uint64, dst []netip.AddrPort) []netip.AddrPort {
	sel := func(g *group) {
		n := len(g.entries)
		if n == 0 {
			return
		}
		start := int((k * uint64(g.stride)) % uint64(n))
		for i := range n {
			j := start + i
			if j >= n {
				j -= n
			}
			e := &g.entries[j]
			if e.state&f.skip != 0 || (e.v6 && !f.want6) || (!e.v6 && !f.want4) ||
				(f.hasGametype && e.gametype != f.gametype) {
				continue
			}
			dst = append(dst, e.addrPort())
		}
	}
	if f.anyProtocol {
		for _, g := range s.byGame[gameKey{f.family, f.game}] {
			sel(g)
		}
	} else if g := s.groups[groupKey{f.family, f.game, f.protocol}]; g != nil {
		sel(g)
	}
	return dst
}

// Select appends to dst, and returns, the published addresses of the
// listed servers that match q at now, and OK, or a reason to answer
// nothing (unknown game, game policy).
//
// Fair rotation: the servers of a game and protocol are kept sorted by
// address, and each Select starts at a different place, k*stride modulo the
// count for the k-th query, with stride coprime to the count and near
// 0.618 times it; so over any n successive queries every server comes first
// exactly once, and no server is always in the last packet of an answer
// that a client or the network truncates.
//
// Select takes no lock unless the listing changed since the last Select,
// and allocates nothing when dst has room. The handler answers from
// encoded replies cached per snapshot instead (see answer.go).
func (r *Registry) Select(now time.Time, q Query, dst []netip.AddrPort) ([]netip.AddrPort, Reason) {
	snap := r.current(now)
	f, why := r.resolve(q, snap)
	if why != OK {
		return dst, why
	}
	return snap.appendMatching(f, r.rotation.Add(1), dst), OK
}
