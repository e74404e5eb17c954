package master

import (
	"fmt"
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

func TestRegistry_LoopbackRefused(t *testing.T) {
	r := newTestRegistry(t, Config{})
	for _, a := range []string{"127.0.0.1:27960", "[::1]:27960", "[::ffff:127.0.0.1]:27960"} {
		if _, why := r.Heartbeat(t0, ap(a), q3hb); why != ReasonLoopback {
			t.Errorf("%s: %v, want loopback", a, why)
		}
	}
	ok := newTestRegistry(t, Config{AllowLoopback: true})
	if _, why := ok.Heartbeat(t0, ap("127.0.0.1:27960"), q3hb); why != OK {
		t.Errorf("allowed loopback: %v", why)
	}
	m, err := NewAddrMap(Mapping{From: ap("127.0.0.1:27960"), To: ap("203.0.113.1:27960")})
	if err != nil {
		t.Fatal(err)
	}
	mapped := newTestRegistry(t, Config{AddrMap: m})
	register(t, mapped, t0, ap("127.0.0.1:27960"))
	if got := selectAll(mapped, t0, q71); !slices.Equal(got, []netip.AddrPort{ap("203.0.113.1:27960")}) {
		t.Errorf("mapped loopback listed as %v", got)
	}
}

func TestRegistry_BadAddressRefused(t *testing.T) {
	r := newTestRegistry(t, Config{})
	for _, a := range []string{"0.0.0.0:27960", "198.51.100.7:0", "224.0.0.1:27960", "255.255.255.255:27960", "[::]:1"} {
		if _, why := r.Heartbeat(t0, ap(a), q3hb); why != ReasonBadAddress {
			t.Errorf("%s: %v", a, why)
		}
	}
}

func TestRegistry_PrivateRefusedOnlyWhenConfigured(t *testing.T) {
	if _, why := newTestRegistry(t, Config{}).Heartbeat(t0, ap("192.168.1.5:27960"), q3hb); why != OK {
		t.Errorf("default: %v (dpmaster accepts private addresses)", why)
	}
	if _, why := newTestRegistry(t, Config{RefusePrivate: true}).Heartbeat(t0, ap("192.168.1.5:27960"), q3hb); why != ReasonPrivate {
		t.Errorf("RefusePrivate: %v", why)
	}
}

func TestRegistry_UnknownHeartbeat(t *testing.T) {
	r := newTestRegistry(t, Config{})
	if _, why := r.Heartbeat(t0, ap("198.51.100.7:27960"), Heartbeat{Family: game.FamilyQ3, Tag: "QuakeArena-2"}); why != ReasonUnknownHeartbeat {
		t.Errorf("got %v", why)
	}
}

func TestRegistry_MaxServersPerAddress(t *testing.T) {
	r := newTestRegistry(t, Config{MaxServersPerAddress: 2})
	for i, want := range []Reason{OK, OK, ReasonAddressFull} {
		if _, why := r.Heartbeat(t0, ap(fmt.Sprintf("198.51.100.7:%d", 27960+i)), q3hb); why != want {
			t.Errorf("server %d: %v, want %v", i, why, want)
		}
	}
	if _, why := r.Heartbeat(t0, ap("198.51.100.8:27960"), q3hb); why != OK {
		t.Errorf("other address: %v", why)
	}
}

func TestRegistry_IPv6PerSlash64(t *testing.T) {
	r := newTestRegistry(t, Config{MaxServersPerAddress: 2})
	for i, c := range []struct {
		a    string
		want Reason
	}{
		{"[2001:db8:1:2::1]:27960", OK},
		{"[2001:db8:1:2:ffff::9]:27960", OK},
		{"[2001:db8:1:2::77]:27961", ReasonAddressFull}, // same /64
		{"[2001:db8:1:3::1]:27960", OK},                 // next /64
	} {
		if _, why := r.Heartbeat(t0, ap(c.a), q3hb); why != c.want {
			t.Errorf("%d %s: %v, want %v", i, c.a, why, c.want)
		}
	}
}

func TestRegistry_MaxServersAndPending(t *testing.T) {
	r := newTestRegistry(t, Config{MaxServers: 3, MaxPending: 2})
	if _, why := r.Heartbeat(t0, ap("198.51.100.1:1"), q3hb); why != OK {
		t.Fatal(why)
	}
	if _, why := r.Heartbeat(t0, ap("198.51.100.2:1"), q3hb); why != OK {
		t.Fatal(why)
	}
	if _, why := r.Heartbeat(t0, ap("198.51.100.3:1"), q3hb); why != ReasonTooManyPending {
		t.Errorf("third pending: %v", why)
	}
	r2 := newTestRegistry(t, Config{MaxServers: 2})
	register(t, r2, t0, ap("198.51.100.1:1"))
	register(t, r2, t0, ap("198.51.100.2:1"))
	if _, why := r2.Heartbeat(t0, ap("198.51.100.3:1"), q3hb); why != ReasonServerListFull {
		t.Errorf("full list: %v", why)
	}
}

func TestRegistry_ChallengeExpired(t *testing.T) {
	lt := DefaultChallengeLifetime
	for _, c := range []struct {
		at   time.Duration
		want Reason
	}{
		{0, OK},
		{lt - time.Nanosecond, OK},
		{lt, ReasonChallengeExpired},
		{lt + time.Nanosecond, ReasonChallengeExpired},
	} {
		r := newTestRegistry(t, Config{})
		a := ap("198.51.100.7:27960")
		p, _ := r.Heartbeat(t0, a, q3hb)
		if _, _, why := r.Verify(t0.Add(c.at), a, infoReply(p.Challenge.Text)); why != c.want {
			t.Errorf("reply at +%v: %v, want %v", c.at, why, c.want)
		}
	}
}

func TestRegistry_SpoofedReplyFromOtherAddressRejected(t *testing.T) {
	r := newTestRegistry(t, Config{})
	victim, attacker := ap("198.51.100.7:27960"), ap("198.51.100.66:27960")
	p, _ := r.Heartbeat(t0, victim, q3hb)
	// From an address that was never challenged.
	if _, _, why := r.Verify(t0, attacker, infoReply(p.Challenge.Text)); why != ReasonUnknownServer {
		t.Errorf("unknown source: %v", why)
	}
	// From an address that was challenged, with the other one's challenge.
	r.Heartbeat(t0, attacker, q3hb)
	if _, _, why := r.Verify(t0, attacker, infoReply(p.Challenge.Text)); why != ReasonBadChallenge {
		t.Errorf("replayed challenge: %v", why)
	}
	if got := selectAll(r, t0, q71); len(got) != 0 {
		t.Errorf("listed %v", got)
	}
}

func TestRegistry_VerifyRules(t *testing.T) {
	a := ap("198.51.100.7:27960")
	for _, c := range []struct {
		name string
		kv   []string
		want Reason
	}{
		{"ok", nil, OK},
		{"no challenge", []string{"challenge", "\x00delete"}, ReasonMissingChallenge},
		{"wrong challenge", []string{"challenge", "AAAAAAAAAAAAAAAA"}, ReasonBadChallenge},
		{"backslash challenge", []string{"challenge", "A\\"}, ReasonBadChallenge},
		{"no protocol", []string{"protocol", "\x00delete"}, ReasonMissingProtocol},
		{"bad protocol", []string{"protocol", "7l"}, ReasonBadProtocol},
		{"maxclients 0", []string{"sv_maxclients", "0"}, ReasonNoMaxClients},
		{"no maxclients", []string{"sv_maxclients", "\x00delete"}, ReasonNoMaxClients},
		{"no clients", []string{"clients", "\x00delete"}, ReasonMissingClients},
		{"bad clients", []string{"clients", "x"}, ReasonMissingClients},
		{"gametype space", []string{"gametype", "capture the flag"}, ReasonBadGametype},
		{"gamename space", []string{"gamename", "Quake 3"}, ReasonBadGamename},
		{"gamename mismatch", []string{"gamename", "et"}, ReasonGamenameMismatch},
		{"no gamename, anonymous ok", []string{"gamename", "\x00delete"}, OK},
		{"KEY CASE", []string{"protocol", "\x00delete", "PROTOCOL", "71"}, OK},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTestRegistry(t, Config{})
			p, _ := r.Heartbeat(t0, a, q3hb)
			if _, _, why := r.Verify(t0, a, infoReply(p.Challenge.Text, c.kv...)); why != c.want {
				t.Errorf("got %v, want %v", why, c.want)
			}
		})
	}
}

