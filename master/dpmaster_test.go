package master

import (
	"bytes"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/scout-discovery/scout/game"
)

// The dpmaster 2.x behaviours (doc/manual.txt "GAME PROPERTIES",
// doc/techinfo.txt "PROTOCOL") scout reproduces, one test per rule.

// listAs registers the server at a through the handler with heartbeat tag
// tag and the OpenArena infoResponse changed by kv.
func (f *hfix) listAs(t testing.TB, a netip.AddrPort, tag string, kv ...string) {
	t.Helper()
	out := f.in(a, oob("heartbeat "+tag+"\n"))
	c := challengeOf(t, out, KindGetInfo)
	if out := f.in(a, oaInfo(c, kv...)); len(out) != 0 {
		t.Fatalf("reply to an infoResponse: %v", out)
	}
	if s, ok := f.h.Registry().Lookup(a); !ok || !s.Listed {
		t.Fatalf("%v not listed (drops %v)", a, f.dropSummary())
	}
}

// queryAnswered sends req and returns the servers of its answer, failing
// if nothing is sent back.
func (f *hfix) queryAnswered(t testing.TB, req string) []netip.AddrPort {
	t.Helper()
	got, _, n := f.query(t, client, req)
	if n == 0 {
		t.Fatalf("%q: no answer (drops %v)", req, f.dropSummary())
	}
	slices.SortFunc(got, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return got
}

// dpmaster reads the infoResponse's protocol with strtol: "protocol\-1" is
// protocol -1, listed, and asked for with "getservers NAME -1" (and, for an
// anonymous game, "getservers -7": see TestGetServers_UnknownProtocolUsesAnonymousGameWithServers).
func TestInfoResponse_NegativeProtocol(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	dp, q3a := ap("198.51.100.10:26000"), ap("198.51.100.11:27960")
	f.listAs(t, dp, "DarkPlaces", "gamename", "Xonotic", "protocol", "-1")
	f.listAs(t, q3a, "QuakeArena-1", "protocol", "-7")
	if s, _ := f.h.Registry().Lookup(dp); s.Protocol != -1 || s.Game != "Xonotic" {
		t.Fatalf("listed as %+v", s)
	}
	for req, want := range map[string][]netip.AddrPort{
		"getservers Xonotic -1":          {dp},
		"getserversExt Xonotic -1 ipv4":  {dp},
		"getservers Xonotic 1":           nil,
		"getserversExt Quake3Arena -7\n": {q3a},
	} {
		if got := f.queryAnswered(t, req); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", req, got, want)
		}
	}
	// Still a number, and still 32 bits.
	for _, bad := range []string{"-", "-1x", "-2147483649"} {
		r := newTestRegistry(t, Config{})
		p, _ := r.Heartbeat(t0, q3a, q3hb)
		if _, _, why := r.Verify(t0, q3a, infoReply(p.Challenge.Text, "protocol", bad)); why != ReasonBadProtocol {
			t.Errorf("protocol %q: %v, want %v", bad, why, ReasonBadProtocol)
		}
	}
}

// "getservers 84 " (a trailing space, no option), as old Enemy Territory
// clients send it, is answered: dpmaster's option loop skips empty words.
func TestGetServers_TrailingSpace(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	et := ap("198.51.100.12:27960")
	f.listAs(t, et, "EnemyTerritory-1", "gamename", "et", "protocol", "84", "clients", "0")
	for _, req := range []string{"getservers 84 ", "getservers 84  ", "getservers 84 empty ", "getserversExt et 84 \t"} {
		if got := f.queryAnswered(t, req); !slices.Equal(got, []netip.AddrPort{et}) {
			t.Errorf("%q: %v, want %v", req, got, et)
		}
	}
	// A protocol no game has and no server uses: the empty list, not silence.
	if got := f.queryAnswered(t, "getservers 20 "); len(got) != 0 {
		t.Errorf("getservers 20: %v", got)
	}
	if n := f.h.Stats().Dropped(ReasonMalformed); n != 0 {
		t.Errorf("%d dropped as malformed", n)
	}
	// A cut word is still refused: "getservers 8" would ask for protocol 8.
	if out := f.in(client, oob("getservers gametype= ")); len(out) != 0 {
		t.Errorf("answered a request without its protocol: %v", out)
	}
}

// logBuffer collects a handler's log lines (every level) for tests.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// has reports whether some line holds every one of parts.
func (l *logBuffer) has(parts ...string) bool { return l.count(parts...) > 0 }

// count returns the lines that hold every one of parts.
func (l *logBuffer) count(parts ...string) int {
	n := 0
lines:
	for _, line := range strings.Split(l.String(), "\n") {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue lines
			}
		}
		n++
	}
	return n
}

