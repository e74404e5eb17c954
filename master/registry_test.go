package master

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

func selectAll(r *Registry, now time.Time, q Query) []netip.AddrPort {
	out, _ := r.Select(now, q, nil)
	return out
}

var q71 = Query{Family: game.FamilyQ3, Protocol: 71, Empty: true, Full: true}

func TestRegistry_ListsOpenArenaServer(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	s := register(t, r, t0, a)
	if s.Game != "Quake3Arena" || s.Protocol != 71 || s.Clients != 3 || s.MaxClients != 8 || s.Gametype != "0" {
		t.Errorf("server = %+v", s)
	}
	if got := selectAll(r, t0, q71); !slices.Equal(got, []netip.AddrPort{a}) {
		t.Errorf("Select = %v", got)
	}
}

func TestRegistry_Quake4Listing(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.9:28004")
	p, why := r.Heartbeat(t0, a, Heartbeat{Family: game.FamilyDoom3})
	if why != OK || p.Family != game.FamilyDoom3 || p.Requests != game.GetInfo {
		t.Fatalf("%+v %v", p, why)
	}
	// Keys from the synthetic infoResponse that qstat and gamedig accepted
	// (ours_q4_infoResponse_accepted_by_qstat_and_gamedig.hex).
	rep := Reply{
		Kind: ReplyInfo, Players: 2, Protocol: game.Doom3Version(2, 85), Challenge32: p.Challenge.Int32,
		Info: []Pair{{"si_name", "fake-q4"}, {"si_map", "game/mp/q4dm1"}, {"si_maxplayers", "8"}, {"fs_game", ""}, {"si_gametype", "DM"}},
	}
	bad := rep
	bad.Challenge32 ^= 2
	if _, _, why := r.Verify(t0, a, bad); why != ReasonBadChallenge {
		t.Errorf("bad int32 challenge: %v", why)
	}
	s, ch, why := r.Verify(t0, a, rep)
	if why != OK || ch != ChangeListed || s.Game != "Quake4" || s.Clients != 2 || s.MaxClients != 8 || s.Gametype != "DM" {
		t.Fatalf("%v %v %+v", why, ch, s)
	}
	got := selectAll(r, t0, Query{Family: game.FamilyDoom3, Protocol: game.Doom3Version(2, 85), Empty: true, Full: true})
	if !slices.Equal(got, []netip.AddrPort{a}) {
		t.Errorf("getServers = %v", got)
	}
	got = selectAll(r, t0, Query{Family: game.FamilyDoom3, Game: "Quake4", AnyProtocol: true, Empty: true, Full: true})
	if !slices.Equal(got, []netip.AddrPort{a}) {
		t.Errorf("getServers any = %v", got)
	}
}

func TestRegistry_RestoreListsAtOnceAndReverifies(t *testing.T) {
	old := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	register(t, old, t0, a)
	saved := old.Servers(nil)

	r := newTestRegistry(t, Config{})
	later := t0.Add(time.Hour)
	if n, skipped := r.Restore(later, saved); n != 1 || len(skipped) != 0 {
		t.Fatalf("restored %d, skipped %v", n, skipped)
	}
	if got := selectAll(r, later, q71); !slices.Equal(got, []netip.AddrPort{a}) {
		t.Errorf("after restore Select = %v", got)
	}
	ps := r.DueProbes(later, nil, 0)
	if len(ps) != 1 || ps[0].Cause != CauseRestored || ps[0].Requests&game.GetInfo == 0 {
		t.Fatalf("probes %+v", ps)
	}
	if _, ch, why := r.Verify(later, a, infoReply(ps[0].Challenge.Text)); why != OK || ch == ChangeNone {
		t.Errorf("re-verify: %v %v", ch, why)
	}
}

func TestReasons_Named(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Reasons() {
		s := r.String()
		if s == "" || seen[s] {
			t.Errorf("reason %d: %q empty or duplicate", r, s)
		}
		seen[s] = true
	}
}
