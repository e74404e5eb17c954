package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Every way scout master can fail to start exits with status 1 and says
// why in one line: one ERROR line in its log, or one "scout master:" line
// for what it refuses before logging. A state file another master holds
// names the lock, the process holding it and what to do.
func TestMaster_FatalStartErrorsAreOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	bin := buildScout(t)
	dir := t.TempDir()

	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tcp, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	state := filepath.Join(dir, "held.db")
	holder := startMaster(t, bin, "-l", "127.0.0.1", "-p", "0", "--state", state)
	holder.waitLog(t, "listening")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"max-servers": "many"}`), 0o600)

	for _, c := range []struct {
		name string
		args []string
		says []string // in the one line
	}{
		{"busy-udp-port", []string{"-l", udp.LocalAddr().String()}, []string{"level=ERROR", "address already in use"}},
		{"busy-http-port", []string{"-l", "127.0.0.1", "-p", "0", "--http", tcp.Addr().String()}, []string{"level=ERROR", "address already in use"}},
		{"state-in-a-missing-folder", []string{"-l", "127.0.0.1", "-p", "0", "--state", filepath.Join(dir, "none", "x.db")}, []string{"level=ERROR", "no such file or directory"}},
		{"state-held-by-another-master", []string{"-l", "127.0.0.1", "-p", "0", "--state", state},
			[]string{"level=ERROR", "in use", "another --state", fmt.Sprintf("holder_pid=%d", holder.cmd.Process.Pid), "locked by process"}},
		{"state-and-store", []string{"--state", state, "--store", "redis://127.0.0.1:1/0"}, []string{"scout master:", "kept in one place"}},
		{"bad-config-file", []string{"--config", bad}, []string{"scout master:", "max-servers"}},
		{"missing-config-file", []string{"--config", filepath.Join(dir, "none.json")}, []string{"scout master:", "no such file"}},
		{"http-address-without-port", []string{"-l", "127.0.0.1", "-p", "0", "--http", "nonsense"}, []string{"level=ERROR", "missing port"}},
		{"unknown-user", []string{"-l", "127.0.0.1", "-p", "0", "-u", "no-such-user-here"}, []string{"scout master:", "unknown user"}},
		{"chroot-without-user", []string{"-l", "127.0.0.1", "-p", "0", "-j", dir}, []string{"scout master:", "-j needs -u"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec.Command(bin, append([]string{"master", "--motd-port", "0"}, c.args...)...).CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit %v, output:\n%s", err, out)
			}
			var fatal []string
			for l := range strings.Lines(string(out)) {
				if strings.Contains(l, "level=ERROR") || strings.HasPrefix(l, "scout master:") {
					fatal = append(fatal, l)
				}
			}
			if len(fatal) != 1 {
				t.Fatalf("want one line saying why, got %d:\n%s", len(fatal), out)
			}
			for _, s := range c.says {
				if !strings.Contains(fatal[0], s) {
					t.Errorf("the line does not say %q: %s", s, fatal[0])
				}
			}
			if strings.Contains(string(out), "panic") || strings.Contains(string(out), "goroutine ") {
				t.Errorf("a trace:\n%s", out)
			}
		})
	}
}
