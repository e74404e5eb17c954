//go:build linux

package fleet

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// millionServers is the listing size the fleet is sized for: a million
// servers.
const millionServers = 1_000_000

// fillRedisMillion writes n verified servers straight into the shared
// hash (pipelines of 10,000 HSET), laid out as masterd's million-server
// benchmark: 70 % Quake3Arena 68, 15 % OpenArena 71, 15 % Xonotic 3, one
// in four IPv6.
func fillRedisMillion(b *testing.B, r *redisProc, n int) {
	b.Helper()
	rc := r.client(b)
	ctx := context.Background()
	now := time.Now()
	pipe := rc.Pipeline()
	for i := range n {
		var a netip.Addr
		if i%4 == 3 {
			a = netip.AddrFrom16([16]byte{0x2a, 0x0f, 0x5c, 0x0a, 0, byte(i >> 16), byte(i >> 8), byte(i), 15: 1})
		} else {
			a = netip.AddrFrom4([4]byte{23, byte(i >> 16), byte(i >> 8), byte(i)})
		}
		name, proto := "Quake3Arena", 68
		switch i % 20 {
		case 14, 15, 16:
			name, proto = "OpenArena", 71
		case 17, 18, 19:
			name, proto = "Xonotic", 3
		}
		s := master.Server{
			Addr: netip.AddrPortFrom(a, 27960), Family: game.FamilyQ3, Game: name, Protocol: proto, Gametype: "0",
			Clients: i % 17, MaxClients: 16, FirstSeen: now, LastVerified: now,
			Info: []master.Pair{{Key: "hostname", Value: "million " + strconv.Itoa(i)}, {Key: "mapname", Value: "q3dm17"}},
		}
		pipe.HSet(ctx, DefaultPrefix+"servers", s.Addr.String(), encode(s))
		if (i+1)%10000 == 0 || i == n-1 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkFleet_MillionThreeInstances: a real redis-server holding
// 1,000,000 verified servers (fillRedisMillion) and three real `scout
// master --store redis://...` processes started one after the other on
// it. Reported per instance (BENCHMARKS.md, "A million servers", three
// instances):
//
//   - listen-s: from exec to its HTTP socket listening (NewMaster reads
//     the whole hash before any socket opens, within
//     masterd.FleetJoinTimeout); join-s: to its /metrics count being the
//     whole hash (polled every 10 ms);
//   - rss-MB: its VmRSS after the join, and after the answers below;
//   - the full getserversExt Quake3Arena 68 (700,000 servers) over real
//     UDP: request to last datagram, and the socket loop's worst pause
//     (a one-datagram probe request, getserversExt Warsow 22, every
//     millisecond from another socket), first and cached;
//
// and for the fleet: convergence, a real game server (Nexuiz 3, a game
// with no other server) heartbeating to instance 0 until every instance
// lists it, seen in their /metrics (polled every 10 ms) and in their UDP
// answer for Nexuiz 3 (polled every 10 ms); then the same for one more
// server of the 700,000 (Quake3Arena 68 with a gametype of its own,
// "-large"); and Redis's used_memory and VmRSS.
//
// Run it alone: go test -run '^$' -bench MillionThreeInstances -benchtime 1x -timeout 30m ./fleet
func BenchmarkFleet_MillionThreeInstances(b *testing.B) {
	for b.Loop() {
		benchMillionThree(b)
	}
}

func benchMillionThree(b *testing.B) {
	r := startRedis(b)
	began := time.Now()
	fillRedisMillion(b, r, millionServers)
	b.Logf("redis filled with %d servers in %v", millionServers, time.Since(began).Round(time.Millisecond))
	bin := buildScout(b)

	full, _ := q3.GetServers{Ext: true, GameName: "Quake3Arena", Protocol: 68, Empty: true, Full: true, IPv4: true, IPv6: true}.AppendBinary(nil)
	probe, _ := q3.GetServers{Ext: true, GameName: "Warsow", Protocol: 22, Empty: true, Full: true}.AppendBinary(nil)
	var ins []*scoutProc
	for k := range 3 {
		start := time.Now()
		p := startScout(b, bin, r.URL(), fmt.Sprint("m", k), "-n", fmt.Sprint(millionServers+1024),
			"--out-rate", "4000000000", "--out-burst", "100000000", "--http-no-limit")
		listening := time.Since(start)
		ins = append(ins, p)
		// NewMaster gives up its join after masterd.FleetJoinTimeout and
		// the instance reads the rest once running: the join ends when
		// its count is the whole hash (polled every 10 ms).
		listed := listedMetric(b, p.http)
		for deadline := time.Now().Add(2 * time.Minute); listed != millionServers && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // the poll's pace
			listed = listedMetric(b, p.http)
		}
		join := time.Since(start)
		if listed != millionServers {
			b.Fatalf("instance %d lists %d after %v", k, listed, join)
		}
		rss := procRSS(b, p.cmd.Process.Pid)
		b.Logf("instance %d: listening after %v, all listed after %v, VmRSS %d MB", k, listening.Round(time.Millisecond), join.Round(time.Millisecond), rss>>20)
		b.ReportMetric(listening.Seconds(), fmt.Sprintf("listen%d-s", k))
		b.ReportMetric(join.Seconds(), fmt.Sprintf("join%d-s", k))
		b.ReportMetric(float64(rss>>20), fmt.Sprintf("rss%d-MB", k))
	}
	for k, p := range ins {
		for _, phase := range []string{"first", "cached"} {
			a := askFull(b, p.addr, full, probe)
			if a.servers != 700_000 {
				b.Errorf("instance %d %s answer: %d servers, want 700,000", k, phase, a.servers)
			}
			b.Logf("instance %d %s answer: %d servers in %d datagrams, last after %v; probe worst before %v, during %v (%d probes, %d lost)",
				k, phase, a.servers, a.packets, a.took.Round(time.Millisecond), a.before.Round(time.Millisecond), a.during.Round(time.Millisecond), a.probes, a.lost)
			b.ReportMetric(a.took.Seconds()*1e3, fmt.Sprintf("answer%d-%s-ms", k, phase))
			b.ReportMetric(a.during.Seconds()*1e3, fmt.Sprintf("pause%d-%s-ms", k, phase))
		}
		rss := procRSS(b, p.cmd.Process.Pid)
		b.Logf("instance %d: VmRSS %d MB after the answers", k, rss>>20)
		b.ReportMetric(float64(rss>>20), fmt.Sprintf("rss%d-after-MB", k))
	}

	fleetState := func(when string) {
		for k, p := range ins {
			b.Logf("instance %d %s: resyncs %s, puts applied %s, queued writes %s, written %s", k, when,
				metricWith(b, p.http, "scout_fleet_resyncs_total", ""), metricWith(b, p.http, "scout_fleet_applied_total", `op="put"`),
				metricWith(b, p.http, "scout_fleet_queued_writes", ""), metricWith(b, p.http, "scout_fleet_writes_total", `outcome="written"`))
		}
	}
	fleetState("before the new server")
	defer fleetState("at the end")
	// Convergence: one new server, heartbeating to instance 0, of a game
	// with no other server (Nexuiz 3: a group of one); then one more of
	// the 700,000 (Quake3Arena 68, its gametype new so that a
	// one-datagram query finds it).
	nexuiz, _ := q3.GetServers{Ext: true, GameName: "Nexuiz", Protocol: 3, Empty: true, Full: true}.AppendBinary(nil)
	convergeAll(b, ins, startGameServer(b, "Nexuiz", "3", "dm"), "DarkPlaces", nexuiz, millionServers+1, "")
	q3a9, _ := q3.GetServers{Ext: true, GameName: "Quake3Arena", Protocol: 68, Empty: true, Full: true, IPv4: true, IPv6: true, GameType: "9"}.AppendBinary(nil)
	convergeAll(b, ins, startGameServer(b, "Quake3Arena", "68", "9"), "QuakeArena-1", q3a9, millionServers+2, "-large")

	// Redis's slowest commands of the run (SLOWLOG, over 10 ms by
	// default): what a write waiting seconds waited behind.
	if logs, err := r.client(b).SlowLogGet(context.Background(), 5).Result(); err == nil {
		for _, l := range logs {
			args := l.Args
			if len(args) > 4 {
				args = append(args[:4:4], fmt.Sprintf("... %d args", len(l.Args)))
			}
			b.Logf("redis slowlog: %v at %s, %v", l.Duration.Round(time.Millisecond), l.Time.Format("15:04:05.000"), args)
		}
	}
	info, err := r.client(b).Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	used := redisInfo(info, "used_memory")
	rrss := procRSS(b, r.cmd.Process.Pid)
	b.Logf("redis: used_memory %d MB, VmRSS %d MB", used>>20, rrss>>20)
	b.ReportMetric(float64(used>>20), "redis-used-MB")
	b.ReportMetric(float64(rrss>>20), "redis-rss-MB")
}

// listedMetric is an instance's scout_master_servers_listed (which the
// text format may write as 1e+06).
func listedMetric(b *testing.B, httpAddr string) int {
	f, _ := strconv.ParseFloat(metric(b, httpAddr, "scout_master_servers_listed"), 64)
	return int(f)
}

// metricWith is the value of the series of name whose labels hold label.
func metricWith(b *testing.B, httpAddr, name, label string) string {
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for l := range strings.Lines(string(body)) {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, name+"{") && strings.Contains(l, label) {
			return l[strings.LastIndexByte(l, ' ')+1:]
		}
	}
	return ""
}