func TestRegistry_DarkPlacesNeedsGamename(t *testing.T) {
	a := ap("198.51.100.7:27960")
	dp := Heartbeat{Family: game.FamilyQ3, Tag: "DarkPlaces"}
	r := newTestRegistry(t, Config{})
	p, _ := r.Heartbeat(t0, a, dp)
	if _, _, why := r.Verify(t0, a, infoReply(p.Challenge.Text, "gamename", "\x00delete")); why != ReasonMissingGamename {
		t.Errorf("no gamename: %v", why)
	}
	p, _ = r.Heartbeat(t0, a, dp)
	_ = p
	r = newTestRegistry(t, Config{})
	p, _ = r.Heartbeat(t0, a, dp)
	s, _, why := r.Verify(t0, a, infoReply(p.Challenge.Text, "gamename", "OpenArena"))
	if why != OK || s.Game != "OpenArena" {
		t.Fatalf("%v %+v", why, s)
	}
	got := selectAll(r, t0, Query{Family: game.FamilyQ3, Game: "OpenArena", Protocol: 71, Empty: true, Full: true})
	if len(got) != 1 {
		t.Errorf("getserversExt OpenArena 71 = %v", got)
	}
	if got := selectAll(r, t0, q71); len(got) != 0 {
		t.Errorf("anonymous getservers 71 listed the OpenArena-named server: %v", got)
	}
}

