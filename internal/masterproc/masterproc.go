// Package masterproc runs a real `scout master` process for tests: it builds
// the static binary once, starts it with a JSON log whose lines a test waits
// for, and plays a game server and a player against it over loopback UDP.
// Tests of the deployment kit (container, units, signals, privileges) use it
// so that what they check is the program an operator runs.
package masterproc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// WaitBound bounds every wait for a log line or a datagram.
const WaitBound = 20 * time.Second

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// Binary returns the path of a static (CGO_ENABLED=0) scout binary built
// from this module once per test binary; Cleanup removes it.
func Binary(t testing.TB) string {
	t.Helper()
	root := peer.ModuleRoot(t)
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "scout-masterproc-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "scout")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/scout")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/scout: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// Cleanup removes the binary Binary built; call it from TestMain.
func Cleanup() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// Process is a running `scout master` whose JSON log lines are read as they
// come.
type Process struct {
	Cmd   *exec.Cmd
	lines chan map[string]any
	done  chan struct{}
	err   error // Wait's result, once done is closed
}

// Start runs `bin master --log-format json -v 4 args...` and kills it when
// the test ends, if it is still running.
func Start(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	return StartCmd(t, exec.Command(bin, append([]string{"master", "--log-format", "json", "-v", "4"}, args...)...))
}

// StartCmd starts cmd (a scout master logging JSON to stderr) as Start does,
// for a test that sets the command's own attributes (credentials, chroot).
func StartCmd(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Cmd: cmd, lines: make(chan map[string]any, 4096), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"msg": "(not JSON)", "line": sc.Text()}
			}
			select {
			case p.lines <- m:
			default: // nobody reads: drop rather than block the child
			}
		}
		close(p.lines)
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	return p
}

// WaitLog returns the first log line with msg (and key=value for each pair
// of kv) from now on. It fails the test if the process exits first.
func (p *Process) WaitLog(t testing.TB, msg string, kv ...string) map[string]any {
	t.Helper()
	deadline := time.After(WaitBound)
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				t.Fatalf("master exited before logging %q", msg)
			}
			if m["msg"] != msg {
				continue
			}
			match := true
			for i := 0; i+1 < len(kv); i += 2 {
				if fmt.Sprint(m[kv[i]]) != kv[i+1] {
					match = false
				}
			}
			if match {
				return m
			}
		case <-deadline:
			t.Fatalf("no %q log line within %v", msg, WaitBound)
		}
	}
}

// Addr waits for the "listening" line of the port named port ("master",
// "http") and returns its address.
func (p *Process) Addr(t testing.TB, port string) netip.AddrPort {
	t.Helper()
	s, _ := p.WaitLog(t, "listening", "port", port)["addr"].(string)
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		t.Fatalf("listening on %q: %v", s, err)
	}
	return ap
}

// Wait waits for the process to exit and returns how long that took and
// Wait's error.
func (p *Process) Wait(t testing.TB) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	select {
	case <-p.done:
		return time.Since(start), p.err
	case <-time.After(WaitBound):
		t.Fatalf("master still running after %v", WaitBound)
		return 0, nil
	}
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Server is a game server on loopback that answers getinfo and getstatus
// like an OpenArena server (protocol 71).
type Server struct {
	Conn *net.UDPConn
	Addr netip.AddrPort
}

// NewServer starts a Server; it answers until the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	c := peer.ListenLoopback(t)
	peer.ServeUDPOn(t, c, func(req []byte) [][]byte {
		m, err := q3.Parse(req)
		if err != nil {
			return nil
		}
		info := infostring.Info{{Key: "gamename", Value: "Quake3Arena"}, {Key: "protocol", Value: "71"},
			{Key: "sv_maxclients", Value: "8"}, {Key: "clients", Value: "1"}, {Key: "hostname", Value: "masterproc"}}
		var out []byte
		switch m := m.(type) {
		case q3.GetInfo:
			info = append(info, infostring.Pair{Key: "challenge", Value: m.Challenge})
			out, _ = q3.InfoResponse{Info: info}.AppendBinary(nil)
		case q3.GetStatus:
			info = append(info, infostring.Pair{Key: "challenge", Value: m.Challenge})
			out, _ = q3.StatusResponse{Info: info, Players: []q3.Player{{Name: "p"}}}.AppendBinary(nil)
		default:
			return nil
		}
		return [][]byte{out}
	})
	return &Server{Conn: c, Addr: c.LocalAddr().(*net.UDPAddr).AddrPort()}
}

// Heartbeat sends one heartbeat to master; the master then checks the
// server with getinfo, which the server answers.
func (s *Server) Heartbeat(t testing.TB, master netip.AddrPort) {
	t.Helper()
	if _, err := s.Conn.WriteToUDPAddrPort([]byte(q3.Prefix+"heartbeat QuakeArena-1\n"), master); err != nil {
		t.Fatal(err)
	}
}

// GetServers asks master for its protocol-71 list (empty and full servers
// included) and returns the servers of the first reply packet.
func GetServers(t testing.TB, master netip.AddrPort) []netip.AddrPort {
	t.Helper()
	c := peer.ListenLoopback(t)
	defer c.Close()
	if _, err := c.WriteToUDPAddrPort([]byte(q3.Prefix+"getservers 71 empty full\n"), master); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(WaitBound))
	b := make([]byte, 65535)
	n, _, err := c.ReadFromUDPAddrPort(b)
	if err != nil {
		t.Fatalf("getservers to %v: %v", master, err)
	}
	m, err := q3.Parse(b[:n])
	if err != nil {
		t.Fatal(err)
	}
	r, ok := m.(q3.ServersResponse)
	if !ok {
		t.Fatalf("getservers answered with %T", m)
	}
	return r.Servers
}

// TryGetServers is GetServers without a test: it waits at most d for the
// reply and returns nil when none came (the master may not be up yet).
func TryGetServers(master netip.AddrPort, d time.Duration) []netip.AddrPort {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.IPv4Unspecified(), 0)))
	if err != nil {
		return nil
	}
	defer c.Close()
	if _, err := c.WriteToUDPAddrPort([]byte(q3.Prefix+"getservers 71 empty full\n"), master); err != nil {
		return nil
	}
	c.SetReadDeadline(time.Now().Add(d))
	b := make([]byte, 65535)
	n, _, err := c.ReadFromUDPAddrPort(b)
	if err != nil {
		return nil
	}
	if m, err := q3.Parse(b[:n]); err == nil {
		if r, ok := m.(q3.ServersResponse); ok {
			return r.Servers
		}
	}
	return nil
}

// GetJSON decodes the JSON answer of a GET of url into v, failing the
// test on an error or a status other than 200.
func GetJSON(t testing.TB, url string, v any) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s %s", url, r.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}
