//go:build linux

package deploy

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/masterproc"
	"github.com/scout-discovery/scout/internal/peer"
)

// imageUser is the numeric user the image runs as.
const imageUser = "65532:65532"

// buildImage builds the image from a scout built for the test, with
// build-image, and removes it when the test ends.
func buildImage(t *testing.T, podman string) string {
	t.Helper()
	tag := fmt.Sprintf("localhost/scout-test:%d", os.Getpid())
	cmd := exec.Command("./build-image", tag)
	cmd.Env = append(os.Environ(), "SCOUT_BIN="+masterproc.Binary(t))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build-image: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(podman, "rmi", "-f", tag).Run() })
	return tag
}

// TestContainer_Image builds the image offline and checks what an operator
// relies on: the numeric non-root user, the ports, the state volume, scout
// as the exec-form entrypoint (PID 1, receiving SIGTERM itself), an empty
// base (nothing but the binary and the licence).
func TestContainer_Image(t *testing.T) {
	podman := peer.Need(t, "podman", "apt-get install podman")
	tag := buildImage(t, podman)
	out, err := exec.Command(podman, "image", "inspect", tag).Output()
	if err != nil {
		t.Fatalf("podman image inspect: %v", err)
	}
	var imgs []struct {
		Size   int64
		Config struct {
			User         string
			Entrypoint   []string
			Cmd          []string
			ExposedPorts map[string]struct{}
			Volumes      map[string]struct{}
			StopSignal   string
		}
		RootFS struct{ Layers []string }
	}
	if err := json.Unmarshal(out, &imgs); err != nil || len(imgs) != 1 {
		t.Fatalf("podman image inspect: %v\n%s", err, out)
	}
	c := imgs[0].Config
	if c.User != imageUser {
		t.Errorf("user %q, want %q", c.User, imageUser)
	}
	for _, p := range []string{"27950/udp", "27951/udp", "8080/tcp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("%s not exposed: %v", p, c.ExposedPorts)
		}
	}
	if _, ok := c.Volumes["/var/lib/scout"]; !ok {
		t.Errorf("no /var/lib/scout volume: %v", c.Volumes)
	}
	if strings.Join(c.Entrypoint, " ") != "/usr/bin/scout master" {
		t.Errorf("entrypoint %q, want the exec form [/usr/bin/scout master]", c.Entrypoint)
	}
	if c.StopSignal != "" && c.StopSignal != "SIGTERM" && c.StopSignal != "15" {
		t.Errorf("stop signal %q", c.StopSignal)
	}
	checkArgs(t, "the image's CMD", c.Cmd, masterFlags(t))
	bin, err := os.Stat(masterproc.Binary(t))
	if err != nil {
		t.Fatal(err)
	}
	// An empty base: the image is the binary and a few kilobytes.
	if imgs[0].Size > bin.Size()+1<<20 {
		t.Errorf("image is %d bytes for a %d-byte binary: not an empty base?", imgs[0].Size, bin.Size())
	}
	t.Logf("image %s: %d bytes, user %s", tag, imgs[0].Size, c.User)
}

