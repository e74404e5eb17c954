package master

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master/upstream"
	"github.com/scout-discovery/scout/protocol/q3"
)

// The aggregation rules, on the pure handler with made-up times. An
// upstream at a public address, and the public servers it lists.
var upMaster = ap("8.8.4.4:27950")

func pubServer(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{93, 184, byte(i >> 8), byte(i)}), 27960)
}

func aggFix(t testing.TB, rc Config, queries ...upstream.Query) *hfix {
	t.Helper()
	if len(queries) == 0 {
		queries = []upstream.Query{{Family: game.FamilyQ3, Q3: q3.GetServers{Protocol: 71, Empty: true, Full: true}}}
	}
	return newHandlerFix(t, rc, func(s *handlerSetup) {
		s.Aggregate = upstream.Config{Sources: []upstream.Source{{Name: "up", Addr: upMaster, Queries: queries}}, Jitter: -1}
	})
}

// tick runs the handler's Tick at f.now and returns what it sent.
func (f *hfix) tick() []Outgoing { return f.h.Tick(f.now, nil) }

// upstreamList answers the handler's query with a list of servers.
func (f *hfix) upstreamList(t testing.TB, servers ...netip.AddrPort) {
	t.Helper()
	pkts, err := q3.EncodeServersResponses(servers, q3.SplitOptions{End: q3.EndEOT, MaxBytes: q3.DefaultMaxBytes})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		if out := f.in(upMaster, p); len(out) != 0 {
			t.Fatalf("a list from the upstream answered with %v", out)
		}
	}
}

// askUpstream ticks until the handler asks the upstream, and returns the
// query it sent.
func (f *hfix) askUpstream(t testing.TB) string {
	t.Helper()
	for range 100 {
		for _, o := range f.tick() {
			if o.To == upMaster && o.Kind == KindUpstreamQuery {
				return strings.TrimPrefix(string(o.Payload), q3.Prefix)
			}
		}
		f.now = f.now.Add(time.Second)
	}
	t.Fatal("the upstream was never asked")
	return ""
}

// getinfos ticks once (after the list's end) and returns the challenge of
// each getinfo by server.
func (f *hfix) getinfos(t testing.TB) map[netip.AddrPort]string {
	t.Helper()
	f.now = f.now.Add(time.Second)
	out := map[netip.AddrPort]string{}
	for _, o := range f.tick() {
		if o.Kind == KindGetInfo {
			out[o.To] = challengeOf(t, []Outgoing{o}, KindGetInfo)
		}
	}
	return out
}

// TestAggregate_VerifiedWithOwnChallenge: an upstream's list is where to
// look, never what is listed: a server it names is listed only after it
// answers this master's own challenge, and keeps the upstream among its
// sources.
func TestAggregate_VerifiedWithOwnChallenge(t *testing.T) {
	f := aggFix(t, Config{})
	if q := f.askUpstream(t); q != "getservers 71 empty full" {
		t.Fatalf("query %q", q)
	}
	s1 := pubServer(1)
	f.upstreamList(t, s1)
	if s, _ := f.h.Registry().Lookup(s1); s.Listed {
		t.Fatal("listed on the upstream's word")
	}
	chal := f.getinfos(t)
	c, ok := chal[s1]
	if !ok {
		t.Fatalf("no getinfo to %v: %v", s1, chal)
	}
	f.in(s1, oaInfo("AAAAAAAAAAAAAAAA"))
	f.in(ap("93.184.9.9:27960"), oaInfo(c))
	if s, _ := f.h.Registry().Lookup(s1); s.Listed {
		t.Fatal("listed on a reply without its challenge")
	}
	f.in(s1, oaInfo(c))
	s, _ := f.h.Registry().Lookup(s1)
	if !s.Listed || s.Game != "Quake3Arena" {
		t.Fatalf("not listed as Quake3Arena: %+v (drops %v)", s, f.dropSummary())
	}
	if len(s.Sources) != 1 || s.Sources[0].Source != "up" || !s.LastHeartbeat.IsZero() {
		t.Fatalf("sources %+v, last heartbeat %v", s.Sources, s.LastHeartbeat)
	}
	if f.h.Stats().Probes(CauseLearned) != 1 {
		t.Fatalf("learned checks %d", f.h.Stats().Probes(CauseLearned))
	}
	h := f.h.Upstreams(f.now)[0]
	if h.Reported != 1 || h.Verified != 1 || h.State != upstream.StateUp {
		t.Fatalf("health %+v", h)
	}
}

