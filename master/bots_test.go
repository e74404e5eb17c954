package master

import (
	"fmt"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/q3"
)

// TestBots_FromInfoResponse: the keys each engine's infoResponse counts
// its humans or bots with: Debian's OpenArena with three bots
// (g_humanplayers 0, clients 3), ET: Legacy's humans, DarkPlaces' bots.
func TestBots_FromInfoResponse(t *testing.T) {
	for _, c := range []struct {
		name string
		kv   []string
		bots int
	}{
		{"openarena-0.8.8-3bots", nil, 3}, // the vector: clients 3, g_humanplayers 0
		{"ioquake3-1human-2bots", []string{"g_humanplayers", "1"}, 2},
		{"etlegacy-humans", []string{"g_humanplayers", "\x00delete", "humans", "2"}, 1},
		{"darkplaces-bots", []string{"g_humanplayers", "\x00delete", "bots", "2"}, 2},
		{"no-key", []string{"g_humanplayers", "\x00delete"}, 0},
		{"humans-above-clients", []string{"g_humanplayers", "9"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTestRegistry(t, Config{})
			s := register(t, r, t0, ap("198.51.100.7:27960"), c.kv...)
			if s.Bots != c.bots || s.Humans() != 3-c.bots {
				t.Fatalf("bots %d humans %d; want %d and %d", s.Bots, s.Humans(), c.bots, 3-c.bots)
			}
			if l, _ := r.Lookup(s.Addr); l.Bots != c.bots {
				t.Fatalf("Lookup: bots %d", l.Bots)
			}
		})
	}
}

// TestBots_PingZeroInStatusResponse: the real statusResponse of Debian's
// OpenArena with three bots added by +addbot lists them with ping 0: three
// bots, whatever the infoResponse before it said.
func TestBots_PingZeroInStatusResponse(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.5:27960")
	f.list(t, srv, "g_humanplayers", "\x00delete")
	if s, _ := f.h.Registry().Lookup(srv); s.Bots != 0 {
		t.Fatalf("bots %d before the statusResponse", s.Bots)
	}
	answerReprobe(t, f, srv)
	s, _ := f.h.Registry().Lookup(srv)
	if s.Bots != 3 || s.Humans() != 0 || s.Clients != 3 {
		t.Fatalf("clients %d bots %d humans %d; want 3, 3, 0", s.Clients, s.Bots, s.Humans())
	}
}

// statusWith is a statusResponse for the OpenArena server with the
// players given ("name:ping") and extra serverinfo.
func statusWith(challenge string, kv []string, players ...q3.Player) []byte {
	info := "\\sv_maxclients\\16\\com_protocol\\71\\gamename\\baseoa\\mapname\\oa_dm1\\challenge\\" + challenge
	for i := 0; i+1 < len(kv); i += 2 {
		info += "\\" + kv[i] + "\\" + kv[i+1]
	}
	b := []byte(q3.Prefix + "statusResponse\n" + info + "\n")
	for _, p := range players {
		b = append(b, fmt.Sprintf("%d %d %q\n", p.Score, p.Ping, p.Name)...)
	}
	return b
}

// reprobe ticks to the server's next re-probe and answers it with a
// statusResponse of players.
func reprobe(t *testing.T, f *hfix, srv interface{ String() string }, kv []string, players ...q3.Player) {
	t.Helper()
	f.now = f.now.Add(game.Q3AReprobeInterval)
	c := challengeOf(t, f.h.Tick(f.now, nil), KindGetStatus)
	f.in(ap(srv.String()), statusWith(c, kv, players...))
}

// TestBots_OmnibotPlaying: ET's omnibot_playing counts bots that a mod
// gives a ping; a value of 0 or -1 (mods that report it wrong) never
// lowers the ping-0 count.
func TestBots_OmnibotPlaying(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.5:27960")
	f.list(t, srv)
	players := []q3.Player{{Name: "[BOT]A", Ping: 50}, {Name: "[BOT]B", Ping: 50}, {Name: "C", Ping: 0}, {Name: "Dave", Ping: 80}}
	reprobe(t, f, srv, []string{"omnibot_playing", "3"}, players...)
	if s, _ := f.h.Registry().Lookup(srv); s.Bots != 3 || s.Humans() != 1 {
		t.Fatalf("bots %d humans %d; want 3 and 1", s.Bots, s.Humans())
	}
	reprobe(t, f, srv, []string{"omnibot_playing", "-1"}, players...)
	if s, _ := f.h.Registry().Lookup(srv); s.Bots != 1 {
		t.Fatalf("bots %d; want the ping-0 count 1", s.Bots)
	}
}

// TestBots_SuspectedAfterLongStay: players that never leave the roster
// for SuspectAfter are suspected bots, apart from the bots and the
// humans; one that left and came back is timed from its return.
func TestBots_SuspectedAfterLongStay(t *testing.T) {
	f := newHandlerFix(t, Config{SuspectAfter: 2 * time.Hour}, nil)
	srv := ap("203.0.113.5:27960")
	f.list(t, srv)
	stay := []q3.Player{{Name: "^1Padder", Ping: 48}, {Name: "Bot", Ping: 0}}
	start := f.now.Add(game.Q3AReprobeInterval)
	var s Server
	for f.now.Sub(start) < 2*time.Hour-game.Q3AReprobeInterval {
		reprobe(t, f, srv, nil, append(stay, q3.Player{Name: "Visitor", Ping: 90})...)
		if s, _ = f.h.Registry().Lookup(srv); s.SuspectedBots != 0 {
			t.Fatalf("suspected after %v", f.now.Sub(start))
		}
	}
	// The visitor leaves for one re-probe and comes back; the padder
	// stays: two hours on, the padder alone is suspected.
	reprobe(t, f, srv, nil, stay...)
	reprobe(t, f, srv, nil, append(stay, q3.Player{Name: "Visitor", Ping: 90})...)
	s, _ = f.h.Registry().Lookup(srv)
	if s.Clients != 3 || s.Bots != 1 || s.SuspectedBots != 1 || s.Humans() != 1 {
		t.Fatalf("clients %d bots %d suspected %d humans %d; want 3, 1, 1, 1", s.Clients, s.Bots, s.SuspectedBots, s.Humans())
	}
	ps, at, _ := f.h.Registry().Players(srv)
	for _, p := range ps {
		if got, want := f.h.Registry().Suspected(p, at), p.Name == "^1Padder"; got != want {
			t.Errorf("%q suspected %v (since %v)", p.Name, got, p.Since)
		}
	}
}

// TestBots_Quake4PingZero: a Doom 3 family infoResponse lists its
// players; those with ping 0 are bots.
func TestBots_Quake4PingZero(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:28004")
	p, why := r.Heartbeat(t0, a, Heartbeat{Family: game.FamilyDoom3})
	if why != OK {
		t.Fatal(why)
	}
	rep := Reply{Kind: ReplyInfo, Info: []Pair{{"si_maxPlayers", "8"}, {"si_name", "q4"}}, Players: 3,
		Challenge32: p.Challenge.Int32, Protocol: game.Doom3Version(2, 85), HasPlayerList: true,
		PlayerList: []Player{{Name: "a", Ping: 0}, {Name: "b", Ping: 60}, {Name: "c", Ping: 0}}}
	s, _, why := r.Verify(t0, a, rep)
	if why != OK || s.Bots != 2 || s.Humans() != 1 {
		t.Fatalf("%v: bots %d humans %d", why, s.Bots, s.Humans())
	}
}