// convergeAll has gs heartbeat (tag) to the first instance once and
// reports how long after the heartbeat every instance's registry counts
// listed servers and its answer to query (a one-datagram list) holds one,
// each polled every 10 ms from its own goroutine (polled one after the
// other, an instance's time would include the ones before).
func convergeAll(b *testing.B, ins []*scoutProc, gs *net.UDPConn, tag string, query []byte, listed int, label string) {
	hb, _ := q3.Heartbeat{Tag: tag}.AppendBinary(nil)
	start := time.Now()
	if _, err := gs.WriteToUDPAddrPort(hb, ins[0].addr); err != nil {
		b.Fatal(err)
	}
	at := func(cond func() bool) time.Duration { // -1: not within a minute
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			if cond() {
				return time.Since(start)
			}
			time.Sleep(10 * time.Millisecond) // the poll's pace
		}
		return -1
	}
	conv := make([][2]time.Duration, len(ins)) // registry, answers
	var wg sync.WaitGroup
	for k, p := range ins {
		wg.Go(func() { conv[k][0] = at(func() bool { return listedMetric(b, p.http) == listed }) })
		wg.Go(func() {
			conv[k][1] = at(func() bool { n, _ := peer.CountListed(p.addr, query, time.Second); return n == 1 })
		})
	}
	wg.Wait()
	for k, c := range conv {
		if c[0] < 0 || c[1] < 0 {
			b.Fatalf("instance %d: no convergence within a minute (registry %v, answers %v)", k, c[0], c[1])
		}
		b.Logf("instance %d: the new server%s in its registry after %v, in its answers after %v", k, label, c[0].Round(time.Millisecond), c[1].Round(time.Millisecond))
		b.ReportMetric(c[0].Seconds()*1e3, fmt.Sprintf("conv%d%s-registry-ms", k, label))
		b.ReportMetric(c[1].Seconds()*1e3, fmt.Sprintf("conv%d%s-answer-ms", k, label))
	}
}

