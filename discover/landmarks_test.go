package discover

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/q3"
)

func extRequest(t testing.TB) Request {
	t.Helper()
	r, err := RequestFor(game.Builtin()[0], ProtocolQ3A132, true)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func landmarkPacket(t testing.TB, id string, es ...q3.LandmarkEntry) []byte {
	t.Helper()
	pkts, err := q3.EncodeLandmarksResponses(id, es, 0)
	if err != nil || len(pkts) != 1 {
		t.Fatal(pkts, err)
	}
	return pkts[0]
}

// With Config.Landmarks the getserversExt query carries the word, the
// landmark packets after the list are kept in the master's report, the
// first id's as its own with the client's own RTT to the master, another
// id's (a fleet instance's peers) under that id; without it the word is
// absent and such a packet is garbage.
func TestSession_Landmarks(t *testing.T) {
	for _, on := range []bool{true, false} {
		cfg := Config{Landmarks: on, Masters: []Master{{Name: "A", Addr: masterA, Request: extRequest(t)}}}
		s := newSession(cfg, t0)
		out := s.poll(t0)
		if len(out) != 1 {
			t.Fatalf("%d queries", len(out))
		}
		if asked := bytes.Contains(out[0].b, []byte(" landmarks landmarkpeers")); asked != on {
			t.Fatalf("Landmarks %v: query %q", on, out[0].b)
		}
		s.wrote(t0, out[0], nil)
		list, _ := q3.ServersResponse{Ext: true, Servers: []netip.AddrPort{srv(1), srv(2)}, End: q3.EndEOT}.AppendBinary(nil)
		s.receive(at(30*time.Millisecond), masterA, list)
		s.receive(at(31*time.Millisecond), masterA, landmarkPacket(t, "fra-1",
			q3.LandmarkEntry{Addr: srv(1), RTT: 12 * time.Millisecond}, q3.LandmarkEntry{Addr: srv(2), RTT: 40 * time.Millisecond}))
		s.receive(at(32*time.Millisecond), masterA, landmarkPacket(t, "other", q3.LandmarkEntry{Addr: srv(3), RTT: time.Millisecond}))
		r := s.masters[0].rep
		if r.RTT != 30*time.Millisecond || r.Packets != 1 {
			t.Errorf("RTT %v, packets %d", r.RTT, r.Packets)
		}
		if on {
			if r.Landmark != "fra-1" || r.LandmarkPackets != 2 || r.Garbled != 0 || len(r.LandmarkRTTs) != 2 ||
				r.LandmarkRTTs[srv(1)] != 12*time.Millisecond || r.LandmarkRTTs[srv(2)] != 40*time.Millisecond ||
				len(r.OtherLandmarks) != 1 || len(r.OtherLandmarks["other"]) != 1 || r.OtherLandmarks["other"][srv(3)] != time.Millisecond {
				t.Errorf("report %+v", r)
			}
		} else if r.Landmark != "" || r.LandmarkRTTs != nil || r.OtherLandmarks != nil || r.Garbled != 2 {
			t.Errorf("not asked, yet %+v", r)
		}
	}
}

// FuzzSessionLandmarks feeds a landmark-asking session list and landmark
// packets of any content: no panic, the bounds hold.
func FuzzSessionLandmarks(f *testing.F) {
	ok, _ := q3.EncodeLandmarksResponses("fra-1", []q3.LandmarkEntry{{Addr: srv(1), RTT: time.Millisecond}}, 0)
	f.Add(ok[0][len(q3.Prefix+q3.LandmarksResponseCommand):], 3)
	f.Add([]byte("\nx\n/"), 1)
	f.Add([]byte("\nfra-1\n\\\x01\x02\x03\x04\x00\x05\x00\x01\x00\x00"), 40)
	peers, _ := q3.EncodeLandmarkPeersResponses("fra-1", []q3.LandmarkPeerEntry{{Peer: "nyc", RTT: 75 * time.Millisecond}}, 0)
	f.Add(append([]byte{0}, peers[0][len(q3.Prefix+q3.LandmarkPeersResponseCommand):]...), 3)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		const maxServers, maxPackets = 8, 6
		cfg := Config{Landmarks: true, MaxServers: maxServers, MaxPackets: maxPackets,
			Masters: []Master{{Name: "A", Addr: masterA, Request: extRequest(t)}}}
		s := newSession(cfg, t0)
		for _, o := range s.poll(t0) {
			s.wrote(t0, o, nil)
		}
		// A body starting with NUL is a peers packet's (the rest of it).
		cmd := q3.LandmarksResponseCommand
		if len(body) > 0 && body[0] == 0 {
			cmd, body = q3.LandmarkPeersResponseCommand, body[1:]
		}
		pkt := append([]byte(q3.Prefix+cmd), body...)
		for i := range n % 16 {
			s.receive(at(time.Duration(i)*time.Millisecond), masterA, pkt)
		}
		r := s.masters[0].rep
		if len(r.LandmarkRTTs) > maxServers || r.Packets+r.Garbled+r.LandmarkPackets > maxPackets {
			t.Fatalf("report past its bounds: %d RTTs, %d packets", len(r.LandmarkRTTs), r.Packets+r.Garbled+r.LandmarkPackets)
		}
		for a, d := range r.LandmarkRTTs {
			if d <= 0 || !a.IsValid() {
				t.Fatalf("kept %v %v", a, d)
			}
		}
		if len(r.PeerRTTs) > MaxOtherLandmarks+1 {
			t.Fatalf("%d peer rows", len(r.PeerRTTs))
		}
		for from, row := range r.PeerRTTs {
			if len(row) > MaxOtherLandmarks+1 {
				t.Fatalf("%d entries in %q's row", len(row), from)
			}
			for to, d := range row {
				if d <= 0 || to == from {
					t.Fatalf("kept %s -> %s %v", from, to, d)
				}
			}
		}
	})
}

