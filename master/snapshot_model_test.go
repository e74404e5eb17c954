package master

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/q3"
)

// TestSnapshot_IncrementalMatchesFullRebuild drives a registry through
// random sequences of changes (new servers, changes of game, protocol,
// gametype, empty and full state, heartbeat tag, other instances'
// records newer, older and silent, removals, expiries, time moving on)
// and queries of random shapes, and after each build compares the
// snapshot built from the last one with one built from scratch over the
// registry (referenceSnapshot): the same groups in the same order, the
// same anonymous games, byGame, count and expiry; and every cached answer
// byte for byte what encoding its groups afresh gives, listing what the
// reference lists. Chunks of 4 entries and a published address two
// servers share (-m) make the edge cases common.
//
// small: a listing within InlineSnapshot, built by the queries whatever
// changed. large: InlineSnapshot 1, so that a query applies only the few
// changes of small groups (at most 6 servers here) and Refresh the rest;
// compared after every Refresh, checked for consistency after every
// query.
func TestSnapshot_IncrementalMatchesFullRebuild(t *testing.T) {
	for _, mode := range []string{"small", "large"} {
		for seed := range 12 {
			t.Run(fmt.Sprintf("%s/%d", mode, seed), func(t *testing.T) {
				runSnapshotModel(t, uint64(seed), mode == "large", 2500)
			})
		}
	}
}

type snapModel struct {
	t     *testing.T
	r     *Registry
	rnd   *rand.Rand
	now   time.Time
	addrs []netip.AddrPort
	large bool
}

func runSnapshotModel(t *testing.T, seed uint64, large bool, steps int) {
	m := newSnapModelForTest(t, seed, large)
	for step := range steps {
		m.step()
		switch {
		case !large:
			m.r.current(m.now)
			m.compare(step)
		case m.rnd.IntN(4) == 0:
			m.r.Refresh(m.now)
			m.r.current(m.now) // a listing of one is the queries' to build
			m.compare(step)
		default:
			m.r.current(m.now)
			m.consistent(step, m.r.snap.Load())
		}
	}
}

// newSnapModelForTest is a registry with chunks of 4, large groups from
// 7 servers, and three servers that publish one address.
func newSnapModelForTest(t *testing.T, seed uint64, large bool) *snapModel {
	am, err := NewAddrMap(
		Mapping{From: ap("10.0.0.1:27960"), To: ap("198.51.100.200:27960")},
		Mapping{From: ap("10.0.0.2:27960"), To: ap("198.51.100.200:27960")},
	)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{AllowLoopback: true, MaxServersPerAddress: -1, AddrMap: am}
	if large {
		cfg.InlineSnapshot = 1
	}
	m := &snapModel{t: t, r: newTestRegistry(t, cfg), rnd: rand.New(rand.NewPCG(seed, 7)), now: t0, large: large}
	m.r.chunkMax, m.r.inlineGroup = 4, 6
	m.addrs = []netip.AddrPort{ap("10.0.0.1:27960"), ap("10.0.0.2:27960"), ap("198.51.100.200:27960")}
	for i := range 40 {
		m.addrs = append(m.addrs, netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i % 13)}), uint16(27960+i)))
	}
	for i := range 12 {
		m.addrs = append(m.addrs, netip.AddrPortFrom(netip.MustParseAddr(fmt.Sprintf("2001:db8::%x", i%5+1)), uint16(27960+i)))
	}
	return m
}

// kind is one way a server is listed: its heartbeat tag, the game it
// names and the protocols it may use.
var snapKinds = []struct {
	tag, game string
	protos    []int
}{
	{"QuakeArena-1", "Quake3Arena", []int{68, 71, 99}},
	{"Wolfenstein-1", "wolfmp", []int{60, 99}},
	{game.HeartbeatDarkPlaces, "Xonotic", []int{3}},
	{game.HeartbeatDarkPlaces, "Nexuiz", []int{3}},
	{game.HeartbeatDarkPlaces, "OpenArena", []int{71}},
	{game.HeartbeatDarkPlaces, "Quake3Arena", []int{68, 99}}, // no heartbeat game, until a record names it
}

