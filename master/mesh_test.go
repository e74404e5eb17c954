package master

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// Two landmark masters ping each other through their handlers: A's Tick
// pings B, B answers with the empty list, A takes the reply 30 ms later as
// a sample; the median of the last three is A's published RTT to B, and a
// client that asks with both words gets it after the landmark runs.
func TestHandler_MeshPingsAndPublishes(t *testing.T) {
	aAddr, bAddr := ap("192.0.2.10:27950"), ap("192.0.2.20:27950")
	a := newHandlerFix(t, Config{LandmarkPingInterval: 10 * time.Second}, func(c *handlerSetup) { c.Landmark = "fra" })
	b := newHandlerFix(t, Config{}, func(c *handlerSetup) { c.Landmark = "nyc" })
	if n := a.h.Registry().Mesh().SetPeers(a.now, []LandmarkPeer{{ID: "nyc", Addr: bAddr}}); n != 1 {
		t.Fatalf("%d peers kept", n)
	}
	for i, rtt := range []time.Duration{30, 90, 31} {
		outs := a.h.Tick(a.now, nil)
		if len(outs) != 1 || outs[0].Kind != KindLandmarkPing || outs[0].To != bAddr || string(outs[0].Payload) != string(q3.LandmarkPing()) {
			t.Fatalf("tick %d: %+v, want one ping to B", i, outs)
		}
		b.now = a.now
		pong := b.in(aAddr, outs[0].Payload)
		if len(pong) != 1 || pong[0].To != aAddr {
			t.Fatalf("B answered %+v", pong)
		}
		if outs := a.h.Tick(a.now.Add(time.Second), nil); len(outs) != 0 {
			t.Fatalf("a second ping while one is in flight: %+v", outs)
		}
		a.now = a.now.Add(rtt * time.Millisecond)
		if out := a.in(bAddr, pong[0].Payload); len(out) != 0 {
			t.Fatalf("A answered the pong: %+v", out)
		}
		a.now = a.now.Add(10 * time.Second)
	}
	own := a.h.Registry().Mesh().Own()
	if len(own) != 1 || own[0].Landmark != "nyc" || own[0].RTT != 31*time.Millisecond {
		t.Fatalf("A's row %+v, want nyc at the median 31 ms", own)
	}
	if pings, pongs := a.h.Registry().Mesh().Counts(); pings != 3 || pongs != 3 {
		t.Errorf("pings %d, pongs %d", pings, pongs)
	}

	a.listAfter(t, ap("198.51.100.1:27960"), 12*time.Millisecond)
	client := ap("203.0.113.9:5000")
	var peerPkts []q3.LandmarkPeersResponse
	for _, o := range a.in(client, oob("getserversExt Quake3Arena 71 empty full landmarks landmarkpeers")) {
		if o.Kind == KindLandmarkPeersResponse {
			r, err := q3.ParseLandmarkPeersResponse(o.Payload)
			if err != nil {
				t.Fatal(err)
			}
			peerPkts = append(peerPkts, r)
		}
	}
	if len(peerPkts) != 1 || peerPkts[0].Landmark != "fra" || len(peerPkts[0].Entries) != 1 ||
		peerPkts[0].Entries[0].Peer != "nyc" || peerPkts[0].Entries[0].RTT != 31*time.Millisecond {
		t.Fatalf("peer packets %+v", peerPkts)
	}
	// An old client (landmarks alone), the short form, or no word: never.
	for _, req := range []string{"getserversExt Quake3Arena 71 empty full landmarks", "getserversExt Quake3Arena 71 empty full landmarkpeers",
		"getservers 71 empty full landmarks landmarkpeers"} {
		for _, o := range a.in(client, oob(req)) {
			if o.Kind == KindLandmarkPeersResponse {
				t.Errorf("%q got a peer packet", req)
			}
		}
	}
}

// A reply is a sample only from the peer's address, for a ping in
// flight, within its wait; a master that is no landmark never pings.
func TestHandler_MeshPongRules(t *testing.T) {
	bAddr := ap("192.0.2.20:27950")
	pong, _ := q3.ServersResponse{End: q3.EndEOT}.AppendBinary(nil)
	a := newHandlerFix(t, Config{}, func(c *handlerSetup) { c.Landmark = "fra" })
	m := a.h.Registry().Mesh()
	m.SetPeers(a.now, []LandmarkPeer{{ID: "nyc", Addr: bAddr}})
	a.in(bAddr, pong) // none in flight
	a.h.Tick(a.now, nil)
	a.now = a.now.Add(5 * time.Millisecond)
	a.in(ap("192.0.2.21:27950"), pong) // another address
	a.now = a.now.Add(LandmarkPingTimeout)
	a.in(bAddr, pong) // past its wait
	if own := m.Own(); len(own) != 0 {
		t.Fatalf("samples taken: %+v", own)
	}
	if got := a.h.Stats().Dropped(ReasonUnexpected); got != 3 {
		t.Errorf("%d dropped as unexpected, want the 3 replies", got)
	}
	// The lost ping is given up; the next goes at the next interval.
	if outs := a.h.Tick(a.now, nil); len(outs) != 0 {
		t.Errorf("pinged again before the interval: %+v", outs)
	}
	if outs := a.h.Tick(t0.Add(DefaultLandmarkPingInterval), nil); len(outs) != 1 {
		t.Errorf("at the interval: %+v", outs)
	}

	n := newHandlerFix(t, Config{}, nil)
	n.h.Registry().Mesh().SetPeers(n.now, []LandmarkPeer{{ID: "nyc", Addr: bAddr}})
	if outs := n.h.Tick(n.now, nil); len(outs) != 0 {
		t.Errorf("a master that is no landmark pinged: %+v", outs)
	}
}