// TestAggregate_AnonymousGameFromQuery: an ET server listed by
// "getservers 84" need not name its game: the query does, as a
// heartbeat's tag would.
func TestAggregate_AnonymousGameFromQuery(t *testing.T) {
	f := aggFix(t, Config{}, upstream.Query{Family: game.FamilyQ3, Q3: q3.GetServers{Protocol: 84}})
	f.askUpstream(t)
	s1 := pubServer(1)
	f.upstreamList(t, s1)
	c := f.getinfos(t)[s1]
	f.in(s1, oaInfo(c, "gamename", "\x00delete", "protocol", "84"))
	if s, _ := f.h.Registry().Lookup(s1); !s.Listed || s.Game != "et" {
		t.Fatalf("not listed as et: %+v (drops %v)", s, f.dropSummary())
	}
}

// TestAggregate_UpstreamOnlyServerLeavesLikeOthers: a server only an
// upstream names is re-probed on its game's period and dropped when its
// checks go unanswered, even while the upstream still names it.
func TestAggregate_UpstreamOnlyServerLeavesLikeOthers(t *testing.T) {
	f := aggFix(t, Config{})
	f.askUpstream(t)
	s1 := pubServer(1)
	f.upstreamList(t, s1)
	f.in(s1, oaInfo(f.getinfos(t)[s1]))
	if s, _ := f.h.Registry().Lookup(s1); !s.Listed {
		t.Fatal("not listed")
	}
	// The server goes quiet; the upstream keeps naming it every refresh.
	var removed bool
	for end := f.now.Add(20 * time.Minute); f.now.Before(end); f.now = f.now.Add(time.Second) {
		for _, o := range f.tick() {
			if o.To == upMaster {
				f.upstreamList(t, s1)
			}
		}
		if _, ok := f.h.Registry().Lookup(s1); !ok {
			removed = true
			break
		}
	}
	if !removed {
		t.Fatal("a silent server stayed listed because an upstream names it")
	}
	if f.h.Stats().Removed(ReasonProbesUnanswered) != 1 {
		t.Fatalf("removed for %v", f.h.Stats().Removed(ReasonSilent))
	}
}

// TestAggregate_DeadUpstreamKeepsServers: an upstream that stops
// answering is reported down; the servers it named stay listed as long
// as they answer the master's own checks.
func TestAggregate_DeadUpstreamKeepsServers(t *testing.T) {
	f := aggFix(t, Config{})
	f.askUpstream(t)
	s1 := pubServer(1)
	f.upstreamList(t, s1)
	f.in(s1, oaInfo(f.getinfos(t)[s1]))
	for end := f.now.Add(time.Hour); f.now.Before(end); f.now = f.now.Add(time.Second) {
		for _, o := range f.tick() {
			if o.To == s1 && o.Kind == KindGetStatus {
				// The re-probe of a Q3A server is a getstatus.
				m, _ := q3.Parse(o.Payload)
				f.in(s1, oaStatus(t, m.(q3.GetStatus).Challenge))
			}
		}
	}
	if s, _ := f.h.Registry().Lookup(s1); !s.Listed {
		t.Fatalf("a server that answers was dropped with its upstream dead (removed %v)", f.h.Stats().Removed(ReasonProbesUnanswered))
	}
	h := f.h.Upstreams(f.now)[0]
	if h.State != upstream.StateDown || h.Failures < 10 || h.Reported != 1 {
		t.Fatalf("health %+v", h)
	}
}

// oaStatus is a statusResponse of an OpenArena server with its
// challenge.
func oaStatus(t testing.TB, challenge string) []byte {
	t.Helper()
	b := oob("statusResponse\n\\sv_maxclients\\8\\com_protocol\\71\\gamename\\baseoa\\mapname\\oa_dm1\\challenge\\" + challenge + "\n0 0 \"Sarge\"\n")
	return b
}