func TestRegistry_GamePolicy(t *testing.T) {
	pol, _ := game.ParsePolicy([]string{"reject", "Quake3Arena"})
	r := newTestRegistry(t, Config{Policy: pol})
	if _, why := r.Heartbeat(t0, ap("198.51.100.7:27960"), q3hb); why != ReasonGamePolicy {
		t.Errorf("heartbeat: %v", why)
	}
	if _, why := r.Select(t0, q71, nil); why != ReasonGamePolicy {
		t.Errorf("query: %v", why)
	}
}

func TestRegistry_HeartbeatAloneNeverExtends(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	// Heartbeats keep coming but the server never answers again.
	for m := time.Duration(1); m < 15; m++ {
		r.Heartbeat(t0.Add(m*time.Minute), a, q3hb)
		r.Expire(t0.Add(m*time.Minute+time.Second), nil) // unanswered checks
	}
	s, ok := r.Lookup(a)
	if ok && !s.LastVerified.Equal(t0) {
		t.Errorf("LastVerified moved to %v", s.LastVerified)
	}
	if ok {
		t.Errorf("server still registered after unanswered checks: %+v", s)
	}
}

func TestRegistry_HeartbeatNeverExtendsSilentExpiry(t *testing.T) {
	r := newTestRegistry(t, Config{MaxMissedProbes: 1000})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	for _, c := range []struct {
		at   time.Duration
		gone bool
	}{
		{DefaultTimeout - time.Nanosecond, false},
		{DefaultTimeout, true},
	} {
		rr := newTestRegistry(t, Config{MaxMissedProbes: 1000})
		register(t, rr, t0, a)
		// A heartbeat just before, without any reply.
		rr.Heartbeat(t0.Add(c.at-time.Nanosecond), a, q3hb)
		rem := rr.Expire(t0.Add(c.at), nil)
		gone := slices.ContainsFunc(rem, func(x Removal) bool { return x.Addr == a && x.Reason == ReasonSilent })
		if gone != c.gone {
			t.Errorf("at +%v: removed %v, want %v (%v)", c.at, gone, c.gone, rem)
		}
	}
}

func TestRegistry_FlatlineDoesNotDelistLiveServer(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	r.Heartbeat(t0, a, Heartbeat{Family: game.FamilyQ3, Tag: "EnemyTerritory-1"})
	p0, _ := r.Lookup(a)
	_ = p0
	// list an ET server
	r = newTestRegistry(t, Config{})
	et := Heartbeat{Family: game.FamilyQ3, Tag: "EnemyTerritory-1"}
	p, _ := r.Heartbeat(t0, a, et)
	if _, _, why := r.Verify(t0, a, infoReply(p.Challenge.Text, "gamename", "et", "protocol", "84")); why != OK {
		t.Fatal(why)
	}
	// A spoofed flatline: the master checks at once...
	fl := Heartbeat{Family: game.FamilyQ3, Tag: "ETFlatline-1"}
	p, why := r.Heartbeat(t0.Add(time.Minute), a, fl)
	if why != OK || p.Cause != CauseFlatline || p.To != a {
		t.Fatalf("flatline: %+v %v", p, why)
	}
	if rem := r.Expire(t0.Add(time.Minute), nil); len(rem) != 0 {
		t.Fatalf("flatline delisted at once: %v", rem)
	}
	// ...the live server answers, and stays listed.
	if _, _, why := r.Verify(t0.Add(time.Minute+time.Second), a, infoReply(p.Challenge.Text, "gamename", "et", "protocol", "84")); why != OK {
		t.Fatal(why)
	}
	if rem := r.Expire(t0.Add(2*time.Minute), nil); len(rem) != 0 {
		t.Errorf("removed %v", rem)
	}
	// A real shutdown: the check goes unanswered and the server goes, at
	// sentAt+ChallengeLifetime exactly.
	sent := t0.Add(3 * time.Minute)
	r.Heartbeat(sent, a, fl)
	if rem := r.Expire(sent.Add(DefaultChallengeLifetime-time.Nanosecond), nil); len(rem) != 0 {
		t.Errorf("removed early: %v", rem)
	}
	rem := r.Expire(sent.Add(DefaultChallengeLifetime), nil)
	if len(rem) != 1 || rem[0].Reason != ReasonCheckUnanswered || !rem[0].Listed {
		t.Errorf("removal = %v", rem)
	}
}