// SetPeers keeps valid peers only, at most MaxLandmarks, in id order, a
// peer's samples while it stays, and SetRows bounds the others' rows.
func TestMesh_Bounds(t *testing.T) {
	var m Mesh
	var peers []LandmarkPeer
	for i := range MaxLandmarks + 5 {
		peers = append(peers, LandmarkPeer{ID: fmt.Sprintf("lm-%02d", i), Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)}), 27950)})
	}
	bad := []LandmarkPeer{{ID: "bad id", Addr: ap("192.0.2.200:1")}, {ID: "zero-port", Addr: ap("192.0.2.201:0")},
		{ID: "any", Addr: ap("0.0.0.0:27950")}, {ID: "lm-00", Addr: ap("192.0.2.202:1")}}
	if n := m.SetPeers(t0, append(bad, peers...)); n != MaxLandmarks {
		t.Fatalf("%d peers kept, want %d", n, MaxLandmarks)
	}
	// The first lm-00 (among the bad ones) is kept, the second left out.
	if got := m.Peers(); got[0] != (LandmarkPeer{ID: "lm-00", Addr: ap("192.0.2.202:1")}) || got[len(got)-1].ID != fmt.Sprintf("lm-%02d", MaxLandmarks-1) {
		t.Errorf("peers %v...%v", got[0], got[len(got)-1])
	}
	due := m.due(t0)
	m.pong(t0.Add(7*time.Millisecond), due[0])
	m.SetPeers(t0, m.Peers())
	if own := m.Own(); len(own) != 1 || own[0].RTT != 7*time.Millisecond {
		t.Errorf("samples across SetPeers: %+v", own)
	}
	var rows []MeshRow
	for i := range MaxLandmarks + 3 {
		r := MeshRow{Landmark: fmt.Sprintf("r-%02d", i)}
		for j := range MaxLandmarks + 3 {
			r.RTTs = append(r.RTTs, LandmarkRTT{Landmark: fmt.Sprintf("p-%02d", j), RTT: time.Millisecond, Measured: t0})
		}
		rows = append(rows, r)
	}
	rows = append(rows, MeshRow{Landmark: "bad id", RTTs: rows[0].RTTs}, MeshRow{Landmark: "neg", RTTs: []LandmarkRTT{{Landmark: "x", RTT: -1}}})
	m.SetRows(rows)
	got := m.Rows()
	if len(got) != MaxLandmarks {
		t.Fatalf("%d rows kept", len(got))
	}
	for _, r := range got {
		if len(r.RTTs) != MaxLandmarks || r.Landmark == "bad id" || r.Landmark == "neg" {
			t.Fatalf("row %s of %d", r.Landmark, len(r.RTTs))
		}
	}
}

// A reply from a peer with no ping in flight (late, doubled, or spoofed:
// the ping carries no nonce) makes its samples suspect: a spoofed reply
// that beat the real one is undone when the real one comes, and while
// such replies keep coming no sample is taken, so a flood leaves the
// peer's RTT unmeasured, not short. Once they stop for an interval and a
// wait, the next reply is a sample again.
func TestMesh_StrayRepliesLeaveTheRTTUnmeasured(t *testing.T) {
	peer := ap("192.0.2.20:27950")
	var m Mesh
	m.SetPeers(t0, []LandmarkPeer{{ID: "nyc", Addr: peer}})
	ping := func(at time.Time) {
		t.Helper()
		if due := m.due(at); len(due) != 1 || due[0] != peer {
			t.Fatalf("at %v: pings %v, want one to the peer", at.Sub(t0), due)
		}
	}
	// A spoofed reply 1 ms after the ping is taken, then undone by the
	// real one at 80 ms.
	ping(t0)
	if !m.pong(t0.Add(time.Millisecond), peer) {
		t.Fatal("the first reply to a ping in flight was not taken")
	}
	if m.pong(t0.Add(80*time.Millisecond), peer) {
		t.Error("a second reply to one ping was taken")
	}
	if own := m.Own(); len(own) != 0 {
		t.Errorf("the spoofed sample stayed: %+v", own)
	}
	// A flood: a spoofed reply every 100 ms. The pings' replies are
	// answers (not dropped as unexpected), but no sample.
	every := DefaultLandmarkPingInterval
	end := t0.Add(3 * every)
	for at := t0.Add(time.Second); at.Before(end); at = at.Add(100 * time.Millisecond) {
		if len(m.due(at)) > 0 {
			if !m.pong(at.Add(80*time.Millisecond), peer) {
				t.Fatalf("at %v: the reply to a ping in flight was not taken as one", at.Sub(t0))
			}
			continue
		}
		m.pong(at, peer)
	}
	if own := m.Own(); len(own) != 0 {
		t.Errorf("samples taken during the flood: %+v", own)
	}
	// Quiet for an interval and a wait: the next reply is a sample.
	at := end.Add(every + LandmarkPingTimeout)
	ping(at)
	m.pong(at.Add(80*time.Millisecond), peer)
	if own := m.Own(); len(own) != 1 || own[0].RTT != 80*time.Millisecond {
		t.Errorf("after the flood: %+v, want one sample of 80ms", own)
	}
	if replies, spurned := m.Strays(); replies < 500 || spurned < 3 {
		t.Errorf("%d stray replies, %d samples spurned", replies, spurned)
	}
}
