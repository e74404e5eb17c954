package discover

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/q3"
)

// Rules for master replies, each tested on the pure core and, where a
// socket matters, over real loopback UDP (hostile_udp_test.go).

// badEntries name no server a client could probe; each must be dropped
// alone.
var badEntries = []netip.AddrPort{
	netip.MustParseAddrPort("198.51.100.7:0"),           // port 0
	netip.MustParseAddrPort("255.255.255.255:27960"),    // the broadcast
	netip.MustParseAddrPort("0.0.0.0:27960"),            // the zero address
	netip.MustParseAddrPort("0.1.2.3:27960"),            // "this network"
	netip.MustParseAddrPort("224.0.0.1:27960"),          // multicast
	netip.MustParseAddrPort("240.1.2.3:27960"),          // reserved
	netip.MustParseAddrPort("[ff02::1]:27960"),          // IPv6 multicast
	netip.MustParseAddrPort("[fe80::1]:27960"),          // IPv6 link-local, no zone
	netip.MustParseAddrPort("[::ffff:0.0.0.0]:27960"),   // the zero address, mapped
	netip.MustParseAddrPort("[::ffff:224.0.0.9]:27960"), // multicast, mapped
}

// q3Entries encodes a getserversExtResponse with any entries, port 0 and
// the zero address included (the codec refuses to).
func q3Entries(list []netip.AddrPort, end bool) []byte {
	b := []byte(q3.Prefix + "getserversExtResponse")
	for _, ap := range list {
		if ap.Addr().Is4() {
			a := ap.Addr().As4()
			b = append(append(b, '\\'), a[:]...)
		} else {
			a := ap.Addr().As16()
			b = append(append(b, '/'), a[:]...)
		}
		b = binary.BigEndian.AppendUint16(b, ap.Port())
	}
	if end {
		b = append(b, "\\EOT\x00\x00\x00"...)
	}
	return b
}

// TestMasterReply_BadEntryDropsOnlyItself: one entry that names no server
// (port 0, the broadcast, the zero address, multicast, reserved, IPv6
// link-local) is dropped and counted; the valid entries of its packet,
// before and after it, are listed and probed, for every protocol.
func TestMasterReply_BadEntryDropsOnlyItself(t *testing.T) {
	good := []netip.AddrPort{srv(1), srv(2), netip.MustParseAddrPort("[2001:db8::1]:27960")}
	t.Run("q3", func(t *testing.T) {
		req := q3Request(t)
		req.Q3.Ext = true
		for _, bad := range badEntries {
			s := coreOf(t, Config{Masters: []Master{{Name: "A", Addr: masterA, Request: req}}})
			s.receive(at(10*time.Millisecond), masterA, q3Entries([]netip.AddrPort{good[0], bad, good[1], good[2]}, true))
			if got := addrs(s.due(at(10 * time.Millisecond))); !slices.Equal(got, good) {
				t.Errorf("%v in the packet: probed %v, want %v", bad, got, good)
			}
			if r := s.masters[0].rep; r.Listed != 4 || r.Unusable != 1 || r.Packets != 1 || r.Garbled != 0 {
				t.Errorf("%v in the packet: report %+v", bad, r)
			}
		}
	})
	t.Run("q4", func(t *testing.T) {
		g := builtinGame(t, "Quake4")
		req, err := RequestFor(g, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range badEntries {
			if !bad.Addr().Unmap().Is4() {
				continue
			}
			b := []byte("\xff\xffservers\x00")
			for _, ap := range []netip.AddrPort{good[0], bad, good[1]} {
				a := ap.Addr().Unmap().As4()
				b = binary.LittleEndian.AppendUint16(append(b, a[:]...), ap.Port())
			}
			s := coreOf(t, Config{Masters: []Master{{Name: "A", Addr: masterA, Request: req}}})
			s.receive(at(10*time.Millisecond), masterA, b)
			if got := addrs(s.due(at(10 * time.Millisecond))); !slices.Equal(got, good[:2]) {
				t.Errorf("%v in the packet: probed %v", bad, got)
			}
			if r := s.masters[0].rep; r.Listed != 3 || r.Unusable != 1 {
				t.Errorf("%v in the packet: report %+v", bad, r)
			}
		}
	})
}

// servers returns n distinct listable addresses from 10.0.0.1:27960 on.
func servers(n int) []netip.AddrPort {
	out := make([]netip.AddrPort, n)
	for i := range out {
		out[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).Next(), 27960)
	}
	return out
}

