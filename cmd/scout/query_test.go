package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/infostring"
	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/q3"
)

func TestParseQueryAddr(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3.4":          "1.2.3.4:27960",
		"1.2.3.4:28960":    "1.2.3.4:28960",
		"::1":              "[::1]:27960",
		"[::1]":            "[::1]:27960",
		"[2001:db8::1]:5":  "[2001:db8::1]:5",
		"[::ffff:1.2.3.4]": "1.2.3.4:27960",
	} {
		qa, err := parseQueryAddr(in, 27960)
		if err != nil || qa.ap.String() != want {
			t.Errorf("parseQueryAddr(%q) = %v, %v; want %s", in, qa.ap, err, want)
		}
	}
	if qa, err := parseQueryAddr("example.org:27961", 27960); err != nil || qa.host != "example.org" || qa.port != 27961 {
		t.Errorf("host:port = %+v, %v", qa, err)
	}
	for _, bad := range []string{"1.2.3.4:99999", "host:port", "a:b:c", "", "[::1", "ho st"} {
		if _, err := parseQueryAddr(bad, 27960); err == nil {
			t.Errorf("parseQueryAddr(%q) accepted", bad)
		}
	}
}

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

// q3Server answers getinfo and getstatus on 127.0.0.1 like a small
// ioquake3 server, until the test ends.
func q3Server(t *testing.T) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { c.Close(); <-done })
	info := infostring.Info{{Key: "hostname", Value: "^1Red^7 \x1b[2Jbox"}, {Key: "mapname", Value: "q3dm17"},
		{Key: "clients", Value: "2"}, {Key: "sv_maxclients", Value: "12"}, {Key: "gametype", Value: "4"},
		{Key: "protocol", Value: "68"}}
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			m, err := q3.Parse(buf[:n])
			if err != nil {
				continue
			}
			var reply q3.Message
			in := append(infostring.Info(nil), info...)
			switch m := m.(type) {
			case q3.GetInfo:
				in.Set("challenge", m.Challenge)
				reply = &q3.InfoResponse{Info: in}
			case q3.GetStatus:
				in.Set("challenge", m.Challenge)
				reply = &q3.StatusResponse{Info: in, Players: []q3.Player{{Score: 7, Ping: 33, Name: "^2Alice"}, {Score: -1, Ping: 0, Name: "Bot"}}}
			default:
				continue
			}
			b, err := reply.AppendBinary(nil)
			if err != nil {
				t.Error(err)
				continue
			}
			c.WriteToUDPAddrPort(b, from)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
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

func TestQuery_TableGoesOnPastDeadServers(t *testing.T) {
	srv, dead := q3Server(t), closedPort(t)
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"query", "--timeout", "100ms", "--retries", "0", dead.String(), srv.String()}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (one answered); stderr %q", code, errb.String())
	}
	text := out.String()
	for _, want := range []string{"Red ?[2Jbox", "q3dm17", "2/12", "Alice", "score 7", "ping 33",
		dead.String(), "error: getinfo: no reply after 1 attempts"} {
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
	if ok.Address != srv.String() || ok.Name != "^1Red^7 \x1b[2Jbox" || ok.NamePlain != "Red \x1b[2Jbox" ||
		ok.NumPlayers != 2 || ok.MaxPlayers != 12 || ok.GameType != "4" || ok.Protocol != "68" ||
		ok.RTTms <= 0 || ok.Attempts != 1 || ok.Error != "" || len(ok.Players) != 2 || ok.Players[0].Name != "^2Alice" {
		t.Errorf("answered server: %+v", ok)
	}
	if v, _ := ok.Info.Get("mapname"); v != "q3dm17" {
		t.Errorf("info lacks mapname: %v", ok.Info)
	}
	if failed.Error == "" || failed.Attempts != 2 || failed.RTTms != 0 {
		t.Errorf("dead server: %+v", failed)
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
