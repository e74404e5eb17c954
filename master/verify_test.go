package master

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

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