func (m *snapModel) step() {
	r, rnd := m.r, m.rnd
	a := m.addrs[rnd.IntN(len(m.addrs))]
	k := snapKinds[rnd.IntN(len(snapKinds))]
	proto := k.protos[rnd.IntN(len(k.protos))]
	gt := []string{"0", "4", "ctf"}[rnd.IntN(3)]
	clients := []int{0, 3, 8}[rnd.IntN(3)]
	switch op := rnd.IntN(100); {
	case op < 35: // a heartbeat and, mostly, its check answered
		p, why := r.Heartbeat(m.now, a, Heartbeat{Family: game.FamilyQ3, Tag: k.tag})
		if why != OK || rnd.IntN(10) == 0 {
			return
		}
		r.Verify(m.now, a, Reply{Kind: ReplyInfo, Players: -1, Info: []Pair{
			{"challenge", p.Challenge.Text}, {"protocol", strconv.Itoa(proto)}, {"gamename", k.game},
			{"gametype", gt}, {"sv_maxclients", "8"}, {"clients", strconv.Itoa(clients)}, {"hostname", "model"},
		}})
	case op < 55: // another instance's record: newer, older, silent, or from a clock ahead
		ver := m.now.Add(-time.Duration(rnd.Int64N(int64(DefaultTimeout * 6 / 5))))
		if rnd.IntN(8) == 0 {
			ver = m.now.Add(time.Duration(rnd.Int64N(int64(time.Minute))))
		}
		r.Apply(m.now, Server{Addr: a, Family: game.FamilyQ3, Game: k.game, Protocol: proto, Gametype: gt,
			Clients: clients, MaxClients: 8, LastVerified: ver, FirstSeen: ver})
	case op < 62:
		r.ApplyRemoval(a, m.now.Add(-time.Duration(rnd.Int64N(int64(DefaultTimeout)))))
	case op < 67:
		r.Expire(m.now, nil)
	case op < 80: // time moves on, sometimes to the next expiry exactly
		if next := m.nextExpiry(); next > 0 && rnd.IntN(3) == 0 {
			m.now = time.Unix(0, next)
		} else {
			m.now = m.now.Add(time.Duration(rnd.Int64N(int64(4 * time.Minute))))
		}
	default: // a query, cached for later builds to carry or encode again
		q := Query{Family: game.FamilyQ3, Game: k.game, Protocol: proto, Empty: rnd.IntN(2) == 0, Full: rnd.IntN(2) == 0,
			IPv4: rnd.IntN(3) != 0, IPv6: rnd.IntN(3) != 0}
		switch rnd.IntN(6) {
		case 0:
			q.Game = "" // anonymous: resolve's fallback to the listed servers' game
		case 1:
			q.AnyProtocol = true
		case 2:
			q.Gametype, q.HasGametype = gt, true
		}
		f, why := r.resolve(q, r.current(m.now))
		if why != OK {
			return
		}
		form := replyForm{split: q3.SplitOptions{Ext: true, End: q3.EndEOT, MaxBytes: 60 + 19*rnd.IntN(4)}}
		if rnd.IntN(5) == 0 {
			form = replyForm{q4: true, split: q3.SplitOptions{MaxBytes: 60}}
			f.want6 = false // Doom 3 lists carry IPv4 only
		}
		if _, err := r.answer(m.now, f, form, rnd.IntN(2) == 0); err != nil {
			m.t.Fatal(err)
		}
	}
}

// nextExpiry is the earliest silence of a listed server after now, 0 if
// none.
func (m *snapModel) nextExpiry() int64 {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	next := int64(0)
	for _, e := range m.r.servers {
		if exp := int64(e.expiry(m.r.conf().Timeout)); e.Listed && exp > m.now.UnixNano() && (next == 0 || exp < next) {
			next = exp
		}
	}
	return next
}

// refSnapshot is the snapshot built from scratch: each group's entries
// in order, the anonymous games, the earliest silence.
type refSnapshot struct {
	groups    map[groupKey][]snapEntry
	counts    map[anonCount]int
	anon      map[protoKey]string
	minExpire int64
	listed    int
}

