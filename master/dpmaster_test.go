package master

import (
	"bytes"
	"encoding/hex"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
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

func (l *logBuffer) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
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
	f := newHandlerFix(t, Config{}, func(c *handlerSetup) { c.Logger = logs.logger() })
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

// q4InfoGametype is the Quake 4 infoResponse of q4InfoPacket with
// si_gameType set to gt.
func q4InfoGametype(t testing.TB, challenge int32, gt string) []byte {
	t.Helper()
	m, err := q4.ParseInfoResponse(q4InfoPacket(t, challenge, 2))
	if err != nil {
		t.Fatal(err)
	}
	set := false
	for i := range m.Info {
		if strings.EqualFold(m.Info[i].Key, "si_gameType") {
			m.Info[i].Value, set = gt, true
		}
	}
	if !set {
		m.Info = append(m.Info, infostring.Pair{Key: "si_gameType", Value: gt})
	}
	b, err := m.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Quake 4's si_gameType values include "Team DM" and "Arena CTF": such
// servers are listed, keep their gametype as sent, and are answered to
// getServers. The Quake III family keeps dpmaster's no-whitespace rule; a
// control byte is refused in both; a gametype longer than MaxGametypeLen
// is listed cut, and a getservers filter is cut the same way.
func TestQuake4_GametypeWithSpaceListed(t *testing.T) {
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, nil)
	list := func(srv netip.AddrPort, gt string) Reason {
		t.Helper()
		out := f.in(srv, []byte("\xff\xffheartbeat\x00"))
		if len(out) != 1 {
			t.Fatalf("Q4 heartbeat -> %v", out)
		}
		gi, err := q4.ParseGetInfo(out[0].Payload)
		if err != nil {
			t.Fatal(err)
		}
		before := f.dropSummary()
		f.in(srv, q4InfoGametype(t, gi.Challenge, gt))
		if s, ok := f.h.Registry().Lookup(srv); ok && s.Listed {
			if s.Gametype != gt {
				t.Errorf("%q listed as %q", gt, s.Gametype)
			}
			return OK
		}
		for _, r := range Reasons() {
			if f.dropSummary()[r.String()] > before[r.String()] {
				return r
			}
		}
		return numReasons
	}
	tdm, actf := ap("203.0.113.50:28004"), ap("203.0.113.51:28004")
	for srv, gt := range map[netip.AddrPort]string{tdm: "Team DM", actf: "Arena CTF"} {
		if why := list(srv, gt); why != OK {
			t.Fatalf("%q: %v", gt, why)
		}
	}
	if why := list(ap("203.0.113.52:28004"), "Team\tDM"); why != ReasonBadGametype {
		t.Errorf("a tab: %v, want %v", why, ReasonBadGametype)
	}
	fig6, _ := hex.DecodeString("ffff67657453657276657273005500028000000000")
	out := f.in(client, fig6)
	if len(out) != 1 {
		t.Fatalf("getServers -> %v (%v)", out, f.dropSummary())
	}
	sv, err := q4.ParseServers(out[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	got := slices.SortedFunc(slices.Values(sv.Servers), netip.AddrPort.Compare)
	if want := []netip.AddrPort{tdm, actf}; !slices.Equal(got, want) {
		t.Errorf("getServers: %v, want %v", got, want)
	}
	// What the HTTP list and the store read.
	var gts []string
	for _, s := range f.h.Registry().Servers(nil) {
		gts = append(gts, s.Gametype)
	}
	slices.Sort(gts)
	if !slices.Equal(gts, []string{"Arena CTF", "Team DM"}) {
		t.Errorf("Servers() gametypes %q", gts)
	}

	// Quake III family.
	r := newTestRegistry(t, Config{})
	q3a := ap("198.51.100.60:27960")
	long := strings.Repeat("g", MaxGametypeLen) + "-and-more"
	for gt, want := range map[string]Reason{
		"capture the flag": ReasonBadGametype,
		"ctf\x01":          ReasonBadGametype,
		"ctf\x7f":          ReasonBadGametype,
		"élimination":      OK,
		long:               OK,
	} {
		p, _ := r.Heartbeat(t0, q3a, q3hb)
		s, _, why := r.Verify(t0, q3a, infoReply(p.Challenge.Text, "gametype", gt))
		if why != want {
			t.Errorf("gametype %q: %v, want %v", gt, why, want)
		}
		if why == OK && s.Gametype != cutGametype(gt) {
			t.Errorf("gametype %q listed as %q", gt, s.Gametype)
		}
		r.Expire(t0.Add(time.Hour), nil)
	}
	g := newHandlerFix(t, Config{}, nil)
	g.list(t, q3a, "gametype", long)
	for _, req := range []string{"getservers 71 gametype=" + long, "getservers 71 gametype=" + long[:MaxGametypeLen] + "x"} {
		if got := g.queryAnswered(t, req); !slices.Equal(got, []netip.AddrPort{q3a}) {
			t.Errorf("%q: %v", req, got)
		}
	}
}

// A reason that refuses a whole class of servers is logged (Warn) once per
// server and reason, not only counted; the set of pairs remembered is
// bounded (MaxLoggedDrops, oldest forgotten first) and so are the lines
// per Tick (MaxDropLogsPerTick), the rest summed up at the next Tick.
func TestDropReason_LoggedOncePerServer(t *testing.T) {
	var logs logBuffer
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, func(c *handlerSetup) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	a, b := ap("198.51.100.70:27960"), ap("198.51.100.71:27960")
	for range 3 {
		f.now = f.now.Add(DefaultChallengeLifetime) // the last check is over
		f.h.Tick(f.now, nil)
		for _, srv := range []netip.AddrPort{a, b} {
			c := challengeOf(t, f.in(srv, oaHeartbeat), KindGetInfo)
			f.in(srv, oaInfo(c, "gametype", "capture the flag"))
		}
		f.in(a, oob("heartbeat Quake5Arena-1\n"))
	}
	if n := f.h.Stats().Dropped(ReasonBadGametype); n != 6 {
		t.Fatalf("%d bad_gametype drops, want 6", n)
	}
	for _, c := range []struct {
		srv netip.AddrPort
		why Reason
	}{{a, ReasonBadGametype}, {b, ReasonBadGametype}, {a, ReasonUnknownHeartbeat}} {
		if n := logs.count("level=WARN", "server="+c.srv.String(), "reason="+c.why.String()); n != 1 {
			t.Errorf("%v %v logged %d times, want once:\n%s", c.srv, c.why, n, logs.String())
		}
	}
	// A query refused by --game-policy is a client's, not a server's: not
	// logged at Warn.
	g := newHandlerFix(t, Config{Policy: mustPolicy(t, "reject", "Xonotic")}, func(c *handlerSetup) { c.Logger = logs.logger() })
	g.in(client, oob("getservers Xonotic 3"))
	if logs.has("level=WARN", "server="+client.String()) {
		t.Errorf("a client's query logged as a refused server")
	}

	// Lines per Tick: a flood of forged heartbeats gets MaxDropLogsPerTick
	// lines, then one line with the count of the rest.
	logs.reset()
	forged := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, byte(i >> 8), byte(i)}), 27960)
	}
	for i := range MaxDropLogsPerTick + 5 {
		f.in(forged(i), oob("heartbeat Quake5Arena-1\n"))
	}
	if n := logs.count("level=WARN", "msg=\"refused server\""); n != MaxDropLogsPerTick {
		t.Errorf("%d lines in one tick, want %d", n, MaxDropLogsPerTick)
	}
	f.h.Tick(f.now, nil)
	if !logs.has("refused servers not logged", "count=5") {
		t.Errorf("no count of the lines held back:\n%s", logs.String())
	}
	// Those held back are logged at their next try.
	f.in(forged(MaxDropLogsPerTick), oob("heartbeat Quake5Arena-1\n"))
	if !logs.has("server=" + forged(MaxDropLogsPerTick).String()) {
		t.Errorf("a server held back is not logged at its next try")
	}

	// Memory: MaxLoggedDrops pairs at most, the oldest forgotten first.
	for i := 0; i < MaxLoggedDrops+MaxDropLogsPerTick; i++ {
		if i%MaxDropLogsPerTick == 0 {
			f.h.Tick(f.now, nil)
		}
		f.in(forged(1000+i), oob("heartbeat Quake5Arena-1\n"))
	}
	f.h.drops.mu.Lock()
	n := len(f.h.drops.seen)
	f.h.drops.mu.Unlock()
	if n != MaxLoggedDrops {
		t.Errorf("%d pairs remembered, want the bound %d", n, MaxLoggedDrops)
	}
	f.h.Tick(f.now, nil)
	logs.reset()
	f.in(forged(1000), oob("heartbeat Quake5Arena-1\n"))                                     // forgotten
	f.in(forged(1000+MaxLoggedDrops+MaxDropLogsPerTick-1), oob("heartbeat Quake5Arena-1\n")) // remembered
	if n := logs.count("level=WARN"); n != 1 || !logs.has("server="+forged(1000).String()) {
		t.Errorf("after the bound, want the oldest logged again and the newest not:\n%s", logs.String())
	}

	// A peer master's register is logged under the server it names.
	peer := ap("192.0.2.200:27950")
	h := newHandlerFix(t, Config{}, func(c *handlerSetup) { c.Peers, c.Logger = []netip.AddrPort{peer}, logs.logger() })
	named := ap("127.0.0.1:27960")
	reg, err := q3.Register{Server: named}.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	h.in(peer, reg)
	if !logs.has("level=WARN", "server="+named.String(), "reason=loopback") {
		t.Errorf("register of a loopback server not logged under it:\n%s", logs.String())
	}
}
