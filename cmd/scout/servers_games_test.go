package main

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// oaServer answers getinfo on 127.0.0.1 as an OpenArena server whose
// com_gamename is gamename (vectors openarena_infoResponse.hex:
// Quake3Arena, openarena_infoResponse_gamename_OpenArena.hex).
func oaServer(t *testing.T, gamename string) netip.AddrPort {
	t.Helper()
	return peer.ServeUDP(t, func(req []byte) [][]byte {
		m, err := q3.Parse(req)
		gi, ok := m.(q3.GetInfo)
		if err != nil || !ok {
			return nil
		}
		info := infostring.Info{{Key: "hostname", Value: "oa"}, {Key: "mapname", Value: "oa_dm1"},
			{Key: "gamename", Value: gamename}, {Key: "protocol", Value: "71"}, {Key: "challenge", Value: gi.Challenge}}
		b, err := q3.InfoResponse{Info: info}.AppendBinary(nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		return [][]byte{b}
	})
}

// namedMaster answers "getservers NAME 71" with the servers listed under
// NAME in lists ("" for the anonymous query), an empty list otherwise,
// each with EOT, as dpmaster keys its lists by game name.
func namedMaster(t *testing.T, lists map[string][]netip.AddrPort) netip.AddrPort {
	t.Helper()
	return peer.ServeUDP(t, func(req []byte) [][]byte {
		m, err := q3.Parse(req)
		gs, ok := m.(q3.GetServers)
		if err != nil || !ok {
			return nil
		}
		b, err := q3.ServersResponse{Servers: lists[gs.GameName], End: q3.EndEOT}.AppendBinary(nil)
		if err != nil {
			t.Error(err)
		}
		return [][]byte{b}
	})
}

func runServersCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), append([]string{"servers", "--json", "--timeout", "300ms", "--retries", "1",
		"--master-timeout", "300ms", "--quiet", "300ms"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestServers_WarnsWhenTheGameNameEmptiedTheList: a master lists the only
// server under OpenArena (it heartbeats DarkPlaces); --game q3 asks the
// anonymous list, which is empty, and is told, on stderr, where the server
// is and which --game finds it; --game openarena finds it, without the
// warning.
func TestServers_WarnsWhenTheGameNameEmptiedTheList(t *testing.T) {
	m := namedMaster(t, map[string][]netip.AddrPort{"OpenArena": {oaServer(t, "OpenArena")}})
	code, _, stderr := runServersCmd(t, "--game", "q3", "--protocol", "71", "--master", m.String())
	want := "master " + m.String() + " listed no servers for Quake3Arena (getservers 71 empty full), but lists 1 under the game name OpenArena (getservers OpenArena 71 empty full): try --game openarena"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	code, _, stderr = runServersCmd(t, "--game", "openarena", "--master", m.String())
	if code != 0 || strings.Contains(stderr, "game name") {
		t.Fatalf("--game openarena: exit %d, stderr %q", code, stderr)
	}
}

// TestServers_WarnsWhenNoServerGivesTheGameName: the anonymous list holds
// a server whose gamename is OpenArena; --game q3 shows it and says that
// none gives Quake3Arena. --gamename that hides every server says so.
func TestServers_WarnsWhenNoServerGivesTheGameName(t *testing.T) {
	m := namedMaster(t, map[string][]netip.AddrPort{"": {oaServer(t, "OpenArena")}})
	code, _, stderr := runServersCmd(t, "--game", "q3", "--protocol", "71", "--master", m.String())
	want := "none of the 1 servers that answered gives the gamename Quake3Arena; they give OpenArena (1); --game openarena asks the masters for those"
	if code != 0 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, stderr %q; want %q", code, stderr, want)
	}
	// Debian's OpenArena says gamename Quake3Arena: --game openarena asks
	// for that name too, so there is nothing to say.
	deb := namedMaster(t, map[string][]netip.AddrPort{"": {oaServer(t, "Quake3Arena")}})
	if code, _, stderr := runServersCmd(t, "--game", "openarena", "--master", deb.String()); code != 0 || stderr != "" {
		t.Fatalf("--game openarena, gamename Quake3Arena: exit %d, stderr %q", code, stderr)
	}
	_, _, stderr = runServersCmd(t, "--game", "q3", "--protocol", "71", "--gamename", "Quake3Arena", "--master", m.String())
	if want := "--gamename Quake3Arena hid all 1 servers that answered; their game names: OpenArena (1)"; !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q; want %q", stderr, want)
	}
}

// TestServers_HelpSaysWhatEachGameAsks: -h names, from the catalogue,
// each --game value's queries and the names it misses.
func TestServers_HelpSaysWhatEachGameAsks(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runServers(t.Context(), []string{"-h"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"Quake3Arena [ioquake3, q3, q3a, quake3]: Quake III Arena",
		"asks getservers 68 empty full; getservers 71 empty full\n      misses the servers listed under OpenArena (getservers OpenArena 71 empty full): --game openarena",
		"asks getservers OpenArena 71 empty full; getservers 71 empty full",
		"cstrike [css, source]: Counter-Strike: Source",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("scout servers -h lacks %q:\n%s", want, errb.String())
		}
	}
}

// TestServers_WarnsWhenTheGameNameShrankTheList: a master lists one
// server in the anonymous protocol-71 list and two more under OpenArena
// (and the anonymous one under OpenArena too, which is not counted: it was
// found). --game q3 finds the one and is told, with the numbers, that the
// master lists 2 more under a name it does not ask for; --order adaptive
// says the same. --game openarena asks for both lists and is told
// nothing.
func TestServers_WarnsWhenTheGameNameShrankTheList(t *testing.T) {
	anon := oaServer(t, "Quake3Arena")
	m := namedMaster(t, map[string][]netip.AddrPort{
		"":          {anon},
		"OpenArena": {anon, oaServer(t, "OpenArena"), oaServer(t, "OpenArena")},
	})
	want := "master " + m.String() + " also lists 2 servers under the game name OpenArena (getservers OpenArena 71 empty full), which --game quake3arena does not ask for (getservers 71 empty full): --game openarena finds them"
	for _, order := range []string{"master", "adaptive"} {
		code, stdout, stderr := runServersCmd(t, "--game", "q3", "--protocol", "71", "--master", m.String(), "--order", order)
		if code != 0 || !strings.Contains(stderr, want) || strings.Count(stdout, `"type":"server"`) != 1 {
			t.Errorf("--order %s: exit %d, stdout %q, stderr %q; want 0, one server and %q", order, code, stdout, stderr, want)
		}
	}
	code, stdout, stderr := runServersCmd(t, "--game", "openarena", "--master", m.String())
	if code != 0 || stderr != "" || strings.Count(stdout, `"type":"server"`) != 3 {
		t.Errorf("--game openarena: exit %d, stderr %q, %d servers; want 0, nothing, 3", code, stderr, strings.Count(stdout, `"type":"server"`))
	}
}

// TestServers_OrderAdaptiveSaysWhatTheDefaultSays: --order adaptive
// writes the default path's messages: the empty list's game name, and a
// master past a bound.
func TestServers_OrderAdaptiveSaysWhatTheDefaultSays(t *testing.T) {
	m := namedMaster(t, map[string][]netip.AddrPort{"OpenArena": {oaServer(t, "OpenArena")}})
	code, _, stderr := runServersCmd(t, "--game", "q3", "--protocol", "71", "--master", m.String(), "--order", "adaptive")
	want := "master " + m.String() + " listed no servers for Quake3Arena (getservers 71 empty full), but lists 1 under the game name OpenArena (getservers OpenArena 71 empty full): try --game openarena"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("empty list: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}