// referenceSnapshot builds the snapshot at now from every listed server
// not silent for Timeout, as the whole snapshot was built before it was
// built from the last.
func referenceSnapshot(r *Registry, now time.Time) refSnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := refSnapshot{groups: map[groupKey][]snapEntry{}, minExpire: math.MaxInt64}
	counts := map[anonCount]int{}
	for _, e := range r.servers {
		exp := int64(e.LastVerified) + int64(r.conf().Timeout)
		if !e.Listed || now.UnixNano() >= exp {
			continue
		}
		ref.minExpire = min(ref.minExpire, exp)
		if e.hbGame != nil && e.hbGame.Name == e.Game {
			counts[anonCount{protoKey{e.Family, int(e.Protocol)}, e.hbGame}]++
		}
		pub, _ := r.conf().AddrMap.Map(e.Addr)
		var st uint8
		if e.Clients == 0 {
			st |= stateEmpty
		}
		if e.Clients >= e.MaxClients {
			st |= stateFull
		}
		k := groupKey{e.Family, e.Game, int(e.Protocol)}
		ref.groups[k] = append(ref.groups[k], snapEntry{ip: pub.Addr().As16(), port: pub.Port(), gametype: e.Gametype, state: st, v6: pub.Addr().Is6()})
		ref.listed++
	}
	for _, es := range ref.groups {
		slices.SortFunc(es, compareSnapEntries)
	}
	ref.anon, ref.counts = anonymousGames(counts, r.conf().Catalogue), counts
	return ref
}

// compare checks the current snapshot against referenceSnapshot, after a
// build that applied every change.
func (m *snapModel) compare(step int) {
	t, r := m.t, m.r
	s := r.snap.Load()
	m.consistent(step, s)
	ref := referenceSnapshot(r, m.now)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d at %v: %s", step, m.now.Sub(t0), fmt.Sprintf(format, args...))
	}
	if got, want := slices.SortedFunc(maps.Keys(s.groups), compareGroupKeys), slices.SortedFunc(maps.Keys(ref.groups), compareGroupKeys); !slices.Equal(got, want) {
		fail("groups %v, want %v", got, want)
	}
	for k, want := range ref.groups {
		if got := flatten(s.groups[k]); !slices.Equal(got, want) {
			fail("group %v: %v, want %v", k, got, want)
		}
	}
	if !maps.Equal(s.anonCounts, ref.counts) && (len(s.anonCounts) > 0 || len(ref.counts) > 0) {
		fail("anonymous servers %v, want %v", s.anonCounts, ref.counts)
	}
	if !maps.Equal(s.anon, ref.anon) && (len(s.anon) > 0 || len(ref.anon) > 0) {
		fail("anonymous games %v, want %v", s.anon, ref.anon)
	}
	if s.listed != ref.listed {
		fail("listed %d, want %d", s.listed, ref.listed)
	}
	if me := s.minExpire.Load(); me > ref.minExpire || me <= m.now.UnixNano() {
		fail("minExpire %v, want after now and at most %v", time.Duration(me-t0.UnixNano()), time.Duration(ref.minExpire-t0.UnixNano()))
	}
	r.mu.Lock()
	inSnap := 0
	for _, e := range r.servers {
		if e.flags&flagInSnap != 0 {
			inSnap++
		}
	}
	pending := len(r.touched) + len(r.leaving) + len(r.deferred)
	r.mu.Unlock()
	if inSnap != ref.listed || r.inSnap != inSnap || pending != 0 {
		fail("%d entries flagged in the snapshot, %d counted, %d changes pending; want %d, %d, 0", inSnap, r.inSnap, pending, ref.listed, ref.listed)
	}
	// Every cached answer lists what the reference lists for its query.
	s.answers.Range(func(k, v any) bool {
		key, a := k.(answerKey), v.(*answer)
		if key.form.q4 {
			return true // checked byte for byte in consistent
		}
		var want []netip.AddrPort
		gks := []groupKey{{key.f.family, key.f.game, key.f.protocol}}
		if key.f.anyProtocol {
			gks = gks[:0]
			for gk := range ref.groups {
				if gk.f == key.f.family && gk.game == key.f.game {
					gks = append(gks, gk)
				}
			}
		}
		for _, gk := range gks {
			for _, e := range ref.groups[gk] {
				if key.f.match(&e) {
					want = append(want, e.addrPort())
				}
			}
		}
		var got []netip.AddrPort
		for _, p := range a.pkts {
			msg, err := q3.Parse(p)
			if err != nil {
				fail("cached answer %+v: %v", key, err)
			}
			got = append(got, msg.(q3.ServersResponse).Servers...)
		}
		if !sameSet(got, want) {
			fail("cached answer %+v lists %v, want %v", key, got, want)
		}
		return true
	})
	if n := r.opsMissed.Load(); n != 0 {
		fail("%d removals not found in their group", n)
	}
}