// TestMasterReply_ServersPerMasterBounded: a master listing more than
// MaxServers entries is cut off there with EndLimit and an error naming
// the bound; the servers before it are probed. The default lets a list
// of dpmaster's 4,096 servers through whole.
func TestMasterReply_ServersPerMasterBounded(t *testing.T) {
	list := servers(30)
	s := coreOf(t, Config{MaxServers: 25})
	for i := 0; i < 30; i += 10 {
		s.receive(at(10*time.Millisecond), masterA, q3List(t, q3.EndNone, list[i:i+10]...))
	}
	r := s.masters[0].rep
	if r.End != EndLimit || r.Listed != 25 || !strings.Contains(r.Error, "more than 25 servers") || !strings.Contains(r.Error, "MaxServers") {
		t.Fatalf("report %+v; want the list cut at 25 with the bound named", r)
	}
	if got := addrs(s.due(at(10 * time.Millisecond))); !slices.Equal(got, list[:25]) {
		t.Fatalf("probed %d servers, want the first 25", len(got))
	}

	s = coreOf(t, Config{})
	pkts, err := q3.EncodeServersResponses(servers(4096), q3.SplitOptions{End: q3.EndEOT, MaxBytes: 1400})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		s.receive(at(10*time.Millisecond), masterA, p)
	}
	s.poll(at(10*time.Millisecond + EndGrace))
	if r := s.masters[0].rep; r.End != EndMarker || r.Listed != 4096 || s.listed != 4096 {
		t.Fatalf("dpmaster's 4096: report %+v", r)
	}
	if DefaultMaxServersQ3 < 4*4096 || DefaultMaxServersSteam < DefaultMaxServersQ3 {
		t.Fatalf("defaults %d, %d below what real lists hold", DefaultMaxServersQ3, DefaultMaxServersSteam)
	}
}

// TestMasterReply_PacketsPerAnswerBounded: a master that keeps sending
// packets without the end marker (here empty ones, which list nothing
// and would hold the list open forever) is cut off after MaxPackets.
func TestMasterReply_PacketsPerAnswerBounded(t *testing.T) {
	s := coreOf(t, Config{})
	empty := q3List(t, q3.EndNone)
	for i := range DefaultMaxPackets + 10 {
		s.receive(at(time.Duration(i)*time.Millisecond), masterA, empty)
	}
	r := s.masters[0].rep
	if r.End != EndLimit || r.Packets != DefaultMaxPackets || !strings.Contains(r.Error, "MaxPackets") {
		t.Fatalf("report %+v; want the list cut after %d packets", r, DefaultMaxPackets)
	}
	if !s.listsDone() {
		t.Fatal("list still open")
	}
}

// TestMasterReply_TimePerMasterBounded: a master that trickles its list,
// one packet just inside every quiet window, is cut off MaxListTime
// after its query; the wake-up is due then even with no packet.
func TestMasterReply_TimePerMasterBounded(t *testing.T) {
	s := coreOf(t, Config{MaxListTime: 10 * time.Second})
	list := servers(100)
	now := t0
	for i := 0; !s.listsDone(); i++ {
		if i > 100 {
			t.Fatal("list never ended")
		}
		now = now.Add(DefaultQuiet - time.Millisecond)
		if w := s.wake(); w.Before(now) {
			now = w
			s.poll(now)
			continue
		}
		s.receive(now, masterA, q3List(t, q3.EndNone, list[i]))
	}
	r := s.masters[0].rep
	if r.End != EndLimit || r.Took != 10*time.Second || !strings.Contains(r.Error, "MaxListTime") || r.Listed != 10 {
		t.Fatalf("report %+v; want the list cut at 10s, 10 servers kept", r)
	}
}

