package master

import (
	"net/netip"
	"slices"
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
	addr     netip.AddrPort // as published (after -m mapping)
	gametype string
	expireAt int64 // unix ns: skipped from then on even before Expire runs
	state    uint8
	v6       bool
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
// protocol, rebuilt after the listing changes.
type snapshot struct {
	groups map[groupKey]*group
	byGame map[gameKey][]*group // for AnyProtocol
}

type gameKey struct {
	f    game.Family
	game string
}

func (r *Registry) current() *snapshot {
	if !r.dirty.Load() {
		return r.snap.Load()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dirty.Load() {
		r.dirty.Store(false)
		r.snap.Store(r.buildLocked())
	}
	return r.snap.Load()
}

func (r *Registry) buildLocked() *snapshot {
	s := &snapshot{groups: make(map[groupKey]*group), byGame: make(map[gameKey][]*group)}
	for _, e := range r.servers {
		if !e.Listed {
			continue
		}
		k := groupKey{e.Family, e.Game, e.Protocol}
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
		g.entries = append(g.entries, snapEntry{
			addr: pub, gametype: e.Gametype, expireAt: e.expireAt.UnixNano(),
			state: st, v6: pub.Addr().Is6(),
		})
	}
	for _, g := range s.groups {
		slices.SortFunc(g.entries, func(a, b snapEntry) int { return a.addr.Compare(b.addr) })
		g.stride = coprimeStride(len(g.entries))
	}
	return s
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
// and allocates nothing when dst has room.
func (r *Registry) Select(now time.Time, q Query, dst []netip.AddrPort) ([]netip.AddrPort, Reason) {
	name := q.Game
	var opts game.Options
	if name == "" {
		g, ok := r.cfg.Catalogue.ByProtocol(q.Family, q.Protocol)
		if !ok {
			return dst, ReasonUnknownGame
		}
		name, opts = g.Name, g.Options
	} else if g, ok := r.cfg.Catalogue.ByName(name); ok {
		opts = g.Options
	}
	if !r.cfg.Policy.Accepts(name) {
		return dst, ReasonGamePolicy
	}
	var skip uint8
	if !q.Empty && opts&game.SendEmpty == 0 {
		skip |= stateEmpty
	}
	if !q.Full && opts&game.SendFull == 0 {
		skip |= stateFull
	}
	want4, want6 := q.IPv4, q.IPv6
	if !want4 && !want6 {
		want4, want6 = true, true
	}
	snap := r.current()
	k := r.rotation.Add(1)
	nowNS := now.UnixNano()
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
			if e.state&skip != 0 || nowNS >= e.expireAt ||
				(e.v6 && !want6) || (!e.v6 && !want4) ||
				(q.HasGametype && e.gametype != q.Gametype) {
				continue
			}
			dst = append(dst, e.addr)
		}
	}
	if q.AnyProtocol {
		for _, g := range snap.byGame[gameKey{q.Family, name}] {
			sel(g)
		}
	} else if g := snap.groups[groupKey{q.Family, name, q.Protocol}]; g != nil {
		sel(g)
	}
	return dst, OK
}
