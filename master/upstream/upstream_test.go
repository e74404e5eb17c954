package upstream

import (
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// A public upstream master and the public servers it lists (TEST-NET
// addresses are documentation ones, which the private-address rule
// refuses, so these use ordinary public ranges).
var (
	upAddr = netip.MustParseAddrPort("203.0.113.1:27950") // documentation: a local scope
	pubUp  = netip.MustParseAddrPort("8.8.4.4:27950")
)

func srv(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{93, 184, byte(i >> 8), byte(i)}), 27960)
}

func q3Query(proto int, gameName string) Query {
	return Query{Family: game.FamilyQ3, Q3: q3.GetServers{Protocol: proto, Empty: true, Full: true}, Game: gameName}
}

func master(name string, addr netip.AddrPort, qs ...Query) Source {
	return Source{Name: name, Kind: KindMaster, Addr: addr, Queries: qs}
}

func newAgg(t *testing.T, cfg Config) *Aggregator {
	t.Helper()
	a, err := New(t0, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// pollUntilSend polls every 100 ms from *now until a query goes out.
func pollUntilSend(t *testing.T, a *Aggregator, now *time.Time) []Send {
	t.Helper()
	for range 100000 {
		if s, _ := a.Poll(*now); len(s) > 0 {
			return s
		}
		*now = now.Add(100 * time.Millisecond)
	}
	t.Fatal("no query sent")
	return nil
}

func list(servers []netip.AddrPort, end bool) Packet {
	return Packet{Family: game.FamilyQ3, Servers: servers, End: end}
}

func TestAggregator_AsksEachQueryInTurn(t *testing.T) {
	a := newAgg(t, Config{Sources: []Source{master("m", pubUp, q3Query(68, "Quake3Arena"), q3Query(84, "et"))}})
	now := t0
	s := pollUntilSend(t, a, &now)
	if len(s) != 1 || s[0].To != pubUp || !strings.Contains(string(s[0].Payload), "getservers 68 empty full") {
		t.Fatalf("first send %+v", s)
	}
	found, ok := a.Receive(now, pubUp, list([]netip.AddrPort{srv(1), srv(2)}, true), nil)
	if !ok || len(found) != 2 || found[0].Game != "Quake3Arena" {
		t.Fatalf("found %+v ok %v", found, ok)
	}
	// Nothing more until the end marker's grace has passed: then the
	// second query, at once.
	if s, _ := a.Poll(now.Add(EndGrace - time.Nanosecond)); len(s) != 0 {
		t.Fatalf("second query before the grace: %+v", s)
	}
	now = now.Add(EndGrace)
	s, _ = a.Poll(now)
	if len(s) != 1 || !strings.Contains(string(s[0].Payload), "getservers 84 empty full") {
		t.Fatalf("second send %+v", s)
	}
	found, _ = a.Receive(now, pubUp, list([]netip.AddrPort{srv(2), srv(3)}, true), nil)
	if len(found) != 1 || found[0].Addr != srv(3) || found[0].Game != "et" {
		t.Fatalf("second query found %+v (srv(2) was named already)", found)
	}
	now = now.Add(EndGrace)
	a.Poll(now)
	h := a.Health(now)[0]
	if h.State != StateUp || h.Reported != 3 || h.Duplicates != 1 || h.Refreshes != 1 || h.LastSuccess != now {
		t.Fatalf("health %+v", h)
	}
}

func TestAggregator_JitteredPeriod(t *testing.T) {
	cfg := Config{Sources: []Source{master("m", pubUp, q3Query(68, ""))}, Interval: 100 * time.Second, Jitter: 0.2}
	a := newAgg(t, cfg)
	now := t0
	var starts []time.Time
	for range 20 {
		pollUntilSend(t, a, &now)
		starts = append(starts, now)
		a.Receive(now, pubUp, list(nil, true), nil)
		now = now.Add(EndGrace)
		a.Poll(now)
	}
	distinct := map[time.Duration]bool{}
	for i := 1; i < len(starts); i++ {
		gap := starts[i].Sub(starts[i-1])
		// Polled every 100 ms: the start is at most 100 ms late.
		if gap < 80*time.Second || gap > 120*time.Second+100*time.Millisecond {
			t.Fatalf("refresh %d came %v after the one before; want 100 s ± 20 s", i, gap)
		}
		distinct[gap.Truncate(time.Second)] = true
	}
	if len(distinct) < 5 {
		t.Fatalf("gaps %v: the jitter does not spread the refreshes", distinct)
	}
}

func TestAggregator_RetriesThenReportsDown(t *testing.T) {
	a := newAgg(t, Config{Sources: []Source{master("m", pubUp, q3Query(68, ""))}, Timeout: 3 * time.Second, Attempts: 2})
	now := t0
	pollUntilSend(t, a, &now)
	first := now
	if s, _ := a.Poll(first.Add(3*time.Second - time.Nanosecond)); len(s) != 0 {
		t.Fatal("resent before the timeout")
	}
	if s, _ := a.Poll(first.Add(3 * time.Second)); len(s) != 1 {
		t.Fatal("not resent at the timeout")
	}
	a.Poll(first.Add(6 * time.Second))
	h := a.Health(first.Add(6 * time.Second))[0]
	if h.State != StateDown || h.Failures != 1 || h.QueriesSent != 2 || h.Unanswered != 1 {
		t.Fatalf("health %+v", h)
	}
	if h.Uptime24h != 0 || h.Uptime7d != 0 {
		t.Fatalf("uptime %v %v, want 0", h.Uptime24h, h.Uptime7d)
	}
}

// TestUpstream_NoEndMarker: a list that never ends (no end marker, Quake
// 4's lists and masters before dpmaster 2.0) ends at the quiet window,
// and a source that keeps sending is cut at the list time.
func TestUpstream_NoEndMarker(t *testing.T) {
	a := newAgg(t, Config{Sources: []Source{master("m", pubUp, q3Query(68, ""), q3Query(71, ""))}, Quiet: 2 * time.Second, MaxListTime: 30 * time.Second})
	now := t0
	pollUntilSend(t, a, &now)
	a.Receive(now, pubUp, list([]netip.AddrPort{srv(1)}, false), nil)
	if s, _ := a.Poll(now.Add(2*time.Second - time.Nanosecond)); len(s) != 0 {
		t.Fatal("next query before the quiet window")
	}
	now = now.Add(2 * time.Second)
	if s, _ := a.Poll(now); len(s) != 1 {
		t.Fatal("the quiet window did not end the list")
	}
	// The second query's source never stops: one packet every second.
	start := now
	for i := 0; now.Before(start.Add(30 * time.Second)); i++ {
		a.Receive(now, pubUp, list([]netip.AddrPort{srv(100 + i)}, false), nil)
		if s, _ := a.Poll(now); len(s) != 0 {
			t.Fatalf("the endless list ended at %v", now.Sub(start))
		}
		now = now.Add(time.Second)
	}
	a.Poll(now)
	h := a.Health(now)[0]
	if h.Refreshes != 1 || h.Cut != 1 || h.LastCut != "list time" || h.State != StateUp {
		t.Fatalf("health %+v", h)
	}
}

// TestUpstream_SameServerManyTimes: a source that names one server
// 10,000 times costs one server to verify, and the entries beyond
// MaxEntries are not read.
func TestUpstream_SameServerManyTimes(t *testing.T) {
	a := newAgg(t, Config{Sources: []Source{master("m", pubUp, q3Query(68, ""))}, MaxEntries: 5000})
	now := t0
	pollUntilSend(t, a, &now)
	var found []Found
	for range 100 {
		same := make([]netip.AddrPort, 100)
		for i := range same {
			same[i] = srv(7)
		}
		found, _ = a.Receive(now, pubUp, list(same, false), found)
	}
	if len(found) != 1 {
		t.Fatalf("%d servers found, want 1", len(found))
	}
	h := a.Health(now)[0]
	if h.Entries != 5000 || h.Duplicates != 4999 {
		t.Fatalf("entries %d duplicates %d; want 5000 and 4999 (MaxEntries)", h.Entries, h.Duplicates)
	}
	now = now.Add(time.Nanosecond)
	a.Poll(now)
	if h := a.Health(now)[0]; h.Cut != 1 || h.LastCut != "entries" {
		t.Fatalf("cut %d %q", h.Cut, h.LastCut)
	}
}

func TestUpstream_MaxPackets(t *testing.T) {
	a := newAgg(t, Config{Sources: []Source{master("m", pubUp, q3Query(68, ""))}, MaxPackets: 10})
	now := t0
	pollUntilSend(t, a, &now)
	var found []Found
	for i := range 50 {
		found, _ = a.Receive(now, pubUp, list([]netip.AddrPort{srv(i)}, false), found)
	}
	if len(found) != 10 {
		t.Fatalf("%d servers read; want the 10 of the first 10 packets", len(found))
	}
	a.Poll(now)
	if h := a.Health(now)[0]; h.LastCut != "packets" || h.Packets != 50 {
		t.Fatalf("health %+v", h)
	}
}

func TestUpstream_MaxLearned(t *testing.T) {
	a := newAgg(t, Config{Sources: []Source{master("m", pubUp, q3Query(68, ""), q3Query(71, ""))}, MaxLearned: 100})
	now := t0
	pollUntilSend(t, a, &now)
	var servers []netip.AddrPort
	for i := range 80 {
		servers = append(servers, srv(i))
	}
	found, _ := a.Receive(now, pubUp, list(servers, true), nil)
	now = now.Add(EndGrace)
	a.Poll(now)
	servers = servers[:0]
	for i := 80; i < 160; i++ {
		servers = append(servers, srv(i))
	}
	found, _ = a.Receive(now, pubUp, list(servers, true), found)
	if len(found) != 100 {
		t.Fatalf("%d servers learned over the refresh; want MaxLearned 100", len(found))
	}
	now = now.Add(EndGrace)
	a.Poll(now)
	if h := a.Health(now)[0]; h.OverLearned != 60 || h.Reported != 100 {
		t.Fatalf("over %d reported %d", h.OverLearned, h.Reported)
	}
}

// TestUpstream_PrivateAddressesRefused: a source at a public address may
// not aim the master at local addresses nor at its own host; a source at
// a local address (a LAN or test master) may list them.
func TestUpstream_PrivateAddressesRefused(t *testing.T) {
	local := []netip.AddrPort{
		netip.MustParseAddrPort("127.0.0.1:27960"),
		netip.MustParseAddrPort("10.0.0.5:27960"),
		netip.MustParseAddrPort("192.168.1.1:27960"),
		netip.MustParseAddrPort("169.254.1.1:27960"),
		netip.MustParseAddrPort("100.64.0.1:27960"),
		netip.AddrPortFrom(pubUp.Addr(), 27960), // the source's own host
	}
	unusable := []netip.AddrPort{
		netip.MustParseAddrPort("0.0.0.0:27960"),
		netip.MustParseAddrPort("255.255.255.255:27960"),
		netip.MustParseAddrPort("224.0.0.1:27960"),
		netip.MustParseAddrPort("93.184.0.1:0"),
	}
	a := newAgg(t, Config{Sources: []Source{
		master("public", pubUp, q3Query(68, "")),
		master("lan", netip.MustParseAddrPort("192.168.1.2:27950"), q3Query(68, "")),
	}})
	now := t0.Add(3 * time.Second) // both asked
	a.Poll(now)
	all := append(append(append([]netip.AddrPort{}, local...), unusable...), srv(1))
	found, _ := a.Receive(now, pubUp, list(all, true), nil)
	if len(found) != 1 || found[0].Addr != srv(1) {
		t.Fatalf("the public source got %+v verified; want only %v", found, srv(1))
	}
	h := a.Health(now)[0]
	if h.Refused != uint64(len(local)) || h.Unusable != uint64(len(unusable)) {
		t.Fatalf("refused %d unusable %d", h.Refused, h.Unusable)
	}
	found, _ = a.Receive(now, netip.MustParseAddrPort("192.168.1.2:27950"), list(all, true), nil)
	if len(found) != len(local)+1 {
		t.Fatalf("the LAN source got %d servers; want %d", len(found), len(local)+1)
	}
}

// TestUpstream_StrayPacketsIgnored: a list from an address that is not a
// source, or from a source with no query in flight, is not the
// aggregator's; a list of the wrong form counts as garbled.
func TestUpstream_StrayPacketsIgnored(t *testing.T) {
	a := newAgg(t, Config{Sources: []Source{master("m", pubUp, q3Query(68, ""))}})
	if _, ok := a.Receive(t0, pubUp, list([]netip.AddrPort{srv(1)}, true), nil); ok {
		t.Fatal("a list before the query was taken")
	}
	now := t0
	pollUntilSend(t, a, &now)
	if _, ok := a.Receive(now, netip.MustParseAddrPort("8.8.8.8:27950"), list([]netip.AddrPort{srv(1)}, true), nil); ok {
		t.Fatal("a list from another address was taken")
	}
	if !a.Expecting(pubUp) || a.Expecting(netip.MustParseAddrPort("8.8.8.8:27950")) {
		t.Fatal("Expecting")
	}
	found, ok := a.Receive(now, pubUp, Packet{Family: game.FamilyQ3, Ext: true, Servers: []netip.AddrPort{srv(1)}}, nil)
	if !ok || len(found) != 0 || a.Health(now)[0].Garbled != 1 {
		t.Fatalf("an Ext list for a getservers: found %v", found)
	}
}

func TestAggregator_Uptime(t *testing.T) {
	a := newAgg(t, Config{Sources: []Source{master("m", pubUp, q3Query(68, ""))}, Interval: time.Hour, Jitter: -1, Attempts: 1})
	now := t0
	// Eight days of hourly refreshes: answered except from hour 150 on
	// (the last 42 hours of the week and the whole last day down).
	for hour := range 8 * 24 {
		pollUntilSend(t, a, &now)
		if hour < 150 {
			a.Receive(now, pubUp, list([]netip.AddrPort{srv(1)}, true), nil)
			now = now.Add(EndGrace)
		} else {
			now = now.Add(DefaultTimeout)
		}
		a.Poll(now)
	}
	h := a.Health(now)[0]
	if h.Uptime24h != 0 {
		t.Fatalf("24 h uptime %v, want 0", h.Uptime24h)
	}
	// The 7-day window holds hours 24..191 of the run: 126 up of 168.
	if want := 126.0 / 168; math.Abs(h.Uptime7d-want) > 1e-9 {
		t.Fatalf("7-day uptime %v, want %v", h.Uptime7d, want)
	}
	if h.State != StateDown || h.LastSuccess.IsZero() || h.Reported != 1 {
		t.Fatalf("a dead source keeps its last success: %+v", h)
	}
}

func TestAggregator_PeerOffer(t *testing.T) {
	peer := Source{Name: "peer", Kind: KindPeer, URL: "http://8.8.8.8:8080", Addr: netip.MustParseAddrPort("8.8.8.8:8080")}
	a := newAgg(t, Config{Sources: []Source{peer}, MaxLearned: 2})
	now := t0
	var fetches []Fetch
	for ; len(fetches) == 0; now = now.Add(100 * time.Millisecond) {
		_, fetches = a.Poll(now)
	}
	if fetches[0].URL != peer.URL || fetches[0].Source != 0 {
		t.Fatalf("fetch %+v", fetches)
	}
	if _, f := a.Poll(now); len(f) != 0 {
		t.Fatal("fetched again while the first fetch is out")
	}
	list := []PeerServer{
		{Addr: srv(1), Family: game.FamilyQ3, Game: "Quake3Arena"},
		{Addr: netip.MustParseAddrPort("10.0.0.1:27960"), Family: game.FamilyQ3, Game: "et"},
		{Addr: srv(2), Family: game.FamilySource, Game: "cstrike"},
		{Addr: srv(3), Family: game.FamilyDoom3, Game: "Quake4"},
		{Addr: srv(4), Family: game.FamilyQ3, Game: "et"},
	}
	found := a.Offer(now, 0, list, 50*time.Millisecond, nil, nil)
	if len(found) != 2 || found[0].Game != "Quake3Arena" || found[1].Family != game.FamilyDoom3 {
		t.Fatalf("found %+v", found)
	}
	h := a.Health(now)[0]
	if h.Refused != 1 || h.Unusable != 1 || h.OverLearned != 1 || h.State != StateUp || h.AnswerTime != 50*time.Millisecond {
		t.Fatalf("health %+v", h)
	}
	if again := a.Offer(now, 0, list, 0, nil, nil); len(again) != 0 {
		t.Fatal("an offer without a fetch out was taken")
	}
}

func TestAggregator_Queue(t *testing.T) {
	a := newAgg(t, Config{Sources: []Source{master("m", pubUp, q3Query(68, ""))}, MaxLearned: 3})
	fs := []Found{{Addr: srv(1)}, {Addr: srv(2)}, {Addr: srv(1)}, {Addr: srv(3)}, {Addr: srv(4)}}
	if dropped := a.Queue(fs); dropped != 1 || a.Queued() != 3 {
		t.Fatalf("dropped %d queued %d", dropped, a.Queued())
	}
	got := a.Next(2, nil)
	if len(got) != 2 || got[0].Addr != srv(1) || got[1].Addr != srv(2) {
		t.Fatalf("next %+v", got)
	}
	a.Requeue(got[1:])
	if got := a.Next(5, nil); len(got) != 2 || got[0].Addr != srv(2) || got[1].Addr != srv(3) {
		t.Fatalf("after requeue %+v", got)
	}
}

func TestAggregator_ReconfigureKeepsHealth(t *testing.T) {
	a := newAgg(t, Config{Sources: []Source{master("a", pubUp, q3Query(68, "")), master("b", netip.MustParseAddrPort("8.8.8.8:27950"), q3Query(68, ""))}})
	now := t0.Add(3 * time.Second)
	a.Poll(now)
	a.Receive(now, pubUp, list([]netip.AddrPort{srv(1)}, true), nil)
	a.Queue([]Found{{Addr: srv(1), Source: 0}, {Addr: srv(2), Source: 1}})
	now = now.Add(EndGrace)
	a.Poll(now)
	from, err := a.Reconfigure(now, Config{Sources: []Source{master("c", netip.MustParseAddrPort("1.1.1.1:27950"), q3Query(84, "")), master("a", pubUp, q3Query(68, ""), q3Query(71, ""))}})
	if err != nil {
		t.Fatal(err)
	}
	if from[0] != -1 || from[1] != 0 {
		t.Fatalf("from %v", from)
	}
	h := a.Health(now)
	if h[1].Name != "a" || h[1].Reported != 1 || len(h[1].Queries) != 2 || h[0].State != StateUnknown {
		t.Fatalf("health %+v", h)
	}
	if q := a.Next(10, nil); len(q) != 1 || q[0].Addr != srv(1) || q[0].Source != 1 {
		t.Fatalf("queue after reconfigure %+v", q)
	}
}

func TestConfig_Check(t *testing.T) {
	bad := []Config{
		{Sources: []Source{master("m", pubUp)}},
		{Sources: []Source{master("m", netip.AddrPort{}, q3Query(68, ""))}},
		{Sources: []Source{master("m", pubUp, q3Query(68, "")), master("m", upAddr, q3Query(68, ""))}},
		{Sources: []Source{master("m", pubUp, Query{Family: game.FamilySource})}},
		{Sources: []Source{{Name: "p", Kind: KindPeer}}},
		{Interval: time.Millisecond},
		{Jitter: 0.9},
	}
	for i, c := range bad {
		if _, err := New(t0, c, 1); err == nil {
			t.Errorf("config %d accepted: %+v", i, c)
		}
	}
	c := Config{Sources: []Source{master("", pubUp, Query{Family: game.FamilyDoom3, Q4: q4.GetServers{Protocol: q4.VersionOf(0x20055), Dialect: q4.DialectQuake4}})}}
	a, err := New(t0, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s := a.Sources()[0]; s.Name != pubUp.String() {
		t.Fatalf("default name %q", s.Name)
	}
	if q := a.Health(t0)[0].Queries[0]; q != "getServers 2.85" {
		t.Fatalf("query %q", q)
	}
}
