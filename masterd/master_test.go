package masterd

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/store"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// udp4 opens a UDP socket on 127.0.0.1 that every read gives up on after
// 10 s, so a missing reply fails the test instead of hanging it.
func udp4(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ap("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c
}

func readMsg(t *testing.T, c *net.UDPConn) q3.Message {
	t.Helper()
	buf := make([]byte, 65536)
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	m, err := q3.Parse(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMaster_RunServesSocketsHTTPAndState: a Master built from a Config
// alone, on real loopback sockets: a server heartbeats and answers the
// challenge, a client gets it in the list, /servers shows it, and the state
// store holds it once Run has returned.
func TestMaster_RunServesSocketsHTTPAndState(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, err := NewMaster(time.Now(), Config{
		Listen: []netip.AddrPort{ap("127.0.0.1:0")},
		HTTP:   "127.0.0.1:0",
		Reloadable: Reloadable{
			Registry: master.Config{AllowLoopback: true},
			// The query may be asked again (below), from one address.
			NoQueryLimit: true,
		},
	}, Deps{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	var runErr error
	stopped := false
	stop := func() {
		if !stopped {
			cancel()
			runErr, stopped = <-ran, true
		}
	}
	defer stop()
	addr := net.UDPAddrFromAddrPort(m.Addrs()[0])

	srv := udp4(t)
	hb, _ := q3.Heartbeat{Tag: "QuakeArena-1"}.AppendBinary(nil)
	srv.WriteToUDP(hb, addr)
	gi, ok := readMsg(t, srv).(q3.GetInfo)
	if !ok {
		t.Fatal("no getinfo after the heartbeat")
	}
	info, _ := q3.InfoResponse{Info: infostring.Info{
		{Key: "challenge", Value: gi.Challenge}, {Key: "protocol", Value: "71"}, {Key: "gamename", Value: "Quake3Arena"},
		{Key: "hostname", Value: "masterd test"}, {Key: "clients", Value: "1"}, {Key: "sv_maxclients", Value: "8"},
	}}.AppendBinary(nil)
	srv.WriteToUDP(info, addr)
	srvAddr := srv.LocalAddr().(*net.UDPAddr).AddrPort()

	cl := udp4(t)
	req, _ := q3.GetServers{Protocol: 71, Empty: true, Full: true}.AppendBinary(nil)
	var listed []netip.AddrPort
	for try := 0; len(listed) == 0; try++ {
		// The infoResponse and the query race on two sockets: ask until
		// the server is in the list.
		if try == 100 {
			t.Fatal("server never listed")
		}
		cl.WriteToUDP(req, addr)
		listed = readMsg(t, cl).(q3.ServersResponse).Servers
	}
	if len(listed) != 1 || listed[0] != srvAddr {
		t.Fatalf("list %v, want [%v]", listed, srvAddr)
	}

	r, err := http.Get("http://" + m.HTTPAddr().String() + "/servers")
	if err != nil {
		t.Fatal(err)
	}
	var list []ServerJSON
	err = json.NewDecoder(r.Body).Decode(&list)
	r.Body.Close()
	if err != nil || len(list) != 1 || list[0].Address != srvAddr.String() || list[0].Info["hostname"] != "masterd test" {
		t.Fatalf("/servers: %+v, %v", list, err)
	}

	stop()
	if runErr != nil {
		t.Fatalf("Run: %v", runErr)
	}
	saved, corrupt, err := st.Load()
	if err != nil || corrupt != 0 || len(saved) != 1 || saved[0].Addr != srvAddr {
		t.Fatalf("state after Run: %v (corrupt %d, err %v)", saved, corrupt, err)
	}
}

// TestConfig_ZeroIsDefaults: the zero Config is dpmaster's sockets and
// scout master's defaults.
func TestConfig_ZeroIsDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if len(c.Listen) != 2 || c.Listen[0] != netip.AddrPortFrom(netip.IPv4Unspecified(), DefaultPort) ||
		c.Listen[1] != netip.AddrPortFrom(netip.IPv6Unspecified(), DefaultPort) || !c.OptionalIPv6 {
		t.Errorf("listen %v, optional IPv6 %v", c.Listen, c.OptionalIPv6)
	}
	if c.NoQueryLimit || c.Queries != (Limit{master.DefaultThrottle, master.DefaultDecayTime}) ||
		c.Heartbeats != (Limit{DefaultHBThrottle, DefaultHBDecayTime}) || c.MaxSources != master.DefaultMaxSources ||
		c.OutRate != master.DefaultOutboundBytesPerSecond || c.OutBurst != master.DefaultOutboundBurst ||
		c.ChallengeRotation != master.DefaultRotationPeriod || c.DeferEncoding != DefaultDeferEncoding {
		t.Errorf("defaults %+v", c)
	}
	if _, err := NewMaster(time.Now(), Config{}, Deps{}); err != nil {
		t.Fatal(err)
	}
	m, err := NewMaster(time.Now(), Config{}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if hd := m.Handler.Deps(); hd.Responses == nil || hd.Queries != nil || hd.Budget == nil {
		t.Errorf("default defences: responses %v, queries %v, budget %v", hd.Responses, hd.Queries, hd.Budget)
	}
	m, err = NewMaster(time.Now(), Config{Reloadable: Reloadable{SourceThrottle: true}}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if hd := m.Handler.Deps(); hd.Responses != nil || hd.Queries == nil {
		t.Errorf("dpmaster's flood protection: responses %v, queries %v", hd.Responses, hd.Queries)
	}
	if _, err := NewMaster(time.Now(), Config{Reloadable: Reloadable{SourceThrottle: true, Queries: Limit{Throttle: 1}}}, Deps{}); err == nil {
		t.Error("a query throttle of 1 accepted")
	}
	if _, err := NewMaster(time.Now(), Config{Reloadable: Reloadable{Responses: master.ResponseLimits{VictimRate: -1}}}, Deps{}); err == nil {
		t.Error("a negative response rate accepted")
	}
}

// gcPercent reads the process's GC percent.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestRun_SetsGCPercent: Run sets Config.GCPercent (DefaultGCPercent by
// default) while it runs and puts the old value back, the first of two
// Masters running at once holds until the last returns, and GOGC in the
// environment or a negative GCPercent leave the runtime's setting alone.
func TestRun_SetsGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	cfg := func(p int) Config {
		return Config{Listen: []netip.AddrPort{ap("127.0.0.1:0")}, GCPercent: p, Reloadable: Reloadable{Registry: master.Config{AllowLoopback: true}, NoQueryLimit: true}}
	}
	// answered returns once m answers a query: Run has begun.
	answered := func(m *Master) {
		t.Helper()
		c := udp4(t)
		req, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
		c.WriteToUDP(req, net.UDPAddrFromAddrPort(m.Addrs()[0]))
		readMsg(t, c)
	}
	t.Setenv("GOGC", "")
	m1, stop1 := startMaster(t, cfg(0))
	answered(m1)
	if p := gcPercent(); p != DefaultGCPercent {
		t.Errorf("GC percent %d while running, want %d", p, DefaultGCPercent)
	}
	m2, stop2 := startMaster(t, cfg(60))
	answered(m2)
	stop1()
	if p := gcPercent(); p != DefaultGCPercent {
		t.Errorf("GC percent %d with the second master still running, want the first's %d", p, DefaultGCPercent)
	}
	stop2()
	if p := gcPercent(); p != 100 {
		t.Errorf("GC percent %d after Run, want 100 back", p)
	}
	m3, stop3 := startMaster(t, cfg(-1))
	answered(m3)
	if p := gcPercent(); p != 100 {
		t.Errorf("GCPercent -1: GC percent %d, want 100 untouched", p)
	}
	stop3()
	t.Setenv("GOGC", "100")
	m4, stop4 := startMaster(t, cfg(0))
	answered(m4)
	if p := gcPercent(); p != 100 {
		t.Errorf("GOGC set: GC percent %d, want 100 untouched", p)
	}
	stop4()
}

// TestMaster_RestoredListingIsBuiltBeforeListening: a state file holding
// more servers than the registry builds at a query (InlineSnapshot) has
// its answer snapshot built by NewMaster, before a socket opens; left to
// Run's refresher, a query during that build was answered with the empty
// list the registry starts from.
func TestMaster_RestoredListingIsBuiltBeforeListening(t *testing.T) {
	n := master.DefaultInlineSnapshot + 1000
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := store.Open(path, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	servers := make([]master.Server, n)
	for i := range servers {
		// Loopback addresses where nothing listens: the master re-probes
		// restored servers at once, and its probes must not leave the host.
		a := netip.AddrFrom4([4]byte{127, 200 + byte(i>>16), byte(i >> 8), byte(i)})
		servers[i] = master.Server{Addr: netip.AddrPortFrom(a, 9), Family: game.FamilyQ3, Game: "Quake3Arena", Protocol: 68,
			Gametype: "0", Clients: 1, MaxClients: 8, FirstSeen: now, LastVerified: now}
		if i%100 == 0 {
			servers[i].Gametype = "9" // what the query below asks for: a list of a few datagrams
		}
	}
	if err := st.Apply(servers, nil); err != nil {
		t.Fatal(err)
	}
	m, err := NewMaster(time.Now(), Config{
		Listen:     []netip.AddrPort{ap("127.0.0.1:0")},
		Reloadable: Reloadable{Registry: master.Config{MaxServers: 2 * n, AllowLoopback: true}, NoQueryLimit: true},
	}, Deps{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if listed, _ := m.Registry.Counts(); listed != n {
		t.Fatalf("%d restored, want %d", listed, n)
	}
	if m.Registry.Refresh(time.Now()) {
		t.Error("the restored listing's snapshot was left to build after NewMaster")
	}
	defer runMaster(t, m)()
	req, _ := q3.GetServers{Ext: true, GameName: "Quake3Arena", Protocol: 68, Empty: true, Full: true, GameType: "9"}.AppendBinary(nil)
	cl := udp4(t)
	cl.WriteToUDPAddrPort(req, m.Addrs()[0])
	got := map[netip.AddrPort]bool{}
	for len(got) < (n+99)/100 {
		sr, ok := readMsg(t, cl).(q3.ServersResponse)
		if !ok || len(sr.Servers) == 0 {
			t.Fatalf("the first query after the restart: %d servers, then %#v", len(got), sr)
		}
		for _, a := range sr.Servers {
			got[a] = true
		}
	}
}
