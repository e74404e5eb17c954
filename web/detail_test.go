package web_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/web"
)

// TestAPI_PlayersDetailHistoryRanking: games re-probed every second; once
// every server has answered a re-probe, the detail view gives every info
// key, the players of the re-probe's statusResponse (Quake 4: getInfo),
// country and network, and the history; the ranking orders by average
// players.
func TestAPI_PlayersDetailHistoryRanking(t *testing.T) {
	rec := &recorder{n: map[netip.AddrPort]int{}, ch: make(chan struct{}, 1)}
	w := testWorld()
	f := start(t, w, time.Second, web.Config{MinRefresh: -1}, rec)
	// Each server is verified by its heartbeat's check (getinfo), then
	// by its first re-probe a second later.
	deadline := time.After(20 * time.Second)
	for {
		rec.mu.Lock()
		done := len(rec.n) == len(w.Servers)
		for _, n := range rec.n {
			done = done && n >= 2
		}
		rec.mu.Unlock()
		if done {
			break
		}
		select {
		case <-rec.ch:
		case <-deadline:
			t.Fatalf("re-probes: %v", rec.n)
		}
	}

	var d web.DetailJSON
	alpha := f.pub["^1Alpha ^7Arena"]
	r := f.getJSON(t, "/api/v1/servers/"+alpha.String()+"?from=AU", &d)
	// The last reply was the re-probe's statusResponse: its info is the
	// serverinfo (sv_hostname, not the infoResponse's hostname).
	if d.Address != alpha.String() || d.Info["sv_hostname"] != "^1Alpha ^7Arena" || d.Info["mapname"] != "q3dm17" ||
		d.Country != "AU" || d.Network != "Cloudflare, Inc." || d.PingEstimateMs == nil || d.PlayersAt == nil {
		t.Errorf("alpha detail %+v", d)
	}
	if _, ok := d.Info["challenge"]; ok {
		t.Error("the challenge is served")
	}
	want := []web.PlayerJSON{{Name: "^2Bob", NamePlain: "Bob", Ping: 50}, {Name: "Ann", NamePlain: "Ann", Ping: 80}, {Name: "Sarge", NamePlain: "Sarge", Ping: 0}}
	if len(d.PlayerList) != len(want) {
		t.Fatalf("players %+v", d.PlayerList)
	}
	for i, p := range d.PlayerList {
		if p.Name != want[i].Name || p.NamePlain != want[i].NamePlain || p.Ping != want[i].Ping || p.Score == nil {
			t.Errorf("player %d: %+v, want %+v", i, p, want[i])
		}
	}
	if *d.PlayerList[0].Score != 10 {
		t.Errorf("Bob's score %d", *d.PlayerList[0].Score)
	}
	// Sarge has ping 0: a bot, apart from the two humans, whom the
	// history counts.
	if d.Players != 3 || d.Humans != 2 || d.Bots != 1 || d.SuspectedBots != 0 || !d.PlayerList[2].Bot || d.PlayerList[0].Bot || d.PlayerList[0].Since == nil {
		t.Errorf("alpha players %d humans %d bots %d suspected %d; players %+v", d.Players, d.Humans, d.Bots, d.SuspectedBots, d.PlayerList)
	}
	if d.History.ResolutionS != 300 || len(d.History.Points) == 0 || d.History.Points[len(d.History.Points)-1].Players != 2 {
		t.Errorf("history %+v", d.History)
	}
	// The detail's ETag answers 304.
	if r2, b := f.get(t, "/api/v1/servers/"+alpha.String()+"?from=AU", "If-None-Match", r.Header.Get("ETag")); r2.StatusCode != 304 || len(b) != 0 {
		t.Errorf("detail revalidation: %d", r2.StatusCode)
	}

	// Quake 4: players from getInfo, no scores.
	var q4 web.DetailJSON
	f.getJSON(t, "/api/v1/servers/"+f.pub["Delta"].String(), &q4)
	if len(q4.PlayerList) != 2 || q4.PlayerList[0].NamePlain != "Quad" || q4.PlayerList[0].Score != nil || q4.Family != "doom3" {
		t.Errorf("quake 4 detail %+v", q4)
	}

	// The list's sparkline and the ranking.
	var l web.ListJSON
	f.getJSON(t, "/api/v1/servers?sort=address", &l)
	for _, s := range l.Servers {
		if len(s.RecentPlayers) == 0 || s.RecentPlayers[len(s.RecentPlayers)-1] != s.Humans {
			t.Errorf("%s: recent %v, humans %d", s.NamePlain, s.RecentPlayers, s.Humans)
		}
	}
	var rk web.RankingJSON
	f.getJSON(t, "/api/v1/ranking?period=24h", &rk)
	var got []string
	for _, s := range rk.Servers {
		got = append(got, s.NamePlain)
	}
	// Humans: Charlie 4; Echo 3; Alpha and Delta 2 (Alpha's bot is not
	// counted; by address: 1.1.1.1 first); Foxtrot 1; Bravo 0.
	wantRank := []string{"Charlie CTF", "Echo", "Alpha Arena", "Delta", "Foxtrot", "Bravo FFA"}
	if rk.PeriodS != 86400 || len(got) != len(wantRank) {
		t.Fatalf("ranking %+v", rk)
	}
	for i := range wantRank {
		if got[i] != wantRank[i] || rk.Servers[i].Rank != i+1 {
			t.Errorf("rank %d: %s (%d), want %s", i+1, got[i], rk.Servers[i].Rank, wantRank[i])
		}
	}
	if rk.Servers[0].AvgPlayers != 4 || rk.Servers[0].PeakPlayers != 4 {
		t.Errorf("charlie %+v", rk.Servers[0])
	}
	var rq4 web.RankingJSON
	f.getJSON(t, "/api/v1/ranking?game=Quake4&period=1h", &rq4)
	if len(rq4.Servers) != 1 || rq4.Servers[0].NamePlain != "Delta" || rq4.Servers[0].AvgPlayers != 2 {
		t.Errorf("quake 4 ranking %+v", rq4)
	}
}

