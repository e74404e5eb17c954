package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
)

// scout fleet starts three instances sharing its own redis-server; each
// sees the three; an interrupt stops them all.
func TestFleet_StartsThreeInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	peer.Need(t, "redis-server", "apt-get install redis-server")
	bin := buildScout(t)
	port, httpPort := int(peer.FreeUDPPort(t)), peer.FreeTCPPort(t)
	cmd := exec.Command(bin, "fleet", "--port", strconv.Itoa(port), "--http-port", strconv.Itoa(httpPort), "--", "--allow-loopback", "--log-format", "json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
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
	sawThree := make(chan struct{})
	go func() {
		n := 0
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			var m struct {
				Msg  string   `json:"msg"`
				Live []string `json:"live"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Msg == "fleet" && len(m.Live) == 3 {
				if n++; n == 3 {
					close(sawThree)
				}
			}
		}
	}()
	select {
	case lines := <-running:
		if len(lines) != 5 {
			t.Fatalf("scout fleet printed %q", lines)
		}
	case <-time.After(waitBound * 2):
		t.Fatal("scout fleet did not say it runs")
	}
	// Each instance sees the three at its next beat (every second).
	select {
	case <-sawThree:
	case <-time.After(waitBound):
		t.Fatal("the instances did not log three live instances")
	}
	for i := range 3 {
		url := "http://127.0.0.1:" + strconv.Itoa(httpPort+i) + "/metrics"
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
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("scout fleet after an interrupt: %v", err)
	}
}