// A master naming more than MaxOtherLandmarks other ids gets the rest
// counted as garbled, not kept.
func TestSession_OtherLandmarksBounded(t *testing.T) {
	s := listedSession(t, 0, 10*time.Millisecond)
	for i := range MaxOtherLandmarks + 3 {
		s.receive(at(11*time.Millisecond), masterA, landmarkPacket(t, fmt.Sprintf("lm-%d", i), q3.LandmarkEntry{Addr: srv(1), RTT: time.Millisecond}))
	}
	r := s.masters[0].rep
	if r.Landmark != "lm-0" || len(r.OtherLandmarks) != MaxOtherLandmarks || r.Garbled != 2 {
		t.Errorf("own %q, %d others, %d garbled", r.Landmark, len(r.OtherLandmarks), r.Garbled)
	}
}

// A fleet instance that has measured none of the listed servers sends its
// own run first as its id alone, then a peer's: the client files the
// peer's RTTs under the peer and keeps the instance's id as the master's
// own (the landmark its RTT to the master belongs to), with no RTTs.
func TestSession_LandmarksEmptyOwnRun(t *testing.T) {
	s := listedSession(t, 0, 20*time.Millisecond)
	s.receive(at(21*time.Millisecond), masterA, landmarkPacket(t, "fra-1"))
	s.receive(at(21*time.Millisecond), masterA, landmarkPacket(t, "nyc-1", q3.LandmarkEntry{Addr: srv(1), RTT: 90 * time.Millisecond}))
	r := s.masters[0].rep
	if r.Landmark != "fra-1" || len(r.LandmarkRTTs) != 0 || r.LandmarkPackets != 2 || r.Garbled != 0 ||
		len(r.OtherLandmarks) != 1 || r.OtherLandmarks["nyc-1"][srv(1)] != 90*time.Millisecond || r.RTT != 20*time.Millisecond {
		t.Errorf("report %+v", r)
	}
}

