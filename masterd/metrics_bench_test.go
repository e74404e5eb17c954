package masterd

import (
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
)

// BenchmarkMetrics_Scrape1M is one /metrics scrape (the whole handler:
// every collector, the text encoding) of a master listing 1,000,000
// servers (millionGame's games, four gametypes), restored in-process
// (BENCHMARKS.md, "A million servers"):
//
//	go test -run '^$' -bench Metrics_Scrape1M -benchmem ./masterd
func BenchmarkMetrics_Scrape1M(b *testing.B) {
	m, stop := startMaster(b, Config{
		Listen: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		Reloadable: Reloadable{Registry: master.Config{
			MaxServers: millionServers, MaxServersPerAddress: -1, AllowLoopback: true,
		}},
	})
	defer stop()
	servers := make([]master.Server, millionServers)
	now := time.Now()
	for i := range servers {
		name, proto, _ := millionGame(i)
		p, _ := strconv.Atoi(proto)
		servers[i] = master.Server{
			Addr: millionAddr(i), Listed: true, Game: name, Family: game.FamilyQ3, Protocol: p,
			Gametype: strconv.Itoa(i % 4), Clients: i % 17, MaxClients: 16, FirstSeen: now,
		}
	}
	if n, skipped := m.Registry.Restore(now, servers); n != millionServers {
		b.Fatalf("restored %d, skipped %d", n, len(skipped))
	}
	servers = nil
	h := m.HTTPHandler()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// Beyond MaxGametypeSeries kinds of server, the smallest are summed in
// one series with empty labels; the counts by game still hold them all.
func TestMetrics_GametypeSeriesBounded(t *testing.T) {
	m, err := NewMaster(time.Now(), Config{Listen: []netip.AddrPort{ap("127.0.0.1:0")}}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := MaxGametypeSeries + 10
	var servers []master.Server
	for i := range kinds {
		// Kinds 0-9 have one server, the others two: the first 10 are
		// the rest.
		for j := range 1 + min(i/10, 1) {
			servers = append(servers, master.Server{
				Addr:   netip.AddrPortFrom(netip.AddrFrom4([4]byte{23, byte(j), byte(i >> 8), byte(i)}), 27960),
				Listed: true, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 68,
				Gametype: "g" + strconv.Itoa(i), MaxClients: 16,
			})
		}
	}
	if n, skipped := m.Registry.Restore(time.Now(), servers); n != len(servers) {
		t.Fatalf("restored %d of %d: %d skipped", n, len(servers), len(skipped))
	}
	w := httptest.NewRecorder()
	m.HTTPHandler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body := w.Body.String()
	series := strings.Count(body, "\nscout_master_servers_listed_by_gametype{")
	if series != MaxGametypeSeries+1 {
		t.Errorf("%d series, want %d and the rest", series, MaxGametypeSeries)
	}
	for _, want := range []string{
		`scout_master_servers_listed_by_gametype{game="",gametype="",protocol=""} 10`,
		`scout_master_servers_listed_by_gametype{game="Quake3Arena",gametype="g265",protocol="68"} 2`,
		`scout_master_servers_listed_by_gametype{game="Quake3Arena",gametype="g10",protocol="68"} 2`,
		`scout_master_servers_listed_by_game{game="Quake3Arena"} ` + strconv.Itoa(len(servers)),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, `gametype="g9",`) {
		t.Error("a kind beyond the bound has its own series")
	}
}