// TestAggregate_LearnPerTick: the first checks of a long list go out at
// the per-tick budget, not at the pace the list arrives.
func TestAggregate_LearnPerTick(t *testing.T) {
	f := newHandlerFix(t, Config{}, func(s *handlerSetup) {
		s.Aggregate = upstream.Config{Sources: []upstream.Source{{Name: "up", Addr: upMaster, Queries: []upstream.Query{{Family: game.FamilyQ3, Q3: q3.GetServers{Protocol: 68}}}}}}
		s.LearnPerTick = 100
	})
	f.askUpstream(t)
	var servers []netip.AddrPort
	for i := range 1000 {
		servers = append(servers, pubServer(i))
	}
	f.upstreamList(t, servers...)
	for range 10 {
		before := f.h.Stats().Probes(CauseLearned)
		f.getinfos(t)
		if n := f.h.Stats().Probes(CauseLearned) - before; n != 100 {
			t.Fatalf("%d first checks in one tick; the budget is 100", n)
		}
	}
	if f.h.LearnQueued() != 0 {
		t.Fatalf("%d still queued after 10 ticks", f.h.LearnQueued())
	}
}

// TestAggregate_MaxServersPerAddress: the cap on servers per address (on
// by default, as dpmaster's) holds for servers an upstream names: a host
// that registered itself on 100 ports gets 32 checked.
func TestAggregate_MaxServersPerAddress(t *testing.T) {
	f := aggFix(t, Config{})
	f.askUpstream(t)
	var servers []netip.AddrPort
	for p := range 100 {
		servers = append(servers, netip.AddrPortFrom(pubServer(1).Addr(), uint16(27960+p)))
	}
	f.upstreamList(t, servers...)
	if n := len(f.getinfos(t)); n != DefaultMaxServersPerAddress {
		t.Fatalf("%d checked; want %d", n, DefaultMaxServersPerAddress)
	}
	if got := f.h.LearnOutcomes()[ReasonAddressFull]; got != 100-DefaultMaxServersPerAddress {
		t.Fatalf("address_full %d", got)
	}
}

// TestAggregate_BlockList: a blocked server is neither learned nor
// listed by heartbeat, and a block list set while the master runs drops
// what it now refuses.
func TestAggregate_BlockList(t *testing.T) {
	blocked := netip.MustParsePrefix("93.184.0.0/24")
	f := aggFix(t, Config{Blocked: []Block{{Prefix: blocked, Reason: "lists itself on 500 ports"}}})
	f.askUpstream(t)
	f.upstreamList(t, pubServer(1), pubServer(300))
	chal := f.getinfos(t)
	if _, ok := chal[pubServer(1)]; ok || len(chal) != 1 {
		t.Fatalf("checks %v; want only %v", chal, pubServer(300))
	}
	if out := f.in(pubServer(2), oaHeartbeat); len(out) != 0 || f.h.Stats().Dropped(ReasonBlocked) != 1 {
		t.Fatalf("a blocked heartbeat got %v", out)
	}
	f.in(pubServer(300), oaInfo(chal[pubServer(300)]))
	f.h.Registry().SetBlockList([]Block{{Prefix: netip.MustParsePrefix("93.184.1.0/24"), Reason: "clones"}})
	f.tick()
	if _, ok := f.h.Registry().Lookup(pubServer(300)); ok || f.h.Stats().Removed(ReasonBlocked) != 1 {
		t.Fatalf("a listed server the new block list refuses stayed (removed %d)", f.h.Stats().Removed(ReasonBlocked))
	}
	if len(f.st.del) != 1 || f.st.del[0] != pubServer(300) {
		t.Fatalf("the state was told %v", f.st.del)
	}
	if b := f.h.Registry().Blocked(pubServer(300).Addr()); b == nil || b.Reason != "clones" {
		t.Fatalf("Blocked = %+v", b)
	}
	if b := f.h.Registry().Blocked(pubServer(1).Addr()); b != nil {
		t.Fatalf("the old list still blocks: %+v", b)
	}
}

// TestAggregate_ReportMarksKnownServers: a server the master lists
// already (it heartbeats) is not checked again because an upstream names
// it; its sources show both.
func TestAggregate_ReportMarksKnownServers(t *testing.T) {
	f := aggFix(t, Config{})
	s1 := pubServer(1)
	f.list(t, s1)
	f.askUpstream(t)
	f.upstreamList(t, s1)
	if chal := f.getinfos(t); len(chal) != 0 {
		t.Fatalf("checked again: %v", chal)
	}
	s, _ := f.h.Registry().Lookup(s1)
	if s.LastHeartbeat.IsZero() || len(s.Sources) != 1 || s.Sources[0].Source != "up" {
		t.Fatalf("sources %+v", s.Sources)
	}
}
