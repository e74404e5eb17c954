// Package peer starts and drives real third-party programs for scout's
// interoperability tests: an OpenArena and a Nexuiz (DarkPlaces)
// dedicated server on loopback, qstat's quakestat and gamedig.
//
// A test asks for a program with [Need], runs it with [Run],
// [RunQuakestat], [RunGamedig] or [QueryGamedig], and scripts the server
// it talks to with [ServeUDP] or [ServeUDPOn]; a benchmark measures a
// server from outside with [ProbeRTT] and asks a master with
// [CountListed]. When the program is missing the
// test is skipped with a message naming the package that provides it,
// except when the environment variable CI is non-empty: CI installs every
// peer, so there a missing program fails the test.
//
// Everything a peer does stays on 127.0.0.0/8: servers bind 127.0.0.1,
// their master list holds only the loopback master a test gives (or
// none), and each server's lifetime is bounded.
package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// Programs the tests run, and where CI installs them.
const (
	// OpenArenaServer is Debian's openarena-server launcher (ioq3ded).
	OpenArenaServer = "/usr/games/openarena-server"
	// Quakestat is qstat, from Debian's qstat package.
	Quakestat = "quakestat"
	// Node runs gamedig, from Debian's nodejs package.
	Node = "node"
	// GamedigRel is gamedig's CLI, relative to the module root, installed
	// by npm ci in lab/interop/.
	GamedigRel = "lab/interop/node_modules/.bin/gamedig"
)

// RunTimeout bounds one run of quakestat or gamedig.
const RunTimeout = 30 * time.Second

// Need returns the path of program (an absolute path or a name looked up
// in PATH). When it is missing it skips the test, or fails it when CI is
// set; hint says how to install it.
func Need(t testing.TB, program, hint string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s not found (%s)", program, hint)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; CI must install it", msg)
	}
	t.Skipf("%s; skipping", msg)
	return ""
}

// ModuleRoot returns the directory holding go.mod, found upward from the
// working directory of the test.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("peer: no go.mod above the working directory")
		}
		dir = parent
	}
}

// FreeUDPPort returns a UDP port on 127.0.0.1 that was free a moment ago:
// it binds port 0 and closes the socket. Another process may take it
// before the caller does; the window is small on a test machine.
func FreeUDPPort(t testing.TB) uint16 {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Port()
}

// FreeTCPPort returns a TCP port on 127.0.0.1 that was free a moment ago,
// as [FreeUDPPort] does for UDP.
func FreeTCPPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// ProbeRun is what [ProbeRTT] saw: the probes sent, answered and
// unanswered (within [ProbeTimeout]), and the worst round trip answered.
type ProbeRun struct {
	Sent, Answered, Lost int
	Worst                time.Duration
}

// ProbeTimeout is how long [ProbeRTT] waits for one probe's answer.
const ProbeTimeout = 5 * time.Second

// ProbeRTT sends probe to addr from c for d, one at a time and a
// millisecond apart, each after the previous one's answer or timeout: a
// benchmark's measure of how long a server keeps a small request waiting
// while it does something big. A failed send ends the run with its error.
func ProbeRTT(c *net.UDPConn, addr netip.AddrPort, probe []byte, d time.Duration) (ProbeRun, error) {
	var r ProbeRun
	buf := make([]byte, 2048)
	for end := time.Now().Add(d); time.Now().Before(end); {
		t := time.Now()
		if _, err := c.WriteToUDPAddrPort(probe, addr); err != nil {
			return r, err
		}
		r.Sent++
		c.SetReadDeadline(t.Add(ProbeTimeout))
		if _, _, err := c.ReadFromUDPAddrPort(buf); err != nil {
			r.Lost++
			continue
		}
		r.Answered++
		r.Worst = max(r.Worst, time.Since(t))
		time.Sleep(time.Millisecond) // the probe's pace, not a wait for an event
	}
	return r, nil
}

// ListenLoopback opens a UDP socket on 127.0.0.1 (a port of the
// kernel's choosing), closed when t ends.
func ListenLoopback(t testing.TB) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// CountListed asks the master at m for req (a getservers or
// getserversExt) from a fresh socket on 127.0.0.1 and returns how many
// servers the first datagram of its answer lists, waiting at most wait
// for it.
func CountListed(m netip.AddrPort, req []byte, wait time.Duration) (int, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.WriteToUDPAddrPort(req, m); err != nil {
		return 0, err
	}
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 2048)
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		return 0, err
	}
	msg, err := q3.Parse(buf[:n])
	if sr, ok := msg.(q3.ServersResponse); ok {
		return len(sr.Servers), err
	}
	return 0, errors.New("not a server list")
}

