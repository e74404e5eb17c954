//go:build linux

package loadgen

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/freeport"
	"github.com/scout-discovery/scout/protocol/q3"
)

// fakeMaster is the smallest master the fleet and the load can be checked
// against: heartbeat -> getinfo with a challenge, infoResponse with that
// challenge from that address -> listed, getservers -> the list split as
// dpmaster does (1400 bytes, EOT on the last packet, or on every packet
// when every is set). drop, when set, decides which packets of an answer
// are not sent.
type fakeMaster struct {
	conn  *net.UDPConn
	drop  func(packet, of int) bool
	every bool

	mu      sync.Mutex
	pending map[netip.AddrPort]string
	listed  []netip.AddrPort
	seen    map[netip.AddrPort]bool
}

func startFakeMaster(t *testing.T, drop func(packet, of int) bool) netip.AddrPort {
	t.Helper()
	return startFakeMasterLayout(t, drop, false)
}

func startFakeMasterLayout(t *testing.T, drop func(packet, of int) bool, every bool) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeMaster{conn: c, drop: drop, every: every, pending: map[netip.AddrPort]string{}, seen: map[netip.AddrPort]bool{}}
	done := make(chan struct{})
	go func() { defer close(done); m.serve() }()
	t.Cleanup(func() { c.Close(); <-done })
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

func (m *fakeMaster) serve() {
	buf := make([]byte, 2048)
	n := 0
	for {
		k, from, err := m.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		msg, err := q3.Parse(buf[:k])
		if err != nil {
			continue
		}
		switch msg := msg.(type) {
		case q3.Heartbeat:
			n++
			ch := "c" + strconv.Itoa(n)
			m.mu.Lock()
			m.pending[from] = ch
			m.mu.Unlock()
			p, _ := q3.GetInfo{Challenge: ch}.AppendBinary(nil)
			m.conn.WriteToUDPAddrPort(p, from)
		case q3.InfoResponse:
			got, _ := msg.Info.Get("challenge")
			m.mu.Lock()
			if ch, ok := m.pending[from]; ok && ch == got && !m.seen[from] {
				m.seen[from] = true
				m.listed = append(m.listed, from)
			}
			delete(m.pending, from)
			m.mu.Unlock()
		case q3.GetServers:
			m.mu.Lock()
			pkts, _ := q3.EncodeServersResponses(m.listed, q3.SplitOptions{End: q3.EndEOT, EndOnEvery: m.every, MaxBytes: 1400})
			m.mu.Unlock()
			for i, p := range pkts {
				if m.drop == nil || !m.drop(i, len(pkts)) {
					m.conn.WriteToUDPAddrPort(p, from)
				}
			}
		}
	}
}

// newTestFleet starts a fleet of n servers on addresses of its own and
// serves it until the test ends.
func newTestFleet(t *testing.T, n int, base string) *Fleet {
	t.Helper()
	// A fixed first port collided with another test process's copy of
	// the fleet; freeport draws one no other process holds.
	var f *Fleet
	err := freeport.Retry(t, 3, func(port uint16) (err error) {
		f, err = NewFleet(FleetConfig{Servers: n, PerAddr: 3, Base: netip.MustParseAddr(base), Port: port})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
		f.Close()
	})
	return f
}

func populated(t *testing.T, n int, base string, drop func(int, int) bool) (*Fleet, netip.AddrPort) {
	t.Helper()
	return populatedLayout(t, n, base, drop, false)
}

func populatedLayout(t *testing.T, n int, base string, drop func(int, int) bool, every bool) (*Fleet, netip.AddrPort) {
	t.Helper()
	master := startFakeMasterLayout(t, drop, every)
	f := newTestFleet(t, n, base)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listed, err := Populate(ctx, f, master, PopulateConfig{Rate: 20000, Source: netip.MustParseAddr(base).Prev()})
	if err != nil || listed != n {
		t.Fatalf("Populate: %d of %d listed, %v", listed, n, err)
	}
	return f, master
}