// TestMasterReply_NoEOTCannotFloodProbes: a master that lists 20,000
// addresses at once and never marks the end cannot have them probed at
// the pace it sends them: before any answers, at most DefaultAdmitBurst,
// then DefaultAdmitRate a second; each server that answers admits
// AdmitPerAnswer more.
func TestMasterReply_NoEOTCannotFloodProbes(t *testing.T) {
	cfg := Config{MaxServers: 20000} // past the default bound per master: the pace must hold on its own
	s := coreOf(t, cfg)
	pkts, err := q3.EncodeServersResponses(servers(20000), q3.SplitOptions{End: q3.EndNone, MaxBytes: 1400})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pkts {
		s.receive(at(10*time.Millisecond+time.Duration(i)*100*time.Microsecond), masterA, p)
	}
	if s.listed != 20000 {
		t.Fatalf("listed %d", s.listed)
	}
	handed := len(s.due(at(20 * time.Millisecond)))
	if handed != DefaultAdmitBurst+2 { // 20 ms at 100/s
		t.Fatalf("%d handed out at 20 ms, want the burst (%d) and 2", handed, DefaultAdmitBurst)
	}
	handed += len(s.due(at(time.Second)))
	if want := DefaultAdmitBurst + DefaultAdmitRate; handed != want {
		t.Fatalf("%d handed out in the first second, want %d", handed, want)
	}
	if w := s.admitWake(); !w.Equal(at(time.Second + 10*time.Millisecond)) {
		t.Fatalf("next admission at %v, want 1.01s", w.Sub(t0))
	}
	if got := s.due(at(time.Second + 10*time.Millisecond - 1)); len(got) != 0 {
		t.Fatalf("%d handed out 1ns early", len(got))
	}
	for i := range 10 { // ten answer: twenty more
		s.result(at(time.Second), i, probe.Result{Addr: servers(20000)[i], RTT: time.Millisecond})
	}
	if got := len(s.due(at(time.Second))); got != 10*AdmitPerAnswer {
		t.Fatalf("%d admitted by ten answers, want %d", got, 10*AdmitPerAnswer)
	}
	// A list of live servers is not held back: each answer admits two.
	s = coreOf(t, cfg)
	for _, p := range pkts {
		s.receive(at(10*time.Millisecond), masterA, p)
	}
	now, handed := at(10*time.Millisecond), 0
	for handed < 20000 {
		due := s.due(now)
		for _, tg := range due {
			s.result(now.Add(50*time.Millisecond), handed, probe.Result{Addr: tg.Addr, RTT: 50 * time.Millisecond})
			handed++
		}
		now = now.Add(50 * time.Millisecond)
	}
	if took := now.Sub(t0); took > 400*time.Millisecond {
		t.Fatalf("20,000 live servers took %v to admit at 50 ms a round trip", took)
	}
}

