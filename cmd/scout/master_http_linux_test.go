package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/protocol/q3"
)

// idleConns is how many idle HTTP connections the exhaustion test opens.
const idleConns = 20_000

// idleHelper starts this test binary as a helper process that opens n
// idle connections to httpAddr, 50 from each loopback address 127.88.x.y
// from the first-th connection on, and holds them until the test ends; it
// returns how many it opened and how many dials failed.
func idleHelper(t *testing.T, httpAddr string, first, n int) (dialled, failed int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMaster_HTTPIdleHelper$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("SCOUT_IDLE_HELPER=%s,%d,%d", httpAddr, first, n))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "idle %d %d", &dialled, &failed); err == nil {
			return dialled, failed
		}
	}
	t.Fatal("the idle helper said nothing")
	return 0, 0
}

// TestMaster_HTTPIdleHelper is idleHelper's process: it does nothing but
// in one (SCOUT_IDLE_HELPER=ADDR,FIRST,N).
func TestMaster_HTTPIdleHelper(t *testing.T) {
	spec := os.Getenv("SCOUT_IDLE_HELPER")
	if spec == "" {
		return
	}
	var r syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
	r.Cur = r.Max
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
	parts := strings.Split(spec, ",")
	first, _ := strconv.Atoi(parts[1])
	n, _ := strconv.Atoi(parts[2])
	var conns []net.Conn
	var mu sync.Mutex
	var failed atomic.Int64
	var wg sync.WaitGroup
	work := make(chan int)
	for range 64 {
		wg.Go(func() {
			for i := range work {
				a := i / 50
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 88, byte(a/250), byte(1+a%250))}, Timeout: 2 * time.Second}
				c, err := d.Dial("tcp4", parts[0])
				if err != nil {
					failed.Add(1)
					continue
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		})
	}
	for i := first; i < first+n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	fmt.Printf("idle %d %d\n", len(conns), failed.Load())
	io.Copy(io.Discard, os.Stdin) // hold them until the test ends
	os.Exit(0)
}

// udpLatency asks master for its full list every 20 ms for d, as scout's
// client (with its cookie, so that the answers are not the response
// limiter's to refuse), and returns each complete answer's time from the
// request to its last datagram.
func udpLatency(t *testing.T, master netip.AddrPort, listed int, d time.Duration) []time.Duration {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cookie := q3.CookieKeyword
	buf := make([]byte, 65536)
	var out []time.Duration
	every := time.NewTicker(20 * time.Millisecond)
	defer every.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-every.C {
		req := []byte(q3.Prefix + "getservers 68 empty full " + cookie)
		sent := time.Now()
		c.WriteToUDPAddrPort(req, master)
		c.SetReadDeadline(sent.Add(2 * time.Second))
		n := 0
		for n < listed {
			k, err := c.Read(buf)
			if err != nil {
				break
			}
			if ck, err := q3.ParseCookie(buf[:k]); err == nil {
				cookie = q3.CookieWord(ck.Token)
				continue
			}
			if m, err := q3.Parse(buf[:k]); err == nil {
				if r, ok := m.(q3.ServersResponse); ok {
					n += len(r.Servers)
				}
			}
		}
		if n >= listed {
			out = append(out, time.Since(sent))
		}
	}
	slices.Sort(out)
	return out
}

func pct(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return -1
	}
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// httpMetric reads one series of the master's /metrics as a fresh client.
func httpMetric(t *testing.T, httpAddr, local, series string) float64 {
	t.Helper()
	cl := clientFrom(local)
	defer cl.CloseIdleConnections()
	resp, err := cl.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	t.Fatalf("no %s in /metrics", series)
	return 0
}

// clientFrom is an HTTP client whose connections leave from local.
func clientFrom(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}}
}

