package masterd

import (
	"crypto/rand"
	"errors"
	"hash/fnv"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/store"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// BenchmarkMaster_Million builds a real master (masterd.Master on
// 127.0.0.1) listing 1,000,000 verified servers and reports (BENCHMARKS.md,
// "A million servers"):
//
//   - registrations/s: heartbeat, getinfo and infoResponse through
//     Handler.HandlePacket in this goroutine (in-process: loopback has too
//     few IPv6 addresses, see millionAddr), with the master's sockets,
//     ticker and web history running;
//   - heap-B/server (live heap after a GC) and rss-B/server (VmRSS), both
//     after registration and the full answer, less before;
//   - the full getserversExt answer for Quake3Arena 68 (700,000 servers)
//     over the real socket: first after a change (snapshot and encoding),
//     and cached; packets and bytes; and the socket loop's worst pause
//     during each, as the longest round trip of a small probe request
//     (getserversExt for a game with no servers) sent every millisecond;
//   - restart from a bbolt state file: Open, Load and Restore of the 1M.
//
// Run it alone: go test -run '^$' -bench Million -benchtime 1x ./masterd
func BenchmarkMaster_Million(b *testing.B) {
	for b.Loop() {
		benchMillion(b)
	}
}

func benchMillion(b *testing.B) {
	regCfg := master.Config{
		MaxServers: millionServers + 1024, MaxServersPerAddress: -1,
		MaxPending: 1 << 16, AllowLoopback: true,
	}
	m, stop := startMaster(b, Config{
		Listen: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		Reloadable: Reloadable{
			Registry:     regCfg,
			NoQueryLimit: true, OutRate: 4_000_000_000, OutBurst: 100_000_000,
			// The heartbeat flood protection tracks the sources of the last
			// few seconds: at tens of thousands of new servers a second that
			// is far more than its default 16,384 (dpmaster's --max-clients).
			MaxSources: 1 << 18,
		},
	})
	defer stop()
	addr := m.Addrs()[0]

	heap0, rss0 := liveHeap(), vmRSS(b)
	start, cpu0 := time.Now(), cpuTime()
	registerMillion(b, m.Handler, 0, millionServers)
	reg, regCPU := time.Since(start), cpuTime()-cpu0
	// Re-probes of the synthetic servers go unanswered: on a slow
	// (shared) machine a few may be dropped before registration ends.
	listed, _ := m.Handler.Registry().Counts()
	if listed < millionServers*999/1000 {
		b.Fatalf("%d listed", listed)
	}
	b.ReportMetric(float64(listed), "listed")
	b.ReportMetric(millionServers/reg.Seconds(), "registrations/s")
	b.ReportMetric(millionServers/regCPU.Seconds(), "registrations/cpu-s")

	full, _ := q3.GetServers{Ext: true, GameName: "Quake3Arena", Protocol: 68, Empty: true, Full: true, IPv4: true, IPv6: true}.AppendBinary(nil)
	probe, _ := q3.GetServers{Ext: true, GameName: "Nexuiz", Protocol: 3, Empty: true, Full: true}.AppendBinary(nil)
	next := millionServers
	for _, phase := range []string{"changed", "cached"} {
		change := func() {}
		if phase == "changed" {
			// One more server listed: the answer needs a new snapshot.
			change = func() { registerMillion(b, m.Handler, next, next+1); next++ }
		}
		out0, _ := m.Handler.Stats().Out(master.KindServersExtResponse)
		r := fullAnswer(b, addr, full, probe, change)
		out1, _ := m.Handler.Stats().Out(master.KindServersExtResponse)
		// The master's datagrams of the full answer: every probe is
		// answered by one datagram of the same kind (none went
		// unanswered in the runs of BENCHMARKS.md). The client may
		// receive fewer: its socket's buffer is bounded by
		// net.core.rmem_max.
		sent := int(out1-out0) - r.asked
		b.Logf("%s answer: %d datagrams sent by the master", phase, sent)
		b.ReportMetric(float64(sent), phase+"-sent-packets")
		b.Logf("%s answer: %d packets (%d repeated), %d bytes, last packet after %v; probe before: worst %v; during: worst %v (%d probes, %d unanswered)",
			phase, r.packets, r.repeated, r.bytes, r.took, r.before, r.during, r.probes, r.lost)
		b.ReportMetric(r.took.Seconds()*1e3, phase+"-answer-ms")
		b.ReportMetric(r.during.Seconds()*1e3, phase+"-worst-pause-ms")
		b.ReportMetric(float64(r.packets), phase+"-packets")
	}

	// A change reaching the answers: a new server of a game with none
	// (a group of one), then one more of the 700,000 (its gametype new,
	// so that a one-datagram query finds it), each registered here and
	// asked for over UDP every millisecond from the registration on.
	for _, c := range []struct {
		label, tag, name, proto, gametype string
		req                               q3.GetServers
	}{
		{"small", "DarkPlaces", "Nexuiz", "3", "dm", q3.GetServers{Ext: true, GameName: "Nexuiz", Protocol: 3, Empty: true, Full: true}},
		{"large", "QuakeArena-1", "Quake3Arena", "68", "9", q3.GetServers{Ext: true, GameName: "Quake3Arena", Protocol: 68, Empty: true, Full: true, IPv4: true, IPv6: true, GameType: "9"}},
	} {
		req, _ := c.req.AppendBinary(nil)
		if n, _ := peer.CountListed(addr, req, 100*time.Millisecond); n != 0 {
			b.Fatalf("%s group: %d listed before the new server", c.label, n)
		}
		start := time.Now()
		registerServer(b, m.Handler, millionAddr(next), c.tag, c.name, c.proto, c.gametype, 3)
		next++
		took := untilListed(b, addr, req, start)
		b.Logf("a new server of the %s group (%s %s) in the answers after %v", c.label, c.name, c.proto, took)
		b.ReportMetric(took.Seconds()*1e3, "conv-"+c.label+"-ms")
	}

	runtime.GC()
	b.ReportMetric(float64(liveHeap()-heap0)/float64(listed), "heap-B/server")
	b.ReportMetric(float64(vmRSS(b)-rss0)/float64(listed), "rss-B/server")

	servers := m.Handler.Registry().Servers(nil)
	b.ReportMetric(restartBolt(b, regCfg, servers).Seconds(), "bolt-restart-s")
}

// registerMillion lists the servers [from, to) through h, one heartbeat
// and one infoResponse each.
func registerMillion(b *testing.B, h *master.Handler, from, to int) {
	var r registrar
	for i := from; i < to; i++ {
		name, proto, tag := millionGame(i)
		r.register(b, h, millionAddr(i), tag, name, proto, "0", i%17)
	}
}

// registerServer lists one server at a through h.
func registerServer(b *testing.B, h *master.Handler, a netip.AddrPort, tag, name, proto, gametype string, clients int) {
	var r registrar
	r.register(b, h, a, tag, name, proto, gametype, clients)
}

// registrar registers servers through a handler in-process, reusing its
// buffers.
type registrar struct {
	out []master.Outgoing
	pkt []byte
}

// register sends h a heartbeat from a (tag) and the infoResponse to its
// getinfo, now.
func (r *registrar) register(b *testing.B, h *master.Handler, a netip.AddrPort, tag, name, proto, gametype string, clients int) {
	hb, _ := q3.Heartbeat{Tag: tag}.AppendBinary(nil)
	now := time.Now()
	r.out = h.HandlePacket(now, a, hb, r.out[:0])
	challenge := ""
	for _, o := range r.out {
		if m, err := q3.Parse(o.Payload); err == nil {
			if gi, ok := m.(q3.GetInfo); ok && o.To == a {
				challenge = gi.Challenge
			}
		}
	}
	if challenge == "" {
		b.Fatalf("server %v: no getinfo in %d datagrams", a, len(r.out))
	}
	var err error
	r.pkt, err = q3.InfoResponse{Info: infostring.Info{
		{Key: "challenge", Value: challenge}, {Key: "protocol", Value: proto}, {Key: "gamename", Value: name},
		{Key: "hostname", Value: "million " + a.String()}, {Key: "mapname", Value: "q3dm17"},
		{Key: "clients", Value: strconv.Itoa(clients)}, {Key: "sv_maxclients", Value: "16"}, {Key: "gametype", Value: gametype},
	}}.AppendBinary(r.pkt[:0])
	if err != nil {
		b.Fatal(err)
	}
	r.out = h.HandlePacket(now, a, r.pkt, r.out[:0])
}

// untilListed asks m for req every millisecond until its answer lists a
// server, and returns how long that was after start (at most 10 s).
func untilListed(b *testing.B, m netip.AddrPort, req []byte, start time.Time) time.Duration {
	tick := time.NewTicker(time.Millisecond) // the poll's pace
	defer tick.Stop()
	for ; time.Since(start) < 10*time.Second; <-tick.C {
		if n, _ := peer.CountListed(m, req, 100*time.Millisecond); n > 0 {
			return time.Since(start)
		}
	}
	b.Fatalf("not listed within 10 s")
	return 0
}

type answerRun struct {
	packets, bytes int
	repeated       int           // packets received before, byte for byte
	took           time.Duration // request to the last packet received
	before, during time.Duration // worst probe round trip
	probes, lost   int
	asked          int // probes sent, before and during
}

// fullAnswer asks addr for req from one socket while another sends
// probe every millisecond, and returns the answer's size and time and the
// probes' worst round trip for 300 ms before, and during the answer;
// change runs between the two.
func fullAnswer(b *testing.B, addr netip.AddrPort, req, probe []byte, change func()) answerRun {
	b.Helper()
	var r answerRun
	pc := dial(b)
	defer pc.Close()
	fc := dial(b)
	defer fc.Close()
	fc.SetReadBuffer(64 << 20)

	prober := func(d time.Duration) time.Duration {
		p, err := peer.ProbeRTT(pc, addr, probe, d)
		r.asked += p.Sent
		r.probes += p.Answered
		r.lost += p.Lost
		if err != nil {
			b.Fatal(err)
		}
		return p.Worst
	}
	r.before = prober(300 * time.Millisecond)
	r.probes, r.lost = 0, 0
	change()

	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		t := time.Now()
		if _, err := fc.WriteToUDPAddrPort(req, addr); err != nil {
			b.Error(err)
			return
		}
		seen := map[uint64]bool{}
		wait := time.Minute // the first packet: snapshot and encoding
		for {
			fc.SetReadDeadline(time.Now().Add(wait))
			wait = time.Second
			n, _, err := fc.ReadFromUDPAddrPort(buf)
			if err != nil {
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					b.Error(err)
				}
				return
			}
			r.packets++
			r.bytes += n
			h := fnv.New64a()
			h.Write(buf[:n])
			if seen[h.Sum64()] {
				r.repeated++
			}
			seen[h.Sum64()] = true

			r.took = time.Since(t)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.during = max(r.during, prober(50*time.Millisecond))
		select {
		case <-done:
			return r
		default:
		}
		if time.Now().After(deadline) {
			b.Fatal("no end to the full answer")
		}
	}
}

