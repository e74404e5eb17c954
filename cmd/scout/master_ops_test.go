package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/masterproc"
	"github.com/scout-discovery/scout/internal/peer"
)

// httpGet fetches url with the given header pairs and returns the status
// and body.
func httpGet(t *testing.T, url string, header ...string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// TestMaster_BackupRestore takes a backup of a running master's state file
// over HTTP, starts a second master on the copy, and finds the first
// one's server listed there. A request through a proxy is refused.
func TestMaster_BackupRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	bin := masterproc.Binary(t)
	dir := t.TempDir()
	a := masterproc.Start(t, bin, "-l", "127.0.0.1", "-p", "0", "--motd-port", "0", "--list-loopback",
		"--state", filepath.Join(dir, "a.db"), "--http", "127.0.0.1:0")
	addr := a.Addr(t, "master")
	web := "http://" + a.Addr(t, "http").String()
	if code, body, _ := httpGet(t, web+"/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	srv := masterproc.NewServer(t)
	srv.Heartbeat(t, addr)
	a.WaitLog(t, "listed", "server", srv.Addr.String())
	a.WaitLog(t, "state written")

	if code, _, _ := httpGet(t, web+"/backup", "X-Forwarded-For", "203.0.113.9"); code != http.StatusForbidden {
		t.Fatalf("/backup through a proxy: %d, want 403", code)
	}
	code, body, h := httpGet(t, web+"/backup")
	if code != 200 || strconv.Itoa(len(body)) != h.Get("Content-Length") || !strings.Contains(h.Get("Content-Disposition"), ".db") {
		t.Fatalf("/backup: %d, %d bytes, headers %v", code, len(body), h)
	}
	copyPath := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(copyPath, body, 0o600); err != nil {
		t.Fatal(err)
	}
	// The first master goes on running: the copy is a file of its own.
	b := masterproc.Start(t, bin, "-l", "127.0.0.1", "-p", "0", "--motd-port", "0", "--list-loopback",
		"--state", copyPath, "--refuse-damaged-state")
	if n := b.WaitLog(t, "restored")["servers"]; n != float64(1) {
		t.Fatalf("the copy restored %v servers, want 1", n)
	}
	if got := masterproc.GetServers(t, b.Addr(t, "master")); len(got) != 1 || got[0] != srv.Addr {
		t.Fatalf("master on the copy lists %v, want [%v]", got, srv.Addr)
	}
}

// TestMaster_ReadyzInFleet starts a fleet instance while its Redis is down:
// /healthz answers, /readyz says 503 until Redis comes up and the instance
// has read the shared registry.
func TestMaster_ReadyzInFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	redis := peer.Need(t, "redis-server", "apt-get install redis-server")
	bin := masterproc.Binary(t)
	port := peer.FreeTCPPort(t)
	m := masterproc.Start(t, bin, "-l", "127.0.0.1", "-p", "0", "--motd-port", "0",
		"--store", fmt.Sprintf("redis://127.0.0.1:%d/0", port), "--fleet-id", "a", "--http", "127.0.0.1:0")
	web := "http://" + m.Addr(t, "http").String()
	if code, _, _ := httpGet(t, web+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	if code, body, _ := httpGet(t, web+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "fleet") {
		t.Fatalf("/readyz with Redis down: %d %q, want 503 naming the fleet", code, body)
	}
	rs := exec.Command(redis, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := rs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Process.Kill(); rs.Wait() })
	m.WaitLog(t, "read the shared registry")
	if code, body, _ := httpGet(t, web+"/readyz"); code != 200 {
		t.Fatalf("/readyz after the read: %d %q", code, body)
	}
	if code, _, _ := httpGet(t, web+"/backup"); code != http.StatusNotFound {
		t.Fatalf("/backup in a fleet: %d, want 404", code)
	}
}
