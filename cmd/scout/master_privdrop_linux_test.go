package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/scout-discovery/scout/internal/masterproc"
)

// TestMaster_UserAndJail runs scout master as root with -u and -j, as
// dpmaster's operators do: it binds, opens its state file outside the
// jail, then runs as the user inside the jail, still lists a server that
// heartbeats to it, still commits its state, and exits cleanly on SIGTERM.
func TestMaster_UserAndJail(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root; this test needs root")
		}
		t.Skip("needs root")
	}
	bin := masterproc.Binary(t)
	jail, stateDir := t.TempDir(), t.TempDir()
	m := masterproc.Start(t, bin, "-u", "65534:65534", "-j", jail, "-l", "127.0.0.1", "-p", "0",
		"--motd-port", "0", "--list-loopback", "--state", filepath.Join(stateDir, "master.db"))
	addr := m.Addr(t, "master")
	m.WaitLog(t, "privileges dropped")
	pid := m.Cmd.Process.Pid
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Uid:\t65534\t65534\t65534\t65534", "Gid:\t65534\t65534\t65534\t65534", "Groups:\t65534"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("/proc/%d/status lacks %q:\n%s", pid, want, status)
		}
	}
	if root, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/root"); err != nil || root != jail {
		t.Errorf("root directory %q (%v), want the jail %s", root, err, jail)
	}
	srv := masterproc.NewServer(t)
	srv.Heartbeat(t, addr)
	m.WaitLog(t, "listed", "server", srv.Addr.String())
	m.WaitLog(t, "state written")
	if got := masterproc.GetServers(t, addr); len(got) != 1 || got[0] != srv.Addr {
		t.Fatalf("getservers: %v", got)
	}
	m.Cmd.Process.Signal(syscall.SIGTERM)
	if _, err := m.Wait(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// TestMaster_JailNeedsUser: -j without -u is refused before anything is
// bound, with dpmaster's status 1.
func TestMaster_JailNeedsUser(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	out, err := exec.Command(masterproc.Binary(t), "master", "-j", t.TempDir(), "-p", "0").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "-j needs -u") {
		t.Fatalf("-j alone: %v\n%s", err, out)
	}
}
