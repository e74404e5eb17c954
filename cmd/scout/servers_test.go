package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/protocol/q3"
)

// q3Master answers getservers on 127.0.0.1 with list, two servers a
// packet, EOT on the last, until the test ends.
func q3Master(t *testing.T, list ...netip.AddrPort) netip.AddrPort {
	t.Helper()
	return peer.ServeUDP(t, func(req []byte) [][]byte {
		if m, err := q3.Parse(req); err != nil {
			return nil
		} else if _, ok := m.(q3.GetServers); !ok {
			return nil
		}
		var out [][]byte
		for i := 0; i < len(list); i += 2 {
			r := q3.ServersResponse{Servers: list[i:min(i+2, len(list))]}
			if i+2 >= len(list) {
				r.End = q3.EndEOT
			}
			b, err := r.AppendBinary(nil)
			if err != nil {
				t.Error(err)
			}
			out = append(out, b)
		}
		return out
	})
}

func jsonLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestServers_JSONStreamAndSummaryOverLoopback(t *testing.T) {
	s1, s2, s3 := q3Server(t), q3Server(t), q3Server(t)
	dead := closedPort(t)
	m1 := q3Master(t, s1, s2, dead)
	m2 := q3Master(t, s2, s3)
	deadMaster := closedPort(t)
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"servers", "--json", "--timeout", "200ms", "--retries", "1",
		"--master-timeout", "100ms", "--quiet", "200ms",
		"--master", m1.String(), "--master", m2.String(), "--master", deadMaster.String()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d; stderr %q", code, errb.String())
	}
	lines := jsonLines(t, out.Bytes())
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 4 servers and a summary:\n%s", len(lines), out.String())
	}
	byAddr := map[string]map[string]any{}
	for _, l := range lines[:4] {
		if l["type"] != "server" {
			t.Fatalf("line %v before the summary", l)
		}
		byAddr[l["address"].(string)] = l
	}
	if l := byAddr[s2.String()]; l == nil || l["map"] != "q3dm17" || l["name_plain"] != "Red 9[2Jbox" || l["name_raw"] != base64.StdEncoding.EncodeToString([]byte("^1Red^7 \x1b[2Jbox")) ||
		l["rtt_ms"].(float64) <= 0 {
		t.Errorf("server 2: %v", l)
	}
	// A server's line is printed when its probe ends, while the other
	// master's reply may still be on its way (probing overlaps the master
	// replies), so the line names the masters that had listed it by then:
	// at least one, and only masters that do list it. The complete merge is
	// checked deterministically in discover's synctest tests.
	if ms, _ := byAddr[s2.String()]["masters"].([]any); len(ms) == 0 || len(ms) > 2 {
		t.Errorf("server 2 masters %v, want 1 or 2 of %s, %s", ms, m1, m2)
	} else {
		for _, m := range ms {
			if m != m1.String() && m != m2.String() {
				t.Errorf("server 2 listed by %v, which does not list it", m)
			}
		}
	}
	if l := byAddr[dead.String()]; l == nil || l["error"] == nil || l["rtt_ms"].(float64) != 0 {
		t.Errorf("dead server: %v; want it reported with its error", l)
	}
	// On Linux the dead server's ICMP port unreachable ends its probe at
	// the first send (probe.Wrap); elsewhere it times out after a retry.
	silent, unreachable, probes := 1.0, 0.0, 5.0
	if runtime.GOOS == "linux" {
		silent, unreachable, probes = 0, 1, 4
		if e, _ := byAddr[dead.String()]["error"].(string); !strings.Contains(e, "unreachable") {
			t.Errorf("dead server's error %q, want it unreachable", e)
		}
	}
	sum := lines[4]
	if sum["type"] != "summary" || sum["listed"].(float64) != 4 || sum["answered"].(float64) != 3 ||
		sum["silent"].(float64) != silent || sum["unreachable"].(float64) != unreachable ||
		sum["flows"].(float64) != 4 || sum["probes"].(float64) != probes {
		t.Errorf("summary %v", sum)
	}
	masters := sum["masters"].([]any)
	if len(masters) != 3 {
		t.Fatalf("masters %v", masters)
	}
	ends := map[string]string{}
	for _, m := range masters {
		m := m.(map[string]any)
		ends[m["name"].(string)] = m["end"].(string)
	}
	if ends[m1.String()] != "end marker" || ends[m2.String()] != "end marker" || ends[deadMaster.String()] != "no reply" {
		t.Errorf("master ends %v", ends)
	}
}

