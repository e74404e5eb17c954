//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/scout-discovery/scout/internal/masterproc"
)

// TestMaster_ReloadOnSIGHUP runs scout master with a --config file, lists a
// server, changes the file (a game policy, one server at most, an HTTP
// address) and sends SIGHUP: the master logs what it changed and what needs
// a restart, keeps the server listed, refuses a second server under the new
// limit, survives a broken file, and still stops cleanly on SIGTERM.
func TestMaster_ReloadOnSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	bin := masterproc.Binary(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "master.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(conf, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "master.db")
	base := `"log-format": "json", "verbose": 4, "motd-port": 0, "list-loopback": true, "state": %q`
	write(fmt.Sprintf(`{`+base+`}`, state))
	m := masterproc.StartCmd(t, exec.Command(bin, "master", "--config", conf, "-l", "127.0.0.1", "-p", "0"))
	addr := m.Addr(t, "master")
	a := masterproc.NewServer(t)
	a.Heartbeat(t, addr)
	m.WaitLog(t, "listed", "server", a.Addr.String())

	write(fmt.Sprintf(`{`+base+`, "game-policy": [["reject", "Xonotic"]], "max-servers": 1, "http": "127.0.0.1:0"}`, state))
	m.Cmd.Process.Signal(syscall.SIGHUP)
	rl := m.WaitLog(t, "reloaded")
	changed := logStrings(rl["changed"])
	for _, want := range []string{"Registry.MaxServers", "Registry.Policy"} {
		if !slices.Contains(changed, want) {
			t.Errorf("reloaded changed=%v, want %s among them", changed, want)
		}
	}
	if rl["servers"] != float64(1) {
		t.Errorf("reloaded with %v servers, want 1", rl["servers"])
	}
	if opts := logStrings(m.WaitLog(t, "changed in the configuration, needs a restart to apply")["options"]); !slices.Contains(opts, "HTTP") {
		t.Errorf("needs a restart: %v, want HTTP among them", opts)
	}
	if got := masterproc.GetServers(t, addr); len(got) != 1 || got[0] != a.Addr {
		t.Fatalf("after the reload the master lists %v, want [%v]", got, a.Addr)
	}
	b := masterproc.NewServer(t)
	b.Heartbeat(t, addr)
	m.WaitLog(t, "dropped", "from", b.Addr.String()) // the list is full: max-servers 1

	write(`{"max-servers": `)
	m.Cmd.Process.Signal(syscall.SIGHUP)
	m.WaitLog(t, "reload refused: the configuration does not parse; nothing changed")
	if got := masterproc.GetServers(t, addr); len(got) != 1 {
		t.Fatalf("after a broken reload the master lists %v", got)
	}
	m.Cmd.Process.Signal(syscall.SIGTERM)
	m.WaitLog(t, "stopped")
	if _, err := m.Wait(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// logStrings returns a JSON array of strings from a log line.
func logStrings(v any) []string {
	var out []string
	if a, ok := v.([]any); ok {
		for _, x := range a {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
