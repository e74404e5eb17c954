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
			if NewRendezvous(self, live).Mine(a) {
				owners = append(owners, self)
			}
		}
		if len(owners) != 1 {
			t.Fatalf("%v is the share of %v, want exactly one instance", a, owners)
		}
		if o := NewRendezvous("x", []string{"c", "a", "b"}).Owner(a); o != owners[0] {
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
		o := after.Owner(a)
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
		if got := NewRendezvous("a", live).Owner(ap(c.a)); got != c.want {
			t.Errorf("owner of %s = %s, want %s", c.a, got, c.want)
		}
	}
	if !NewRendezvous("z", live).Mine(addrs[0]) {
		t.Error("an instance not in the live set does not re-probe its list")
	}
}

type shareFunc func(netip.AddrPort) bool

func (f shareFunc) Mine(a netip.AddrPort) bool { return f(a) }

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