// consistent checks what any snapshot must hold: chunks sorted, not
// empty, within chunkMax, counted right; byGame the groups of each game
// by protocol; every cached answer the bytes a fresh encoding of its
// groups gives, and counted in the cache's bounds.
func (m *snapModel) consistent(step int, s *snapshot) {
	t, r := m.t, m.r
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("step %d at %v: %s", step, m.now.Sub(t0), fmt.Sprintf(format, args...))
	}
	listed := 0
	games := map[gameKey][]*group{}
	for k, g := range s.groups {
		if g.key != k || len(g.chunks) == 0 || len(g.starts) != len(g.chunks) || g.stride != coprimeStride(g.n) {
			fail("group %v malformed: key %v, %d chunks, %d starts", k, g.key, len(g.chunks), len(g.starts))
		}
		n := 0
		for i, c := range g.chunks {
			// Beyond chunkMax only by equal entries (three servers here
			// publish one address).
			if len(c.entries) == 0 || len(c.entries) > r.chunkMax+2 || g.starts[i] != n || c.start < 0 || c.start >= len(c.entries) {
				fail("group %v chunk %d: %d entries at %d (start %d), want 1-%d at %d", k, i, len(c.entries), g.starts[i], c.start, r.chunkMax, n)
			}
			if i > 0 && g.chunks[i-1].entries[len(g.chunks[i-1].entries)-1] == c.entries[0] {
				fail("group %v: equal entries in chunks %d and %d", k, i-1, i)
			}
			n += len(c.entries)
		}
		es := flatten(g)
		if n != g.n || !slices.IsSortedFunc(es, compareSnapEntries) {
			fail("group %v: %d entries counted %d, sorted %v", k, n, g.n, slices.IsSortedFunc(es, compareSnapEntries))
		}
		listed += n
		games[gameKey{k.f, k.game}] = append(games[gameKey{k.f, k.game}], g)
	}
	if listed != s.listed {
		fail("%d entries in groups, listed says %d", listed, s.listed)
	}
	for gk, gs := range games {
		slices.SortFunc(gs, func(a, b *group) int { return a.key.proto - b.key.proto })
		if !slices.Equal(gs, s.byGame[gk]) {
			fail("byGame %v: %d groups, want %d", gk, len(s.byGame[gk]), len(gs))
		}
	}
	if len(games) != len(s.byGame) {
		fail("byGame holds %d games, the groups %d", len(s.byGame), len(games))
	}
	n, size := int32(0), int64(0)
	s.answers.Range(func(k, v any) bool {
		key, a := k.(answerKey), v.(*answer)
		fresh, err := s.encode(key.f, key.form, a.every, nil)
		if err != nil {
			fail("encoding %+v afresh: %v", key, err)
		}
		if !slices.EqualFunc(a.pkts, fresh.pkts, func(x, y []byte) bool { return string(x) == string(y) }) ||
			a.bytes != fresh.bytes || a.stride != fresh.stride || a.endLen != fresh.endLen {
			fail("cached answer %+v: %d packets, %d bytes; afresh %d, %d", key, len(a.pkts), a.bytes, len(fresh.pkts), fresh.bytes)
		}
		n++
		size += a.size()
		return true
	})
	if n != s.nAnswers.Load() || size != s.answerBytes.Load() || n > MaxCachedAnswers || size > MaxCachedAnswerBytes {
		fail("%d answers of %d bytes cached, counted %d, %d", n, size, s.nAnswers.Load(), s.answerBytes.Load())
	}
}

func compareGroupKeys(a, b groupKey) int {
	return cmp.Or(cmp.Compare(a.f, b.f), strings.Compare(a.game, b.game), cmp.Compare(a.proto, b.proto))
}

func flatten(g *group) []snapEntry {
	if g == nil {
		return nil
	}
	var out []snapEntry
	for _, c := range g.chunks {
		out = append(out, c.entries...)
	}
	return out
}