// Run runs a program with a bounded lifetime (RunTimeout) and returns its
// standard output; a failed run fails the test with the program's stderr.
func Run(t testing.TB, path string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), RunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", path, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// QstatServer is one server of `quakestat -json` output. Rules and players
// are as qstat prints them.
type QstatServer struct {
	Protocol      string            `json:"protocol"`
	Address       string            `json:"address"`
	Status        string            `json:"status"`
	Hostname      string            `json:"hostname"`
	Name          string            `json:"name"`
	GameType      string            `json:"gametype"`
	Map           string            `json:"map"`
	NumPlayers    int               `json:"numplayers"`
	MaxPlayers    int               `json:"maxplayers"`
	NumSpectators int               `json:"numspectators"`
	MaxSpectators int               `json:"maxspectators"`
	Ping          int               `json:"ping"`
	Retries       int               `json:"retries"`
	Rules         map[string]string `json:"rules"`
	Players       []QstatPlayer     `json:"players"`
}

// QstatPlayer is one player of `quakestat -json -P` output.
type QstatPlayer struct {
	Name  string `json:"name"`
	Score int    `json:"score"`
	Ping  int    `json:"ping"`
}

// NeedQuakestat returns quakestat's path, as [Need] does.
func NeedQuakestat(t testing.TB) string {
	t.Helper()
	return Need(t, Quakestat, "apt-get install qstat")
}

// RunQuakestat runs quakestat with args (it adds -json) and returns the
// servers it reports.
func RunQuakestat(t testing.TB, args ...string) []QstatServer {
	t.Helper()
	out := Run(t, NeedQuakestat(t), append([]string{"-json"}, args...)...)
	var servers []QstatServer
	if err := json.Unmarshal(out, &servers); err != nil {
		t.Fatalf("quakestat -json output: %v\n%s", err, out)
	}
	return servers
}

// RunGamedig runs the gamedig CLI with args and decodes its JSON output
// into v. gamedig is a node program: both must be there.
func RunGamedig(t testing.TB, v any, args ...string) {
	t.Helper()
	Need(t, Node, "apt-get install nodejs")
	path := Need(t, filepath.Join(ModuleRoot(t), GamedigRel), "cd lab/interop && npm ci")
	out := Run(t, path, args...)
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("gamedig output: %v\n%s", err, out)
	}
}

// QueryGamedig asks gamedig for the server at addr as game type typ
// ("quake4", "unrealtournament3", "css", ...), on that port only and with
// one retry, and decodes its JSON output into v.
func QueryGamedig(t testing.TB, v any, typ string, addr netip.AddrPort) {
	t.Helper()
	RunGamedig(t, v, "--type", typ, "--host", addr.Addr().String(), "--port", strconv.Itoa(int(addr.Port())),
		"--givenPortOnly", "--maxRetries", "1")
}

// ServeUDP is a scripted server for a test: it answers every datagram that
// reaches its socket on 127.0.0.1 with the packets reply returns for it
// (none is silence), until the test ends. The socket is bound when ServeUDP
// returns, so a program started afterwards finds it ready. reply runs on
// one goroutine, one datagram at a time.
func ServeUDP(t testing.TB, reply func(req []byte) [][]byte) netip.AddrPort {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ServeUDPOn(t, conn, reply)
	return conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// ServeUDPOn is [ServeUDP] on a socket the test already holds, for a
// server that also sends from it (a game server's heartbeat to a master):
// it answers every datagram with the packets reply returns, and closes
// conn when the test ends.
func ServeUDPOn(t testing.TB, conn *net.UDPConn, reply func(req []byte) [][]byte) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return // closed
			}
			for _, b := range reply(buf[:n]) {
				if _, err := conn.WriteToUDPAddrPort(b, from); err != nil && !errors.Is(err, net.ErrClosed) {
					t.Errorf("peer.ServeUDP: %v", err)
				}
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
}

// errNotLoopback refuses any address off 127.0.0.0/8.
var errNotLoopback = errors.New("peer: address is not on 127.0.0.0/8")

func loopback(ap string) error {
	a, err := netip.ParseAddrPort(ap)
	if err != nil {
		return err
	}
	if !a.Addr().Is4() || !a.Addr().IsLoopback() {
		return fmt.Errorf("%w: %s", errNotLoopback, ap)
	}
	return nil
}

// SharedData returns the shared data folder (shared/data beside the
// repository, as CI lays it out, or beside any folder above the module
// root, as a git worktree sees it). It skips the test when the folder
// or file is missing, and fails it when CI is set.
func SharedData(t testing.TB, file string) string {
	t.Helper()
	for dir := ModuleRoot(t); ; {
		d := filepath.Join(dir, "..", "shared", "data")
		if _, err := os.Stat(filepath.Join(d, file)); err == nil {
			return d
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	msg := fmt.Sprintf("shared/data/%s not found beside the repository", file)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; CI must have it", msg)
	}
	t.Skip(msg)
	return ""
}
