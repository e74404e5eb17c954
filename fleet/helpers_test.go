package fleet

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// redisProc is a real redis-server on a loopback port with its own
// directory and append-only file (fsync'ed on every write, so that a kill
// -9 of Redis loses nothing the tests count on).
type redisProc struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// startRedis starts redis-server and returns once it says it accepts
// connections.
func startRedis(t testing.TB) *redisProc {
	t.Helper()
	r := &redisProc{t: t, bin: peer.Need(t, "redis-server", "apt-get install redis-server"), dir: t.TempDir(), port: peer.FreeTCPPort(t)}
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *redisProc) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

func (r *redisProc) start() {
	r.t.Helper()
	r.cmd = exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no", "--loglevel", "notice")
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	r.cmd.Stderr = r.cmd.Stdout
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.done = make(chan struct{})
	ready := make(chan struct{})
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said {
				log.WriteString(sc.Text() + "\n")
			}
			if !said && strings.Contains(sc.Text(), "Ready to accept connections") {
				said = true
				close(ready)
			}
		}
		r.cmd.Wait()
		close(r.done)
	}()
	select {
	case <-ready:
	case <-r.done:
		r.t.Fatalf("redis-server exited:\n%s", log.String())
	case <-time.After(20 * time.Second):
		r.t.Fatalf("redis-server not ready in 20 s:\n%s", log.String())
	}
}

// kill stops redis-server with SIGKILL (its append-only file, fsync'ed
// on every write, keeps everything).
func (r *redisProc) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.done
		r.cmd = nil
	}
}

