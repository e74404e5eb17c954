package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/freeport"
	"github.com/scout-discovery/scout/internal/peer"
)

// scout-lab fleet starts three instances sharing its own redis-server; each
// sees the three; an interrupt stops them all.
func TestFleet_StartsThreeInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	peer.Need(t, "redis-server", "apt-get install redis-server")
	bin, scout := buildBinaries(t)
	// The instances take consecutive ports from the first: UDP base,
	// base+1, base+2 and HTTP base+3 to base+5, drawn where no other
	// process holds them (a free port's neighbours may not be free).
	var f *fleetProc
	err := freeport.Retry(t, 5, func(base uint16) error {
		var err error
		f, err = startFleetProc(t, bin, scout, int(base), int(base)+3)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each instance sees the three at its next beat (every second).
	select {
	case <-f.sawThree:
	case <-f.exited:
		t.Fatalf("scout-lab fleet exited: %v\n%s", f.err, f.logs.String())
	case <-time.After(waitBound):
		t.Fatal("the instances did not log three live instances")
	}
	for i := range 3 {
		url := "http://127.0.0.1:" + strconv.Itoa(f.httpPort+i) + "/metrics"
		want := "scout_fleet_instances{instance_id=\"fleet-" + strconv.Itoa(i) + "\"} 3"
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Fatalf("instance %d does not see 3 instances", i)
		}
	}
	f.cmd.Process.Signal(syscall.SIGINT)
	<-f.exited
	if f.err != nil {
		t.Fatalf("scout-lab fleet after an interrupt: %v", f.err)
	}
}

// fleetProc is a running `scout-lab fleet`, in a process group of its own
// with its instances and redis-server.
type fleetProc struct {
	cmd      *exec.Cmd
	httpPort int
	sawThree chan struct{} // closed once three instances logged three live
	inUse    chan struct{} // closed if an instance could not bind its port
	exited   chan struct{} // closed when the process has exited; err is its Wait's
	err      error
	logs     syncLines // its standard error
}

// syncLines keeps lines written from one goroutine for another to read.
type syncLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLines) add(s string) { l.mu.Lock(); l.b.WriteString(s + "\n"); l.mu.Unlock() }
func (l *syncLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startFleetProc starts `scout-lab fleet` on the ports given and returns once
// it says it runs. If an instance could not bind its port, it stops the
// whole group and returns an error wrapping freeport.ErrInUse, for another
// draw.
func startFleetProc(t *testing.T, bin, scout string, port, httpPort int) (*fleetProc, error) {
	t.Helper()
	f := &fleetProc{httpPort: httpPort, sawThree: make(chan struct{}), inUse: make(chan struct{}), exited: make(chan struct{})}
	f.cmd = exec.Command(bin, "fleet", "--scout", scout, "--port", strconv.Itoa(port), "--http-port", strconv.Itoa(httpPort), "--", "--list-loopback", "--log-format", "json")
	// Its instances and redis-server are its children: a group of their
	// own, so that a failed test stops them all, not scout-lab fleet alone.
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs, err := f.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		<-f.exited
	}
	t.Cleanup(stop)
	running := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "running") {
				running <- lines
			}
		}
		io.Copy(io.Discard, out)
	}()
	// Each instance logs the live set when it changes: three logs of
	// three live instances say every instance has seen the three.
	go func() {
		n, inUse := 0, false
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			f.logs.add(sc.Text())
			if !inUse && strings.Contains(sc.Text(), "address already in use") {
				inUse = true
				close(f.inUse)
			}
			var m struct {
				Msg  string   `json:"msg"`
				Live []string `json:"live"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Msg == "fleet" && len(m.Live) == 3 {
				if n++; n == 3 {
					close(f.sawThree)
				}
			}
		}
	}()
	go func() {
		f.err = f.cmd.Wait()
		close(f.exited)
	}()
	select {
	case lines := <-running:
		if len(lines) != 5 {
			t.Fatalf("scout-lab fleet printed %q", lines)
		}
		return f, nil
	case <-f.inUse:
		stop()
		return nil, fmt.Errorf("%w: %s", freeport.ErrInUse, f.logs.String())
	case <-f.exited:
		t.Fatalf("scout-lab fleet exited before it ran: %v\n%s", f.err, f.logs.String())
	case <-time.After(waitBound * 2):
		t.Fatalf("scout-lab fleet did not say it runs\n%s", f.logs.String())
	}
	return nil, nil
}
