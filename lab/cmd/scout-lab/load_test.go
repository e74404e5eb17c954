//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/freeport"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
)

// startInProcessMaster runs scout's master on an ephemeral loopback port,
// without flood protection or a binding byte budget (at the default 12.5 MB/s
// the budget, not the master, would pace the answers),
// until the test ends and returns its address.
func startInProcessMaster(t *testing.T, listen string) netip.AddrPort {
	t.Helper()
	m := inProcessMaster(t, masterd.Config{
		Listen: []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr(listen), 0)},
		Reloadable: masterd.Reloadable{
			Registry:     master.Config{AllowLoopback: true},
			NoQueryLimit: true,
			OutRate:      1_000_000_000,
		},
	})
	for _, a := range m.Addrs() {
		if a.Addr().Is4() {
			return a
		}
	}
	t.Fatalf("master listens on %v, no IPv4 address", m.Addrs())
	return netip.AddrPort{}
}

// inProcessMaster starts a master of cfg, listening and running until the test
// ends.
func inProcessMaster(t *testing.T, cfg masterd.Config) *masterd.Master {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m, err := masterd.NewMaster(time.Now(), cfg, masterd.Deps{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		m.Close()
	})
	return m
}

func TestLoad_RegistersAndMeasuresScoutMaster(t *testing.T) {
	addr := startInProcessMaster(t, "127.95.0.1")
	code, stdout, stderr := runFleetPort(t, 1, func(port string) []string {
		return []string{"load", "--target", "scout=" + addr.String(),
			"--servers", "60", "--per-addr", "2", "--fleet-base", "127.95.1.1", "--fleet-port", port,
			"--sources", "4", "--source-base", "127.95.2.1", "--outstanding", "2",
			"--duration", "200ms", "--runs", "2", "--json"}
	})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var runs, sums int
	for line := range strings.Lines(stdout.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		switch {
		case m["run"] != nil:
			runs++
			if m["complete"].(float64) < 1 || m["unanswered"].(float64) != 0 || m["check_failed"].(float64) != 0 {
				t.Errorf("run %v", line)
			}
		case m["target"] == "scout":
			sums++
			if m["packets_per_answer"].(float64) != 1 || m["lost_packets_total"].(float64) != 0 {
				t.Errorf("summary %v", line)
			}
		}
	}
	if runs != 2 || sums != 1 {
		t.Errorf("%d run lines and %d summaries, want 2 and 1:\n%s", runs, sums, stdout.String())
	}
}

// scout master's default layout, the end marker on every packet of a
// three-packet answer: every answer complete by default, none with
// --first-marker-ends.
func TestLoad_MarkerOnEveryPacket(t *testing.T) {
	addr := startInProcessMaster(t, "127.95.10.1")
	for _, c := range []struct {
		flags    []string
		complete bool
		sources  string
	}{
		{nil, true, "127.95.20.1"},
		{[]string{"--first-marker-ends"}, false, "127.95.21.1"},
	} {
		code, stdout, stderr := runFleetPort(t, 3, func(port string) []string {
			return append([]string{"load", "--target", "scout=" + addr.String(),
				"--servers", "400", "--per-addr", "4", "--fleet-base", "127.95.11.1", "--fleet-port", port,
				"--sources", "4", "--source-base", c.sources, "--outstanding", "2",
				"--max-requests", "40", "--duration", "10s", "--runs", "1", "--json"}, c.flags...)
		})
		// Exit 1: the summary found incomplete answers.
		if want := map[bool]int{true: 0, false: 1}[c.complete]; code != want {
			t.Fatalf("%q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c.flags, code, want, stdout.String(), stderr.String())
		}
		for line := range strings.Lines(stdout.String()) {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if m["run"] == nil {
				continue
			}
			complete, requests := m["complete"].(float64), m["requests"].(float64)
			if c.complete && (requests != 40 || complete != 40 || m["packets_per_answer"].(float64) != 3) {
				t.Errorf("default rule: %s", line)
			}
			if !c.complete && complete != 0 {
				t.Errorf("--first-marker-ends: %s", line)
			}
		}
	}
}

func TestLoad_UsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no target":          {},
		"not loopback":       {"--target", "x=192.0.2.1:27950"},
		"IPv6":               {"--target", "x=[::1]:27950"},
		"no port":            {"--target", "x=127.0.0.1"},
		"bad pid":            {"--target", "x=127.0.0.1:27950@abc"},
		"no name":            {"--target", "=127.0.0.1:27950"},
		"twice":              {"--target", "x=127.0.0.1:1", "--target", "x=127.0.0.1:2"},
		"exec for no target": {"--target", "x=127.0.0.1:1", "--exec", "y=/bin/true"},
		"exec with pid":      {"--target", "x=127.0.0.1:1@12", "--exec", "x=/bin/true"},
		"empty exec":         {"--target", "x=127.0.0.1:1", "--exec", "x="},
		"no runs":            {"--target", "x=127.0.0.1:1", "--runs", "0"},
		"bad query":          {"--target", "x=127.0.0.1:1", "--query", "getservers"},
		"argument":           {"--target", "x=127.0.0.1:1", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), append([]string{"load"}, args...), &stdout, &stderr); code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", name, code, stderr.String())
		}
	}
}

