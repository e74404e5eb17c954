//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/lab/demo"
	"github.com/scout-discovery/scout/lab/loopnat"
	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/latency"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/web"
)

// countListed is a slog handler that signals each "listed" record.
type countListed struct{ ch chan struct{} }

func (c countListed) Enabled(context.Context, slog.Level) bool { return true }
func (c countListed) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "listed" {
		c.ch <- struct{}{}
	}
	return nil
}
func (c countListed) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c countListed) WithGroup(string) slog.Handler      { return c }

// listenMaster makes a master of cfg and deps and opens its sockets; the
// caller runs it.
func listenMaster(t *testing.T, cfg masterd.Config, deps masterd.Deps) *masterd.Master {
	t.Helper()
	m, err := masterd.NewMaster(time.Now(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		t.Fatal(err)
	}
	return m
}

// citiesByName is the latency model's cities by name.
func citiesByName() map[string]latency.City {
	city := map[string]latency.City{}
	for _, c := range latency.Cities() {
		city[c.Name] = c
	}
	return city
}

// cityWorld is n emulated Quake III servers (at most 256), the i-th in
// the latency model's city i*len(cities)/n, public at 5.pub.i.1:27960 (a
// /24 each: servers of one /24 sit in one place, as group probing takes
// them) and answering on 127.lo.id.(i+1):27960 (the public port: the
// masters map the IP alone); it returns the world and each server's city.
func cityWorld(seed uint64, n int, pub, lo, id byte) (world.World, []latency.City) {
	cities := latency.Cities()
	var w world.World
	w.Version, w.Seed = 1, seed
	var srvCity []latency.City
	for i := range n {
		c := cities[(i*len(cities))/n]
		srvCity = append(srvCity, c)
		w.Servers = append(w.Servers, world.Server{
			Public:   netip.AddrPortFrom(netip.AddrFrom4([4]byte{5, pub, byte(i), 1}), 27960),
			Loopback: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, lo, id, byte(i + 1)}), 27960),
			Game:     world.Q3A, Hostname: "srv-" + c.Name, Map: "q3dm17", MaxClients: 8,
		})
	}
	return w, srvCity
}

// cityLinks is the emulated link to each server (in srvCity) from a
// requester in from: the latency model's RTT between the two cities.
func cityLinks(from latency.City, srvCity []latency.City) []world.Link {
	ls := make([]world.Link, len(srvCity))
	for i := range ls {
		ls[i] = world.Link{RTT: world.Duration(latency.CityRTT(from, srvCity[i]))}
	}
	return ls
}

// worldAddrMap maps each of w's servers' loopback IP to its public IP
// (any port), so that a master in front of the world lists the servers
// under their public addresses.
func worldAddrMap(t *testing.T, w world.World) *master.AddrMap {
	t.Helper()
	var maps []master.Mapping
	for _, s := range w.Servers {
		maps = append(maps, master.Mapping{From: netip.AddrPortFrom(s.Loopback.Addr(), 0), To: netip.AddrPortFrom(s.Public.Addr(), 0)})
	}
	am, err := master.NewAddrMap(maps...)
	if err != nil {
		t.Fatal(err)
	}
	return am
}

// tempWorldMap writes a world's address table to a file of a temporary
// directory, for --world-map, and returns its path.
func tempWorldMap(t *testing.T, tab *loopnat.Table) string {
	t.Helper()
	mapPath := filepath.Join(t.TempDir(), "world-map.json")
	if err := writeWorldMap(tab, mapPath); err != nil {
		t.Fatal(err)
	}
	return mapPath
}

// wait waits for n "listed" records, and fails t after within.
func (c countListed) wait(t *testing.T, n int, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for i := range n {
		select {
		case <-c.ch:
		case <-timeout:
			t.Fatalf("the masters listed %d of %d servers within %v", i, n, within)
		}
	}
}

