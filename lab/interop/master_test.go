// Package interop holds tests against real third-party programs.
package interop

import (
	"bufio"
	"encoding/json"
	"net/netip"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
)

// TestMaster_OpenArenaQstat: a real OpenArena server heartbeats to scout
// master, which verifies it; real qstat lists it through the master, with
// the server's own info and players.
func TestMaster_OpenArenaQstat(t *testing.T) {
	peer.Need(t, peer.OpenArenaServer, "apt-get install openarena-server")
	peer.Need(t, peer.Quakestat, "apt-get install qstat")
	root := peer.ModuleRoot(t)
	bin := filepath.Join(t.TempDir(), "scout")
	if out, err := exec.Command("go", "build", "-C", root, "-o", bin, "./cmd/scout").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	port := peer.FreeUDPPort(t)
	master := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	cmd := exec.Command(bin, "master", "-l", master.String(), "--list-loopback", "--log-format", "json", "-v", "4")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	logs := make(chan map[string]any, 1024)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				logs <- m
			}
		}
		close(logs)
	}()
	waitLog := func(msg, key, val string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case m, ok := <-logs:
				if !ok {
					t.Fatalf("scout master exited before %q", msg)
				}
				if m["msg"] == msg && (key == "" || m[key] == val) {
					return
				}
			case <-deadline:
				t.Fatalf("scout master did not log %q %s=%s", msg, key, val)
			}
		}
	}
	// The server heartbeats at map load: the master must listen first.
	waitLog("listening", "port", "master")
	oa := peer.StartOpenArena(t, peer.OpenArenaConfig{
		Master:   master.String(),
		Hostname: "scout-interop",
		Bots:     []string{"sarge", "grism"},
	})
	waitLog("listed", "server", oa.Addr.String())

	servers := peer.RunQuakestat(t, "-q3m,71", master.String(), "-R", "-P")
	var found bool
	for _, s := range servers {
		switch s.Protocol {
		case "q3m":
			if s.Status != "online" {
				t.Errorf("master entry %+v", s)
			}
		case "q3s":
			if s.Address != oa.Addr.String() {
				t.Errorf("listed %s, want %s", s.Address, oa.Addr)
				continue
			}
			found = true
			if s.Name != "scout-interop" || s.Map != "oa_dm1" || s.NumPlayers != 2 || s.MaxPlayers == 0 ||
				s.Rules["protocol"] != "71" || len(s.Players) != 2 {
				t.Errorf("server through the master: %+v", s)
			}
		}
	}
	if !found {
		t.Fatalf("quakestat -q3m,71 did not list %v: %+v", oa.Addr, servers)
	}
}
