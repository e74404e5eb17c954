package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/a2s"
	"github.com/scout-discovery/scout/protocol/gs4"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

func TestQuery_BadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"query"},
		{"query", "--game", "doom4", "127.0.0.1"},
		{"query", "1.2.3.4:99999"},
		{"query", "--retries", "-1", "127.0.0.1"},
		{"query", "--no-such-flag", "127.0.0.1"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) netip.AddrPort {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// deadError is the error scout query reports for a closed port whose
// first request is step, sent attempts times: "unreachable: port" at the
// first attempt where the platform reports ICMP errors to the probe socket
// (Linux), a timeout elsewhere.
func deadError(t *testing.T, step string, attempts int) (msg, kind string) {
	t.Helper()
	c, err := net.ListenUDP("udp", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, f := probe.Wrap(c); f.ICMPErrors {
		return step + ": unreachable: port", "unreachable"
	}
	return fmt.Sprintf("%s: no reply after %d attempts", step, attempts), "timeout"
}

func TestQuery_TableGoesOnPastDeadServers(t *testing.T) {
	srv, dead := q3Server(t), closedPort(t)
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"query", "--timeout", "100ms", "--retries", "0", dead.String(), srv.String()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (one answered); stderr %q", code, errb.String())
	}
	text := out.String()
	deadMsg, _ := deadError(t, "getinfo", 1)
	for _, want := range []string{"Red 9[2Jbox", "q3dm17", "2/12", "Alice", "score 7", "ping 33",
		dead.String(), "error: " + deadMsg} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b") {
		t.Errorf("a server-sent escape reached the terminal:\n%q", text)
	}
}

func TestQuery_JSONLines(t *testing.T) {
	srv, dead := q3Server(t), closedPort(t)
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"query", "--json", "--timeout", "100ms", "--retries", "1", srv.String(), dead.String()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d; stderr %q", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out.String())
	}
	var ok, failed queryServerJSON
	if err := json.Unmarshal([]byte(lines[0]), &ok); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &failed); err != nil {
		t.Fatal(err)
	}
	if ok.Address != srv.String() || ok.Name != "^1Red^7 9[2Jbox" || ok.NamePlain != "Red 9[2Jbox" || string(ok.NameRaw) != "^1Red^7 \x1b[2Jbox" ||
		ok.NumPlayers != 2 || ok.MaxPlayers != 12 || ok.GameType != "4" || ok.Protocol != "68" ||
		ok.RTTms <= 0 || ok.Attempts != 1 || ok.Error != "" || len(ok.Players) != 2 || ok.Players[0].Name != "^2Alice" {
		t.Errorf("answered server: %+v", ok)
	}
	if v, _ := ok.Info.Get("mapname"); v != "q3dm17" {
		t.Errorf("info lacks mapname: %v", ok.Info)
	}
	deadMsg, deadKind := deadError(t, "getinfo", 2)
	if failed.Error != deadMsg || failed.ErrorKind != deadKind || failed.RTTms != 0 ||
		(deadKind == "timeout") != (failed.Attempts == 2) {
		t.Errorf("dead server: %+v; want error %q (%s)", failed, deadMsg, deadKind)
	}
	if ok.ErrorKind != "" {
		t.Errorf("answered server has error_kind %q", ok.ErrorKind)
	}
}

func TestQuery_NoneAnsweredExitsOne(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"query", "--timeout", "50ms", "--retries", "0", closedPort(t).String()}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
}

// TestQuery_OpenArenaJSON runs `scout query --json` against a real
// OpenArena server with bots.
func TestQuery_OpenArenaJSON(t *testing.T) {
	oa := peer.StartOpenArena(t, peer.OpenArenaConfig{Bots: []string{"sarge", "major"}, Hostname: "scout-cmd"})
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"query", "--json", oa.Addr.String()}, &out, &errb); code != 0 {
		t.Fatalf("exit %d; stderr %q\n%s", code, errb.String(), oa.LogTail())
	}
	var s queryServerJSON
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "scout-cmd" || s.Map != "oa_dm1" || s.NumPlayers != 2 || len(s.Players) != 2 ||
		s.Players[0].Name != "Sarge" || s.Players[1].Name != "Major" || s.Error != "" || s.Attempts != 1 {
		t.Fatalf("got %s", out.String())
	}
}

