package masterd

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/masterproc"
	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/upstream"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/web"
)

// runLogged runs a master of cfg on loopback whose "listed" records go to
// the returned handler; it stops when the test ends.
func runLogged(t *testing.T, cfg Config) (*Master, masterproc.Listed) {
	t.Helper()
	listed := masterproc.Listed{C: make(chan string, 64)}
	cfg.Listen = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}
	cfg.HTTP = "127.0.0.1:0"
	cfg.Registry.AllowLoopback = true
	m, err := NewMaster(time.Now(), cfg, Deps{Logger: slog.New(listed)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })
	return m, listed
}

// TestAggregate_UpstreamAndPeerOverSockets: a server that heartbeats to
// master A only is listed by master B, which has A as an upstream
// (getservers over UDP), and by master C, which has A as a scout peer
// (A's verified list over HTTP); each checks it with its own challenge.
// B's API and metrics give A's health and the server's sources.
func TestAggregate_UpstreamAndPeerOverSockets(t *testing.T) {
	srv := masterproc.NewServer(t)
	a, aListed := runLogged(t, Config{})
	srv.Heartbeat(t, a.Addrs()[0])
	aListed.Wait(t, srv.Addr, "master A (heartbeat)")

	q := upstream.Query{Family: game.FamilyQ3, Q3: q3.GetServers{Protocol: 71, Empty: true, Full: true}}
	var bc Config
	bc.Handler.Aggregate.Sources = []upstream.Source{{Name: "A", Addr: a.Addrs()[0], Queries: []upstream.Query{q}}}
	b, bListed := runLogged(t, bc)
	bListed.Wait(t, srv.Addr, "master B (upstream A)")

	aHTTP := netip.MustParseAddrPort(a.HTTPAddr().String())
	var cc Config
	cc.Handler.Aggregate.Sources = []upstream.Source{{Name: "peer-A", Kind: upstream.KindPeer, URL: "http://" + aHTTP.String(), Addr: aHTTP}}
	c, cListed := runLogged(t, cc)
	cListed.Wait(t, srv.Addr, "master C (scout peer A)")

	for _, m := range []struct {
		name, source, kind string
		m                  *Master
	}{{"B", "A", "master", b}, {"C", "peer-A", "peer", c}} {
		s, _ := m.m.Registry.Lookup(srv.Addr)
		if !s.Listed || !s.LastHeartbeat.IsZero() || len(s.Sources) != 1 || s.Sources[0].Source != m.source {
			t.Fatalf("master %s: %+v", m.name, s)
		}
		if s.Game != "Quake3Arena" {
			t.Errorf("master %s lists it as %q", m.name, s.Game)
		}
	}

	// B's API: the upstream's health, and the server's sources.
	base := "http://" + b.HTTPAddr().String()
	var ups web.UpstreamsJSON
	masterproc.GetJSON(t, base+"/api/v1/upstreams", &ups)
	if len(ups.Upstreams) != 1 {
		t.Fatalf("upstreams %+v", ups)
	}
	u := ups.Upstreams[0]
	if u.Name != "A" || u.State != upstream.StateUp || u.Reported != 1 || u.Verified != 1 || u.LastSuccess == nil ||
		u.AnswerTimeMs == nil || u.Uptime24h == nil || *u.Uptime24h != 1 || u.Queries[0] != "getservers 71 empty full" {
		t.Fatalf("upstream %+v", u)
	}
	var d web.DetailJSON
	masterproc.GetJSON(t, base+"/api/v1/servers/"+srv.Addr.String(), &d)
	if len(d.Sources) != 1 || d.Sources[0].Source != "A" {
		t.Fatalf("sources %+v", d.Sources)
	}
	r, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(r.Body)
	r.Body.Close()
	for _, want := range []string{`scout_master_upstream_up{kind="master",source="A"} 1`, `scout_master_upstream_verified_servers{source="A"} 1`,
		`scout_master_probes_total{cause="learned"} 1`, `scout_master_learned_checks_total{outcome="ok"} 1`} {
		if !strings.Contains(string(mb), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A publishes what its peers fetch.
	var pl upstream.PeerList
	masterproc.GetJSON(t, "http://"+aHTTP.String()+upstream.PeerPath, &pl)
	if len(pl.Servers) != 1 || pl.Servers[0].Address != srv.Addr.String() || pl.Servers[0].Game != "Quake3Arena" || pl.Servers[0].Family != "q3" {
		t.Fatalf("A's verified list %+v", pl)
	}
}

// TestRegister_MasterToMasterOverSockets: dpmaster's master-to-master
// register still works beside aggregation: master A, with B as its
// upstream (--upstream), passes each server it verifies on to B as
// register; B, with A as its peer (--peer), checks the server with its
// own challenge and lists it, its source the register from A.
func TestRegister_MasterToMasterOverSockets(t *testing.T) {
	var bc Config
	bc.Handler.Peers = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")} // any port
	b, bListed := runLogged(t, bc)
	var ac Config
	ac.Handler.Upstreams = []netip.AddrPort{b.Addrs()[0]}
	a, aListed := runLogged(t, ac)

	srv := masterproc.NewServer(t)
	srv.Heartbeat(t, a.Addrs()[0])
	aListed.Wait(t, srv.Addr, "master A (heartbeat)")
	bListed.Wait(t, srv.Addr, "master B (register from A)")
	s, _ := b.Registry.Lookup(srv.Addr)
	want := master.SourceRegister + a.Addrs()[0].String()
	if !s.Listed || len(s.Sources) != 1 || s.Sources[0].Source != want {
		t.Fatalf("master B: %+v; want one source %q", s, want)
	}
	if got := b.Handler.Stats().Probes(master.CauseHeartbeat) + b.Handler.Stats().Probes(master.CauseLearned); got != 1 {
		t.Errorf("master B checked the server %d times; want 1", got)
	}
}

// TestAggregate_BlockListPublished: the block list is published with its
// reasons, as JSON and as a page.
func TestAggregate_BlockListPublished(t *testing.T) {
	var cfg Config
	cfg.Registry.Blocked = []master.Block{
		{Prefix: netip.MustParsePrefix("203.0.113.0/24"), Reason: "the same server on 500 ports"},
		{Prefix: netip.MustParsePrefix("203.0.113.7/32"), Reason: "fake players"},
	}
	m, _ := runLogged(t, cfg)
	base := "http://" + m.HTTPAddr().String()
	var bl web.BlockListJSON
	masterproc.GetJSON(t, base+"/api/v1/blocklist", &bl)
	if len(bl.Blocked) != 2 || bl.Blocked[0].Reason != "fake players" || bl.Blocked[1].Prefix.String() != "203.0.113.0/24" {
		t.Fatalf("block list %+v", bl)
	}
	for _, page := range []string{"/blocked", "/upstreams"} {
		r, err := http.Get(base + page)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != http.StatusOK || !strings.Contains(string(b), "<table") {
			t.Errorf("%s: %s", page, r.Status)
		}
	}
}

// TestAggregate_BlockListReloaded: a reload's block list is published at
// once, with its reasons, and a listed server it covers leaves the list
// at the next expiry; a reload without it lets the server back.
func TestAggregate_BlockListReloaded(t *testing.T) {
	m, listed := runLogged(t, Config{})
	srv := masterproc.NewServer(t)
	srv.Heartbeat(t, m.Addrs()[0])
	listed.Wait(t, srv.Addr, "the master")

	before := m.Config
	next := m.Config
	next.Registry.Blocked = []master.Block{{Prefix: netip.PrefixFrom(srv.Addr.Addr(), 32), Reason: "reloaded"}}
	changed, _, err := m.Reload(time.Now(), next)
	if err != nil || !slices.Contains(changed, "Registry.Blocked") {
		t.Fatalf("reload: changed %v, %v", changed, err)
	}
	base := "http://" + m.HTTPAddr().String()
	if bl := waitBlockList(t, base, 1); bl.Blocked[0].Reason != "reloaded" {
		t.Fatalf("block list after the reload %+v", bl)
	}
	deadline := time.Now().Add(masterproc.WaitBound)
	for {
		if s, ok := m.Registry.Lookup(srv.Addr); !ok || !s.Listed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a blocked server still listed after the reload")
		}
		<-time.After(100 * time.Millisecond) // polled: expiry runs on the master's own clock
	}

	if _, _, err := m.Reload(time.Now(), before); err != nil {
		t.Fatal(err)
	}
	waitBlockList(t, base, 0)
	srv.Heartbeat(t, m.Addrs()[0])
	listed.Wait(t, srv.Addr, "the master (unblocked)")
}

// waitBlockList waits for the published block list to hold n entries: the
// API rebuilds it at most once per its minimum refresh.
func waitBlockList(t *testing.T, base string, n int) web.BlockListJSON {
	t.Helper()
	deadline := time.Now().Add(masterproc.WaitBound)
	for {
		var bl web.BlockListJSON
		masterproc.GetJSON(t, base+"/api/v1/blocklist", &bl)
		if len(bl.Blocked) == n {
			return bl
		}
		if time.Now().After(deadline) {
			t.Fatalf("block list %+v; want %d entries", bl, n)
		}
		<-time.After(100 * time.Millisecond) // polled: the API's cache runs on the master's clock
	}
}

// TestAggregate_LyingUpstream: an upstream that names one live server
// 10,000 times, 500 addresses where nothing answers, and never sends an
// end marker costs the master one check of the live server and at most
// 1+VerifyRetries small getinfos to each silent address; it lists the
// live server alone, its list ends at the quiet window, and the upstream
// stays up in its health with the duplicates counted.
func TestAggregate_LyingUpstream(t *testing.T) {
	live := masterproc.NewServer(t)
	var entries []netip.AddrPort
	for range 10_000 {
		entries = append(entries, live.Addr)
	}
	for i := range 500 {
		entries = append(entries, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 77, byte(i >> 8), byte(i)}), 27960))
	}
	pkts, err := q3.EncodeServersResponses(entries, q3.SplitOptions{End: q3.EndNone, MaxBytes: q3.DefaultMaxBytes})
	if err != nil {
		t.Fatal(err)
	}
	liar := peer.ServeUDP(t, func(req []byte) [][]byte {
		if m, err := q3.Parse(req); err == nil {
			if _, ok := m.(q3.GetServers); ok {
				return pkts
			}
		}
		return nil
	})
	q := upstream.Query{Family: game.FamilyQ3, Q3: q3.GetServers{Protocol: 71, Empty: true, Full: true}}
	var cfg Config
	cfg.Handler.Aggregate = upstream.Config{Sources: []upstream.Source{{Name: "liar", Addr: liar, Queries: []upstream.Query{q}}}, Interval: time.Hour}
	m, listed := runLogged(t, cfg)
	listed.Wait(t, live.Addr, "the master (a lying upstream)")

	// Every check of a silent address runs out (its tries and the
	// challenge's lifetime): wait for the pending count to fall to 0.
	deadline := time.Now().Add(masterproc.WaitBound)
	for {
		if _, pending := m.Registry.Counts(); pending == 0 && m.Handler.LearnQueued() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("checks of the silent addresses still pending")
		}
		<-time.After(100 * time.Millisecond) // polled: the checks run on the master's own clock
	}
	n, _ := m.Registry.Counts()
	st := m.Handler.Stats()
	getinfos, _ := st.Out(master.KindGetInfo)
	if n != 1 || st.Probes(master.CauseLearned) != 501 || getinfos > 3*501 {
		t.Fatalf("listed %d; %d first checks, %d getinfos (at most %d)", n, st.Probes(master.CauseLearned), getinfos, 3*501)
	}
	h := m.Handler.Upstreams(time.Now())[0]
	if h.State != upstream.StateUp || h.Entries != 10_500 || h.Duplicates != 9_999 || h.Reported != 501 || h.Verified != 1 || h.Cut != 0 {
		t.Fatalf("health %+v", h)
	}
	t.Logf("%d getinfos to 501 addresses; health %+v", getinfos, h)
}

