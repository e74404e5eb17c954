package master

import (
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

// TestMaster_PlayersFromStatusResponse: the re-probe's statusResponse (the
// real OpenArena capture, three bots) gives the player list through the
// handler; an infoResponse after it leaves the list; a drop forgets it.
func TestMaster_PlayersFromStatusResponse(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.5:27960")
	f.list(t, srv)
	if _, _, ok := f.h.Registry().Players(srv); ok {
		t.Fatal("players before any statusResponse")
	}
	sr := answerReprobe(t, f, srv)
	ps, at, ok := f.h.Registry().Players(srv)
	if !ok || !at.Equal(f.now) || len(ps) != len(sr.Players) {
		t.Fatalf("players %+v at %v, %v; want %d", ps, at, ok, len(sr.Players))
	}
	for i, p := range sr.Players {
		if ps[i] != (Player{Name: p.Name, Score: p.Score, Ping: p.Ping, Since: f.now.Truncate(time.Second)}) {
			t.Errorf("player %d: %+v, want %+v", i, ps[i], p)
		}
	}
	// An infoResponse (a heartbeat's check) lists no players: kept.
	f.list(t, srv)
	if ps2, _, _ := f.h.Registry().Players(srv); len(ps2) != len(ps) {
		t.Errorf("after an infoResponse: %+v", ps2)
	}
}

// TestPackPlayers: the bounds hold and the encoding round-trips.
func TestPackPlayers(t *testing.T) {
	since := time.Unix(1_800_000_000, 0)
	in := []Player{{"^1Bob", -3, 50, since}, {"", 0, 0, time.Time{}}, {strings.Repeat("x", 100), 7, 999, since}, {"a\x00b", 1, 2, since}}
	got := unpackPlayers(packPlayers(in))
	want := []Player{{"^1Bob", -3, 50, since}, {"", 0, 0, time.Time{}}, {strings.Repeat("x", MaxPlayerNameBytes), 7, 999, since}, {"ab", 1, 2, since}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
	many := make([]Player, 100)
	if n := len(unpackPlayers(packPlayers(many))); n != MaxPlayersKept {
		t.Errorf("%d players kept, want %d", n, MaxPlayersKept)
	}
}

// TestRegistry_Version: the version moves with what a list shows (listed,
// clients, info, dropped, restored and verified again) and not with a
// re-probe that finds nothing new.
func TestRegistry_Version(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	v0 := r.Version()
	register(t, r, t0, a)
	v1 := r.Version()
	if v1 == v0 {
		t.Fatal("listing left the version")
	}
	verify := func(now time.Time, kv ...string) Change {
		t.Helper()
		p, why := r.Heartbeat(now, a, q3hb)
		if why != OK {
			t.Fatal(why)
		}
		_, ch, why := r.Verify(now, a, infoReply(p.Challenge.Text, kv...))
		if why != OK {
			t.Fatal(why)
		}
		return ch
	}
	if ch := verify(t0.Add(time.Minute)); ch != ChangeRefreshed || r.Version() != v1 {
		t.Errorf("a refresh: %v, version %d -> %d", ch, v1, r.Version())
	}
	if ch := verify(t0.Add(2*time.Minute), "clients", "4"); ch != ChangeUpdated || r.Version() == v1 {
		t.Errorf("a player joined: %v, version %d -> %d", ch, v1, r.Version())
	}
	v2 := r.Version()
	if verify(t0.Add(3*time.Minute), "mapname", "oa_dm2"); r.Version() == v2 {
		t.Error("a map change left the version")
	}
	v3 := r.Version()
	if rem := r.Expire(t0.Add(time.Hour), nil); len(rem) != 1 || r.Version() == v3 {
		t.Errorf("a drop: %v, version %d -> %d", rem, v3, r.Version())
	}
	v4 := r.Version()
	// Restored with exactly what the next reply says: that reply changes
	// nothing but the last-verified time, which a list shows.
	info := infoReply("x").Info
	s := Server{Addr: a, Listed: true, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 71, Gametype: "0",
		Clients: 3, MaxClients: 8, Info: info[:len(info)-1]}
	if n, _ := r.Restore(t0.Add(time.Hour), []Server{s}); n != 1 || r.Version() == v4 {
		t.Fatalf("restore: %d, version %d -> %d", n, v4, r.Version())
	}
	v5 := r.Version()
	if ch := verify(t0.Add(time.Hour + time.Second)); ch != ChangeRefreshed || r.Version() == v5 {
		t.Errorf("a restored server verified again: %v, version %d -> %d", ch, v5, r.Version())
	}
}