// The landmark runs after the list keep it open: each comes within
// EndGrace of the one before, the last 2.5 EndGrace after the end marker
// (a slow access link), and all are in the master's report; before, the
// list closed EndGrace after its end marker without the late ones.
func TestSession_LandmarksExtendEndGrace(t *testing.T) {
	cfg := Config{Landmarks: true, Masters: []Master{{Name: "A", Addr: masterA, Request: extRequest(t)}}}
	s := newSession(cfg, t0)
	for _, o := range s.poll(t0) {
		s.wrote(t0, o, nil)
	}
	list, _ := q3.ServersResponse{Ext: true, Servers: []netip.AddrPort{srv(1)}, End: q3.EndEOT}.AppendBinary(nil)
	end := 20 * time.Millisecond
	s.receive(at(end), masterA, list)
	for i, id := range []string{"fra-1", "nyc-1", "tyo-1"} {
		now := at(end + time.Duration(i+1)*EndGrace*5/6)
		s.poll(now)
		s.receive(now, masterA, landmarkPacket(t, id, q3.LandmarkEntry{Addr: srv(1), RTT: time.Duration(i+1) * time.Millisecond}))
	}
	last := end + 3*EndGrace*5/6
	s.poll(at(last + EndGrace - time.Millisecond))
	if s.masters[0].done {
		t.Fatalf("list closed within EndGrace of the last landmark packet: %+v", s.masters[0].rep)
	}
	s.poll(at(last + EndGrace))
	var done *MasterDone
	for _, e := range s.events {
		if d, ok := e.(MasterDone); ok {
			done = &d
		}
	}
	if done == nil || done.End != EndMarker || done.Landmark != "fra-1" || len(done.OtherLandmarks) != 2 || done.LandmarkPackets != 3 {
		t.Fatalf("master done %+v; want fra-1's run and two others", done)
	}
}

// The landmarks' RTTs to each other are kept by the measuring landmark,
// its own row and a fleet peer's alike; a master past the bound on rows
// gets the rest refused as garbled.
func TestSession_LandmarkPeerRTTs(t *testing.T) {
	s := listedSession(t, 0, 20*time.Millisecond)
	s.receive(at(21*time.Millisecond), masterA, landmarkPacket(t, "fra-1", q3.LandmarkEntry{Addr: srv(1), RTT: 9 * time.Millisecond}))
	row := func(id string, es ...q3.LandmarkPeerEntry) []byte {
		p, err := q3.EncodeLandmarkPeersResponses(id, es, 0)
		if err != nil || len(p) != 1 {
			t.Fatal(p, err)
		}
		return p[0]
	}
	s.receive(at(22*time.Millisecond), masterA, row("fra-1", q3.LandmarkPeerEntry{Peer: "nyc-1", RTT: 75 * time.Millisecond}, q3.LandmarkPeerEntry{Peer: "tyo-1", RTT: 230 * time.Millisecond}))
	s.receive(at(22*time.Millisecond), masterA, row("nyc-1", q3.LandmarkPeerEntry{Peer: "fra-1", RTT: 76 * time.Millisecond}))
	for i := range MaxOtherLandmarks + 2 {
		s.receive(at(23*time.Millisecond), masterA, row(fmt.Sprintf("x-%d", i), q3.LandmarkPeerEntry{Peer: "fra-1", RTT: time.Millisecond}))
	}
	r := s.masters[0].rep
	if r.PeerRTTs["fra-1"]["nyc-1"] != 75*time.Millisecond || r.PeerRTTs["fra-1"]["tyo-1"] != 230*time.Millisecond ||
		r.PeerRTTs["nyc-1"]["fra-1"] != 76*time.Millisecond || len(r.PeerRTTs) != MaxOtherLandmarks+1 || r.Garbled != 3 || r.Landmark != "fra-1" {
		t.Errorf("%d rows, garbled %d: %v", len(r.PeerRTTs), r.Garbled, r.PeerRTTs["fra-1"])
	}
}

// listedSession is a landmark session (with pings pings after the list)
// whose master A listed srv(1), its end marker at listAt.
func listedSession(t *testing.T, pings int, listAt time.Duration) *session {
	t.Helper()
	cfg := Config{Landmarks: true, LandmarkPings: pings, Masters: []Master{{Name: "A", Addr: masterA, Request: extRequest(t)}}}
	s := newSession(cfg, t0)
	for _, o := range s.poll(t0) {
		s.wrote(t0, o, nil)
	}
	list, _ := q3.ServersResponse{Ext: true, Servers: []netip.AddrPort{srv(1)}, End: q3.EndEOT}.AppendBinary(nil)
	s.receive(at(listAt), masterA, list)
	return s
}