func TestRegistry_FlatlineFromUnlistedIgnored(t *testing.T) {
	r := newTestRegistry(t, Config{})
	if _, why := r.Flatline(t0, ap("198.51.100.7:27960")); why != ReasonNotListed {
		t.Errorf("got %v", why)
	}
}

func TestRegistry_ProbeOutstandingSendsNothingMore(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	r.Heartbeat(t0, a, q3hb)
	if _, why := r.Heartbeat(t0.Add(time.Millisecond), a, q3hb); why != ReasonProbeOutstanding {
		t.Errorf("second heartbeat: %v", why)
	}
}

func TestRegistry_PendingExpires(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	r.Heartbeat(t0, a, q3hb)
	if rem := r.Expire(t0.Add(DefaultChallengeLifetime-time.Nanosecond), nil); len(rem) != 0 {
		t.Errorf("early: %v", rem)
	}
	rem := r.Expire(t0.Add(DefaultChallengeLifetime), nil)
	if len(rem) != 1 || rem[0].Reason != ReasonChallengeTimedOut || rem[0].Listed {
		t.Errorf("got %v", rem)
	}
	if l, p := r.Counts(); l != 0 || p != 0 {
		t.Errorf("counts %d %d", l, p)
	}
}

func TestRegistry_ReprobeDue(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	due := t0.Add(game.Q3AReprobeInterval)
	if got := r.DueProbes(due.Add(-time.Nanosecond), nil, 0); len(got) != 0 {
		t.Errorf("early: %v", got)
	}
	got := r.DueProbes(due, nil, 0)
	if len(got) != 1 || got[0].Requests != game.GetStatus || got[0].Cause != CauseReprobe {
		t.Fatalf("got %+v", got)
	}
	// A statusResponse answers it; clients come from the player lines.
	rep := infoReply(got[0].Challenge.Text, "clients", "\x00delete")
	rep.Kind, rep.Players = ReplyStatus, 2
	s, ch, why := r.Verify(due.Add(time.Millisecond), a, rep)
	if why != OK || ch != ChangeUpdated || s.Clients != 2 {
		t.Errorf("%v %v %+v", why, ch, s)
	}
}

func TestRegistry_ETReprobe(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	p, _ := r.Heartbeat(t0, a, Heartbeat{Family: game.FamilyQ3, Tag: "EnemyTerritory-1"})
	r.Verify(t0, a, infoReply(p.Challenge.Text, "gamename", "et", "protocol", "84"))
	got := r.DueProbes(t0.Add(game.ETReprobeInterval), nil, 0)
	if len(got) != 1 || got[0].Requests != game.GetChallenge|game.GetStatus|game.GetInfo {
		t.Errorf("got %+v", got)
	}
}

func TestRegistry_MissedProbesDrop(t *testing.T) {
	r := newTestRegistry(t, Config{MaxMissedProbes: 2})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	now := t0
	var rem []Removal
	for i := 0; i < 2; i++ {
		now = now.Add(game.Q3AReprobeInterval)
		if len(r.DueProbes(now, nil, 0)) != 1 {
			t.Fatal("no probe")
		}
		rem = r.Expire(now.Add(DefaultChallengeLifetime), nil)
		if i == 0 && len(rem) != 0 {
			t.Fatalf("dropped after one miss: %v", rem)
		}
	}
	if len(rem) != 1 || rem[0].Reason != ReasonProbesUnanswered {
		t.Errorf("got %v", rem)
	}
}

