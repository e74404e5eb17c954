package discover

import (
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/q3"
)

// t0 is the start of every pure-core run.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// q3List encodes one getserversResponse packet of servers.
func q3List(t testing.TB, end q3.End, servers ...netip.AddrPort) []byte {
	t.Helper()
	b, err := q3.ServersResponse{Servers: servers, End: end}.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// coreOf returns the session of one Quake III master, masterA, already
// asked (its query returned by the first poll at t0).
func coreOf(t *testing.T, cfg Config) *session {
	t.Helper()
	if cfg.Masters == nil {
		cfg.Masters = []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}
	}
	s := newSession(cfg, t0)
	out := s.poll(t0)
	if len(out) != len(cfg.Masters) {
		t.Fatalf("first poll: %d queries, want %d", len(out), len(cfg.Masters))
	}
	for _, o := range out {
		s.wrote(t0, o, nil)
	}
	return s
}

func addrs(ts []probe.Target) []netip.AddrPort {
	var out []netip.AddrPort
	for _, t := range ts {
		out = append(out, t.Addr)
	}
	return out
}

// TestSession_AsksListsHandsOutAndReports drives the core by hand, no
// socket and no clock: the query at the first poll, the servers of a
// packet due at once, the list ended EndGrace after its marker, results
// turned into events with the masters that listed each server.
func TestSession_AsksListsHandsOutAndReports(t *testing.T) {
	s := coreOf(t, Config{})
	if w := s.wake(); !w.Equal(at(DefaultMasterTimeout)) {
		t.Fatalf("wake %v, want the master timeout", w.Sub(t0))
	}
	if out := s.receive(at(30*time.Millisecond), masterA, q3List(t, q3.EndEOT, srv(1), srv(2))); out != nil {
		t.Fatalf("receive returned queries %v", out)
	}
	if got := addrs(s.due(at(30 * time.Millisecond))); len(got) != 2 || got[0] != srv(1) || got[1] != srv(2) {
		t.Fatalf("due %v, want srv 1 and 2", got)
	}
	if s.listsDone() {
		t.Fatal("list done at its marker; want EndGrace later")
	}
	if w := s.wake(); !w.Equal(at(30*time.Millisecond + EndGrace)) {
		t.Fatalf("wake %v, want marker + EndGrace", w.Sub(t0))
	}
	s.poll(at(30*time.Millisecond + EndGrace - 1))
	if s.listsDone() {
		t.Fatal("list done 1ns before EndGrace")
	}
	s.poll(at(30*time.Millisecond + EndGrace))
	if !s.listsDone() || !s.allHanded() {
		t.Fatalf("%v: want the list over and every server handed out", s)
	}
	s.result(at(200*time.Millisecond), 1, probe.Result{Addr: srv(2), RTT: 50 * time.Millisecond})
	ev := s.takeEvents()
	if len(ev) != 4 {
		t.Fatalf("events %#v, want 2 listed, the master's end, 1 probed", ev)
	}
	if p, ok := ev[3].(Probed); !ok || p.Addr != srv(2) || len(p.Masters) != 1 || p.Masters[0] != "A" {
		t.Fatalf("last event %#v", ev[3])
	}
	if sum := s.summary(at(time.Second)); sum.Listed != 2 || sum.ListsTook != 30*time.Millisecond+EndGrace ||
		sum.FirstResult != 200*time.Millisecond || sum.MasterQueries != 1 {
		t.Fatalf("summary %+v", sum)
	}
}
