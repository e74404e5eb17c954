package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/masterproc"
	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// waitBound bounds every wait for the child's log or a datagram.
const waitBound = 15 * time.Second

// child is a `scout master` process whose JSON log lines are read as
// they come.
type child struct {
	cmd   *exec.Cmd
	lines chan map[string]any
}

// scoutBin is the scout binary the tests run, built once per test binary
// (a build takes tens of seconds on a busy machine) in binDir, which
// TestMain removes.
var (
	binDir   string
	binOnce  sync.Once
	scoutBin string
	binErr   error
)

func TestMain(m *testing.M) {
	if ready := os.Getenv(refusingMasterEnv); ready != "" {
		os.Exit(runRefusingMaster(ready)) // the test binary as a helper process
	}
	// scout servers remembers its RTTs in the user's cache folder: the
	// tests' runs (and the binaries they start) get one of their own.
	cache, err := os.MkdirTemp("", "scout-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	os.RemoveAll(cache)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	masterproc.Cleanup()
	os.Exit(code)
}

func buildScout(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "scout-test-bin-"); binErr != nil {
			return
		}
		scoutBin = filepath.Join(binDir, "scout")
		out, err := exec.Command("go", "build", "-o", scoutBin, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return scoutBin
}

func startMaster(t testing.TB, bin string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"master", "--log-format", "json", "-v", "4"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan map[string]any, 1024)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.lines <- m
			}
		}
		close(c.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return c
}

// waitLog returns the first log line with msg (and key=value when given).
func (c *child) waitLog(t testing.TB, msg string, kv ...string) map[string]any {
	t.Helper()
	deadline := time.After(waitBound)
	for {
		select {
		case m, ok := <-c.lines:
			if !ok {
				t.Fatalf("master exited before logging %q", msg)
			}
			if m["msg"] != msg {
				continue
			}
			match := true
			for i := 0; i+1 < len(kv); i += 2 {
				if v, _ := m[kv[i]].(string); v != kv[i+1] {
					match = false
				}
			}
			if match {
				return m
			}
		case <-deadline:
			t.Fatalf("no %q log line within %v", msg, waitBound)
		}
	}
}

func recv(t *testing.T, c *net.UDPConn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitBound))
	b := make([]byte, 65535)
	n, _, err := c.ReadFromUDPAddrPort(b)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// fakeServer answers every getinfo/getstatus like an OpenArena server.
func fakeServer(t *testing.T, c *net.UDPConn) {
	peer.ServeUDPOn(t, c, func(req []byte) [][]byte {
		m, err := q3.Parse(req)
		if err != nil {
			return nil
		}
		info := infostring.Info{{Key: "gamename", Value: "Quake3Arena"}, {Key: "protocol", Value: "71"},
			{Key: "sv_maxclients", Value: "8"}, {Key: "clients", Value: "1"}, {Key: "hostname", Value: "fake"}}
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
}

func getservers(t *testing.T, master netip.AddrPort) []netip.AddrPort {
	t.Helper()
	c := peer.ListenLoopback(t)
	c.WriteToUDPAddrPort([]byte(q3.Prefix+"getservers 71 empty full\n"), master)
	m, err := q3.Parse(recv(t, c))
	if err != nil {
		t.Fatal(err)
	}
	return m.(q3.ServersResponse).Servers
}

func TestMaster_RestartKeepsList(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	bin := buildScout(t)
	state := filepath.Join(t.TempDir(), "state.db")
	args := []string{"-l", "127.0.0.1", "-p", "0", "--list-loopback", "--state", state}

	m1 := startMaster(t, bin, args...)
	addr := netip.MustParseAddrPort(m1.waitLog(t, "listening", "port", "master")["addr"].(string))
	srv := peer.ListenLoopback(t)
	srvAddr := srv.LocalAddr().(*net.UDPAddr).AddrPort()
	srv.WriteToUDPAddrPort([]byte(q3.Prefix+"heartbeat QuakeArena-1\n"), addr)
	fakeServer(t, srv)
	m1.waitLog(t, "listed", "server", srvAddr.String())
	m1.waitLog(t, "state written")
	if got := getservers(t, addr); len(got) != 1 || got[0] != srvAddr {
		t.Fatalf("before the kill: %v", got)
	}
	// kill -9: no shutdown code runs.
	m1.cmd.Process.Signal(syscall.SIGKILL)
	m1.cmd.Wait()

	m2 := startMaster(t, bin, "-l", "127.0.0.1:"+itoa(addr.Port()), "--list-loopback", "--state", state)
	if n := m2.waitLog(t, "restored")["servers"]; n != float64(1) {
		t.Fatalf("restored %v servers", n)
	}
	m2.waitLog(t, "listening", "port", "master")
	if got := getservers(t, addr); len(got) != 1 || got[0] != srvAddr {
		t.Fatalf("after the restart: %v", got)
	}
	// SIGTERM: a clean exit.
	m2.cmd.Process.Signal(syscall.SIGTERM)
	m2.waitLog(t, "stopped")
	if err := m2.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

func itoa(p uint16) string { return strconv.Itoa(int(p)) }