// TestContainer_BinaryAnswers takes the binary out of the built image
// (podman create + podman cp: running containers may be refused by a
// sandbox) and runs it: a game server registers by heartbeat, a getservers
// lists it, and SIGTERM stops it cleanly.
func TestContainer_BinaryAnswers(t *testing.T) {
	podman := peer.Need(t, "podman", "apt-get install podman")
	tag := buildImage(t, podman)
	name := fmt.Sprintf("scout-test-%d", os.Getpid())
	if out, err := exec.Command(podman, "create", "--name", name, tag).CombinedOutput(); err != nil {
		t.Fatalf("podman create: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(podman, "rm", "-f", name).Run() })
	bin := filepath.Join(t.TempDir(), "scout")
	if out, err := exec.Command(podman, "cp", name+":/usr/bin/scout", bin).CombinedOutput(); err != nil {
		t.Fatalf("podman cp: %v\n%s", err, out)
	}
	m := masterproc.Start(t, bin, "-l", "127.0.0.1", "-p", "0", "--motd-port", "0", "--list-loopback",
		"--state", filepath.Join(t.TempDir(), "master.db"))
	addr := m.Addr(t, "master")
	srv := masterproc.NewServer(t)
	srv.Heartbeat(t, addr)
	m.WaitLog(t, "listed", "server", srv.Addr.String())
	if got := masterproc.GetServers(t, addr); len(got) != 1 || got[0] != srv.Addr {
		t.Fatalf("getservers: %v, want [%v]", got, srv.Addr)
	}
	m.Cmd.Process.Signal(syscall.SIGTERM)
	if took, err := m.Wait(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	} else {
		t.Logf("stopped %v after SIGTERM", took.Round(time.Millisecond))
	}
}

// TestContainer_Run runs the image itself when this machine lets podman run
// containers: the master, as user 65532 and PID 1, lists a server that
// heartbeats to it, and `podman stop` (SIGTERM) ends it with status 0. Where
// the sandbox refuses to start a container, the test says why and skips
// (TestContainer_BinaryAnswers runs the same binary outside).
func TestContainer_Run(t *testing.T) {
	podman := peer.Need(t, "podman", "apt-get install podman")
	tag := buildImage(t, podman)
	port := peer.FreeUDPPort(t)
	name := fmt.Sprintf("scout-run-%d", os.Getpid())
	args := []string{"-l", fmt.Sprintf("127.0.0.1:%d", port), "--motd-port", "0", "--list-loopback",
		"--state", "/var/lib/scout/master.db", "--log-format", "json", "-v", "4"}
	var tried []string
	started := false
	for _, opts := range podmanRunOptions() {
		exec.Command(podman, "rm", "-f", name).Run()
		run := append(append(append([]string{}, opts.global...), "run", "-d", "--name", name, "--network", "host"), opts.run...)
		run = append(append(run, tag), args...)
		out, err := exec.Command(podman, run...).CombinedOutput()
		if err == nil {
			started = true
			break
		}
		tried = append(tried, fmt.Sprintf("podman %s: %v: %s", strings.Join(run, " "), err, strings.TrimSpace(string(out))))
	}
	t.Cleanup(func() { exec.Command(podman, "rm", "-f", name).Run() })
	if !started {
		t.Skipf("this machine refuses to run containers:\n%s", strings.Join(tried, "\n"))
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	master := netip.MustParseAddrPort(addr)
	srv := masterproc.NewServer(t)
	// The container may still be starting: heartbeat until it is listed.
	deadline := time.Now().Add(masterproc.WaitBound)
	for {
		srv.Heartbeat(t, master)
		if got := masterproc.TryGetServers(master, time.Second); len(got) == 1 && got[0] == srv.Addr {
			break
		}
		if time.Now().After(deadline) {
			logs, _ := exec.Command(podman, "logs", name).CombinedOutput()
			t.Fatalf("the container never listed the server\n%s", logs)
		}
	}
	top, _ := exec.Command(podman, "top", name, "user", "pid", "args").CombinedOutput()
	t.Logf("podman top:\n%s", top)
	if out, err := exec.Command(podman, "stop", "-t", "10", name).CombinedOutput(); err != nil {
		t.Fatalf("podman stop: %v\n%s", err, out)
	}
	out, err := exec.Command(podman, "inspect", "--format", "{{.State.ExitCode}} {{.Config.User}}", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "0 "+imageUser {
		t.Errorf("exit code and user after podman stop: %q, want \"0 %s\"", got, imageUser)
	}
	logs, _ := exec.Command(podman, "logs", name).CombinedOutput()
	if !strings.Contains(string(logs), `"msg":"stopped"`) {
		t.Errorf("no clean stop in the container's log:\n%s", logs)
	}
}

// runOptions are podman options for one attempt at running a container.
type runOptions struct{ global, run []string }

// podmanRunOptions lists the attempts: plain podman first, then what a
// sandbox with cgroups in hybrid mode and capped rlimits needs (runc, the
// cgroupfs manager, rlimits within the caller's).
func podmanRunOptions() []runOptions {
	opts := []runOptions{{}}
	if _, err := exec.LookPath("runc"); err == nil {
		var nofile syscall.Rlimit
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile)
		opts = append(opts, runOptions{
			global: []string{"--runtime", "runc", "--cgroup-manager", "cgroupfs"},
			run:    []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Cur, nofile.Cur), "--ulimit", "nproc=4096:4096"},
		})
	}
	return opts
}
