package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/protocol/q3"
)

// scoutProc is a `scout master --store redis://...` process.
type scoutProc struct {
	cmd    *exec.Cmd
	addr   netip.AddrPort
	http   string
	exited chan struct{}
	log    syncBuffer // its log, JSON lines
}

func buildScout(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "scout")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/scout")
	cmd.Dir = peer.ModuleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startScout starts an instance and returns once it listens (its JSON
// log says so).
func startScout(t testing.TB, bin, url, id string, extra ...string) *scoutProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"master", "--log-format", "json", "-v", "3", "-l", "127.0.0.1", "-p", "0",
		"--list-loopback", "--hash-ports", "--hb-throttle", "1000000", "--no-flood-protection",
		"--store", url, "--fleet-id", id, "--http", "127.0.0.1:0"}, extra...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &scoutProc{cmd: cmd, exited: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.log.Write(append(sc.Bytes(), '\n'))
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil || m["msg"] != "listening" {
				continue
			}
			a, _ := m["addr"].(string)
			switch m["port"] {
			case "master":
				p.addr = netip.MustParseAddrPort(a)
			case "http":
				p.http = a
				close(ready)
			}
		}
		cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-ready:
	case <-p.exited:
		t.Fatalf("scout master %s exited before listening", id)
	case <-time.After(30 * time.Second):
		t.Fatalf("scout master %s not listening in 30 s", id)
	}
	t.Cleanup(func() { cmd.Process.Kill(); <-p.exited })
	return p
}

// answer asks the master at m for its protocol 68 list: the number of
// servers, or an error (no t: it runs in load goroutines).
func answer(m netip.AddrPort) (int, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	q, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	if _, err := c.WriteToUDPAddrPort(q, m); err != nil {
		return 0, err
	}
	got := map[netip.AddrPort]bool{}
	buf := make([]byte, 65536)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	ended := false
	for {
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ended {
				return len(got), nil
			}
			return len(got), err
		}
		msg, err := q3.Parse(buf[:n])
		if err != nil {
			return len(got), err
		}
		if r, ok := msg.(q3.ServersResponse); ok {
			for _, a := range r.Servers {
				got[a] = true
			}
			if r.End != q3.EndNone {
				ended = true
				c.SetReadDeadline(time.Now().Add(q3.EndGrace))
			}
		}
	}
}

func metric(t testing.TB, httpAddr, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			return l[strings.LastIndexByte(l, ' ')+1:]
		}
	}
	return ""
}

// kill -9 one instance of three, real processes, under load: the others
// keep answering the full list, nothing is lost, and the dead one leaves
// the fleet.
func TestFleet_Kill9OneInstanceUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	r := startRedis(t)
	bin := buildScout(t)
	var ps []*scoutProc
	for i := range 3 {
		ps = append(ps, startScout(t, bin, r.URL(), fmt.Sprint("p", i)))
	}
	const first, more = 150, 30
	servers := startGameServers(t, first+more)
	beatFirst := func() {
		for k, g := range servers[:first] {
			g.heartbeat(t, ps[k%3].addr)
		}
	}
	beatFirst()
	for _, p := range ps {
		if !waitResending(15*time.Second, func() bool { n, _ := answer(p.addr); return n == first }, beatFirst) {
			n, err := answer(p.addr)
			t.Fatalf("%v answers %d of %d (%v)", p.addr, n, first, err)
		}
	}
	// Load: players ask the two survivors without pause.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var answers, short, failed atomic.Int64
	var mu sync.Mutex
	var firstErr error
	for _, p := range ps[:2] {
		wg.Go(func() {
			for ctx.Err() == nil {
				n, err := answer(p.addr)
				answers.Add(1)
				switch {
				case err != nil:
					failed.Add(1)
					mu.Lock()
					firstErr = err
					mu.Unlock()
				case n < first:
					short.Add(1)
				}
			}
		})
	}
	ps[2].cmd.Process.Signal(syscall.SIGKILL)
	<-ps[2].exited
	// New servers heartbeat to the survivors while they are loaded.
	// Only the new servers heartbeat again: the first 150 must stay listed
	// through the kill on the strength of the shared registry alone.
	beatMore := func() {
		for k, g := range servers[first:] {
			g.heartbeat(t, ps[k%2].addr)
		}
	}
	beatMore()
	for _, p := range ps[:2] {
		if !waitResending(15*time.Second, func() bool { n, _ := answer(p.addr); return n == first+more }, beatMore) {
			t.Errorf("%v does not list all %d after the kill", p.addr, first+more)
		}
		if !waitFor(15*time.Second, func() bool { return metric(t, p.http, "scout_fleet_instances") == "2" }) {
			t.Errorf("%v still sees %s instances after the kill", p.addr, metric(t, p.http, "scout_fleet_instances"))
		}
	}
	stop()
	wg.Wait()
	t.Logf("%d answers under load: %d short of the full list, %d failed (%v)", answers.Load(), short.Load(), failed.Load(), firstErr)
	if short.Load() != 0 || failed.Load() != 0 {
		t.Errorf("%d answers short, %d failed after the kill (%v)", short.Load(), failed.Load(), firstErr)
	}
	if n := r.client(t).HLen(context.Background(), DefaultPrefix+"servers").Val(); n != first+more {
		t.Errorf("Redis holds %d of %d", n, first+more)
	}
}