func (r *redisProc) client(t testing.TB) *redis.Client {
	opt, _ := redis.ParseURL(r.URL())
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// newRegistry is a registry of cfg with a challenger of its own, for a
// node that a test joins by hand.
func newRegistry(t testing.TB, cfg master.Config) *master.Registry {
	t.Helper()
	chal, err := master.NewChallenger(master.DefaultRotationPeriod, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := master.NewRegistry(cfg, chal)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// fastConfig is the fleet's configuration in tests: beats every 100 ms,
// and as in production dead after DefaultDead (3 s) without a beat, each
// Redis round trip bounded by DefaultTimeout (1 s). With a Dead of 500 ms
// and a Timeout of 500 ms, a Redis that answered nothing for 700 ms (a
// loaded machine: redis-server fsyncs every write to a shared disk, and
// shares two cores) made the instances take each other for dead: one
// removed the other's description and took its share (ZREM and HDEL),
// and the tests that count removals, Redis operations and re-probes per
// period failed (TestFleet_SilentServerExpiresOnce, RedisOpsPerEvent,
// ReprobeShareMovesWhenAnInstanceDies). TestFleet_RedisStallIsNoDeath
// pauses Redis so.
func fastConfig(url, id string) Config {
	return Config{Redis: url, ID: id, Beat: 100 * time.Millisecond, Dead: DefaultDead, Timeout: DefaultTimeout}
}

// instance is one in-process master of a fleet, on a loopback socket.
type instance struct {
	m      *masterd.Master
	node   *Node
	addr   netip.AddrPort
	cancel context.CancelFunc
	done   chan error
	log    *syncBuffer
}

// catalogue returns the built-in games with Quake III Arena re-probed
// every reprobe (0: its own interval).
func catalogue(t testing.TB, reprobe time.Duration) *game.Catalogue {
	t.Helper()
	if reprobe == 0 {
		return game.Default()
	}
	var games []*game.Game
	for _, g := range game.Builtin() {
		if g.Name == "Quake3Arena" {
			c := *g
			c.Reprobe.Interval = reprobe
			g = &c
		}
		games = append(games, g)
	}
	c, err := game.NewCatalogue(games...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startInstance(t testing.TB, fc Config, reprobe time.Duration) *instance {
	t.Helper()
	return startInstanceTimeout(t, fc, reprobe, 0)
}

// startInstanceTimeout is startInstance with the registry's silence
// Timeout (0: its default).
func startInstanceTimeout(t testing.TB, fc Config, reprobe, timeout time.Duration) *instance {
	t.Helper()
	in := &instance{log: &syncBuffer{}}
	log := masterd.NewLogger(in.log, slog.Level(-4), false)
	fc.Logger = log
	node, err := New(fc)
	if err != nil {
		t.Fatal(err)
	}
	mc := masterd.Config{
		Listen:   []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		HTTP:     "127.0.0.1:0",
		Landmark: fc.Landmark, // a landmark, as scout master --landmark-place makes it
		Reloadable: masterd.Reloadable{
			Registry:     master.Config{AllowLoopback: true, MaxServersPerAddress: -1, Catalogue: catalogue(t, reprobe), Timeout: timeout},
			NoQueryLimit: true,
			Heartbeats:   masterd.Limit{Throttle: 1 << 20, Decay: time.Millisecond},
		},
	}
	m, err := masterd.NewMaster(time.Now(), mc, masterd.Deps{Fleet: node, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		t.Fatal(err)
	}
	in.m, in.node, in.addr = m, node, m.Addrs()[0]
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel, in.done = cancel, make(chan error, 1)
	go func() { in.done <- m.Run(ctx) }()
	t.Cleanup(in.stop)
	return in
}

// stop stops the instance cleanly (it leaves the fleet).
func (in *instance) stop() {
	if in.cancel != nil {
		in.cancel()
		<-in.done
		in.cancel = nil
	}
}

// crash stops the instance as a kill -9 would for the fleet: its Redis
// connection is cut first, so it neither writes its queue nor leaves.
func (in *instance) crash() {
	in.node.rdb.Close()
	in.stop()
}

func (in *instance) listed() int {
	n, _ := in.m.Registry.Counts()
	return n
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// probeEvent is a request a game server received.
type probeEvent struct {
	at     time.Time
	from   netip.AddrPort
	status bool // getstatus (a Q3A re-probe); else getinfo
}

// gameServer is a Quake III server on a loopback UDP socket: it
// heartbeats on demand and answers getinfo and getstatus, recording each.
type gameServer struct {
	conn *net.UDPConn
	addr netip.AddrPort

	mu     sync.Mutex
	events []probeEvent
	signal chan struct{} // closed and replaced on each event
}

func startGameServers(t testing.TB, n int) []*gameServer {
	t.Helper()
	out := make([]*gameServer, n)
	for i := range out {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		g := &gameServer{conn: c, addr: c.LocalAddr().(*net.UDPAddr).AddrPort(), signal: make(chan struct{})}
		t.Cleanup(func() { c.Close() })
		go g.serve(i)
		out[i] = g
	}
	return out
}

func (g *gameServer) serve(i int) {
	buf := make([]byte, 2048)
	for {
		n, from, err := g.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		m, err := q3.Parse(buf[:n])
		if err != nil {
			continue
		}
		info := func(ch string) infostring.Info {
			return infostring.Info{{Key: "challenge", Value: ch}, {Key: "protocol", Value: "68"},
				{Key: "hostname", Value: "fleet test " + strconv.Itoa(i)}, {Key: "clients", Value: "1"},
				{Key: "sv_maxclients", Value: "16"}, {Key: "gametype", Value: "0"}}
		}
		var reply []byte
		ev := probeEvent{at: time.Now(), from: from}
		switch m := m.(type) {
		case q3.GetInfo:
			reply, err = q3.InfoResponse{Info: info(m.Challenge)}.AppendBinary(nil)
		case q3.GetStatus:
			ev.status = true
			reply, err = q3.StatusResponse{Info: info(m.Challenge)}.AppendBinary(nil)
		default:
			continue
		}
		if err != nil {
			continue
		}
		g.mu.Lock()
		g.events = append(g.events, ev)
		close(g.signal)
		g.signal = make(chan struct{})
		g.mu.Unlock()
		g.conn.WriteToUDPAddrPort(reply, from)
	}
}

func (g *gameServer) heartbeat(t testing.TB, to netip.AddrPort) {
	t.Helper()
	hb, _ := q3.Heartbeat{Tag: "QuakeArena-1"}.AppendBinary(nil)
	if _, err := g.conn.WriteToUDPAddrPort(hb, to); err != nil {
		t.Fatal(err)
	}
}

// reprobes returns the getstatus requests received at or after since.
func (g *gameServer) reprobes(since time.Time) []probeEvent {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []probeEvent
	for _, e := range g.events {
		if e.status && !e.at.Before(since) {
			out = append(out, e)
		}
	}
	return out
}

// waitFor polls cond (every millisecond) until it holds or d passes, and
// reports whether it held.
// resendEvery is how often waitResending heartbeats again: a real game
// server heartbeats every few minutes, so a heartbeat or a check lost at a
// loaded socket costs it one period; the tests shorten that period to 2 s.
const resendEvery = 2 * time.Second

// waitResending is waitFor, calling resend every resendEvery while cond is
// false, as game servers whose heartbeat or check reply was lost would.
func waitResending(d time.Duration, cond func() bool, resend func()) bool {
	next := time.Now().Add(resendEvery)
	return waitFor(d, func() bool {
		if cond() {
			return true
		}
		if time.Now().After(next) {
			resend()
			next = time.Now().Add(resendEvery)
		}
		return false
	})
}

// patience is how long a test waits for a state the fleet reaches
// whatever the load (a server listed, the instances seeing each other, a
// queue written): long enough for a loaded machine, at most maxPatience,
// and never past a quarter of what is left of the test's deadline. How
// fast the fleet gets there is measured by the benchmarks, not here.
func patience(t testing.TB) time.Duration {
	d := maxPatience
	if dl, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := dl.Deadline(); ok {
			d = min(d, time.Until(end)/4)
		}
	}
	return d
}

// maxPatience bounds patience.
const maxPatience = 30 * time.Second

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-t.C
	}
	return true
}

// list asks the master at m for its list of protocol 68 servers over UDP.
func list(t testing.TB, m netip.AddrPort) map[netip.AddrPort]bool {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	if _, err := c.WriteToUDPAddrPort(q, m); err != nil {
		t.Fatal(err)
	}
	got := map[netip.AddrPort]bool{}
	buf := make([]byte, 65536)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	ended := false // every packet ends with a marker: the list closes after q3.EndGrace of silence
	for {
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil && ended {
			return got
		}
		if err != nil {
			t.Fatalf("list from %v: %v (%d servers so far)", m, err, len(got))
		}
		msg, err := q3.Parse(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		r, ok := msg.(q3.ServersResponse)
		if !ok {
			continue
		}
		for _, a := range r.Servers {
			got[a] = true
		}
		if r.End != q3.EndNone {
			ended = true
			c.SetReadDeadline(time.Now().Add(q3.EndGrace))
		}
	}
}

// landmarkRTTs asks the master at m for its list of protocol 68 servers
// with the landmarks' RTTs (getserversExt ... landmarks) over UDP and
// returns the RTTs by landmark and server.
func landmarkRTTs(t testing.TB, m netip.AddrPort) map[string]map[netip.AddrPort]time.Duration {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, _ := q3.GetServers{Ext: true, GameName: "Quake3Arena", Protocol: 68, Empty: true, Full: true, Other: []string{q3.LandmarksKeyword}}.AppendBinary(nil)
	if _, err := c.WriteToUDPAddrPort(q, m); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[netip.AddrPort]time.Duration{}
	buf := make([]byte, 65536)
	// The landmark packets follow the list's at once; the read ends
	// after q3.EndGrace of silence.
	for {
		c.SetReadDeadline(time.Now().Add(q3.EndGrace))
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			return got
		}
		r, err := q3.ParseLandmarksResponse(buf[:n])
		if err != nil {
			continue // the list
		}
		if got[r.Landmark] == nil {
			got[r.Landmark] = map[netip.AddrPort]time.Duration{}
		}
		for _, e := range r.Entries {
			got[r.Landmark][e.Addr] = e.RTT
		}
	}
}

// The Redis client's own messages (dial failures while a test has Redis
// down) are dropped, as scout master sends them to its log at Debug.
func init() { RedisLog(slog.New(slog.DiscardHandler)) }