// startGameServer is a game server answering getinfo and getstatus as
// gamename, protocol and gametype on a loopback socket, until the
// benchmark ends.
func startGameServer(b *testing.B, gamename, protocol, gametype string) *net.UDPConn {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	peer.ServeUDPOn(b, c, func(req []byte) [][]byte {
		m, _ := q3.Parse(req)
		var ch string
		switch m := m.(type) {
		case q3.GetInfo:
			ch = m.Challenge
		case q3.GetStatus:
			ch = m.Challenge
		default:
			return nil
		}
		reply, err := q3.InfoResponse{Info: infostring.Info{{Key: "challenge", Value: ch}, {Key: "gamename", Value: gamename},
			{Key: "protocol", Value: protocol}, {Key: "hostname", Value: "converge"}, {Key: "clients", Value: "0"},
			{Key: "sv_maxclients", Value: "8"}, {Key: "gametype", Value: gametype}}}.AppendBinary(nil)
		if _, ok := m.(q3.GetStatus); ok {
			reply, err = q3.StatusResponse{Info: infostring.Info{{Key: "challenge", Value: ch}, {Key: "gamename", Value: gamename},
				{Key: "protocol", Value: protocol}, {Key: "sv_maxclients", Value: "8"}, {Key: "g_gametype", Value: gametype}}}.AppendBinary(nil)
		}
		if err != nil {
			return nil
		}
		return [][]byte{reply}
	})
	return c
}

type fullRun struct {
	servers, packets int
	took             time.Duration // request to the last datagram
	before, during   time.Duration // the probe's worst round trip
	probes, lost     int
}