func TestFleet_PopulateAnswersGetinfoWithTheChallenge(t *testing.T) {
	f, _ := populated(t, 450, "127.90.0.1", nil)
	st := f.Stats()
	if st.GetInfo < 450 || st.Heartbeats < 450 || st.SendErrors != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestFleet_GetstatusEchoesTheChallenge(t *testing.T) {
	f := newTestFleet(t, 2, "127.90.8.1")
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 90, 8, 250)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, _ := q3.GetStatus{Challenge: "xyz"}.AppendBinary(nil)
	if _, err := c.WriteToUDPAddrPort(req, f.Addrs()[1]); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	m, err := q3.Parse(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	r, ok := m.(q3.StatusResponse)
	if !ok {
		t.Fatalf("got %T", m)
	}
	for k, want := range map[string]string{"challenge": "xyz", "protocol": "68", "sv_maxclients": "16", "clients": "1"} {
		if v, _ := r.Info.Get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
}

func TestRun_ClosedLoopCountsCompleteAnswers(t *testing.T) {
	f, master := populated(t, 400, "127.91.0.1", nil)
	q, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	r, err := Run(context.Background(), Config{
		Master: master, Query: q, Expect: 400, Sources: 8, SourceBase: netip.MustParseAddr("127.91.100.1"),
		Outstanding: 4, MaxRequests: 50, Duration: time.Minute, Timeout: 5 * time.Second,
		CheckEvery: 10, Want: f.Addrs(),
	})
	if err != nil {
		t.Fatal(err)
	}
	// 400 servers: 196 + 196 + 8 entries, 3 packets.
	if r.Requests != 50 || r.Complete != 50 || r.Incomplete+r.Unanswered+r.LostPackets != 0 {
		t.Errorf("result %+v", r)
	}
	if r.PacketsPerAnswer != 3 || r.Packets != 150 || r.Checked != 6 || r.CheckFailed != 0 {
		t.Errorf("packets/answer %d, packets %d, checked %d (failed %d)", r.PacketsPerAnswer, r.Packets, r.Checked, r.CheckFailed)
	}
}

func TestRun_LostPacketsCounted(t *testing.T) {
	// Every third answer loses its middle packet.
	var mu sync.Mutex
	answers := 0
	drop := func(packet, of int) bool {
		mu.Lock()
		defer mu.Unlock()
		if packet == 0 {
			answers++
		}
		return packet == 1 && answers%3 == 0
	}
	_, master := populated(t, 400, "127.92.0.1", drop)
	q, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	// The registration's own list query was answer 1; the run's are 2..31.
	r, err := Run(context.Background(), Config{
		Master: master, Query: q, Expect: 400, Sources: 4, SourceBase: netip.MustParseAddr("127.92.100.1"),
		Outstanding: 1, MaxRequests: 30, Duration: time.Minute, Timeout: 5 * time.Second, CheckEvery: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Complete != 20 || r.Incomplete != 10 || r.LostPackets != 10 || r.MissingEntries != 10*195 {
		t.Errorf("complete %d incomplete %d lost %d missing %d; want 20 10 10 1950 (q3 packs 195 entries a packet, keeping room for EOT)", r.Complete, r.Incomplete, r.LostPackets, r.MissingEntries)
	}
}

func TestRun_NoReplyIsSilent(t *testing.T) {
	silent := startFakeMaster(t, func(int, int) bool { return true })
	q, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	r, err := Run(context.Background(), Config{
		Master: silent, Query: q, Expect: 10, Sources: 2, SourceBase: netip.MustParseAddr("127.93.100.1"),
		Outstanding: 2, MaxRequests: 4, Duration: time.Minute, Timeout: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 4 || r.Unanswered != 4 || r.Silent != 4 || r.Complete != 0 || r.LostPackets != 0 {
		t.Errorf("result %+v", r)
	}
}

func TestRun_LostEndMarkerIsUnansweredWithLostPackets(t *testing.T) {
	// Once the fleet is listed, the last packet (the one with EOT) of every
	// answer is lost.
	var armed atomic.Bool
	_, master := populated(t, 400, "127.97.0.1", func(packet, of int) bool { return armed.Load() && packet == of-1 })
	armed.Store(true)
	q, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	// The four requests go at once (a source each), so the run lasts one
	// give-up: twice the timeout for an answer already arriving. The
	// timeout is the time the fake master has to send its first packet;
	// at 20 ms a loaded machine (load average 12 on 2 cores) sometimes
	// left it unscheduled longer, and an answer counted as silent
	// (4 of 200 runs).
	r, err := Run(context.Background(), Config{
		Master: master, Query: q, Expect: 400, Sources: 4, SourceBase: netip.MustParseAddr("127.97.100.1"),
		Outstanding: 4, MaxRequests: 4, Duration: time.Minute, Timeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	// No answer completes, so there is no packet count of a complete
	// answer to count lost packets against; the missing servers are exact.
	if r.Unanswered != 4 || r.Silent != 0 || r.MissingEntries != 4*10 || r.Packets != 8 {
		t.Errorf("result %+v", r)
	}
}

func TestRun_OpenLoopRate(t *testing.T) {
	_, master := populated(t, 30, "127.94.0.1", nil)
	q, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	r, err := Run(context.Background(), Config{
		Master: master, Query: q, Expect: 30, Sources: 4, SourceBase: netip.MustParseAddr("127.94.100.1"),
		Rate: 1000, MaxRequests: 40, Duration: time.Minute, Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 40 || r.Complete != 40 {
		t.Errorf("result %+v", r)
	}
}

func TestRun_MaxRequestsBelowOutstanding(t *testing.T) {
	_, master := populated(t, 5, "127.96.0.1", nil)
	q, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	r, err := Run(context.Background(), Config{
		Master: master, Query: q, Expect: 5, Sources: 8, SourceBase: netip.MustParseAddr("127.96.100.1"),
		Outstanding: 8, MaxRequests: 1, Duration: time.Minute, Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 1 || r.Complete != 1 {
		t.Errorf("result %+v", r)
	}
}

func TestRun_RefusesBadConfig(t *testing.T) {
	q, _ := q3.GetServers{Protocol: 68}.AppendBinary(nil)
	m := netip.MustParseAddrPort("127.0.0.1:1")
	for name, c := range map[string]Config{
		"no master":                     {Query: q, Expect: 1},
		"no query":                      {Master: m, Expect: 1},
		"more outstanding than sources": {Master: m, Query: q, Expect: 1, Sources: 2, Outstanding: 3},
		"source not loopback":           {Master: m, Query: q, Expect: 1, SourceBase: netip.MustParseAddr("192.0.2.1")},
	} {
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// With the end marker on every packet (scout master's default), the
// default rule counts whole answers; the first-marker rule cannot.
func TestRun_MarkerOnEveryPacket(t *testing.T) {
	f, master := populatedLayout(t, 400, "127.98.0.1", nil, true)
	q, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	cfg := Config{
		Master: master, Query: q, Expect: 400, Sources: 8, SourceBase: netip.MustParseAddr("127.98.100.1"),
		Outstanding: 4, MaxRequests: 50, Duration: time.Minute, Timeout: 5 * time.Second,
		CheckEvery: 10, Want: f.Addrs(),
	}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 400 servers: 195 + 195 + 10 entries, each packet with its marker.
	if r.Requests != 50 || r.Complete != 50 || r.Incomplete+r.Unanswered+r.LostPackets+int(r.Stray) != 0 {
		t.Errorf("result %+v", r)
	}
	if r.PacketsPerAnswer != 3 || r.Packets != 150 || r.Checked != 6 || r.CheckFailed != 0 {
		t.Errorf("packets/answer %d, packets %d, checked %d (failed %d)", r.PacketsPerAnswer, r.Packets, r.Checked, r.CheckFailed)
	}
	cfg.FirstMarkerEnds, cfg.SourceBase = true, netip.MustParseAddr("127.98.101.1")
	r, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Complete != 0 || r.Incomplete == 0 {
		t.Errorf("first-marker rule on every-packet markers: complete %d, incomplete %d; want none complete", r.Complete, r.Incomplete)
	}
}

// A lost packet, markers on every packet: the answer ends EndGrace after
// its last packet, short of that packet's servers, in the closed loop and
// in an open loop whose next answer to the same source follows at once.
func TestRun_MarkerOnEveryPacketLost(t *testing.T) {
	for _, c := range []struct {
		name         string
		packet       func(of int) int // the packet lost in every fourth answer
		rate         float64
		fleet, spout string
	}{
		{"closed loop, middle packet", func(int) int { return 1 }, 0, "127.99.0.1", "127.99.100.1"},
		{"open loop on one source, last packet", func(of int) int { return of - 1 }, 100, "127.99.50.1", "127.99.101.1"},
	} {
		t.Run(c.name, func(t *testing.T) { lostOnEveryPacketLayout(t, c.packet, c.rate, c.fleet, c.spout) })
	}
}

func lostOnEveryPacketLayout(t *testing.T, lost func(of int) int, rate float64, fleet, spout string) {
	var mu sync.Mutex
	var armed bool
	answers := 0
	drop := func(packet, of int) bool {
		mu.Lock()
		defer mu.Unlock()
		if !armed {
			return false
		}
		if packet == 0 {
			answers++
		}
		return packet == lost(of) && answers%4 == 0
	}
	_, master := populatedLayout(t, 400, fleet, drop, true)
	mu.Lock()
	armed = true
	mu.Unlock()
	q, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	r, err := Run(context.Background(), Config{
		Master: master, Query: q, Expect: 400, Sources: 1, SourceBase: netip.MustParseAddr(spout),
		Outstanding: 1, Rate: rate, MaxRequests: 20, Duration: time.Minute, Timeout: 5 * time.Second, CheckEvery: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	lostEntries := 195
	if rate > 0 {
		lostEntries = 10
	}
	if r.Complete != 15 || r.Incomplete != 5 || r.Unanswered != 0 || r.LostPackets != 5 || r.MissingEntries != 5*lostEntries || r.Stray != 0 {
		t.Errorf("complete %d incomplete %d unanswered %d lost %d missing %d stray %d; want 15 5 0 5 %d 0",
			r.Complete, r.Incomplete, r.Unanswered, r.LostPackets, r.MissingEntries, r.Stray, 5*lostEntries)
	}
}
