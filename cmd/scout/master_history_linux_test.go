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
