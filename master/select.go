package master

import (
	"net/netip"
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
		g, ok := r.conf().Catalogue.ByProtocol(q.Family, q.Protocol)
		if !ok {
			anon, found := snap.anon[protoKey{q.Family, q.Protocol}]
			if !found {
				return filter{}, ReasonUnknownGame
			}
			g, _ = r.conf().Catalogue.ByName(anon)
		}
		name, opts = g.Name, g.Options
	} else if g, ok := r.conf().Catalogue.ByName(name); ok {
		opts = g.Options
	}
	if !r.conf().Policy.Accepts(name) {
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
	if r.conf().OnePerCloneGroup {
		f.skip |= stateClone
	}
	return f, OK
}

// match reports whether f selects e.
func (f *filter) match(e *snapEntry) bool {
	return e.state&f.skip == 0 && (e.v6 && f.want6 || !e.v6 && f.want4) &&
		(!f.hasGametype || e.gametype == f.gametype)
}

// appendMatching appends the addresses s lists for f, each group starting
// at k*stride modulo its size.
func (s *snapshot) appendMatching(f filter, k uint64, dst []netip.AddrPort) []netip.AddrPort {
	for _, g := range s.groupsOf(f) {
		dst = g.appendMatching(f, k, dst)
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
