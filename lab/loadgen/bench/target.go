//go:build linux

package bench

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/lab/loadgen"
)

// Target is a master a benchmark measures: at Addr, with its PID for its
// CPU time and memory, started by the benchmark when Argv is given.
type Target struct {
	Name string
	Addr netip.AddrPort
	PID  int
	Argv []string
	// proc is the exec'd master, and exited receives its Wait result.
	proc   *os.Process
	exited chan error
	rss0   int64 // VmRSS before registration, bytes; 0 unknown
	rss1   int64 // after
}

// ParseTarget reads NAME=ADDR:PORT[@PID]: only an IPv4 loopback master
// (127.0.0.0/8) may be loaded.
func ParseTarget(s string) (Target, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return Target{}, fmt.Errorf("--target %q: want NAME=ADDR:PORT[@PID]", s)
	}
	t := Target{Name: name}
	if a, p, ok := strings.Cut(rest, "@"); ok {
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 {
			return Target{}, fmt.Errorf("--target %q: bad PID %q", s, p)
		}
		t.PID, rest = pid, a
	}
	ap, err := netip.ParseAddrPort(rest)
	if err != nil {
		return Target{}, fmt.Errorf("--target %q: %v", s, err)
	}
	if !ap.Addr().Unmap().IsLoopback() || !ap.Addr().Unmap().Is4() {
		return Target{}, fmt.Errorf("--target %q: only IPv4 loopback masters (127.0.0.0/8) may be loaded", s)
	}
	t.Addr = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	return t, nil
}

// Launch starts t.Argv and waits until the master answers the list
// request req (an empty list is an answer), at most timeout.
func (t *Target) Launch(ctx context.Context, req []byte, timeout time.Duration) error {
	cmd := exec.Command(t.Argv[0], t.Argv[1:]...)
	// Output is discarded: a master logging to a terminal would spend its
	// CPU there.
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	t.proc, t.PID, t.exited = cmd.Process, cmd.Process.Pid, make(chan error, 1)
	go func() { t.exited <- cmd.Wait() }()
	deadline := time.Now().Add(timeout)
	src := netip.AddrFrom4([4]byte{127, 14, 0, 1})
	for {
		select {
		case err := <-t.exited:
			t.proc = nil
			return fmt.Errorf("%s: exited before answering: %v", t.Name, err)
		default:
		}
		// Each try waits up to 100 ms for the answer: that is the pacing
		// of the readiness check. Each comes from a new address, so a
		// master's flood protection does not throttle it.
		if _, err := loadgen.ListServers(ctx, t.Addr, netip.AddrPortFrom(src, 0), req, 100*time.Millisecond); err == nil {
			return nil
		}
		src = src.Next()
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Stop()
			return fmt.Errorf("%s: no answer from %v within %v", t.Name, t.Addr, timeout)
		}
	}
}

// Stop kills a master Launch started and reaps it.
func (t *Target) Stop() {
	if t.proc == nil {
		return
	}
	_ = t.proc.Kill()
	<-t.exited
	t.proc = nil
}