// The game name is mandatory in getserversExt: dpmaster answers
// "getserversExt 68 empty ipv6" (early ioquake3) with nothing at all, not
// with an empty list. scout counts the drop under its own reason.
func TestGetServersExt_NoGameNameIsSilent(t *testing.T) {
	var logs logBuffer
	f := newHandlerFix(t, Config{}, func(c *HandlerConfig) { c.Logger = logs.logger() })
	f.list(t, ap("198.51.100.13:27960"))
	for i, req := range []string{"getserversExt 71 empty ipv6", "getserversExt 71", "getserversExt -1 full\n", "getserversExt 71 "} {
		if out := f.in(client, oob(req)); len(out) != 0 {
			t.Errorf("%q answered: %v", req, out)
		}
		if n := f.h.Stats().Dropped(ReasonExtWithoutGame); n != uint64(i+1) {
			t.Errorf("%q: %d drops counted as %v, want %d", req, n, ReasonExtWithoutGame, i+1)
		}
	}
	if !logs.has(`reason=ext_without_game`) {
		t.Errorf("the drop is not logged: %q", logs.String())
	}
	// With the name, the same request is answered.
	if got := f.queryAnswered(t, "getserversExt Quake3Arena 71 empty ipv4 ipv6"); len(got) != 1 {
		t.Errorf("named getserversExt: %v", got)
	}
}

// An anonymous getservers for a protocol in no game's protocol list is for
// the anonymous game whose listed servers use it (dpmaster: "protocol
// numbers are hints, not reservations"): custom ioquake3 builds, test
// protocols, old versions. The game with the most such servers wins, the
// first in catalogue order on a tie; that game's options apply; a server
// that named its game with a DarkPlaces heartbeat does not count; and a
// protocol that a game lists is that game's, whatever servers use it.
func TestGetServers_UnknownProtocolUsesAnonymousGameWithServers(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	q1, q2 := ap("198.51.100.20:27960"), ap("198.51.100.21:27960")
	neg := ap("198.51.100.22:27960")
	et1, et2, et3 := ap("198.51.100.30:27960"), ap("198.51.100.31:27960"), ap("198.51.100.32:27960")
	dp := ap("198.51.100.40:26000")
	f.listAs(t, q1, "QuakeArena-1", "protocol", "1071")
	f.listAs(t, q2, "QuakeArena-1", "protocol", "1071", "clients", "8") // full
	f.listAs(t, neg, "QuakeArena-1", "protocol", "-7")
	f.listAs(t, et1, "EnemyTerritory-1", "gamename", "et", "protocol", "1071", "clients", "0")
	f.listAs(t, dp, "DarkPlaces", "gamename", "Xonotic", "protocol", "555")
	for req, want := range map[string][]netip.AddrPort{
		"getservers 1071":          {q1},     // 2 Quake3Arena servers against 1 et
		"getservers 1071 full":     {q1, q2}, // the game's servers, then the filters
		"getservers 1071 ffa full": {q1, q2},
		"getservers -7 ":           {neg},
		"getservers 555":           nil, // Xonotic named itself: ask "getservers Xonotic 555"
		"getservers Xonotic 555":   {dp},
		"getservers 9999":          nil,
	} {
		if got := f.queryAnswered(t, req); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", req, got, want)
		}
	}
	// ET catches up: a tie goes to the first in catalogue order
	// (Quake3Arena), a majority to et, whose clients get empty and full
	// servers without asking (its options).
	f.listAs(t, et2, "EnemyTerritory-1", "gamename", "et", "protocol", "1071", "clients", "8")
	if got := f.queryAnswered(t, "getservers 1071 full"); !slices.Equal(got, []netip.AddrPort{q1, q2}) {
		t.Errorf("tie: %v, want the Quake3Arena servers", got)
	}
	f.listAs(t, et3, "EnemyTerritory-1", "gamename", "et", "protocol", "1071")
	if got := f.queryAnswered(t, "getservers 1071"); !slices.Equal(got, []netip.AddrPort{et1, et2, et3}) {
		t.Errorf("et majority: %v, want every et server", got)
	}
	// A listed protocol is its game's alone: 84 is et's, even with only
	// Quake3Arena servers on it.
	f.listAs(t, ap("198.51.100.23:27960"), "QuakeArena-1", "protocol", "84")
	if got := f.queryAnswered(t, "getservers 84"); len(got) != 0 {
		t.Errorf("getservers 84: %v, want et's (none)", got)
	}
	// The game found is subject to --game-policy, as any.
	g := newHandlerFix(t, Config{Policy: mustPolicy(t, "reject", "Quake3Arena")}, nil)
	g.listAs(t, et1, "EnemyTerritory-1", "gamename", "et", "protocol", "1071")
	if got := g.queryAnswered(t, "getservers 1071"); !slices.Equal(got, []netip.AddrPort{et1}) {
		t.Errorf("policy: %v", got)
	}
}

func mustPolicy(t testing.TB, words ...string) game.Policy {
	t.Helper()
	p, err := game.ParsePolicy(words)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
