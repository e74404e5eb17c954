package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/web"
)

// ranking is the master's 1-hour ranking: each listed server's average
// players.
func ranking(t *testing.T, httpAddr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/api/v1/ranking?period=1h&per_page=500")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r web.RankingJSON
	if resp.StatusCode != 200 {
		t.Fatalf("ranking: %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, s := range r.Servers {
		out[s.Address] = s.AvgPlayers
	}
	return out
}

// TestMaster_Kill9KeepsHistory kills a real scout master with SIGKILL once
// a commit has begun after its servers' player counts were sampled,
// stops the servers (so that nothing can sample them again) and restarts
// the master on the same state file: every server's history (its average
// players in the ranking, which only history gives) is there again.
func TestMaster_Kill9KeepsHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	bin := buildScout(t)
	state := filepath.Join(t.TempDir(), "state.db")
	m1 := startStateMaster(t, bin, state)
	addr, httpAddr, commits := m1.addr, m1.httpAddr, m1.commits

	fleet := newFleet(t, loadgen.FleetConfig{Servers: 60, Base: netip.MustParseAddr("127.71.0.1")})
	fctx, stopFleet := context.WithCancel(context.Background())
	fdone := make(chan error, 1)
	go func() { fdone <- fleet.Serve(fctx) }()
	stop := func() {
		if stopFleet != nil {
			stopFleet()
			<-fdone
			fleet.Close()
			stopFleet = nil
		}
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if _, err := loadgen.Populate(ctx, fleet, addr, loadgen.PopulateConfig{Source: netip.MustParseAddr("127.73.0.1")}); err != nil {
		t.Fatal(err)
	}
	before := ranking(t, httpAddr)
	sampled := time.Now() // every server of the fleet was sampled before
	if len(before) != 60 {
		t.Fatalf("%d servers ranked, want 60", len(before))
	}
	// One more server, registered now, makes a commit that begins after
	// the samples: they are all in it.
	extra := crashFleet(t, 1, "127.72.0.1")
	if _, err := loadgen.Populate(ctx, extra, addr, loadgen.PopulateConfig{Source: netip.MustParseAddr("127.73.0.2")}); err != nil {
		t.Fatal(err)
	}
	for start := (time.Time{}); !start.After(sampled); {
		select {
		case start = <-commits.starts:
		case <-ctx.Done():
			t.Fatal("no commit began after the samples")
		}
	}
	m1.kill9(t)
	stop()

	m2 := startMaster(t, bin, m1.args...)
	restored := m2.waitLog(t, "history restored")
	http2 := m2.waitLog(t, "listening", "port", "http")["addr"].(string)
	go func() {
		for range m2.lines {
		}
	}()
	after := ranking(t, http2)
	t.Logf("history restored: %v; %d servers ranked before the kill, %d after the restart", restored, len(before), len(after))
	if restored["corrupt"] != float64(0) {
		t.Errorf("restored %v", restored)
	}
	for a, avg := range before {
		if got, ok := after[a]; !ok || got != avg {
			t.Errorf("%s: average players %v after the restart (present %v), %v before", a, got, ok, avg)
		}
	}
}

// TestMaster_Kill9KeepsPlayerSightings kills a real scout master with
// SIGKILL once a commit has begun after a server's player list was
// recorded, silences the server and restarts the master on the same state
// file: where each of its people was seen is there again.
func TestMaster_Kill9KeepsPlayerSightings(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	bin := buildScout(t)
	state := filepath.Join(t.TempDir(), "state.db")
	args := []string{"-l", "127.0.0.1", "-p", "0", "--list-loopback", "--state", state, "--http", "127.0.0.1:0",
		"-g", "Quake3Arena", "reprobe=1s"}
	m1 := &stateMaster{child: startMaster(t, bin, args...), args: args}
	m1.addr = netip.MustParseAddrPort(m1.waitLog(t, "listening", "port", "master")["addr"].(string))
	m1.httpAddr = m1.waitLog(t, "listening", "port", "http")["addr"].(string)
	m1.commits = watchCommits(m1.child)
	srv := serveTerm(t, termServer{name: "^2Sightings", mapName: "q3dm17", players: 3, delay: time.Millisecond}, 91, m1.addr)

	sightings := func(httpAddr, name string) (web.PlayerSightingsJSON, int) {
		var p web.PlayerSightingsJSON
		resp, err := http.Get("http://" + httpAddr + "/api/v1/players/" + name)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == 200 {
			if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
				t.Fatal(err)
			}
		}
		return p, resp.StatusCode
	}
	deadline := time.Now().Add(waitBound)
	for {
		if p, st := sightings(m1.httpAddr, "player2"); st == 200 && len(p.Sightings) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("player2 not seen")
		}
		<-time.After(50 * time.Millisecond) // the master re-probes every second
	}
	seen := time.Now()
	before := map[string]web.PlayerSightingsJSON{}
	for _, name := range []string{"player0", "player1", "player2"} {
		before[name], _ = sightings(m1.httpAddr, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	for start := (time.Time{}); !start.After(seen); {
		select {
		case start = <-m1.commits.starts:
		case <-ctx.Done():
			t.Fatal("no commit began after the sightings")
		}
	}
	m1.kill9(t)
	srv.stop()

	m2 := startMaster(t, bin, args...)
	restored := m2.waitLog(t, "player sightings restored")
	http2 := m2.waitLog(t, "listening", "port", "http")["addr"].(string)
	go func() {
		for range m2.lines {
		}
	}()
	if restored["players"] != float64(3) || restored["corrupt"] != float64(0) {
		t.Errorf("restored %v, want 3 players", restored)
	}
	for name, b := range before {
		a, st := sightings(http2, name)
		if st != 200 || len(a.Sightings) != 1 || len(b.Sightings) != 1 || a.Sightings[0].Server.Address != srv.addr.String() ||
			!a.Sightings[0].FirstSeen.Equal(b.Sightings[0].FirstSeen) || a.Sightings[0].LastSeen.Before(b.Sightings[0].LastSeen) {
			t.Errorf("%s after the restart: %d %+v; before the kill %+v", name, st, a, b)
		}
	}
}
