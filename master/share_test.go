package master

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

func manyAddrs(n int) []netip.AddrPort {
	out := make([]netip.AddrPort, n)
	for i := range out {
		out[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}), uint16(27960+i%7))
	}
	return out
}

// The share function is pure: every instance computes the same owner;
// shares are even; when an instance leaves only its servers move, spread
// over the others; when it comes back they move back.
func TestRendezvous_SharesEvenlyAndMovesOnlyTheDeadsServers(t *testing.T) {
	live := []string{"a", "b", "c"}
	addrs := manyAddrs(30000)
	owner := map[netip.AddrPort]string{}
	count := map[string]int{}
	for _, a := range addrs {
		var owners []string
		for _, self := range live {
			if NewRendezvous(self, live).Mine(a, 0) {
				owners = append(owners, self)
			}
		}
		if len(owners) != 1 {
			t.Fatalf("%v is the share of %v, want exactly one instance", a, owners)
		}
		if o := NewRendezvous("x", []string{"c", "a", "b"}).Owner(a, 0); o != owners[0] {
			t.Fatalf("owner of %v depends on the order of the live set: %s vs %s", a, o, owners[0])
		}
		owner[a] = owners[0]
		count[owners[0]]++
	}
	for _, id := range live {
		// 10,000 expected; a binomial's sd is 82: 5 sd.
		if c := count[id]; c < 9600 || c > 10400 {
			t.Errorf("instance %s owns %d of 30,000", id, c)
		}
	}
	// "b" dies.
	after := NewRendezvous("a", []string{"a", "c"})
	moved := map[string]int{}
	for _, a := range addrs {
		o := after.Owner(a, 0)
		if owner[a] != "b" && o != owner[a] {
			t.Fatalf("%v moved from live %s to %s", a, owner[a], o)
		}
		if owner[a] == "b" {
			moved[o]++
		}
	}
	if moved["a"] < 4500 || moved["c"] < 4500 {
		t.Errorf("b's servers went %v, want about half each", moved)
	}
	// Golden values: the weight is part of the fleet's protocol (every
	// instance must compute it the same way, whatever its version).
	for _, c := range []struct {
		a    string
		want string
	}{{"198.51.100.7:27960", "b"}, {"[2001:db8::1]:27960", "b"}, {"203.0.113.9:27961", "c"}} {
		if got := NewRendezvous("a", live).Owner(ap(c.a), 0); got != c.want {
			t.Errorf("owner of %s = %s, want %s", c.a, got, c.want)
		}
	}
	if !NewRendezvous("z", live).Mine(addrs[0], 0) {
		t.Error("an instance not in the live set does not re-probe its list")
	}
}

type shareFunc func(netip.AddrPort) bool

func (f shareFunc) Mine(a netip.AddrPort, _ uint64) bool { return f(a) }

// DueProbes sends only this instance's share of the due re-probes; the
// others are looked at again after shareRecheck, and become its own when
// their owner leaves.
func TestRegistry_DueProbesOnlyOwnShare(t *testing.T) {
	r := newTestRegistry(t, Config{AllowLoopback: true})
	addrs := manyAddrs(100)
	for _, a := range addrs {
		register(t, r, t0, a)
	}
	alive := true
	mine := func(a netip.AddrPort) bool { return !alive || a.Addr().As4()[3]%2 == 0 }
	r.SetShare(shareFunc(mine))
	due := t0.Add(game.Q3AReprobeInterval)
	ps := r.DueProbes(due, nil, 0)
	if len(ps) != 50 {
		t.Fatalf("%d re-probes due, want the 50 of this share", len(ps))
	}
	for _, p := range ps {
		if !mine(p.To) || p.Cause != CauseReprobe {
			t.Fatalf("re-probe %+v is not this instance's share", p)
		}
	}
	if r.LeftToPeers() != 50 {
		t.Errorf("LeftToPeers = %d, want 50", r.LeftToPeers())
	}
	firsts := func(ps []Probe) (n int) {
		for _, p := range ps {
			if p.Try == 0 {
				n++
			}
		}
		return n
	}
	if n := firsts(r.DueProbes(due.Add(DefaultShareRecheck-time.Millisecond), nil, 0)); n != 0 {
		t.Fatalf("%d re-probes before the recheck", n)
	}
	alive = false // the other instance died: its share is this one's
	if n := firsts(r.DueProbes(due.Add(DefaultShareRecheck), nil, 0)); n != 50 {
		t.Fatalf("%d re-probes after the owner died, want its 50", n)
	}
}