// queryRun runs scout query with args and returns the exit status and
// standard output.
func queryRun(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), append([]string{"query"}, args...), &out, &errb)
	if errb.Len() > 0 {
		t.Logf("stderr: %s", errb.String())
	}
	return code, out.String()
}

// queryJSONLines decodes --json output.
func queryJSONLines(t *testing.T, out string) []queryServerJSON {
	t.Helper()
	var res []queryServerJSON
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s queryServerJSON
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("output line is not JSON: %v: %s", err, line)
		}
		res = append(res, s)
	}
	return res
}

// checkContains fails the test for each string of want that text lacks.
func checkContains(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("output lacks %q:\n%s", w, text)
		}
	}
}

func TestQuery_Quake4(t *testing.T) {
	srv := q4Server(t, 0)
	code, out := queryRun(t, "--game", "q4", "--timeout", "2s", srv.String())
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	checkContains(t, out, "Strogg Base", "q4dm1", "2/8", "DM", " ms", "[MC]Kane", "ping 45", "Bot", "ping 0")
	if strings.Contains(out, "error") || strings.Contains(out, "^1") {
		t.Errorf("table shows an error or a colour code:\n%s", out)
	}

	code, out = queryRun(t, "--game", "q4", "--json", "--timeout", "2s", srv.String())
	if code != 0 {
		t.Fatalf("--json: exit %d, want 0:\n%s", code, out)
	}
	s := queryJSONLines(t, out)
	if len(s) != 1 {
		t.Fatalf("%d lines, want 1", len(s))
	}
	j := s[0]
	if j.Address != srv.String() || j.Game != "q4" || j.Name != "^4Strogg^7 Base" || j.NamePlain != "Strogg Base" ||
		j.Map != "q4dm1" || j.GameType != "DM" || j.Protocol != q4.Quake4.String() || j.NumPlayers != 2 || j.MaxPlayers != 8 ||
		j.RTTms <= 0 || j.Attempts != 1 || j.Error != "" {
		t.Errorf("server: %+v", j)
	}
	if len(j.Players) != 2 || j.Players[0].Name != "[MC]^1Kane" || j.Players[0].Ping != 45 || j.Players[1].Name != "Bot" {
		t.Errorf("players: %+v", j.Players)
	}
	if v, ok := j.Info.Get("fs_game"); !ok || v != "" {
		t.Errorf("info lacks the empty fs_game: %v", j.Info)
	}
}

// TestQuery_RetryCountsAttempts: a server that ignores the first getInfo
// is asked again; attempts says 2 and the round-trip time counts from the
// send that was answered, so it is below the timeout.
func TestQuery_RetryCountsAttempts(t *testing.T) {
	srv := q4Server(t, 1)
	timeout := 300 * time.Millisecond
	code, out := queryRun(t, "--game", "q4", "--json", "--timeout", timeout.String(), "--retries", "1", srv.String())
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	j := queryJSONLines(t, out)[0]
	if j.Attempts != 2 || j.Error != "" || j.RTTms <= 0 || j.RTTms >= float64(timeout.Milliseconds()) || j.Map != "q4dm1" {
		t.Errorf("attempts %d rtt %vms error %q map %q; want 2, in (0, %v), none, q4dm1", j.Attempts, j.RTTms, j.Error, j.Map, timeout)
	}
}

func TestQuery_UT3(t *testing.T) {
	srv := ut3Server(t)
	code, out := queryRun(t, "--game", "ut3", "--timeout", "2s", srv.String())
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	checkContains(t, out, "Scout UT3 Box", "DM-Deck", "3/16", "UTGame.UTDeathmatch", " ms",
		"Reaper", "score 25", "ping 48", "Malcolm", "score 17", "ping 61", "Lauren", "ping 95")
	if strings.Contains(out, "error") {
		t.Errorf("table shows an error:\n%s", out)
	}

	code, out = queryRun(t, "--game", "ut3", "--json", "--timeout", "2s", srv.String())
	if code != 0 {
		t.Fatalf("--json: exit %d, want 0:\n%s", code, out)
	}
	j := queryJSONLines(t, out)[0]
	if j.Address != srv.String() || j.Game != "gs4" || j.Name != "Scout UT3 Box" || j.Map != "DM-Deck" ||
		j.GameType != "UTGame.UTDeathmatch" || j.NumPlayers != 3 || j.MaxPlayers != 16 ||
		j.RTTms <= 0 || j.Attempts != 1 || j.Error != "" {
		t.Errorf("server: %+v", j)
	}
	want := []queryPlayerJSON{{Name: "Reaper", NameRaw: []byte("Reaper"), Score: 25, Ping: 48, Team: "0"},
		{Name: "Malcolm", NameRaw: []byte("Malcolm"), Score: 17, Ping: 61, Team: "1"},
		{Name: "Lauren", NameRaw: []byte("Lauren"), Score: 3, Ping: 95, Team: "0"}}
	if !reflect.DeepEqual(j.Players, want) {
		t.Errorf("players %+v, want %+v", j.Players, want)
	}
	if v, _ := j.Info.Get("s32779"); v != "2" {
		t.Errorf("info lacks s32779: %v", j.Info)
	}
}