func dial(b *testing.B) *net.UDPConn {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// restartBolt writes servers to a state file and returns how long a
// restart takes from it: Open (with its consistency check), Load and
// Registry.Restore.
func restartBolt(b *testing.B, cfg master.Config, servers []master.Server) time.Duration {
	path := filepath.Join(b.TempDir(), "state.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for len(servers) > 0 {
		n := min(len(servers), 65536)
		if err := st.Apply(servers[:n], nil); err != nil {
			b.Fatal(err)
		}
		servers = servers[n:]
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	start, cpu0 := time.Now(), cpuTime()
	st, err = store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	opened := time.Since(start)
	loaded, corrupt, err := st.Load()
	if err != nil || corrupt != 0 {
		b.Fatalf("load: %d corrupt, %v", corrupt, err)
	}
	read := time.Since(start)
	chal, err := master.NewChallenger(master.DefaultRotationPeriod, rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := master.NewRegistry(cfg, chal)
	if err != nil {
		b.Fatal(err)
	}
	n, skipped := reg.Restore(time.Now(), loaded)
	took, cpu := time.Since(start), cpuTime()-cpu0
	st.Close()
	if n != len(loaded) {
		b.Fatalf("restored %d of %d, skipped %d", n, len(loaded), len(skipped))
	}
	// NewMaster then builds the answer snapshot before the sockets open.
	built := time.Now()
	reg.Refresh(built)
	snap := time.Since(built)
	b.Logf("bolt restart: %d servers in %v (Open %v, Load %v, Restore %v), %v of CPU; then the answer snapshot in %v",
		n, took, opened, read-opened, took-read, cpu, snap)
	b.ReportMetric(cpu.Seconds(), "bolt-restart-cpu-s")
	b.ReportMetric(snap.Seconds(), "bolt-restart-snapshot-s")
	return took
}

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// vmRSS returns this process's resident set in bytes (Linux), 0 elsewhere.
func vmRSS(b *testing.B) int64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(s), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