func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// A real scout master with its default limits, listing 4,000 servers:
// 20,000 idle HTTP connections from 400 addresses, then 8 clients
// requesting every endpoint as fast as they can (the legacy /servers
// page, /metrics, the API's list, the page, /healthz), cannot exhaust
// it: it holds no more connections than its cap, a new client is
// answered at once, its memory stays bounded, the flooding clients are
// limited (429), and its UDP answers keep their latency.
func TestMaster_HTTPCannotBeExhausted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout, opens 20,000 connections")
	}
	bin := buildScout(t)
	m := startMaster(t, bin, "-l", "127.0.0.1", "-p", "0", "--list-loopback", "--http", "127.0.0.1:0", "--motd-port", "0", "-v", "3")
	udp := netip.MustParseAddrPort(m.waitLog(t, "listening", "port", "master")["addr"].(string))
	httpAddr := m.waitLog(t, "listening", "port", "http")["addr"].(string)
	go func() {
		for range m.lines { // drain the log
		}
	}()
	const listed = 4000
	fleet := crashFleet(t, listed, "127.86.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if _, err := loadgen.Populate(ctx, fleet, udp, loadgen.PopulateConfig{Source: netip.MustParseAddr("127.86.200.1")}); err != nil {
		t.Fatal(err)
	}
	quiet := udpLatency(t, udp, listed, 3*time.Second)
	rss0 := vmRSS(t, m.cmd.Process.Pid)

	// 20,000 idle connections, 50 from each of 400 addresses (within the
	// per-client cap), that never send a byte: held by two helper
	// processes (this test binary again), 10,000 each, within their file
	// limits.
	var dialled, failed int
	for h := range 2 {
		d, f := idleHelper(t, httpAddr, h*idleConns/2, idleConns/2)
		dialled, failed = dialled+d, failed+f
	}
	open := httpMetric(t, httpAddr, "127.89.0.1", "scout_master_http_connections")
	evicted := httpMetric(t, httpAddr, "127.89.0.2", "scout_master_http_connections_evicted_total")
	if open > masterd.DefaultHTTPMaxConns {
		t.Errorf("%v HTTP connections open, more than the cap %d", open, masterd.DefaultHTTPMaxConns)
	}
	fresh := clientFrom("127.89.0.3")
	start := time.Now()
	resp, err := fresh.Get("http://" + httpAddr + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a new client with %d idle connections held: %v %v", dialled, resp, err)
	}
	resp.Body.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("a new client waited %v", d)
	}

	// 8 clients request every endpoint as fast as they can while the UDP
	// answers are timed again.
	endpoints := []string{"/servers", "/metrics", "/api/v1/servers", "/", "/healthz"}
	stop := make(chan struct{})
	var codes sync.Map // status -> *atomic.Int64
	count := func(code int) {
		v, _ := codes.LoadOrStore(code, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	var flood sync.WaitGroup
	for k := range 8 {
		cl := clientFrom(fmt.Sprintf("127.90.0.%d", k+1))
		flood.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", "http://"+httpAddr+endpoints[i%len(endpoints)], nil)
				req.Header.Set("Accept-Encoding", "gzip")
				resp, err := cl.Transport.RoundTrip(req)
				if err != nil {
					count(0)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				count(resp.StatusCode)
			}
		})
	}
	loaded := udpLatency(t, udp, listed, 3*time.Second)
	close(stop)
	flood.Wait()
	rss1 := vmRSS(t, m.cmd.Process.Pid)

	got := map[int]int64{}
	codes.Range(func(k, v any) bool { got[k.(int)] = v.(*atomic.Int64).Load(); return true })
	t.Logf("idle: %d dialled (%d failed), %v open at the master, %v evicted; flood: %v; VmRSS %d -> %d MB",
		dialled, failed, open, evicted, got, rss0>>20, rss1>>20)
	t.Logf("UDP full list of %d servers: quiet p50 %v p99 %v (%d answers); under HTTP load p50 %v p99 %v (%d answers)",
		listed, pct(quiet, .5), pct(quiet, .99), len(quiet), pct(loaded, .5), pct(loaded, .99), len(loaded))
	if got[http.StatusTooManyRequests] == 0 {
		t.Error("no flooding client was limited (429)")
	}
	if rss1-rss0 > 200<<20 {
		t.Errorf("VmRSS grew by %d MB", (rss1-rss0)>>20)
	}
	if len(loaded) < len(quiet)/2 || pct(loaded, .99) > 2*pct(quiet, .99)+100*time.Millisecond {
		t.Errorf("UDP answers under HTTP load: %d, p99 %v; quiet: %d, p99 %v", len(loaded), pct(loaded, .99), len(quiet), pct(quiet, .99))
	}
}
