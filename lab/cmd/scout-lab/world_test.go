package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/loopnat"
	"github.com/scout-discovery/scout/lab/world"
)

func TestWorld_Generate(t *testing.T) {
	gen := func() string {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"world", "generate", "--servers", "7", "--seed", "3", "--games", "oa:1,css:1"}, &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	a := gen()
	w, err := world.Read(strings.NewReader(a))
	if err != nil || len(w.Servers) != 7 || w.Seed != 3 {
		t.Fatalf("generated world: %d servers, %v", len(w.Servers), err)
	}
	if gen() != a {
		t.Error("the same flags gave two worlds")
	}
}

func TestWorld_BadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"world", "--wait", "forever"},
		{"world", "--sockets", "many"},
		{"world", "--link", "fast"},
		{"world", "--link", "1bit"},
		{"world", "--link", "10mbit", "--link-queue", "-1s"},
		{"world", "--link-up", "10mbit", "--link-queue", "1h"},
		{"world", "--games", "quake2:1"},
		{"world", "--delay", "400ms-10ms"},
		{"world", "generate", "--servers", "0"},
		{"world", "extra"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

// TestWorld_RunsAndWritesMap runs a small world for a bounded time with a
// master, and checks the summary, the map file and the heartbeats.
func TestWorld_RunsAndWritesMap(t *testing.T) {
	master, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	mapFile := filepath.Join(t.TempDir(), "map.json")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"world", "--servers", "20", "--games", "oa:1", "--seed", "5", "--delay", "1ms",
		"--master", master.LocalAddr().String(), "--map-out", mapFile, "--duration", "300ms"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "world: 20 servers (oa 20)") || !strings.Contains(out.String(), "stopped:") {
		t.Errorf("output:\n%s", out.String())
	}
	// 60 heartbeats are too few for a p99.9 (it once printed math.MaxInt64).
	if !strings.Contains(out.String(), "p99.9 n/a (") {
		t.Errorf("lateness p99.9 of a few datagrams, want n/a:\n%s", out.String())
	}
	table, err := loopnat.Load(mapFile)
	if err != nil || table.Len() != 20 {
		t.Fatalf("map file: %v", err)
	}
	// 20 start-up heartbeats and 40 at shutdown (ioquake3 sends two), all
	// from servers in the map, all already queued in the socket.
	c := loopnat.Wrap(master, table)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 256)
	for i := range 60 {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("heartbeat %d: %v", i, err)
		}
		if _, ok := table.Loopback(from); !ok || string(buf[:n]) != "\xff\xff\xff\xffheartbeat QuakeArena-1\n" {
			t.Fatalf("heartbeat %d from %v: %q", i, from, buf[:n])
		}
	}
}

// TestWorld_LatenessSummary checks the closing summary's lateness: a real
// figure with enough samples, even above the histogram's range, and n/a
// for a quantile with fewer than 1/(1-q) samples.
func TestWorld_LatenessSummary(t *testing.T) {
	for _, c := range []struct {
		st   world.Stats
		want string
	}{
		{world.Stats{}, "p50 n/a p99 n/a p99.9 n/a (0 samples)"},
		{world.Stats{LatenessSamples: 99, LatenessP50: 20 * time.Microsecond, LatenessP99: time.Millisecond, LatenessP999: time.Millisecond},
			"p50 20µs p99 n/a p99.9 n/a (99 samples)"},
		{world.Stats{LatenessSamples: 1000, LatenessP50: 20 * time.Microsecond, LatenessP99: time.Millisecond, LatenessP999: 250 * time.Millisecond},
			"p50 20µs p99 1ms p99.9 250ms (1000 samples)"},
	} {
		if got := worldLateness(c.st); got != c.want {
			t.Errorf("%d samples: %q, want %q", c.st.LatenessSamples, got, c.want)
		}
	}
}