// A peer's record is applied if it is newer; the later of two
// verifications wins whatever order they arrive in; a removal does not
// undo a newer verification.
func TestRegistry_ApplyNewestWins(t *testing.T) {
	r := newTestRegistry(t, Config{AllowLoopback: true})
	a := ap("198.51.100.1:27960")
	rec := func(at time.Time, clients int) Server {
		return Server{Addr: a, Listed: true, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 68,
			Gametype: "0", Clients: clients, MaxClients: 8, FirstSeen: t0, LastVerified: at,
			Info: []Pair{{"hostname", fmt.Sprint("h", clients)}}}
	}
	if ch, why := r.Apply(t0, rec(t0, 1)); ch != ChangeListed || why != OK {
		t.Fatalf("Apply new = %v %v", ch, why)
	}
	if got := selectAll(r, t0, Query{Family: game.FamilyQ3, Protocol: 68, Empty: true, Full: true}); len(got) != 1 {
		t.Fatalf("applied server not served: %v", got)
	}
	if ch, _ := r.Apply(t0, rec(t0.Add(2*time.Second), 2)); ch != ChangeUpdated {
		t.Fatalf("newer record: %v", ch)
	}
	if ch, _ := r.Apply(t0, rec(t0.Add(time.Second), 3)); ch != ChangeNone {
		t.Fatalf("older record applied: %v", ch)
	}
	s, _ := r.Lookup(a)
	if s.Clients != 2 || !s.LastVerified.Equal(t0.Add(2*time.Second)) || s.Info[0].Value != "h2" {
		t.Fatalf("kept %+v, want the later record", s)
	}
	if r.ApplyRemoval(a, t0.Add(time.Second)) {
		t.Fatal("a removal of an older record removed a newer one")
	}
	// The next re-probe and the silence are timed from the record.
	if !s.NextProbe.Equal(t0.Add(2*time.Second + game.Q3AReprobeInterval)) {
		t.Errorf("next re-probe %v", s.NextProbe)
	}
	if rm := r.Expire(t0.Add(2*time.Second+DefaultTimeout-time.Nanosecond), nil); len(rm) != 0 {
		t.Fatalf("expired early: %v", rm)
	}
	if rm := r.Expire(t0.Add(2*time.Second+DefaultTimeout), nil); len(rm) != 1 || rm[0].Reason != ReasonSilent ||
		!rm[0].LastVerified.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("silence: %+v", rm)
	}
	r.Apply(t0, rec(t0.Add(3*time.Second), 4))
	if !r.ApplyRemoval(a, t0.Add(3*time.Second)) {
		t.Fatal("the removal of the record held was not applied")
	}
	if l, p := r.Counts(); l != 0 || p != 0 {
		t.Fatalf("counts %d %d after removal", l, p)
	}
}

// A record older than Timeout (a fleet started again after a long stop) is
// listed and re-probed at once, not dropped at the next Expire.
func TestRegistry_ApplyStaleRecordIsReprobed(t *testing.T) {
	r := newTestRegistry(t, Config{AllowLoopback: true})
	a := ap("198.51.100.1:27960")
	now := t0.Add(time.Hour)
	s := Server{Addr: a, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 68, MaxClients: 8, FirstSeen: t0, LastVerified: t0}
	if ch, why := r.Apply(now, s); ch != ChangeListed || why != OK {
		t.Fatalf("Apply = %v %v", ch, why)
	}
	if rm := r.Expire(now, nil); len(rm) != 0 {
		t.Fatalf("stale record dropped at once: %v", rm)
	}
	if ps := r.DueProbes(now, nil, 0); len(ps) != 1 {
		t.Fatalf("stale record not re-probed: %v", ps)
	}
}

// Silence is decided by the share's owner; the others drop a server only
// one Timeout later (its owner is lost).
func TestRegistry_SilenceDecidedByOwner(t *testing.T) {
	r := newTestRegistry(t, Config{AllowLoopback: true})
	a := ap("198.51.100.1:27960")
	r.Apply(t0, Server{Addr: a, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 68, MaxClients: 8, LastVerified: t0})
	r.SetShare(shareFunc(func(netip.AddrPort) bool { return false }))
	if rm := r.Expire(t0.Add(DefaultTimeout), nil); len(rm) != 0 {
		t.Fatalf("a non-owner expired it: %v", rm)
	}
	if rm := r.Expire(t0.Add(2*DefaultTimeout), nil); len(rm) != 1 {
		t.Fatalf("a non-owner kept it a second Timeout: %v", rm)
	}
}

