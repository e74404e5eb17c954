package peer

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Bounds of an OpenArena server's life.
const (
	// DefaultLifetime is how long a server runs unless the config says;
	// the test's cleanup normally ends it sooner.
	DefaultLifetime = 2 * time.Minute
	// ReadyTimeout bounds the wait for the server to answer getinfo with
	// all its bots connected.
	ReadyTimeout = 30 * time.Second
	// readyInterval is the gap between readiness probes: four a second
	// stays inside ioquake3's per-address bucket (10, then 1/s) for the
	// first 2.5 s, and inside its global one (10 per 100 ms).
	readyInterval = 250 * time.Millisecond
	// stopGrace is how long a SIGTERMed server may take to exit before
	// SIGKILL.
	stopGrace = 5 * time.Second
)

// ReadySource is the loopback address readiness probes come from, so they
// use their own ioquake3 rate-limit bucket, not the one of 127.0.0.1 that
// the test's queries use.
var ReadySource = netip.MustParseAddr("127.0.0.254")

// OpenArenaConfig describes a server to start. The zero value is a server
// with no bots, no master, and a name made from its port.
type OpenArenaConfig struct {
	// Hostname is sv_hostname; empty means "oa-peer-PORT".
	Hostname string
	// Bots are the bot names to add (sarge, grism, kyonshi, major, ...),
	// each at skill 1.
	Bots []string
	// Master is sv_master1, a loopback master "127.x.y.z:port"; empty
	// means none. sv_master2..5 are always blanked.
	Master string
	// Dedicated is 2 (heartbeats to the master) or 1 (LAN, none);
	// 0 means 2 with a Master and 1 without.
	Dedicated int
	// Map is the map to load; empty means oa_dm1.
	Map string
	// Extra are more engine arguments ("+set", "g_gametype", "3").
	Extra []string
	// Lifetime bounds the server's life; 0 means DefaultLifetime.
	Lifetime time.Duration
}

// OpenArena is a running OpenArena dedicated server.
type OpenArena struct {
	Addr netip.AddrPort // where it listens, on 127.0.0.1
	Home string         // its fs_homepath
	Log  string         // its console output
	// ReadyAfter is the time from start to the first readiness answer.
	ReadyAfter time.Duration
	launcher
}

// StartOpenArena starts a server for the test and waits until it answers
// getinfo with every bot connected. The server is stopped (its whole
// process group) when the test ends, and at the latest after its
// lifetime.
func StartOpenArena(t testing.TB, cfg OpenArenaConfig) *OpenArena {
	t.Helper()
	bin := Need(t, OpenArenaServer, "apt-get install openarena-server")
	if cfg.Master != "" {
		if err := loopback(cfg.Master); err != nil {
			t.Fatal(err)
		}
	}
	port := FreeUDPPort(t)
	dir := t.TempDir()
	oa := &OpenArena{
		Addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
		Home: filepath.Join(dir, "home"),
		Log:  filepath.Join(dir, "server.log"),
	}
	if cfg.Hostname == "" {
		cfg.Hostname = fmt.Sprintf("oa-peer-%d", port)
	}
	if cfg.Map == "" {
		cfg.Map = "oa_dm1"
	}
	if cfg.Dedicated == 0 {
		cfg.Dedicated = 1
		if cfg.Master != "" {
			cfg.Dedicated = 2
		}
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = DefaultLifetime
	}
	args := []string{
		"+set", "ttycon", "0", "+set", "fs_homepath", oa.Home,
		"+set", "net_enabled", "1", "+set", "net_ip", "127.0.0.1", "+set", "net_port", strconv.Itoa(int(port)),
		"+set", "dedicated", strconv.Itoa(cfg.Dedicated),
		"+set", "sv_master1", cfg.Master, "+set", "sv_master2", "", "+set", "sv_master3", "",
		"+set", "sv_master4", "", "+set", "sv_master5", "",
		"+set", "sv_hostname", cfg.Hostname,
	}
	args = append(args, cfg.Extra...)
	args = append(args, "+map", cfg.Map)
	for _, b := range cfg.Bots {
		args = append(args, "+addbot", b, "1")
	}
	start := time.Now()
	oa.start(t, bin, args, oa.Log, cfg.Lifetime)
	if err := waitClients(oa.Addr, oa.exited, oa.cmd, len(cfg.Bots)); err != nil {
		t.Fatalf("OpenArena server on %v: %v\n%s", oa.Addr, err, oa.LogTail())
	}
	oa.ReadyAfter = time.Since(start)
	return oa
}

// waitClients probes the server at addr (a Quake III-family server: the
// process cmd, exited when it ends) with getinfo from ReadySource until
// it answers with clients clients, it exits, or ReadyTimeout passes.
func waitClients(addr netip.AddrPort, exited <-chan struct{}, cmd *exec.Cmd, clients int) error {
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ReadySource, 0)))
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(ReadyTimeout)
	req := []byte("\xff\xff\xff\xffgetinfo peer-ready")
	buf := make([]byte, 4096)
	last := "no answer"
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("exited before it was ready (%v)", cmd.ProcessState)
		default:
		}
		if _, err := c.WriteToUDPAddrPort(req, addr); err != nil {
			return err
		}
		// The read deadline paces the probes.
		c.SetReadDeadline(time.Now().Add(readyInterval))
		for {
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				break // deadline: probe again
			}
			reply := buf[:n]
			if !bytes.HasPrefix(reply, []byte("\xff\xff\xff\xffinfoResponse")) {
				continue
			}
			if n := infoValue(reply, "clients"); n == strconv.Itoa(clients) {
				return nil
			} else {
				last = "answered with clients=" + n
			}
			// Wait out the interval before the next probe.
			for {
				if _, _, err := c.ReadFromUDPAddrPort(buf); err != nil {
					break
				}
			}
			break
		}
	}
	return fmt.Errorf("not ready within %v: %s", ReadyTimeout, last)
}

// infoValue finds \key\value in an infoResponse, for readiness only (the
// package under test is not used to judge its own peer).
func infoValue(b []byte, key string) string {
	pat := []byte(`\` + key + `\`)
	i := bytes.Index(b, pat)
	if i < 0 {
		return ""
	}
	v := b[i+len(pat):]
	if j := bytes.IndexAny(v, "\\\n\x00"); j >= 0 {
		v = v[:j]
	}
	return string(v)
}

// LogTail returns the end of the server's console log, for failure
// messages.
func (oa *OpenArena) LogTail() string { return tail(oa.Log) }