func TestLoad_ExecThatExitsFails(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"load", "--target", "x=127.95.3.1:27950", "--exec", "x=/bin/true",
		"--start-timeout", "5s"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "exited before answering") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// scout-lab load --flood against a master with its default defence (limits
// scaled down so two seconds show them): the spoofed flood gets no more
// than the limiter's bound, and the victim's own client, refreshing from
// one port of the same address, is answered every time.
func TestLoad_FloodAgainstResponseLimit(t *testing.T) {
	lim := master.ResponseLimits{VictimBurst: 4096, VictimRate: 1024, ReturnBurst: 4096, ReturnRate: 4096, ReturnInterval: 100 * time.Millisecond}
	m := inProcessMaster(t, masterd.Config{
		Listen: []netip.AddrPort{netip.MustParseAddrPort("127.96.0.1:0")},
		Reloadable: masterd.Reloadable{
			Registry:  master.Config{AllowLoopback: true},
			Responses: lim,
			OutRate:   1_000_000_000,
		},
	})
	code, stdout, stderr := runFleetPort(t, 1, func(port string) []string {
		return []string{"load", "--target", "scout=" + m.Addrs()[0].String(),
			"--servers", "60", "--per-addr", "2", "--fleet-base", "127.96.1.1", "--fleet-port", port,
			"--flood", "200", "--victim", "127.96.9.1", "--refresh", "250ms", "--duration", "2s", "--runs", "1", "--json"}
	})
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var r struct {
		Spoofed, Refreshes, Complete int
		VictimBytes                  int64 `json:"victim_bytes"`
		Elapsed                      time.Duration
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("%q: %v", stdout.String(), err)
	}
	bound := lim.FloodBound(r.Elapsed)
	if r.Spoofed < 200 || r.Refreshes < 5 || r.Complete != r.Refreshes || r.VictimBytes > bound {
		t.Fatalf("%+v: want every refresh answered and at most %d bytes to the victim", r, bound)
	}
	t.Logf("%+v, bound %d", r, bound)
}

// scout-lab load --swarm against a real master on 127.0.0.1 and ::1 at one
// port: every IPv4 and IPv6 server of three games is registered, the
// master's /metrics count reaches them all, and the lists hold them.
func TestLoad_SwarmRegistersEveryServer(t *testing.T) {
	const n4, n6 = 2000, 100
	var m *masterd.Master
	for try := 0; m == nil; try++ {
		// One port on both families: take a free IPv4 one and hope ::1
		// has it free too.
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		port := c.LocalAddr().(*net.UDPAddr).Port
		c.Close()
		cfg := masterd.Config{
			Listen: []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)),
				netip.AddrPortFrom(netip.IPv6Loopback(), uint16(port))},
			HTTP: "127.0.0.1:0",
			Reloadable: masterd.Reloadable{
				Registry:     master.Config{MaxServersPerAddress: -1, AllowLoopback: true},
				Heartbeats:   masterd.Limit{Throttle: 10 * n6},
				NoQueryLimit: true, OutRate: 1_000_000_000,
			},
		}
		mm, err := masterd.NewMaster(time.Now(), cfg, masterd.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		if err := mm.Listen(); err != nil {
			if try == 10 {
				t.Skipf("no port free on both 127.0.0.1 and ::1: %v", err)
			}
			continue
		}
		mm.Close()
		m = inProcessMaster(t, cfg)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"load", "--swarm", "--target", "scout=" + m.Addrs()[0].String(),
		"--servers", fmt.Sprint(n4), "--ipv6", fmt.Sprint(n6), "--sockets", "2", "--swarm-base", "127.96.0.1", "--port6", "24000",
		"--heartbeat-rate", "20000", "--metrics", "http://" + m.HTTPAddr().String() + "/metrics"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	for _, want := range []string{
		fmt.Sprintf("listed: %d of %d swarm servers", n4+n6, n4+n6),
		fmt.Sprintf("master's count: all %d listed", n4+n6),
		fmt.Sprintf("list OpenArena 71: %d entries", (n4+n6)*3/20),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if l, _ := m.Handler.Registry().Counts(); l != n4+n6 {
		t.Errorf("master lists %d, want %d", l, n4+n6)
	}
}

// runFleetPort runs scout with the arguments args makes of a first fleet
// port drawn by freeport (span: the ports above it the fleet takes), into
// fresh buffers, again with another port while the fleet's bind failed
// because the port was in use (the same test in another test process),
// and returns the exit code and output of the last run.
func runFleetPort(t *testing.T, span int, args func(port string) []string) (code int, stdout, stderr *bytes.Buffer) {
	t.Helper()
	freeport.Retry(t, span, func(port uint16) error {
		stdout, stderr = new(bytes.Buffer), new(bytes.Buffer)
		code = run(context.Background(), args(strconv.Itoa(int(port))), stdout, stderr)
		if code != 0 && strings.Contains(stderr.String(), "address already in use") {
			return fmt.Errorf("%w: %s", freeport.ErrInUse, strings.TrimSpace(stderr.String()))
		}
		return nil
	})
	return code, stdout, stderr
}
