package master

import (
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

func TestMaster_SpoofedInfoResponseRejected(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv, spoofer := ap("203.0.113.5:27960"), ap("203.0.113.66:27960")
	c := challengeOf(t, f.in(srv, oaHeartbeat), KindGetInfo)
	// The right challenge from another address; a wrong challenge from
	// the right one; the right port on another host's challenge.
	f.in(spoofer, oaInfo(c))
	f.in(srv, oaInfo("AAAAAAAAAAAAAAAA"))
	f.in(srv, oaInfo(c[:15]+"x"))
	if s, _ := f.h.Registry().Lookup(srv); s.Listed {
		t.Fatal("listed on a spoofed reply")
	}
	if f.h.Stats().Dropped(ReasonUnknownServer) != 1 || f.h.Stats().Dropped(ReasonBadChallenge) != 2 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	// The real reply still lists it.
	f.in(srv, oaInfo(c))
	if s, _ := f.h.Registry().Lookup(srv); !s.Listed {
		t.Fatalf("not listed: %v", f.dropSummary())
	}
}

func TestMaster_ChallengeExpired(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.5:27960")
	c := challengeOf(t, f.in(srv, oaHeartbeat), KindGetInfo)
	f.now = t0.Add(DefaultChallengeLifetime) // exactly at the limit: too late
	f.in(srv, oaInfo(c))
	if f.h.Stats().Dropped(ReasonChallengeExpired) != 1 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	// One nanosecond earlier it would have been accepted.
	g := newHandlerFix(t, Config{}, nil)
	c = challengeOf(t, g.in(srv, oaHeartbeat), KindGetInfo)
	g.now = t0.Add(DefaultChallengeLifetime - time.Nanosecond)
	g.in(srv, oaInfo(c))
	if s, _ := g.h.Registry().Lookup(srv); !s.Listed {
		t.Fatalf("not listed 1ns before expiry: %v", g.dropSummary())
	}
}

func TestMaster_UnknownHeartbeat(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	if out := f.in(ap("203.0.113.5:27960"), oob("heartbeat SomethingElse-1\n")); len(out) != 0 {
		t.Fatalf("probed on an unknown heartbeat: %v", out)
	}
	if f.h.Stats().Dropped(ReasonUnknownHeartbeat) != 1 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	// DarkPlaces heartbeats are not unknown: the reply names the game.
	srv := ap("203.0.113.6:26000")
	out := f.in(srv, xxdFile(t, "../protocol/q3/testdata/openarena_heartbeat_darkplaces.hex"))
	c := challengeOf(t, out, KindGetInfo)
	f.in(srv, oaInfo(c, "gamename", "OpenArena"))
	got, _, _ := f.query(t, client, "getservers OpenArena 71 empty full")
	if len(got) != 1 || got[0] != srv {
		t.Fatalf("DarkPlaces form -> %v (%v)", got, f.dropSummary())
	}
}

func TestMaster_LoopbackRefused(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	for _, a := range []string{"127.0.0.1:27960", "[::1]:27960", "[::ffff:127.0.0.1]:27960"} {
		if out := f.in(ap(a), oaHeartbeat); len(out) != 0 {
			t.Errorf("%s: probed", a)
		}
	}
	if f.h.Stats().Dropped(ReasonLoopback) != 3 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	g := newHandlerFix(t, Config{AllowLoopback: true}, nil)
	g.list(t, ap("127.0.0.1:27960"))
}

func TestMaster_MaxServersPerAddress(t *testing.T) {
	f := newHandlerFix(t, Config{MaxServersPerAddress: 2}, nil)
	f.list(t, ap("203.0.113.5:27960"))
	f.list(t, ap("203.0.113.5:27961"))
	if out := f.in(ap("203.0.113.5:27962"), oaHeartbeat); len(out) != 0 {
		t.Fatal("third server on the address probed")
	}
	if f.h.Stats().Dropped(ReasonAddressFull) != 1 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	// IPv6: per /64.
	f.list(t, ap("[2001:db8:1:2::1]:27960"))
	f.list(t, ap("[2001:db8:1:2::2]:27960"))
	if out := f.in(ap("[2001:db8:1:2:ffff::3]:27960"), oaHeartbeat); len(out) != 0 {
		t.Fatal("third server in the /64 probed")
	}
	f.list(t, ap("[2001:db8:1:3::1]:27960")) // another /64
}

func TestMaster_StatusResponseOfIoquake3(t *testing.T) {
	// The Q3A re-probe is getstatus; ioquake3's serverinfo says
	// com_protocol and gamename\baseoa (the mod), and must still verify.
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.5:27960")
	f.list(t, srv)
	answerReprobe(t, f, srv)
	s, _ := f.h.Registry().Lookup(srv)
	if !s.LastVerified.Equal(f.now) || s.Clients != 3 || s.Game != "Quake3Arena" {
		t.Fatalf("after statusResponse: %+v, drops %v", s, f.dropSummary())
	}
}

func TestMaster_Flatline(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.9:27960")
	c := challengeOf(t, f.in(srv, oob("heartbeat EnemyTerritory-1\n")), KindGetInfo)
	f.in(srv, oaInfo(c, "gamename", "et", "protocol", "84"))
	// A flatline triggers a check; a live server answers and stays.
	out := f.in(srv, oob("heartbeat ETFlatline-1\n"))
	c = challengeOf(t, out, KindGetInfo)
	f.now = f.now.Add(time.Second)
	f.in(srv, oaInfo(c, "gamename", "et", "protocol", "84"))
	f.now = f.now.Add(DefaultChallengeLifetime)
	f.h.Tick(f.now, nil)
	if s, ok := f.h.Registry().Lookup(srv); !ok || !s.Listed {
		t.Fatal("live server delisted by a (spoofed) flatline")
	}
	// A server that is gone does not answer: dropped, and deleted from
	// the store, once the check's lifetime has passed (and not before).
	f.in(srv, oob("heartbeat ETFlatline-1\n"))
	f.h.Tick(f.now.Add(DefaultChallengeLifetime-time.Nanosecond), nil)
	if _, ok := f.h.Registry().Lookup(srv); !ok {
		t.Fatal("dropped before the check expired")
	}
	f.h.Tick(f.now.Add(DefaultChallengeLifetime), nil)
	if _, ok := f.h.Registry().Lookup(srv); ok {
		t.Fatal("silent server still listed after flatline")
	}
	if len(f.st.del) != 1 || f.st.del[0] != srv {
		t.Fatalf("store deletes %v", f.st.del)
	}
	// ioquake3's shutdown: two identical heartbeats; the second finds the
	// check in flight and sends nothing more.
	g := newHandlerFix(t, Config{}, nil)
	g.list(t, srv)
	hb := xxdFile(t, "../protocol/q3/testdata/openarena_shutdown_heartbeat_pair_2nd.hex")
	if len(g.in(srv, hb)) != 1 || len(g.in(srv, hb)) != 0 {
		t.Fatal("shutdown pair: want one check")
	}
	g.h.Tick(g.now.Add(DefaultChallengeLifetime), nil)
	if _, ok := g.h.Registry().Lookup(srv); ok {
		t.Fatal("shut-down ioquake3 server still listed")
	}
}

func TestMaster_Register(t *testing.T) {
	peer, upstream := ap("192.0.2.10:27950"), ap("192.0.2.20:27950")
	f := newHandlerFix(t, Config{}, func(c *handlerSetup) {
		c.Peers = []netip.AddrPort{peer}
		c.Upstreams = []netip.AddrPort{upstream}
	})
	srv := ap("203.0.113.5:27960")
	reg, _ := q3.Register{Server: srv}.AppendBinary(nil)
	if out := f.in(ap("192.0.2.99:27950"), reg); len(out) != 0 {
		t.Fatal("register from a stranger probed")
	}
	if f.h.Stats().Dropped(ReasonNotPeer) != 1 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	out := f.in(peer, reg)
	if len(out) != 1 || out[0].To != srv {
		t.Fatalf("register from a peer -> %v", out)
	}
	out = f.in(srv, oaInfo(challengeOf(t, out, KindGetInfo)))
	if s, _ := f.h.Registry().Lookup(srv); !s.Listed {
		t.Fatalf("registered server not listed: %v", f.dropSummary())
	}
	// Verified: forwarded upstream as register.
	if len(out) != 1 || out[0].To != upstream || out[0].Kind != KindRegister {
		t.Fatalf("forward -> %v", out)
	}
	m, err := q3.Parse(out[0].Payload)
	if err != nil || m.(q3.Register).Server != srv {
		t.Fatalf("forwarded %v, %v", m, err)
	}
}