// askFull asks m for req from one socket (64 MB receive buffer) while
// another sends probe every millisecond: the answer's servers, datagrams
// and time, and the probe's worst round trip for 300 ms before and during
// it.
func askFull(b *testing.B, m netip.AddrPort, req, probe []byte) fullRun {
	b.Helper()
	var r fullRun
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Close()
	fc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer fc.Close()
	forceRcvbuf(fc, 64<<20)
	prober := func(d time.Duration) time.Duration {
		p, err := peer.ProbeRTT(pc, m, probe, d)
		r.probes += p.Answered
		r.lost += p.Lost
		if err != nil {
			b.Fatal(err)
		}
		return p.Worst
	}
	r.before = prober(300 * time.Millisecond)
	r.probes, r.lost = 0, 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		t := time.Now()
		fc.WriteToUDPAddrPort(req, m)
		wait := time.Minute
		for {
			fc.SetReadDeadline(time.Now().Add(wait))
			wait = time.Second
			n, _, err := fc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			msg, _ := q3.Parse(buf[:n])
			if sr, ok := msg.(q3.ServersResponse); ok {
				r.servers += len(sr.Servers)
			}
			r.packets++
			r.took = time.Since(t)
		}
	}()
	for {
		r.during = max(r.during, prober(50*time.Millisecond))
		select {
		case <-done:
			return r
		default:
		}
	}
}

func forceRcvbuf(c *net.UDPConn, n int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		// SO_RCVBUFFORCE passes net.core.rmem_max when privileged.
		if syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, n) != nil {
			c.SetReadBuffer(n)
		}
	})
}

// procRSS is a process's VmRSS in bytes.
func procRSS(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for l := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Fatalf("no VmRSS for %d", pid)
	return 0
}

// redisInfo reads an integer field of INFO's output.
func redisInfo(info, field string) int64 {
	for l := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkFleet_MillionCatchUp: an instance that holds the 1,000,000
// servers of the shared registry (fillRedisMillion, then a join) was cut
// off while the others re-verified a tenth of them, and its stream
// position was lost: its catch-up reads the whole hash again and drops
// what it no longer holds. The process runs at masterd's GC percent
// (25). Reported: join-s (the first full read), catchup-s (the catch-up's
// full read), and lookup-max-ms, the longest a Registry.Lookup (what
// /api/v1/servers/{address} does) waited during the catch-up, asked every
// 5 ms from another goroutine.
//
//	go test -run '^$' -bench MillionCatchUp -benchtime 1x -timeout 30m ./fleet
func BenchmarkFleet_MillionCatchUp(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	for b.Loop() {
		r := startRedis(b)
		fillRedisMillion(b, r, millionServers)
		reg := newRegistry(b, master.Config{MaxServers: millionServers + 1024, MaxServersPerAddress: -1})
		node, err := New(Config{Redis: r.URL(), ID: "cut"})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		start := time.Now()
		node.Join(ctx, reg, nil)
		join := time.Since(start)
		if l, _ := reg.Counts(); l != millionServers {
			b.Fatalf("joined with %d", l)
		}
		// The others re-verified every tenth server meanwhile.
		rc := r.client(b)
		later := time.Now()
		pipe := rc.Pipeline()
		for i := 0; i < millionServers; i += 10 {
			a := netip.AddrFrom4([4]byte{23, byte(i >> 16), byte(i >> 8), byte(i)})
			if i%4 == 3 {
				a = netip.AddrFrom16([16]byte{0x2a, 0x0f, 0x5c, 0x0a, 0, byte(i >> 16), byte(i >> 8), byte(i), 15: 1})
			}
			s := master.Server{Addr: netip.AddrPortFrom(a, 27960), Family: game.FamilyQ3, Game: "Quake3Arena", Protocol: 68, Gametype: "0",
				Clients: 3, MaxClients: 16, FirstSeen: later, LastVerified: later,
				Info: []master.Pair{{Key: "hostname", Value: "million " + strconv.Itoa(i)}, {Key: "mapname", Value: "q3dm6"}}}
			pipe.HSet(ctx, DefaultPrefix+"servers", s.Addr.String(), encode(s))
			if i%100_000 == 0 {
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		probeAddr := netip.MustParseAddrPort("23.0.0.5:27960")
		stop := make(chan struct{})
		worst := make(chan time.Duration)
		go func() {
			var w time.Duration
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					worst <- w
					return
				case <-t.C:
				}
				s := time.Now()
				reg.Lookup(probeAddr)
				w = max(w, time.Since(s))
			}
		}()
		start = time.Now()
		if err := node.catchUp(ctx, true); err != nil {
			b.Fatal(err)
		}
		catchUp := time.Since(start)
		close(stop)
		w := <-worst
		if l, _ := reg.Counts(); l != millionServers {
			b.Fatalf("lists %d after the catch-up", l)
		}
		b.Logf("join %v, catch-up %v, longest lookup %v", join.Round(time.Millisecond), catchUp.Round(time.Millisecond), w.Round(time.Millisecond))
		b.ReportMetric(join.Seconds(), "join-s")
		b.ReportMetric(catchUp.Seconds(), "catchup-s")
		b.ReportMetric(float64(w)/1e6, "lookup-max-ms")
		node.rdb.Close()
		r.kill()
	}
}
