//go:build linux

package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/fleet"
	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/latency"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
)

// TestServers_OrderLandmarksFleet is --order landmarks live against a fleet:
// three instances sharing a real redis-server, placed in Frankfurt, New
// York and Tokyo (each on a loopback IP of its own, which the world
// answers with its city's RTTs), and 45 emulated servers in 45 of the
// model's cities that heartbeat to the Frankfurt instance only. The other
// two learn the servers from Redis and measure them only by the rotating
// re-probes (every 2 s here); each instance's RTTs reach the others
// through Redis. Once every instance holds every landmark's RTT to every
// server, a client in Sydney (its RTT to each instance through a
// delaying relay) runs scout servers --order landmarks against the three,
// and must find every playable server (model RTT under 200 ms) with
// fewer probes than the list.
func TestServers_OrderLandmarksFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a world, a redis-server and three masters")
	}
	peer.Need(t, "redis-server", "apt-get install redis-server")
	stopRedis, url, err := startRedisServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopRedis)
	city := citiesByName()
	client := city["Sydney"]
	places := []string{"Frankfurt", "NewYork", "Tokyo"}
	id := byte(os.Getpid()%200 + 1)

	const n = 45
	w, srvCity := cityWorld(9, n, 10, 5, id)
	am := worldAddrMap(t, w)
	var games []*game.Game
	for _, g := range game.Builtin() {
		if g.Name == "Quake3Arena" {
			c := *g
			c.Reprobe.Interval = 2 * time.Second
			g = &c
		}
		games = append(games, g)
	}
	cat, err := game.NewCatalogue(games...)
	if err != nil {
		t.Fatal(err)
	}
	links := func(from latency.City) []world.Link { return cityLinks(from, srvCity) }
	requesters := map[netip.Addr][]world.Link{netip.MustParseAddr("127.0.0.1"): links(client)}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var ms []*masterd.Master
	var nodes []*fleet.Node
	var addrs []netip.AddrPort
	for k, p := range places {
		node, err := fleet.New(fleet.Config{Redis: url, ID: p, Beat: 100 * time.Millisecond, Dead: 500 * time.Millisecond,
			Landmark: &master.Landmark{Place: p}})
		if err != nil {
			t.Fatal(err)
		}
		lm := &master.Landmark{ID: p, Place: p}
		m := listenMaster(t, masterd.Config{
			Listen:     []netip.AddrPort{netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 6, id, byte(k + 1)}), 0)},
			Landmark:   lm,
			Reloadable: masterd.Reloadable{Registry: master.Config{AddrMap: am, Catalogue: cat}},
		}, masterd.Deps{Fleet: node})
		a := m.Addrs()[0]
		ms, nodes, addrs = append(ms, m), append(nodes, node), append(addrs, a)
		requesters[a.Addr()] = links(city[p])
	}
	// Each instance is reached through a relay (the player and the other
	// instances, each over its own path); the others ping it there, as
	// its description says.
	relays := landmarkRelays(t, addrs, places, client)
	for k, m := range ms {
		nodes[k].SetLandmarkAddress(relays[k])
		wg.Go(func() { m.Run(ctx) })
	}
	// The servers heartbeat to Frankfurt alone.
	em, err := world.Listen(w, world.Config{Masters: addrs[:1], Requesters: requesters})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { em.Run(ctx) })
	// Every instance holds its own RTT and the two others' to every server.
	full := func() bool {
		for _, m := range ms {
			ss := m.Registry.Servers(nil)
			if len(ss) != n {
				return false
			}
			for _, s := range ss {
				if s.RTT <= 0 || len(s.Landmarks) != len(places)-1 {
					return false
				}
			}
		}
		return true
	}
	// Up to the test's own deadline less a minute for the client runs (the
	// fleet needs about 7 s idle; a fixed bound is a guess at the load).
	start := time.Now()
	giveUp := start.Add(60 * time.Second)
	if d, ok := t.Deadline(); ok && d.Add(-time.Minute).After(giveUp) {
		giveUp = d.Add(-time.Minute)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !full() {
		if time.Now().After(giveUp) {
			for k, m := range ms {
				measured := 0
				for _, s := range m.Registry.Servers(nil) {
					if s.RTT > 0 {
						measured++
					}
				}
				t.Logf("%s: %d servers measured", places[k], measured)
			}
			t.Fatalf("the fleet did not measure every server from every landmark within %v", time.Since(start).Round(time.Second))
		}
		<-tick.C
	}
	measuredIn := time.Since(start)
	// Each instance measured its RTT to the two others through the
	// relays, and holds theirs to each other from their descriptions.
	waitMesh(t, ms, places, time.Until(giveUp))
	for k, m := range ms {
		for m.Registry.Mesh().Rows() == nil || len(m.Registry.Mesh().Rows()) < len(places)-1 {
			if time.Now().After(giveUp) {
				t.Fatalf("%s holds the rows %v of the other landmarks' RTTs", places[k], m.Registry.Mesh().Rows())
			}
			<-tick.C
		}
	}
	// The published RTTs are the world's for each landmark's city.
	for k, m := range ms {
		for _, s := range m.Registry.Servers(nil) {
			i := int(s.Addr.Addr().As4()[3]) - 1
			want := latency.CityRTT(city[places[k]], srvCity[i])
			if s.RTT < want || s.RTT > want+250*time.Millisecond {
				t.Errorf("%s's RTT to %s = %v, emulated %v", places[k], srvCity[i].Name, s.RTT, want)
			}
		}
	}

	mapPath := tempWorldMap(t, em.Table())
	compareLandmarksOrder(t, w, srvCity, client, mapPath, relays,
		fmt.Sprintf("every server measured from the 3 landmarks %v after start; ", measuredIn.Round(time.Millisecond)))
}