// A server kept from a stale record is removed by any peer's removal: no
// one verified it since.
func TestRegistry_ApplyRemovalOfRestored(t *testing.T) {
	r := newTestRegistry(t, Config{AllowLoopback: true})
	a := ap("198.51.100.1:27960")
	r.Apply(t0.Add(time.Hour), Server{Addr: a, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 68, MaxClients: 8, LastVerified: t0})
	if !r.ApplyRemoval(a, t0.Add(time.Minute)) {
		t.Fatal("a restored server outlived a peer's removal")
	}
}

// Rotation: in every round exactly one live instance owns a server; over
// len(Live) consecutive rounds every live instance owns it once; over
// 2×len(Live) re-probes whose rounds skipped one (a late re-probe) every
// live instance owns it at least once; round 0 is plain rendezvous.
func TestRendezvous_RotatesOwnerEachRound(t *testing.T) {
	for _, live := range [][]string{{"a"}, {"a", "b"}, {"a", "b", "c"}, {"i0", "i1", "i2", "i3", "i4"}} {
		n := uint64(len(live))
		zs := make([]*Rendezvous, len(live))
		for i, id := range live {
			zs[i] = NewRendezvous(id, live)
		}
		for _, a := range manyAddrs(2000) {
			base := Round(a, t0, game.Q3AReprobeInterval)
			seen := map[string]int{}
			for k := base; k < base+n; k++ {
				var owners []string
				for i, z := range zs {
					if z.Mine(a, k) {
						owners = append(owners, live[i])
					}
				}
				if len(owners) != 1 {
					t.Fatalf("live %v: %v in round %d is the share of %v, want exactly one", live, a, k, owners)
				}
				seen[owners[0]]++
			}
			if len(seen) != len(live) {
				t.Fatalf("live %v: %v owned in %d rounds by %v, want each instance once", live, a, n, seen)
			}
			if zs[0].Owner(a, 0) != zs[0].Owner(a, n) {
				t.Fatalf("live %v: %v: round 0 and round %d differ", live, a, n)
			}
			// A late re-probe moves the round on by two: rounds
			// base..base+2n without base+skip, 2n re-probes.
			for skip := uint64(1); skip < 2*n; skip++ {
				seen := map[string]bool{}
				for k := base; k <= base+2*n; k++ {
					if k != base+skip {
						seen[zs[0].Owner(a, k)] = true
					}
				}
				if len(seen) != len(live) {
					t.Fatalf("live %v: %v: %d re-probes skipping round %d reached only %v", live, a, 2*n, base+skip, seen)
				}
			}
		}
	}
	// More instances than the ranking's stack buffer.
	var big []string
	for i := range maxRanked + 3 {
		big = append(big, fmt.Sprint("n", i))
	}
	a := ap("198.51.100.9:27960")
	seen := map[string]bool{}
	for k := range uint64(len(big)) {
		seen[NewRendezvous("", big).Owner(a, k)] = true
	}
	if len(seen) != len(big) {
		t.Errorf("%d instances: %d owned it over %d rounds", len(big), len(seen), len(big))
	}
}

// Three registries sharing one fleet's records (Apply), each with its
// Rendezvous, re-probe every server once per period between them, at the
// points of its grid (Phase), and each has measured its RTT to every
// server in the first three.
//
// Ticks of 0.6 interval make every re-probe late by up to that: the round
// still moves on by exactly one a period.
func TestRegistry_RotationMeasuresFromEveryInstance(t *testing.T) {
	for _, tick := range []time.Duration{time.Second, game.Q3AReprobeInterval * 6 / 10} {
		t.Run(tick.String(), func(t *testing.T) { rotationMeasures(t, tick) })
	}
}