// TestAPI_StableOrderAcrossRefresh: the world's servers change players
// (re-probed every second); across a refresh in which counts changed, the
// list is in its order (players desc, name asc, address asc) and the
// servers whose count did not change keep their relative order.
func TestAPI_StableOrderAcrossRefresh(t *testing.T) {
	rec := &recorder{n: map[netip.AddrPort]int{}, ch: make(chan struct{}, 1)}
	w := testWorld()
	// Two more servers named alike, tying with Echo on players.
	w.Servers = append(w.Servers,
		server(6, world.Q3A, "5.9.1.1:27960", "Echo", "q3dm6", 8, world.Player{Name: "p1"}, world.Player{Name: "p2"}, world.Player{Name: "p3"}),
		server(7, world.Q3A, "202.12.27.33:27960", "Echo", "q3dm6", 8, world.Player{Name: "q1"}, world.Player{Name: "q2"}, world.Player{Name: "q3"}))
	f := startDyn(t, w, time.Second, 300*time.Millisecond, web.Config{MinRefresh: -1}, rec)
	var l1 web.ListJSON
	f.getJSON(t, "/api/v1/servers", &l1)
	players := func(l web.ListJSON) map[string]int {
		m := map[string]int{}
		for _, s := range l.Servers {
			m[s.Address] = s.Players
		}
		return m
	}
	p1 := players(l1)
	var l2 web.ListJSON
	deadline := time.After(30 * time.Second)
	for changed := false; !changed; {
		select {
		case <-rec.ch:
		case <-deadline:
			t.Fatal("no player count changed within 30 s")
		}
		if f.m.Registry.Version() == l1.Version {
			continue
		}
		f.getJSON(t, "/api/v1/servers", &l2)
		for a, n := range players(l2) {
			changed = changed || p1[a] != n
		}
	}
	for i := 1; i < len(l2.Servers); i++ {
		a, b := l2.Servers[i-1], l2.Servers[i]
		ka, kb := strings.ToLower(a.NamePlain), strings.ToLower(b.NamePlain)
		ok := a.Players > b.Players || (a.Players == b.Players && (ka < kb || (ka == kb && netip.MustParseAddrPort(a.Address).Compare(netip.MustParseAddrPort(b.Address)) < 0)))
		if !ok {
			t.Errorf("%d: %s (%d) before %s (%d)", i, a.Address, a.Players, b.Address, b.Players)
		}
	}
	var same1, same2 []string
	p2 := players(l2)
	for _, s := range l1.Servers {
		if p2[s.Address] == p1[s.Address] {
			same1 = append(same1, s.Address)
		}
	}
	for _, s := range l2.Servers {
		if p2[s.Address] == p1[s.Address] {
			same2 = append(same2, s.Address)
		}
	}
	if !slices.Equal(same1, same2) {
		t.Errorf("unchanged servers reordered: %v -> %v", same1, same2)
	}
	t.Logf("%d of %d servers changed players between versions %d and %d", len(l2.Servers)-len(same2), len(l2.Servers), l1.Version, l2.Version)
}

// TestAPI_ServerNameRawKeepsTheBytes: a server's detail gives its name's
// exact bytes (name_raw), beside the name drawn with Quake III's font:
// the high glyphs are not UTF-8, which a JSON string cannot carry.
func TestAPI_ServerNameRawKeepsTheBytes(t *testing.T) {
	const raw = "\xc1\xe2\xe3 ^3glyphs"
	w := world.World{Version: 1, Seed: 1, Servers: []world.Server{server(0, world.Q3A, "81.169.145.1:27960", raw, "q3dm17", 8)}}
	f := start(t, w, 0, web.Config{MinRefresh: -1}, nil)
	var l web.ListJSON
	f.getJSON(t, "/api/v1/servers", &l)
	if len(l.Servers) != 1 {
		t.Fatalf("%d servers listed", len(l.Servers))
	}
	var d web.DetailJSON
	f.getJSON(t, "/api/v1/servers/"+l.Servers[0].Address, &d)
	if string(d.NameRaw) != raw || d.Name != "Abc ^3glyphs" || d.NamePlain != "Abc glyphs" {
		t.Errorf("name %q, plain %q, raw %q; want the glyphs drawn and the bytes kept", d.Name, d.NamePlain, d.NameRaw)
	}
}
