package interop

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/lab/discobench"
)

// worldServers is the interop world: 2,000 emulated Quake III
// protocol 71 servers (OpenArena, heartbeat QuakeArena-1) with a real
// OpenArena server beside them.
const worldServers = 2000

// buildScout builds cmd/scout into the test's temporary directory.
func buildScout(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "scout")
	if out, err := exec.Command("go", "build", "-C", peer.ModuleRoot(t), "-o", bin, "./cmd/scout").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestServers_MasterWithOpenArenaAndWorldAgreesWithQstat: a scout master (flood protection on) lists a real
// OpenArena server and 2,000 emulated ones, all on loopback and listed by
// their loopback addresses (an identity world: nothing to translate, so
// quakestat can take part); `scout servers --status` and `quakestat
// -q3m,71 -R -P`, each asking the master once, find the same servers with
// the same host name, map, players/max, game type, protocol and player
// lists.
//
// Rate limits: each emulated server applies ioquake3's (10 queries per
// source address, then 1/s); scout sends it getinfo and getstatus,
// quakestat getstatus, both from 127.0.0.1, so 2 to 3 of the 10 unless
// packets are lost (the world loses none here).
func TestServers_MasterWithOpenArenaAndWorldAgreesWithQstat(t *testing.T) {
	peer.Need(t, peer.OpenArenaServer, "apt-get install openarena-server")
	peer.Need(t, peer.Quakestat, "apt-get install qstat")
	bin := buildScout(t)

	env, err := discobench.Start(t.Context(), discobench.Config{
		Servers: worldServers, Full: 0.3, Empty: 0.3,
		RTTMin: time.Millisecond, RTTMax: 5 * time.Millisecond, Seed: 4,
		FloodProtection: true, ListTimeout: 30 * time.Second,
		// Heartbeats lost at a loaded master's socket are sent again.
		HeartbeatInterval: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	oa := peer.StartOpenArena(t, peer.OpenArenaConfig{
		Master:   env.Master.String(),
		Hostname: "^3scout ^7interop",
		Bots:     []string{"sarge", "grism", "kyonshi"},
	})
	waitCtx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := env.WaitListed(waitCtx, worldServers+1); err != nil {
		t.Fatalf("%v\nOpenArena: %s", err, oa.LogTail())
	}
	listed := env.Listed()
	if !slices.Contains(listed, oa.Addr) {
		t.Fatalf("the master lists %d servers, not the OpenArena server %v", len(listed), oa.Addr)
	}
	if err := env.CheckLoopback(); err != nil {
		t.Fatal(err) // never hand quakestat a public-looking address
	}

	sm, scout, err := env.Scout(t.Context(), "scout", bin, "--game", "q3", "--protocol", "71", "--status",
		"--timeout", "500ms", "--retries", "2", "--rate", "2000")
	if err != nil {
		t.Fatal(err)
	}
	qm, qstat, err := env.Quakestat(t.Context(), "quakestat", 0, "-R", "-P")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scout: %d of %d found in %v, %d probes; quakestat: %d found in %v, %d probes",
		sm.Found, sm.Listed, sm.Wall.Round(time.Millisecond), sm.Probes, qm.Found, qm.Wall.Round(time.Millisecond), qm.Probes)

	bySc := index(t, "scout", scout)
	byQs := index(t, "quakestat", qstat)
	var diffs, qstatMissed []string
	for _, a := range listed {
		s, q := bySc[a], byQs[a]
		switch {
		case s == nil || !s.Answered:
			diffs = append(diffs, fmt.Sprintf("%v: scout did not find it", a))
			continue
		case q == nil:
			qstatMissed = append(qstatMissed, a.String())
			continue
		case !q.Answered:
			diffs = append(diffs, fmt.Sprintf("%v: quakestat listed it but got no answer", a))
			continue
		}
		// The real server is a live game: its bots' scores (and pings)
		// move between scout's query and quakestat's, seconds apart
		// (22 s for quakestat on a loaded machine, and a bot scored in
		// between); its players are compared by name. The emulated
		// world's are fixed and compared in full.
		if d := compare(*s, *q, a == oa.Addr); d != "" {
			diffs = append(diffs, fmt.Sprintf("%v: %s", a, d))
		}
	}
	for _, set := range []map[netip.AddrPort]*discobench.Server{bySc, byQs} {
		for a := range set {
			if !slices.Contains(listed, a) {
				diffs = append(diffs, fmt.Sprintf("%v: reported but not listed by the master", a))
			}
		}
	}
	if len(diffs) > 0 {
		if len(diffs) > 20 {
			diffs = append(diffs[:20], fmt.Sprintf("... and %d more", len(diffs)-20))
		}
		t.Fatalf("scout servers and quakestat disagree about %d servers:\n  %s", len(diffs), strings.Join(diffs, "\n  "))
	}
	// quakestat (like the ioquake3 client) drops the last server of every
	// getserversResponse packet that does not end with \EOT; scout master
	// therefore ends every packet with the marker (id's master did too), and
	// quakestat must list every server the master lists.
	if len(qstatMissed) > 0 {
		t.Errorf("quakestat left %d listed servers out of its list: %v", len(qstatMissed), qstatMissed)
	}

	// The real server, field by field against what it was started with.
	s := bySc[oa.Addr]
	if s.Name != "scout interop" || s.Map != "oa_dm1" || s.NumPlayers != 3 || s.Protocol != "71" || len(s.Players) != 3 {
		t.Errorf("the OpenArena server as scout found it: %+v", *s)
	}
	// Emulated servers with players: the lists are the world's.
	checked := 0
	for _, a := range listed {
		w, ok := env.Server(a)
		if !ok || len(w.Players) == 0 {
			continue
		}
		got := bySc[a].Players
		if len(got) != len(w.Players) {
			t.Errorf("%v: scout reports %d players, the world has %d", a, len(got), len(w.Players))
			continue
		}
		for i, p := range w.Players {
			if got[i].Name != p.Name || got[i].Score != p.Score {
				t.Errorf("%v: player %d is %+v, the world has %+v", a, i, got[i], p)
			}
		}
		checked++
	}
	if checked < worldServers/2 {
		t.Errorf("only %d emulated servers with players checked", checked)
	}
}

func index(t *testing.T, who string, servers []discobench.Server) map[netip.AddrPort]*discobench.Server {
	t.Helper()
	m := make(map[netip.AddrPort]*discobench.Server, len(servers))
	for i := range servers {
		s := &servers[i]
		if m[s.Address] != nil {
			t.Errorf("%s reports %v twice", who, s.Address)
		}
		m[s.Address] = s
	}
	return m
}

// compare returns the fields on which scout and quakestat disagree about
// one server ("" when none). quakestat strips colour codes from names, as
// scout's name_plain does; its game type is the g_gametype rule. Of a live
// server's players only the names are compared: their scores and pings
// move between two queries.
func compare(s, q discobench.Server, live bool) string {
	var d []string
	check := func(field string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			d = append(d, fmt.Sprintf("%s: scout %q, quakestat %q", field, fmt.Sprint(a), fmt.Sprint(b)))
		}
	}
	check("host name", s.Name, q.Name)
	check("map", s.Map, q.Map)
	check("players", fmt.Sprintf("%d/%d", s.NumPlayers, s.MaxPlayers), fmt.Sprintf("%d/%d", q.NumPlayers, q.MaxPlayers))
	check("game type", s.GameType, q.GameType)
	check("protocol", s.Protocol, q.Protocol)
	check("player count", len(s.Players), len(q.Players))
	for i := range min(len(s.Players), len(q.Players)) {
		if live {
			check(fmt.Sprintf("player %d", i), s.Players[i].Name, q.Players[i].Name)
		} else {
			check(fmt.Sprintf("player %d", i), s.Players[i], q.Players[i])
		}
	}
	return strings.Join(d, "; ")
}
