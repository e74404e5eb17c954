//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/demo"
	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/servers"
)

// TestServers_LandmarkPingsInflatedSample: the client's RTT to a landmark
// master is the least of its list query's round trip and its pings'
// (--landmark-pings), so one inflated sample does not move it. A real
// landmark master lists two emulated servers; the client asks it through
// a relay (demo.RelayWith) whose path takes 60 ms, and that adds 400 ms
// to one sample: every packet of the list (a master building a long list,
// a queue), or the first ping's reply (which then comes after the ping's
// wait: it ends the pings, and its late reply must not be taken for a
// later ping's). With the pings the client's RTT must stay within 100 ms
// of the path's; with none it is the inflated list sample, which shows
// the relay did inflate it. The client also asks the master for the
// game's other names from a socket of its own (a getservers whose empty
// reply looks like a ping's): only the socket that was sent the
// getserversExt list is the one whose replies are inflated.
func TestServers_LandmarkPingsInflatedSample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a world and a master")
	}
	id := byte(os.Getpid()%200 + 1)
	var w world.World
	w.Version, w.Seed = 1, 11
	for i := range 2 {
		w.Servers = append(w.Servers, world.Server{
			Public:   netip.AddrPortFrom(netip.AddrFrom4([4]byte{5, 11, 0, byte(i + 1)}), 27960),
			Loopback: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 6, id, byte(i + 1)}), 27960),
			Game:     world.Q3A, Hostname: "srv", Map: "q3dm17", MaxClients: 8,
		})
	}
	am := worldAddrMap(t, w)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	listed := countListed{ch: make(chan struct{}, 8)}
	m := listenMaster(t, masterd.Config{
		Listen:     []netip.AddrPort{netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 7, id, 1}), 0)},
		Landmark:   &master.Landmark{ID: "fra"},
		Reloadable: masterd.Reloadable{Registry: master.Config{AddrMap: am}},
	}, masterd.Deps{Logger: slog.New(listed)})
	wg.Go(func() { m.Run(ctx) })
	em, err := world.Listen(w, world.Config{Masters: m.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { em.Run(ctx) })
	listed.wait(t, len(w.Servers), 30*time.Second)
	mapPath := tempWorldMap(t, em.Table())

	const path, extra = 60 * time.Millisecond, 400 * time.Millisecond
	isList := func(p []byte) bool { return bytes.HasPrefix(p, []byte(q3.Prefix+"getserversExtResponse")) }
	isPong := func(p []byte) bool { return bytes.HasPrefix(p, []byte(q3.Prefix+"getserversResponse")) }
	for _, c := range []struct {
		name  string
		pings int                                     // asked for
		sent  int                                     // sent: a ping past its wait ends them (one more if a loaded machine slowed the list sample enough to wait for it)
		extra func(seen *int, p []byte) time.Duration // for the socket that asked for the list
	}{
		{"list inflated", 2, 2, func(_ *int, p []byte) time.Duration {
			if isList(p) {
				return extra
			}
			return 0
		}},
		{"first ping inflated", 2, 1, func(seen *int, p []byte) time.Duration {
			if isPong(p) {
				if *seen++; *seen == 1 {
					return extra
				}
			}
			return 0
		}},
		{"list inflated, no pings", 0, 0, func(_ *int, p []byte) time.Duration {
			if isList(p) {
				return extra
			}
			return 0
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rctx, rcancel := context.WithCancel(ctx)
			var rwg sync.WaitGroup
			defer func() { rcancel(); rwg.Wait() }()
			var mu sync.Mutex
			seen := 0
			var lister netip.AddrPort // the socket sent the getserversExt list
			relay, err := demo.RelayWith(rctx, &rwg, m.Addrs()[0], demo.RelayConfig{Delay: func(netip.AddrPort) time.Duration { return path }, Extra: func(client netip.AddrPort, _ int, p []byte) time.Duration {
				mu.Lock()
				defer mu.Unlock()
				if isList(p) {
					lister = client
				}
				if client != lister {
					return 0
				}
				return c.extra(&seen, p)
			}})
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"servers", "--game", "Quake3Arena", "--world-map", mapPath, "--order", "landmarks", "--json",
				"--max-time", "60s", "--auto-stop", "0", "--landmark-pings", string(rune('0' + c.pings)), "--master", relay.String()}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			var sum struct {
				Order servers.OrderReport `json:"order"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
				t.Fatal(err)
			}
			if len(sum.Order.ClientRTTs) != 1 {
				t.Fatalf("client RTTs %+v", sum.Order.ClientRTTs)
			}
			r := sum.Order.ClientRTTs[0]
			t.Logf("%s: %+v", c.name, r)
			lo, hi := ms(path), ms(path+100*time.Millisecond)
			if (r.Sent != c.sent && !(c.sent < c.pings && r.Sent == c.sent+1)) || r.RTTMs < lo {
				t.Fatalf("%+v: want %d pings sent and an RTT of at least the path's %.0f ms", r, c.sent, lo)
			}
			if c.pings == 0 {
				if r.RTTMs < ms(path+extra) {
					t.Errorf("without pings the RTT is %.1f ms: the list sample was not inflated (want at least %.0f ms)", r.RTTMs, ms(path+extra))
				}
				return
			}
			if len(r.PingsMs) > r.Sent || r.RTTMs >= hi {
				t.Errorf("RTT %.1f ms from the list's %.1f ms and pings %v: want under %.0f ms (the path's is %.0f)", r.RTTMs, r.ListMs, r.PingsMs, hi, lo)
			}
		})
	}
}