func TestRegistry_GametypeFilters(t *testing.T) {
	r := newTestRegistry(t, Config{})
	ffaEmpty := register(t, r, t0, ap("198.51.100.1:27960"), "gametype", "0", "clients", "0")
	ffaBusy := register(t, r, t0, ap("198.51.100.2:27960"), "gametype", "0", "clients", "3")
	ctfFull := register(t, r, t0, ap("198.51.100.3:27960"), "gametype", "4", "clients", "8")
	tdmBusy := register(t, r, t0, ap("198.51.100.4:27960"), "gametype", "3", "clients", "1")
	sorted := func(q Query) []netip.AddrPort {
		got := selectAll(r, t0, q)
		slices.SortFunc(got, netip.AddrPort.Compare)
		return got
	}
	ctf, _ := GametypeShortcut("ctf")
	team, _ := GametypeShortcut("team")
	for _, c := range []struct {
		name string
		q    Query
		want []Server
	}{
		{"getservers 71", Query{Family: game.FamilyQ3, Protocol: 71}, []Server{ffaBusy, tdmBusy}},
		{"empty", Query{Family: game.FamilyQ3, Protocol: 71, Empty: true}, []Server{ffaEmpty, ffaBusy, tdmBusy}},
		{"full", Query{Family: game.FamilyQ3, Protocol: 71, Full: true}, []Server{ffaBusy, ctfFull, tdmBusy}},
		{"empty full", q71, []Server{ffaEmpty, ffaBusy, ctfFull, tdmBusy}},
		{"ctf full", Query{Family: game.FamilyQ3, Protocol: 71, Full: true, Gametype: ctf, HasGametype: true}, []Server{ctfFull}},
		{"team", Query{Family: game.FamilyQ3, Protocol: 71, Gametype: team, HasGametype: true}, []Server{tdmBusy}},
		{"gametype=0 empty", Query{Family: game.FamilyQ3, Protocol: 71, Empty: true, Gametype: "0", HasGametype: true}, []Server{ffaEmpty, ffaBusy}},
		{"other protocol", Query{Family: game.FamilyQ3, Protocol: 68, Empty: true, Full: true}, nil},
		{"ipv6 only", Query{Family: game.FamilyQ3, Protocol: 71, Empty: true, Full: true, IPv6: true}, nil},
	} {
		var want []netip.AddrPort
		for _, s := range c.want {
			want = append(want, s.Addr)
		}
		if got := sorted(c.q); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
	}
}

func TestRegistry_ETAlwaysGetsEmptyAndFull(t *testing.T) {
	r := newTestRegistry(t, Config{})
	for i, clients := range []string{"0", "8", "3"} {
		a := ap(fmt.Sprintf("198.51.100.%d:27960", i+1))
		p, _ := r.Heartbeat(t0, a, Heartbeat{Family: game.FamilyQ3, Tag: "EnemyTerritory-1"})
		if _, _, why := r.Verify(t0, a, infoReply(p.Challenge.Text, "gamename", "et", "protocol", "84", "clients", clients)); why != OK {
			t.Fatal(why)
		}
	}
	if got := selectAll(r, t0, Query{Family: game.FamilyQ3, Protocol: 84}); len(got) != 3 {
		t.Errorf("getservers 84 = %v", got)
	}
}

func TestRegistry_IPv6(t *testing.T) {
	r := newTestRegistry(t, Config{})
	v4 := register(t, r, t0, ap("198.51.100.1:27960"))
	v6 := register(t, r, t0, ap("[2001:db8::1]:27960"))
	for _, c := range []struct {
		q    Query
		want []netip.AddrPort
	}{
		{Query{Family: game.FamilyQ3, Game: "Quake3Arena", Protocol: 71, Empty: true, Full: true}, []netip.AddrPort{v4.Addr, v6.Addr}},
		{Query{Family: game.FamilyQ3, Game: "Quake3Arena", Protocol: 71, IPv4: true}, []netip.AddrPort{v4.Addr}},
		{Query{Family: game.FamilyQ3, Game: "Quake3Arena", Protocol: 71, IPv6: true}, []netip.AddrPort{v6.Addr}},
	} {
		got := selectAll(r, t0, c.q)
		slices.SortFunc(got, netip.AddrPort.Compare)
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.q, got, c.want)
		}
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