// TestMasterReply_DuplicatesProbedOnce: a server listed again (in the
// same packet, a later packet, by another master, under its IPv4-mapped
// form, or given as an extra target) is probed once; the masters that
// listed it are all reported.
func TestMasterReply_DuplicatesProbedOnce(t *testing.T) {
	req := q3Request(t)
	req.Q3.Ext = true
	mapped := netip.AddrPortFrom(netip.AddrFrom16(srv(2).Addr().As16()), srv(2).Port())
	s := coreOf(t, Config{Masters: []Master{{Name: "A", Addr: masterA, Request: req}, {Name: "B", Addr: masterB, Request: req}},
		Extra: []probe.Target{{Addr: srv(3), Dialect: probe.Q3Info}}})
	s.addExtra()
	s.receive(at(10*time.Millisecond), masterA, q3Entries([]netip.AddrPort{srv(1), srv(2), srv(1)}, false))
	s.receive(at(20*time.Millisecond), masterA, q3Entries([]netip.AddrPort{srv(2), mapped, srv(3)}, true))
	s.receive(at(30*time.Millisecond), masterB, q3Entries([]netip.AddrPort{srv(3), mapped, srv(1)}, true))
	got := addrs(s.due(at(30 * time.Millisecond)))
	if want := []netip.AddrPort{srv(3), srv(1), srv(2)}; !slices.Equal(got, want) {
		t.Fatalf("probed %v, want %v (the extra first)", got, want)
	}
	if s.listed != 2 || s.masters[0].rep.Listed != 6 || s.masters[0].rep.New != 2 || s.masters[1].rep.New != 0 {
		t.Fatalf("listed %d, reports %+v %+v", s.listed, s.masters[0].rep, s.masters[1].rep)
	}
	s.result(at(time.Second), 2, probe.Result{Addr: srv(2), RTT: time.Millisecond})
	ev := s.takeEvents()
	if p, ok := ev[len(ev)-1].(Probed); !ok || !slices.Equal(p.Masters, []string{"A", "B"}) {
		t.Fatalf("last event %+v, want srv 2 listed by A and B", ev[len(ev)-1])
	}
}

// TestAdmission_PacedProberGetsListedServersInRandomOrder: 3,000 servers
// listed, the burst of 1,000 handed at once. To a prober that paces (and
// sends in random order what it holds) they are drawn from all 3,000
// listed, about a third of them from the first 1,000 (a master lists a
// hosting network's servers together, and handed in order they would be
// probed together); to any other, the first 1,000 in the list's order.
// Either way each is handed once, and the index of a result still names
// the server it was handed as.
func TestAdmission_PacedProberGetsListedServersInRandomOrder(t *testing.T) {
	listed := servers(3000)
	first := map[netip.AddrPort]bool{}
	for _, a := range listed[:DefaultAdmitBurst] {
		first[a] = true
	}
	for _, paced := range []bool{false, true} {
		cfg := Config{}
		if paced {
			cfg.Prober.Pace = &probe.Pace{}
		}
		s := coreOf(t, cfg)
		s.rng = rand.New(rand.NewPCG(1, 2))
		pkts, err := q3.EncodeServersResponses(listed, q3.SplitOptions{End: q3.EndEOT, MaxBytes: 1400})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkts {
			s.receive(at(10*time.Millisecond), masterA, p)
		}
		due := s.due(at(10 * time.Millisecond))
		inFirst, seen := 0, map[netip.AddrPort]bool{}
		for i, tg := range due {
			if seen[tg.Addr] {
				t.Fatalf("paced %v: %v handed twice", paced, tg.Addr)
			}
			seen[tg.Addr] = true
			if first[tg.Addr] {
				inFirst++
			}
			if !paced && tg.Addr != listed[i] {
				t.Fatalf("not paced: handed %v %d-th, want %v (the list's order)", tg.Addr, i, listed[i])
			}
			if s.order[i] != tg.Addr {
				t.Fatalf("paced %v: result %d would name %v, handed %v", paced, i, s.order[i], tg.Addr)
			}
		}
		if len(due) != DefaultAdmitBurst+1 { // 10 ms at 100/s
			t.Fatalf("paced %v: %d handed, want %d", paced, len(due), DefaultAdmitBurst+1)
		}
		if paced && (inFirst < 250 || inFirst > 420) {
			t.Errorf("paced: %d of the %d handed are among the first %d listed, want about a third", inFirst, len(due), DefaultAdmitBurst)
		}
	}
}
