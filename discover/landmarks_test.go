package discover

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/q3"
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
		if asked := bytes.HasSuffix(bytes.TrimRight(out[0].b, "\n"), []byte(" landmarks")); asked != on {
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
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		const maxServers, maxPackets = 8, 6
		cfg := Config{Landmarks: true, MaxServers: maxServers, MaxPackets: maxPackets,
			Masters: []Master{{Name: "A", Addr: masterA, Request: extRequest(t)}}}
		s := newSession(cfg, t0)
		for _, o := range s.poll(t0) {
			s.wrote(t0, o, nil)
		}
		pkt := append([]byte(q3.Prefix+q3.LandmarksResponseCommand), body...)
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
	})
}

// A master naming more than MaxOtherLandmarks other ids gets the rest
// counted as garbled, not kept.
func TestSession_OtherLandmarksBounded(t *testing.T) {
	cfg := Config{Landmarks: true, Masters: []Master{{Name: "A", Addr: masterA, Request: extRequest(t)}}}
	s := newSession(cfg, t0)
	for _, o := range s.poll(t0) {
		s.wrote(t0, o, nil)
	}
	list, _ := q3.ServersResponse{Ext: true, Servers: []netip.AddrPort{srv(1)}, End: q3.EndEOT}.AppendBinary(nil)
	s.receive(at(10*time.Millisecond), masterA, list)
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
	cfg := Config{Landmarks: true, Masters: []Master{{Name: "A", Addr: masterA, Request: extRequest(t)}}}
	s := newSession(cfg, t0)
	for _, o := range s.poll(t0) {
		s.wrote(t0, o, nil)
	}
	list, _ := q3.ServersResponse{Ext: true, Servers: []netip.AddrPort{srv(1)}, End: q3.EndEOT}.AppendBinary(nil)
	s.receive(at(20*time.Millisecond), masterA, list)
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