func TestRegistry_FairRotation(t *testing.T) {
	r := newTestRegistry(t, Config{MaxServersPerAddress: -1})
	const n = 50
	for i := range n {
		register(t, r, t0, ap(fmt.Sprintf("198.51.100.%d:27960", i+1)))
	}
	first := map[netip.AddrPort]int{}
	last := map[netip.AddrPort]int{}
	var prevStart netip.AddrPort
	for q := 0; q < n; q++ {
		got := selectAll(r, t0, q71)
		if len(got) != n {
			t.Fatalf("got %d servers", len(got))
		}
		first[got[0]]++
		last[got[n-1]]++
		if got[0] == prevStart {
			t.Errorf("query %d starts where the previous did", q)
		}
		prevStart = got[0]
	}
	if len(first) != n || len(last) != n {
		t.Errorf("over %d queries, %d distinct first and %d distinct last servers; want %d each", n, len(first), len(last), n)
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

func TestRegistry_SelectSkipsExpiredBeforeExpireRuns(t *testing.T) {
	r := newTestRegistry(t, Config{})
	register(t, r, t0, ap("198.51.100.7:27960"))
	if got := selectAll(r, t0.Add(DefaultTimeout-time.Nanosecond), q71); len(got) != 1 {
		t.Errorf("before timeout: %v", got)
	}
	if got := selectAll(r, t0.Add(DefaultTimeout), q71); len(got) != 0 {
		t.Errorf("at timeout: %v", got)
	}
}

func TestRegistry_SelectAllocs(t *testing.T) {
	r := newTestRegistry(t, Config{MaxServersPerAddress: -1})
	for i := range 200 {
		register(t, r, t0, ap(fmt.Sprintf("198.51.%d.%d:27960", i/250, i%250+1)))
	}
	dst := make([]netip.AddrPort, 0, 256)
	r.Select(t0, q71, dst)
	if n := testing.AllocsPerRun(100, func() { r.Select(t0, q71, dst[:0]) }); n != 0 {
		t.Errorf("Select allocates %v times", n)
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

// The info a server sent is served back as it came (for the HTTP list),
// in order, without the master's own echoed challenge.
func TestRegistry_InfoKeptWithoutChallenge(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("203.0.113.5:27960")
	s := register(t, r, t0, a, "hostname", "Team DM \\o/", "g_needpass", "0")
	got, ok := r.Lookup(a)
	if !ok {
		t.Fatal("not found")
	}
	for _, p := range got.Info {
		if p.Key == "challenge" {
			t.Fatalf("challenge kept: %v", got.Info)
		}
	}
	var want []Pair
	for _, p := range infoReply("x", "hostname", "Team DM \\o/", "g_needpass", "0").Info {
		if p.Key != "challenge" {
			want = append(want, p)
		}
	}
	if fmt.Sprint(got.Info) != fmt.Sprint(want) || fmt.Sprint(s.Info) != fmt.Sprint(want) {
		t.Fatalf("info %v / %v, want %v", got.Info, s.Info, want)
	}
	if packInfo(nil) != "" || unpackInfo("") != nil {
		t.Fatal("empty info")
	}
}

// TestReprobe_HeartbeatChecksDoNotPostponeIt: a server that heartbeats as
// often as it is re-probed (Quake III: both every 5 minutes) is still
// re-probed on time: a heartbeat's check verifies it but leaves the
// re-probe's schedule, which collects the player list, alone.
func TestReprobe_HeartbeatChecksDoNotPostponeIt(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	due := t0.Add(game.Q3AReprobeInterval)
	// A heartbeat and its check, verified, a minute before the re-probe.
	hbAt := due.Add(-time.Minute)
	p, why := r.Heartbeat(hbAt, a, Heartbeat{Family: game.FamilyQ3, Tag: "QuakeArena-1"})
	if why != OK || p.Cause != CauseHeartbeat {
		t.Fatalf("heartbeat: %v %+v", why, p)
	}
	if _, _, why := r.Verify(hbAt.Add(time.Millisecond), a, infoReply(p.Challenge.Text)); why != OK {
		t.Fatalf("verify: %v", why)
	}
	got := r.DueProbes(due, nil, 0)
	if len(got) != 1 || got[0].Cause != CauseReprobe || got[0].Requests != game.GetStatus {
		t.Fatalf("re-probe at %v: %+v, want the getstatus re-probe on its schedule", due.Sub(t0), got)
	}
}
