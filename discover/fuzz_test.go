package discover

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
	"github.com/scout-discovery/scout/protocol/steammaster"
)

// fuzzMasters are one master of each protocol, as a run asks them.
func fuzzMasters(t testing.TB) []Master {
	var q4g *game.Game
	for _, g := range game.Builtin() {
		if g.Name == "Quake4" {
			q4g = g
		}
	}
	q3r, err := RequestFor(game.Builtin()[0], 0, true)
	if err != nil {
		t.Fatal(err)
	}
	q4r, err := RequestFor(q4g, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	str, err := RequestFor(&game.Game{Name: "cstrike", Family: game.FamilySource}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return []Master{{Name: "q3", Addr: masterA, Request: q3r}, {Name: "q4", Addr: masterB, Request: q4r},
		{Name: "steam", Addr: masterC, Request: str}}
}

// FuzzCollectorReceive feeds the core's master half (session.receive, the
// reply readers as the run uses them) a sequence of datagrams from the
// masters of all three protocols, and checks what a run relies on: no
// panic; every server handed to the prober is usable and handed once;
// the reports add up (every entry listed is new, again or unusable) and
// stay within their bounds; a list that ended stays ended.
//
// The input is a sequence of records: one byte picking the master (and
// the gap since the last datagram), two bytes of length, the datagram.
func FuzzCollectorReceive(f *testing.F) {
	seed := func(pkts ...[]byte) {
		var b []byte
		for i, p := range pkts {
			b = append(b, byte(i))
			b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
			b = append(b, p...)
		}
		f.Add(b)
	}
	q3a, _ := q3.ServersResponse{Ext: true, Servers: []netip.AddrPort{srv(1), srv(2)}}.AppendBinary(nil)
	q3b, _ := q3.ServersResponse{Ext: true, Servers: []netip.AddrPort{srv(2), netip.MustParseAddrPort("[2001:db8::1]:27960")}, End: q3.EndEOT}.AppendBinary(nil)
	q4a, _ := (&q4.Servers{Servers: []netip.AddrPort{srv(3), srv(1)}}).AppendBinary(nil)
	st1, _ := steammaster.Reply{Servers: []netip.AddrPort{srv(4), srv(5)}}.AppendBinary(nil)
	st2, _ := steammaster.Reply{Servers: []netip.AddrPort{srv(6)}, End: true}.AppendBinary(nil)
	seed(q3a, q4a, st1, q3b, st2)
	seed(q3Entries(badEntries, true))
	seed(q3Entries(append([]netip.AddrPort{srv(1)}, badEntries...), false), []byte("\xff\xff\xff\xffgetserversExtResponse\\\x01"))
	seed([]byte("\xff\xffservers\x00\x01\x02\x03\x04\x00\x00\x7f\x00\x00\x01\x38\x6d\x01"))
	seed([]byte("\xff\xff\xff\xff\x66\x0a\x00\x00\x00\x00\x00\x00"), []byte("\xff\xff\xff\xff\x66\x0a\x01\x02"))
	lm, _ := q3.EncodeLandmarksResponses("fra-1", []q3.LandmarkEntry{{Addr: srv(1), RTT: time.Millisecond}}, 0)
	pong, _ := q3.ServersResponse{End: q3.EndEOT}.AppendBinary(nil)
	// A landmark's list and run, then ping replies 120 ms later (past
	// EndGrace: the first ping is out).
	var b []byte
	for i, p := range [][]byte{q3b, q3b, lm[0], pong, pong} { // the list's two forms
		b = append(b, []byte{0, 0, 0, 0x30, 0}[i])
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	f.Add(b)

	masters := fuzzMasters(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		s := newSession(Config{Masters: masters, MaxServers: 64, MaxPackets: 16, AdmitRate: -1, Landmarks: true, LandmarkPings: 2}, t0)
		s.poll(t0)
		now := t0
		handed := map[netip.AddrPort]bool{}
		ended := map[string]bool{}
		for len(in) >= 3 {
			pick, n := in[0], int(binary.BigEndian.Uint16(in[1:3]))
			in = in[3:]
			n = min(n, len(in))
			pkt := in[:n]
			in = in[n:]
			now = now.Add(time.Duration(pick>>2) * 10 * time.Millisecond)
			s.poll(now)
			m := masters[int(pick&3)%len(masters)]
			s.receive(now, m.Addr, pkt)
			for _, tg := range s.due(now) {
				if !usable(tg.Addr) || tg.Addr != netip.AddrPortFrom(tg.Addr.Addr().Unmap(), tg.Addr.Port()) {
					t.Fatalf("handed out %v", tg.Addr)
				}
				if handed[tg.Addr] {
					t.Fatalf("%v handed out twice", tg.Addr)
				}
				handed[tg.Addr] = true
			}
			for _, e := range s.takeEvents() {
				if d, ok := e.(MasterDone); ok {
					if ended[d.Name] {
						t.Fatalf("%s ended twice", d.Name)
					}
					ended[d.Name] = true
				}
			}
		}
		listed, unusable, news := 0, 0, 0
		for _, m := range s.masters {
			r := m.rep
			if r.Listed > 64 || r.Packets+r.Garbled > 16 || r.Unusable > r.Listed || r.New > r.Listed-r.Unusable ||
				r.PingsSent > 2 || len(r.Pings) > r.PingsSent {
				t.Fatalf("report %+v past its bounds", r)
			}
			listed, unusable, news = listed+r.Listed, unusable+r.Unusable, news+r.New
		}
		if news != s.listed || len(handed) != s.listed || news > listed-unusable {
			t.Fatalf("%d new in reports, %d listed, %d handed out, %d entries (%d unusable)", news, s.listed, len(handed), listed, unusable)
		}
	})
}
