package peer

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// NexuizServer is Debian's nexuiz-server launcher (DarkPlaces' dedicated
// server with Nexuiz's data): a DarkPlaces-protocol game, which
// heartbeats "DarkPlaces" and names its game in its infoResponse
// (gamename Nexuiz, protocol 3).
const NexuizServer = "/usr/games/nexuiz-server"

// NexuizConfig describes a Nexuiz server to start. The zero value is a
// server with no bots, no master and a name made from its port.
type NexuizConfig struct {
	// Hostname is its hostname; empty means "nexuiz-peer-PORT".
	Hostname string
	// Master is sv_master1, a loopback master "127.x.y.z:port"; empty
	// means none (and sv_public 0). The other masters, DarkPlaces'
	// built-in ones (sv_masterextra*) included, are always blanked.
	Master string
	// Map is the map to load; empty means aggressor.
	Map string
	// Lifetime bounds the server's life; 0 means DefaultLifetime.
	Lifetime time.Duration
}

// Nexuiz is a running Nexuiz dedicated server.
type Nexuiz struct {
	Addr netip.AddrPort // where it listens, on 127.0.0.1
	Log  string         // its console output
	// ReadyAfter is the time from start to the first readiness answer.
	ReadyAfter time.Duration
	launcher
}

// StartNexuiz starts a server for the test and waits until it answers
// getinfo. (A dedicated DarkPlaces server with nobody connected spawns no
// bots: bot_number takes effect once a player joins, so it has none.) It is stopped (its whole process
// group) when the test ends, and at the latest after its lifetime.
func StartNexuiz(t testing.TB, cfg NexuizConfig) *Nexuiz {
	t.Helper()
	bin := Need(t, NexuizServer, "apt-get install nexuiz-server")
	public := "0"
	if cfg.Master != "" {
		if err := loopback(cfg.Master); err != nil {
			t.Fatal(err)
		}
		public = "1"
	}
	port := FreeUDPPort(t)
	dir := t.TempDir()
	nx := &Nexuiz{
		Addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
		Log:  filepath.Join(dir, "server.log"),
	}
	if cfg.Hostname == "" {
		cfg.Hostname = fmt.Sprintf("nexuiz-peer-%d", port)
	}
	if cfg.Map == "" {
		cfg.Map = "aggressor"
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = DefaultLifetime
	}
	// The launcher drops empty arguments, so the settings go in a
	// config file the server executes before the map.
	home := filepath.Join(dir, "home")
	cfgText := fmt.Sprintf("set net_address 127.0.0.1\nset net_address_ipv6 ::1\nset sv_public %s\n"+
		"set sv_master1 %q\nset sv_master2 \"\"\nset sv_master3 \"\"\nset sv_master4 \"\"\n"+
		"set sv_masterextra1 \"\"\nset sv_masterextra2 \"\"\nset sv_masterextra3 \"\"\n"+
		"set hostname %q\n", public, cfg.Master, cfg.Hostname)
	if err := os.MkdirAll(filepath.Join(home, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "data", "peer.cfg"), []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-userdir", home, "+port", strconv.Itoa(int(port)), "+exec", "peer.cfg", "+map", cfg.Map}
	start := time.Now()
	nx.start(t, bin, args, nx.Log, cfg.Lifetime)
	if err := waitClients(nx.Addr, nx.exited, nx.cmd, 0); err != nil {
		t.Fatalf("Nexuiz server on %v: %v\n%s", nx.Addr, err, tail(nx.Log))
	}
	nx.ReadyAfter = time.Since(start)
	return nx
}

// LogTail returns the end of the server's console log, for failure
// messages.
func (nx *Nexuiz) LogTail() string { return tail(nx.Log) }

// tail returns the end of a log file.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	const keep = 3000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}