func rotationMeasures(t *testing.T, tick time.Duration) {
	live := []string{"a", "b", "c"}
	regs := make([]*Registry, len(live))
	for i, id := range live {
		regs[i] = newTestRegistry(t, Config{AllowLoopback: true})
		regs[i].SetShare(NewRendezvous(id, live))
	}
	addrs := manyAddrs(60)
	for _, a := range addrs {
		s := register(t, regs[0], t0, a)
		for _, r := range regs[1:] {
			if _, why := r.Apply(t0, s); why != OK {
				t.Fatal(why)
			}
		}
	}
	const periods = 4 // the window below holds 4 grid points
	interval := game.Q3AReprobeInterval
	rtt := map[int]time.Duration{0: 20 * time.Millisecond, 1: 90 * time.Millisecond, 2: 250 * time.Millisecond}
	probed := map[netip.AddrPort][]int{}    // re-probing instance per period, in order
	rounds := map[netip.AddrPort][]uint64{} // the grid period each re-probe went out in
	for now := t0; now.Before(t0.Add(periods * interval)); now = now.Add(tick) {
		for i, r := range regs {
			for _, p := range r.DueProbes(now, nil, 0) {
				if p.Try != 0 {
					continue
				}
				probed[p.To] = append(probed[p.To], i)
				rounds[p.To] = append(rounds[p.To], Round(p.To, now, interval))
				rep := infoReply(p.Challenge.Text)
				if p.Requests&game.GetStatus != 0 {
					rep.Kind, rep.Players = ReplyStatus, 3
				}
				at := now.Add(rtt[i])
				s, _, why := r.Verify(at, p.To, rep)
				if why != OK {
					t.Fatalf("%s: Verify(%v) = %v", live[i], p.To, why)
				}
				for j, o := range regs {
					if j != i {
						o.Apply(at, s)
					}
				}
			}
		}
	}
	for _, a := range addrs {
		ps := probed[a]
		// The last grid point may fall after the last tick.
		if len(ps) < periods-1 || len(ps) > periods {
			t.Fatalf("%v re-probed %d times in %d periods (by %v), want once per period", a, len(ps), periods, ps)
		}
		for k := 1; k < len(ps); k++ {
			if rounds[a][k] != rounds[a][k-1]+1 {
				t.Fatalf("%v re-probed in grid periods %v, want one each", a, rounds[a])
			}
		}
		seen := map[int]bool{}
		for _, i := range ps[:3] {
			seen[i] = true
		}
		if len(seen) != len(live) {
			t.Errorf("%v re-probed by %v in %d periods, want by every instance in the first 3", a, ps, periods)
		}
		for i, r := range regs {
			s, _ := r.Lookup(a)
			if s.RTT != rtt[i] {
				t.Errorf("%s's RTT to %v = %v, want %v", live[i], a, s.RTT, rtt[i])
			}
		}
	}
}

// VerifiedBefore lets go of the registry's lock every VerifiedBatch
// servers: a lookup and a verification made at each release go through
// (they would wait for the whole listing, a million servers at a fleet's
// catch-up, if it held the lock throughout), and what it gives is
// listed and verified before t when it looked.
func TestRegistry_VerifiedBeforeLetsLookupsIn(t *testing.T) {
	const n = 3*VerifiedBatch + 100
	r := newTestRegistry(t, Config{AllowLoopback: true, MaxServers: 2 * n, MaxServersPerAddress: -1})
	at := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}), 27960)
	}
	rec := func(i int, verified time.Time) Server {
		return Server{Addr: at(i), Listed: true, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 68,
			Gametype: "0", MaxClients: 8, FirstSeen: t0, LastVerified: verified}
	}
	cut := t0.Add(time.Minute)
	for i := range n {
		v := t0 // every other one verified before the cut
		if i%2 == 1 {
			v = cut.Add(time.Second)
		}
		if _, why := r.Apply(cut, rec(i, v)); why != OK {
			t.Fatal(why)
		}
	}
	releases := 0
	r.released = func() {
		releases++
		if _, ok := r.Lookup(at(0)); !ok {
			t.Error("a lookup at a release found nothing")
		}
		// Re-verified while the listing is read: given with its old
		// time or not at all.
		r.Apply(cut, rec(2*releases, cut.Add(time.Hour)))
	}
	got := r.VerifiedBefore(cut, nil)
	r.released = nil
	if releases != n/VerifiedBatch {
		t.Errorf("%d releases of the lock over %d servers, want %d", releases, n, n/VerifiedBatch)
	}
	seen := map[netip.AddrPort]bool{}
	for _, v := range got {
		if !v.LastVerified.Before(cut) || seen[v.Addr] {
			t.Fatalf("%v given (verified %v, given before: %v)", v.Addr, v.LastVerified, seen[v.Addr])
		}
		seen[v.Addr] = true
	}
	if want := n/2 - releases; len(got) < want || len(got) > n/2 {
		t.Errorf("%d given, want %d-%d", len(got), want, n/2)
	}
}