// compareLandmarksOrder runs scout servers --order landmarks and --order
// master against the masters behind relays (the client reaching the
// world as mapPath says, from client's city), and checks that both find
// every playable server of w (the model's RTT from client under 200 ms;
// srvCity is each server's city) and that the landmarks order does with
// fewer probes, from three landmarks and their measured RTTs to each
// other. note begins the log line. It returns the landmarks order's
// summary.
func compareLandmarksOrder(t *testing.T, w world.World, srvCity []latency.City, client latency.City, mapPath string, relays []netip.AddrPort, note string) map[string]any {
	t.Helper()
	playable := map[netip.AddrPort]bool{}
	for i, s := range w.Servers {
		if latency.CityRTT(client, srvCity[i]) < 200*time.Millisecond {
			playable[s.Public] = true
		}
	}
	summary := func(order string) (map[string]any, int) {
		t.Helper()
		args := []string{"servers", "--game", "Quake3Arena", "--world-map", mapPath, "--order", order, "--json", "--max-time", "60s"}
		for _, r := range relays {
			args = append(args, "--master", r.String())
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("--order %s: exit %d\n%s\n%s", order, code, stdout.String(), stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		var sum map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, l := range lines[:len(lines)-1] {
			var srv discover.ServerJSON
			if json.Unmarshal([]byte(l), &srv) != nil || srv.Type != "server" || srv.Error != "" || srv.RTTms <= 0 {
				continue
			}
			if a, err := netip.ParseAddrPort(srv.Address); err == nil && playable[netip.AddrPortFrom(a.Addr(), 27960)] {
				found++
			}
		}
		return sum, found
	}
	lm, lmFound := summary("landmarks")
	conv, convFound := summary("master")
	ord, _ := lm["order"].(map[string]any)
	t.Logf("%splayable %d of %d; landmarks: %v probes, found %d, order %v; conventional: %v probes, found %d",
		note, len(playable), len(w.Servers), lm["probes"], lmFound, ord, conv["probes"], convFound)
	if ord == nil || len(ord["landmarks"].([]any)) != 3 || ord["landmark_matrix"] != "measured" {
		t.Fatalf("landmarks order summary %v; want 3 landmarks and their measured RTTs to each other", ord)
	}
	if lmFound < len(playable) || convFound < len(playable) {
		t.Errorf("found %d (landmarks), %d (conventional) of %d playable", lmFound, convFound, len(playable))
	}
	if lm["probes"].(float64) >= conv["probes"].(float64) {
		t.Errorf("landmarks probed %v, conventional %v", lm["probes"], conv["probes"])
	}
	return ord
}

// landmarkRelays puts a relay in front of each landmark master at addrs
// (demo.RelayWith): the player (127.0.0.1) reaches the master in
// places[k] with the latency model's RTT from client's city, and the
// other masters (their own loopback IPs) with the model's RTT between the
// two cities; it returns the relays' addresses, in the masters' order.
func landmarkRelays(t *testing.T, addrs []netip.AddrPort, places []string, client latency.City) []netip.AddrPort {
	t.Helper()
	city := citiesByName()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var out []netip.AddrPort
	for k, a := range addrs {
		delay := func(from netip.AddrPort) time.Duration {
			for j, b := range addrs {
				if b.Addr() == from.Addr() {
					return latency.CityRTT(city[places[j]], city[places[k]])
				}
			}
			return latency.CityRTT(client, city[places[k]])
		}
		r, err := demo.RelayWith(ctx, &wg, a, demo.RelayConfig{Delay: delay})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// waitMesh waits until every master of ms has measured its RTT to every
// other landmark of places, and checks each is the model's RTT between
// the two cities (through the relays), give or take a loaded machine.
func waitMesh(t *testing.T, ms []*masterd.Master, places []string, within time.Duration) {
	t.Helper()
	city := citiesByName()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for k := 0; k < len(ms); {
		if own := ms[k].Registry.Mesh().Own(); len(own) == len(places)-1 {
			for _, e := range own {
				want := latency.CityRTT(city[places[k]], city[e.Landmark])
				if e.RTT < want || e.RTT > want+150*time.Millisecond {
					t.Errorf("%s's RTT to %s = %v, the model's %v", places[k], e.Landmark, e.RTT, want)
				}
			}
			k++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s measured %v of the other landmarks within %v", places[k], ms[k].Registry.Mesh().Own(), within)
		}
		<-tick.C
	}
}

// TestServers_OrderLandmarksLive runs --order landmarks live on
// loopback: 60 emulated servers in 60 of the latency model's cities, three
// masters placed in Frankfurt, New York and Tokyo (each on a loopback IP
// of its own, so the world answers each with the RTT its place implies:
// world.Config.Requesters), a client in Sydney (its RTTs to the servers
// likewise, and to each master through a relay that delays the master's
// replies by the model's RTT). The masters measure their RTTs when they
// verify the servers, and their RTTs to each other by pinging each other
// through the same relays (each path delayed by the model's RTT between
// the two cities: demo.RelayWith); scout servers --order landmarks
// reads both with the lists (the landmarks' RTTs to each other for
// Repair, measured, not derived), estimates its access delay from them,
// and must find every playable server (model RTT under 200 ms) with fewer
// probes than the list.
func TestServers_OrderLandmarksLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a world and three masters")
	}
	city := citiesByName()
	client := city["Sydney"]
	places := []string{"Frankfurt", "NewYork", "Tokyo"}
	id := byte(os.Getpid()%200 + 1)

	const n = 60
	w, srvCity := cityWorld(7, n, 9, 4, id)
	am := worldAddrMap(t, w)
	links := func(from latency.City) []world.Link { return cityLinks(from, srvCity) }
	requesters := map[netip.Addr][]world.Link{netip.MustParseAddr("127.0.0.1"): links(client)}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	listed := countListed{ch: make(chan struct{}, 3*n+16)}
	var mastersAddr, relays []netip.AddrPort
	var ms []*masterd.Master
	for k, p := range places {
		m := listenMaster(t, masterd.Config{
			Listen:     []netip.AddrPort{netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 3, id, byte(k + 1)}), 0)},
			HTTP:       "127.0.0.1:0",
			Landmark:   &master.Landmark{ID: p, Place: p},
			Reloadable: masterd.Reloadable{Registry: master.Config{AddrMap: am, LandmarkPingInterval: 300 * time.Millisecond}},
		}, masterd.Deps{Logger: slog.New(listed)})
		wg.Go(func() { m.Run(ctx) })
		a := m.Addrs()[0]
		ms, mastersAddr = append(ms, m), append(mastersAddr, a)
		requesters[a.Addr()] = links(city[p])
	}
	relays = landmarkRelays(t, mastersAddr, places, client)
	for k, m := range ms {
		var peers []master.LandmarkPeer
		for j, p := range places {
			if j != k {
				peers = append(peers, master.LandmarkPeer{ID: p, Addr: relays[j]})
			}
		}
		m.Registry.Mesh().SetPeers(time.Now(), peers)
	}
	waitMesh(t, ms, places, 30*time.Second)
	// Each publishes them at /api/v1/landmarks.
	checkAPI := func() {
		t.Helper()
		for k, m := range ms {
			resp, err := http.Get("http://" + m.HTTPAddr().String() + "/api/v1/landmarks")
			if err != nil {
				t.Fatal(err)
			}
			var lj web.LandmarksJSON
			err = json.NewDecoder(resp.Body).Decode(&lj)
			resp.Body.Close()
			if err != nil || len(lj.Landmarks) != 1 || lj.Landmarks[0].ID != places[k] || len(lj.Landmarks[0].RTTs) != len(places)-1 {
				t.Fatalf("%s's /api/v1/landmarks: %+v, %v; want its RTTs to the 2 others", places[k], lj, err)
			}
			for _, e := range lj.Landmarks[0].RTTs {
				if want := float64(latency.CityRTT(city[places[k]], city[e.ID])) / 1e6; e.RTTMs < want || e.RTTMs > want+150 {
					t.Errorf("%s's published RTT to %s: %.1f ms, the model's %.1f", places[k], e.ID, e.RTTMs, want)
				}
			}
		}
	}
	em, err := world.Listen(w, world.Config{Masters: mastersAddr, Requesters: requesters})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { em.Run(ctx) })
	listed.wait(t, 3*n, 30*time.Second)
	checkAPI()
	mapPath := tempWorldMap(t, em.Table())
	ord := compareLandmarksOrder(t, w, srvCity, client, mapPath, relays, "")
	// The client in Sydney has no access delay of its own here; the
	// estimate from the landmarks it derives must not invent a large one.
	if h, ok := ord["access_ms"].(float64); !ok || h < 0 || h > 25 {
		t.Errorf("access delay estimated %v, want 0 to 25 ms", ord["access_ms"])
	}
}