func TestServers_PlainLinesFilteredAndSorted(t *testing.T) {
	s1, s2 := q3Server(t), q3Server(t)
	m := q3Master(t, s1, s2)
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"servers", "--sort", "name", "--gametype", "4", "--master", m.String()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d; stderr %q", code, errb.String())
	}
	text := out.String()
	if strings.Contains(text, "\x1b") {
		t.Fatalf("escape bytes reached the output: %q", text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "ADDRESS") || !strings.Contains(lines[1], "Red 9[2Jbox") ||
		!strings.Contains(lines[1], "2/12") || !strings.Contains(lines[3], "end marker") ||
		!strings.Contains(lines[4], "2 servers listed: 2 answered, 0 silent, 0 unreachable, 0 stopped, 0 not probed") {
		t.Fatalf("output:\n%s", text)
	}

	// A filter that hides everything: no server lines, exit 0 all the same
	// (servers answered).
	out.Reset()
	if code := run(t.Context(), []string{"servers", "--hide-full", "--max-ping", "1ns", "--master", m.String()}, &out, &errb); code != 0 ||
		strings.Contains(out.String(), "ADDRESS") {
		t.Fatalf("exit %d, output %q", code, out.String())
	}
}

func TestServers_LANOverLoopback(t *testing.T) {
	s := q3Server(t)
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"servers", "--lan", "--json", "--lan-addr", "127.0.0.1",
		"--lan-ports", strconv.Itoa(int(s.Port())), "--lan-window", "200ms"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d; stderr %q", code, errb.String())
	}
	lines := jsonLines(t, out.Bytes())
	if len(lines) != 2 || lines[0]["address"] != s.String() || lines[1]["answered"].(float64) != 1 {
		t.Fatalf("output %s", out.String())
	}
}

func TestServers_BadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"servers", "--game", "doom4"},
		{"servers", "--strategy", "fast"},
		{"servers", "--sort", "country"},
		{"servers", "--bandwidth", "lots"},
		{"servers", "--lan-ports", "27963-27960"},
		{"servers", "--lan-addr", "broadcast"},
		{"servers", "extra"},
		{"servers", "--lan", "--status"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}

func TestServers_NoMasterForGame(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"servers", "--game", "ut3"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "no master") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// TestServers_StatusFetchesPlayers: --status asks getstatus too, and the
// players reach the JSON stream and the plain lines; without it, no
// player list is asked for or shown.
func TestServers_StatusFetchesPlayers(t *testing.T) {
	s := q3Server(t)
	m := q3Master(t, s)
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"servers", "--json", "--status", "--master", m.String()}, &out, &errb); code != 0 {
		t.Fatalf("exit %d; stderr %q", code, errb.String())
	}
	lines := jsonLines(t, out.Bytes())
	if len(lines) != 2 {
		t.Fatalf("output %s", out.String())
	}
	ps, _ := lines[0]["players"].([]any)
	if len(ps) != 2 || lines[0]["numplayers"].(float64) != 2 {
		t.Fatalf("server %v; want its two players", lines[0])
	}
	if p := ps[0].(map[string]any); p["name"] != "^2Alice" || p["name_plain"] != "Alice" || p["score"].(float64) != 7 || p["ping"].(float64) != 33 {
		t.Errorf("player 0: %v", p)
	}
	if sum := lines[1]; sum["probes"].(float64) != 2 {
		t.Errorf("summary %v; want getinfo and getstatus", sum)
	}

	out.Reset()
	if code := run(t.Context(), []string{"servers", "--status", "--master", m.String()}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "    Alice") || !strings.Contains(out.String(), "score   -1  ping   0") {
		t.Fatalf("exit %d, plain output:\n%s", code, out.String())
	}

	out.Reset()
	if code := run(t.Context(), []string{"servers", "--json", "--master", m.String()}, &out, &errb); code != 0 {
		t.Fatalf("exit %d; stderr %q", code, errb.String())
	}
	if l := jsonLines(t, out.Bytes())[0]; l["players"] != nil {
		t.Errorf("without --status: %v", l)
	}
}

// TestServers_OpenArenaAsksBothNames: --game openarena asks a master for
// the servers listed under OpenArena and under Quake3Arena protocol 71.
func TestServers_OpenArenaAsksBothNames(t *testing.T) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	got := make(chan string, 8)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				close(got)
				return
			}
			got <- string(buf[4:n])
		}
	}()
	var out, errb bytes.Buffer
	run(t.Context(), []string{"servers", "--game", "openarena", "--json", "--master-timeout", "50ms", "--master", c.LocalAddr().String()}, &out, &errb)
	c.Close()
	var asked []string
	for q := range got {
		asked = append(asked, q)
	}
	// Each asks for a cookie too (a word masters that do not know it skip).
	want := []string{"getservers OpenArena 71 empty full cookie", "getservers 71 empty full cookie"}
	if len(asked) < 2 || asked[0] != want[0] || asked[1] != want[1] {
		t.Fatalf("asked %q, want %q first", asked, want)
	}
}

// TestServers_HelpExplainsOrder checks that scout servers -h explains
// --order and its flags, not only lists them.
func TestServers_HelpExplainsOrder(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runServers(t.Context(), []string{"-h"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	for _, want := range []string{"Order (--order): auto, the default,", "master probes in the masters' order", "--variant scout runs", "Exit status"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("scout servers -h lacks %q:\n%s", want, errb.String())
		}
	}
}