func TestQuery_Source(t *testing.T) {
	srv, seen := sourceServer(t)
	code, out := queryRun(t, "--game", "source", "--timeout", "2s", srv.String())
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	checkContains(t, out, "Scout Source", "de_dust2", "2/24", "cstrike", " ms", "Alice", "score 12", "Bob", "score -2",
		"rule mp_timelimit", "25", "rule sv_tags", "alltalk?[2J", "rule sv_password")
	if strings.Contains(out, "error") || strings.Contains(out, "\x1b") {
		t.Errorf("table shows an error or an escape:\n%q", out)
	}
	// The challenge round trip, then A2S_INFO, A2S_PLAYER and A2S_RULES
	// with it.
	if got, want := seen(), []string{"info", "info+chal", "player+chal", "rules+chal"}; !slices.Equal(got, want) {
		t.Errorf("the server saw %v, want %v", got, want)
	}

	code, out = queryRun(t, "--game", "source", "--json", "--timeout", "2s", srv.String())
	if code != 0 {
		t.Fatalf("--json: exit %d, want 0:\n%s", code, out)
	}
	j := queryJSONLines(t, out)[0]
	if j.Address != srv.String() || j.Game != "a2s" || j.Name != "Scout Source" || j.Map != "de_dust2" ||
		j.GameType != "cstrike" || j.Protocol != "17" || j.NumPlayers != 2 || j.MaxPlayers != 24 ||
		j.RTTms <= 0 || j.Attempts != 1 || j.Error != "" {
		t.Errorf("server: %+v", j)
	}
	want := []queryPlayerJSON{{Name: "Alice", NameRaw: []byte("Alice"), Score: 12, Time: 61.5}, {Name: "Bob", NameRaw: []byte("Bob"), Score: -2, Time: 3}}
	if !reflect.DeepEqual(j.Players, want) {
		t.Errorf("players %+v, want %+v", j.Players, want)
	}
	if v, _ := j.Info.Get("game"); v != "Counter-Strike: Source" {
		t.Errorf("info lacks game: %v", j.Info)
	}
	var want2 infostring.Info
	for _, r := range sourceRules.Rules {
		want2 = append(want2, infostring.Pair{Key: r.Name, Value: r.Value})
	}
	if !slices.Equal(j.Rules, want2) {
		t.Errorf("rules %v, want %v", j.Rules, want2)
	}
}

// TestQuery_ClosedPortIsUnreachable: where the platform reports ICMP
// errors (Linux), a server whose port is closed is reported at once as
// unreachable, in the table and in --json, with the exit status of any
// server that did not answer. The timeout is an hour: were the ICMP error
// not seen, the context's deadline would end the run and the error would
// name it instead.
func TestQuery_ClosedPortIsUnreachable(t *testing.T) {
	if _, kind := deadError(t, "getinfo", 1); kind != "unreachable" {
		t.Skip("this platform reports no ICMP errors to the probe socket; a closed port times out")
	}
	dead := closedPort(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, c := range []struct{ game, step string }{{"q3", "getinfo"}, {"q4", "getInfo"}, {"ut3", "challenge"}, {"source", "A2S_INFO"}} {
		var out, errb bytes.Buffer
		code := run(ctx, []string{"query", "--game", c.game, "--json", "--timeout", "1h", dead.String()}, &out, &errb)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1 (none answered); stderr %q", c.game, code, errb.String())
		}
		j := queryJSONLines(t, out.String())[0]
		if want := c.step + ": unreachable: port"; j.Error != want || j.ErrorKind != "unreachable" || j.Attempts != 1 || j.RTTms != 0 {
			t.Errorf("%s: %+v; want error %q, error_kind unreachable, 1 attempt", c.game, j, want)
		}
	}
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"query", "--timeout", "1h", dead.String()}, &out, &errb); code != 1 ||
		!strings.Contains(out.String(), "error: getinfo: unreachable: port") {
		t.Errorf("table: exit %d:\n%s", code, out.String())
	}
}