// TestClones_GroupedInTheAPI: one game server registered on three ports
// (same host name, map and clients) is one entry of the API's list with
// "also listed as", never hidden (clones=all lists each, with clone_of);
// the UDP answers list every address unless OnePerCloneGroup.
func TestClones_GroupedInTheAPI(t *testing.T) {
	for _, one := range []bool{false, true} {
		var cfg Config
		cfg.Registry.CloneInterval = time.Second
		cfg.Registry.OnePerCloneGroup = one
		m, listed := runLogged(t, cfg)
		for range 3 {
			s := masterproc.NewServer(t)
			s.Heartbeat(t, m.Addrs()[0])
			listed.Wait(t, s.Addr, "the master")
		}
		base := "http://" + m.HTTPAddr().String()
		deadline := time.Now().Add(masterproc.WaitBound)
		var l web.ListJSON
		for {
			masterproc.GetJSON(t, base+"/api/v1/servers", &l)
			if len(l.Servers) == 1 || time.Now().After(deadline) {
				break
			}
			<-time.After(200 * time.Millisecond) // the next grouping, on the master's clock
		}
		if len(l.Servers) != 1 || len(l.Servers[0].AlsoListedAs) != 2 || l.Total != 1 {
			t.Fatalf("list %+v", l)
		}
		var all web.ListJSON
		masterproc.GetJSON(t, base+"/api/v1/servers?clones=all", &all)
		clones := 0
		for _, s := range all.Servers {
			if s.CloneOf == l.Servers[0].Address {
				clones++
			}
		}
		if len(all.Servers) != 3 || clones != 2 {
			t.Fatalf("clones=all %+v", all)
		}
		want := 3
		if one {
			want = 1
		}
		if got := masterproc.GetServers(t, m.Addrs()[0]); len(got) != want {
			t.Fatalf("OnePerCloneGroup=%v: getservers lists %v, want %d", one, got, want)
		}
	}
}
