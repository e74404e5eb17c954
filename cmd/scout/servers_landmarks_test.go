//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/demo"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/population"
	"github.com/scout-discovery/scout/world"
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

// delayRelay stands for the network between the client and a master on
// loopback, as in the demo ([demo.Relay]): it forwards the client's
// datagrams to the master at once and the master's back after delay (the
// path's whole RTT), over real UDP, until the test ends.
func delayRelay(t *testing.T, to netip.AddrPort, delay time.Duration) netip.AddrPort {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	addr, err := demo.Relay(ctx, &wg, to, delay)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return addr
}

// TestServers_OrderLandmarksLive runs the live half of issue 13 on
// loopback: 60 emulated servers in 60 of the latency model's cities, three
// masters placed in Frankfurt, New York and Tokyo (each on a loopback IP
// of its own, so the world answers each with the RTT its place implies:
// world.Config.Requesters), a client in Sydney (its RTTs to the servers
// likewise, and to each master through a relay that delays the master's
// replies by the model's RTT). The masters measure their RTTs when they
// verify the servers; scout servers --order landmarks reads them with the
// lists, derives the landmarks' RTTs to each other (Repair) and its access
// delay from them, and must find every playable server (model RTT under
// 200 ms) with fewer probes than the list.
func TestServers_OrderLandmarksLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a world and three masters")
	}
	city := map[string]population.City{}
	cities := population.Cities()
	for _, c := range cities {
		city[c.Name] = c
	}
	client := city["Sydney"]
	places := []string{"Frankfurt", "NewYork", "Tokyo"}
	id := byte(os.Getpid()%200 + 1)

	const n = 60
	var w world.World
	w.Version, w.Seed = 1, 7
	var srvCity []population.City
	for i := range n {
		c := cities[(i*len(cities))/n]
		srvCity = append(srvCity, c)
		w.Servers = append(w.Servers, world.Server{
			Public:   netip.AddrPortFrom(netip.AddrFrom4([4]byte{5, 9, byte(i / 200), byte(i%200 + 1)}), 27960),
			Loopback: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 4, id, byte(i + 1)}), 27960), // the public port: the masters map the IP alone
			Game:     world.Q3A, Hostname: "srv-" + c.Name, Map: "q3dm17", MaxClients: 8,
		})
	}
	var maps []master.Mapping
	for _, s := range w.Servers {
		maps = append(maps, master.Mapping{From: netip.AddrPortFrom(s.Loopback.Addr(), 0), To: netip.AddrPortFrom(s.Public.Addr(), 0)})
	}
	am, err := master.NewAddrMap(maps...)
	if err != nil {
		t.Fatal(err)
	}
	links := func(from population.City) []world.Link {
		ls := make([]world.Link, n)
		for i := range ls {
			ls[i] = world.Link{RTT: world.Duration(population.CityRTT(from, srvCity[i]))}
		}
		return ls
	}
	requesters := map[netip.Addr][]world.Link{netip.MustParseAddr("127.0.0.1"): links(client)}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	listed := countListed{ch: make(chan struct{}, 3*n+16)}
	var mastersAddr, relays []netip.AddrPort
	for k, p := range places {
		m, err := masterd.NewMaster(time.Now(), masterd.Config{
			Listen:   []netip.AddrPort{netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 3, id, byte(k + 1)}), 0)},
			Registry: master.Config{AddrMap: am},
			Handler:  master.HandlerConfig{Landmark: p},
			Logger:   slog.New(listed),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Listen(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { m.Run(ctx) })
		a := m.Addrs()[0]
		mastersAddr = append(mastersAddr, a)
		requesters[a.Addr()] = links(city[p])
		relays = append(relays, delayRelay(t, a, population.CityRTT(client, city[p])))
	}
	em, err := world.Listen(w, world.Config{Masters: mastersAddr, Requesters: requesters})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { em.Run(ctx) })
	timeout := time.After(30 * time.Second)
	for range 3 * n {
		select {
		case <-listed.ch:
		case <-timeout:
			t.Fatal("the masters did not list every server")
		}
	}
	mapPath := filepath.Join(t.TempDir(), "world-map.json")
	f, err := os.Create(mapPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := em.Table().WriteTo(f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	playable := map[netip.AddrPort]bool{}
	for i, s := range w.Servers {
		if population.CityRTT(client, srvCity[i]) < 200*time.Millisecond {
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
	t.Logf("playable %d of %d; landmarks: %v probes, found %d, order %v; conventional: %v probes, found %d",
		len(playable), n, lm["probes"], lmFound, ord, conv["probes"], convFound)
	if ord == nil || len(ord["landmarks"].([]any)) != 3 {
		t.Fatalf("landmarks order summary %v", ord)
	}
	// The client in Sydney has no access delay of its own here; the
	// estimate from the landmarks it derives must not invent a large one.
	if h, ok := ord["access_ms"].(float64); !ok || h < 0 || h > 25 {
		t.Errorf("access delay estimated %v, want 0 to 25 ms", ord["access_ms"])
	}
	if lmFound < len(playable) || convFound < len(playable) {
		t.Errorf("found %d (landmarks), %d (conventional) of %d playable", lmFound, convFound, len(playable))
	}
	if lm["probes"].(float64) >= conv["probes"].(float64) {
		t.Errorf("landmarks probed %v, conventional %v", lm["probes"], conv["probes"])
	}
}