// TestQuery_GarbledReplyIsReportedAndTheOthersGoOn: for each game, one
// server answers every request with bytes that do not parse, one answers
// well and one is silent. The garbled one's error names the request and
// the parse error; the good one is shown in full; the exit status is 0
// because one answered, and 1 when only the garbled one is asked.
func TestQuery_GarbledReplyIsReportedAndTheOthersGoOn(t *testing.T) {
	for _, c := range []struct {
		game    string
		good    func(t *testing.T) netip.AddrPort
		goodMap string
		garbage string
		parse   func([]byte) error
		step    string // the request the garbage answered, the query's first
	}{
		{"q3", q3Server, "q3dm17", "\xff\xff\xff\xffinfoResponse\n\\hostname",
			func(b []byte) error { _, err := q3.Parse(b); return err }, "getinfo"},
		{"q4", func(t *testing.T) netip.AddrPort { return q4Server(t, 0) }, "q4dm1", "\xff\xffinfoResponse\x00\x01\x02",
			func(b []byte) error { _, err := q4.ParseInfoResponse(b); return err }, "getInfo"},
		{"ut3", ut3Server, "DM-Deck", "\x09\x00\x00\x00\x0112ab\x00",
			func(b []byte) error { _, err := gs4.Parse(b); return err }, "challenge"},
		{"source", func(t *testing.T) netip.AddrPort { a, _ := sourceServer(t); return a }, "de_dust2", "\xff\xff\xff\xff\x49\x11Scout",
			func(b []byte) error { _, err := a2s.Parse(b); return err }, "A2S_INFO"},
	} {
		t.Run(c.game, func(t *testing.T) {
			perr := c.parse([]byte(c.garbage))
			if perr == nil {
				t.Fatalf("the garbage parses")
			}
			reason := c.step + ": garbled reply: " + perr.Error()
			garbled := peer.ServeUDP(t, func([]byte) [][]byte { return [][]byte{[]byte(c.garbage)} })
			good, dead := c.good(t), closedPort(t)
			args := []string{"--game", c.game, "--timeout", "150ms", "--retries", "0"}

			code, out := queryRun(t, append(args, garbled.String(), good.String(), dead.String())...)
			if code != 0 {
				t.Fatalf("exit %d, want 0 (one answered):\n%s", code, out)
			}
			lines := strings.Split(out, "\n")
			if len(lines) < 4 || !strings.HasPrefix(lines[1], garbled.String()) || !strings.Contains(lines[1], "error: "+reason) {
				t.Errorf("garbled server's row lacks %q:\n%s", "error: "+reason, out)
			}
			deadMsg, _ := deadError(t, c.step, 1)
			checkContains(t, out, c.goodMap, dead.String(), deadMsg)

			code, out = queryRun(t, append(args, "--json", garbled.String(), good.String())...)
			if code != 0 {
				t.Fatalf("--json: exit %d, want 0:\n%s", code, out)
			}
			s := queryJSONLines(t, out)
			if len(s) != 2 {
				t.Fatalf("%d lines, want 2:\n%s", len(s), out)
			}
			if s[0].Address != garbled.String() || s[0].Error != reason || s[0].RTTms != 0 || s[0].Name != "" {
				t.Errorf("garbled server: %+v; want error %q", s[0], reason)
			}
			if s[1].Error != "" || s[1].Map != c.goodMap || s[1].RTTms <= 0 {
				t.Errorf("good server: %+v", s[1])
			}

			if code, out := queryRun(t, append(args, garbled.String())...); code != 1 || !strings.Contains(out, reason) {
				t.Errorf("garbled server alone: exit %d, want 1 (none answered):\n%s", code, out)
			}
		})
	}
}
