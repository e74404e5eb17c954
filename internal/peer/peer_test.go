package peer

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestStartOpenArena_AnswersQstat(t *testing.T) {
	oa := StartOpenArena(t, OpenArenaConfig{Bots: []string{"sarge", "grism"}, Hostname: "peer-test"})
	servers := RunQuakestat(t, "-q3s", oa.Addr.String(), "-R", "-P")
	if len(servers) != 1 {
		t.Fatalf("quakestat reported %d servers", len(servers))
	}
	s := servers[0]
	if s.Status != "online" || s.Name != "peer-test" || s.NumPlayers != 2 || len(s.Players) != 2 {
		t.Fatalf("quakestat saw %+v", s)
	}
	t.Logf("ready after %v; qstat ping %d ms", oa.ReadyAfter, s.Ping)
}

func TestLoopbackOnly(t *testing.T) {
	for _, a := range []string{"127.0.0.1:27950", "127.9.9.9:1"} {
		if err := loopback(a); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
	for _, a := range []string{"192.0.2.1:27950", "[::1]:27950", "master.ioquake3.org:27950"} {
		if err := loopback(a); err == nil {
			t.Errorf("%s accepted", a)
		}
	}
}

// recorder is a testing.TB that records how a helper ended the test.
// Fatalf and Skipf end the goroutine, as the real ones do.
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func needMissing(t *testing.T) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Need(r, "/nonexistent/scout-peer-test", "apt-get install nothing")
	}()
	<-done
	return r
}

// A missing program skips the test, except under CI, which installs every
// peer: there it fails.
func TestNeed_MissingSkipsOrFailsUnderCI(t *testing.T) {
	t.Setenv("CI", "")
	if r := needMissing(t); !r.skipped || r.failed || !strings.Contains(r.msg, "apt-get install nothing") {
		t.Errorf("without CI: skipped %v failed %v %q; want a skip naming the package", r.skipped, r.failed, r.msg)
	}
	t.Setenv("CI", "1")
	if r := needMissing(t); !r.failed || r.skipped {
		t.Errorf("under CI: skipped %v failed %v %q; want a failure", r.skipped, r.failed, r.msg)
	}
}

func TestServeUDP_AnswersWithTheScript(t *testing.T) {
	addr := ServeUDP(t, func(req []byte) [][]byte {
		if string(req) == "ping" {
			return [][]byte{[]byte("pong 1"), []byte("pong 2")}
		}
		return nil // silence for anything else
	})
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, req := range []string{"garbage", "ping"} {
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	for _, want := range []string{"pong 1", "pong 2"} {
		n, err := c.Read(buf)
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("read %q, %v; want %q", buf[:n], err, want)
		}
	}
}

func TestProbeRTT_CountsAnsweredProbes(t *testing.T) {
	addr := ServeUDP(t, func(req []byte) [][]byte { return [][]byte{req} })
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := ProbeRTT(c, addr, []byte("ping"), 20*time.Millisecond)
	if err != nil || r.Sent == 0 || r.Answered != r.Sent || r.Lost != 0 || r.Worst <= 0 || r.Worst >= ProbeTimeout {
		t.Errorf("%+v, %v; want every probe answered within ProbeTimeout", r, err)
	}
}

func TestStartNexuiz_AnswersQstat(t *testing.T) {
	nx := StartNexuiz(t, NexuizConfig{Hostname: "peer-nexuiz"})
	servers := RunQuakestat(t, "-nexuizs", nx.Addr.String(), "-R", "-P")
	if len(servers) != 1 {
		t.Fatalf("quakestat reported %d servers", len(servers))
	}
	s := servers[0]
	if s.Status != "online" || s.Name != "peer-nexuiz" || s.Rules["gamename"] != "Nexuiz" {
		t.Fatalf("quakestat saw %+v", s)
	}
	t.Logf("ready after %v; qstat ping %d ms", nx.ReadyAfter, s.Ping)
}
