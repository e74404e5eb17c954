package master

import (
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// The landmark extension (the wire format is q3's, see
// q3.LandmarksKeyword). A master with HandlerDeps.Landmark set answers a
// getserversExt that carries the word "landmarks" with its list, then
// with getserversLandmarksResponse packets: its RTT (Server.RTT, the
// median of the last RTTSamples) to each server of that list it has
// measured, and the measurement's age (one packet with its id alone if it
// has measured none of them: its run always comes first, so that a client
// never takes a peer's id for this master's); then, in a fleet, one run of
// packets per other landmark whose RTTs it holds (peers.go), each under
// that landmark's id, so that a client asking any one instance gets every
// landmark's RTTs. Never to a query without the word (old clients never
// see one), never to the short getservers form, never without the list
// itself: the list's bytes and then these are reserved from the response
// rate limiter and the byte budget like any reply (all or nothing), so
// the extension adds at most about 1.6 times the list's bytes per
// landmark (11 bytes an IPv4 entry against 7) and only within the
// limiter's bounds.
//
// The RTTs are read from the registry under its lock for each such query
// (not cached per snapshot: they change on every verified check without
// the listing changing); the cost is one pass over the listed servers.

// landmarkRun is one landmark's RTTs to the servers of a list.
type landmarkRun struct {
	id      string
	entries []q3.LandmarkEntry
}

// landmarkEntries returns the RTTs to the servers that f selects at now,
// by their published address: this master's (as self, always first, empty
// if it has measured none), then each other landmark's it holds.
func (r *Registry) landmarkEntries(now time.Time, f filter, self string) []landmarkRun {
	snap := r.current(now)
	list := snap.appendMatching(f, 0, nil)
	if len(list) == 0 {
		return nil
	}
	want := make(map[netip.AddrPort]struct{}, len(list))
	for _, a := range list {
		want[a] = struct{}{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	runs := make([]landmarkRun, 1+len(r.landmarks))
	runs[0].id = self
	for i, id := range r.landmarks {
		runs[1+i].id = id
	}
	for _, e := range r.servers {
		if !e.Listed {
			continue
		}
		pub, _ := r.conf().AddrMap.Map(e.Addr)
		if _, ok := want[pub]; !ok {
			continue
		}
		if e.rtt.n > 0 {
			runs[0].entries = append(runs[0].entries, q3.LandmarkEntry{Addr: pub, RTT: e.rtt.median(), Age: max(0, now.Sub(e.rtt.at.Time()))})
		}
		for _, p := range r.peers[keyOf(e.Addr)] {
			runs[1+p.lm].entries = append(runs[1+p.lm].entries,
				q3.LandmarkEntry{Addr: pub, RTT: time.Duration(p.rtt) * RTTUnit, Age: max(0, now.Sub(p.at.Time()))})
		}
	}
	// This master's own run always goes, first, even with no entries: a
	// client takes the first id as the master's (q3's wire format). A
	// peer's goes if it has entries and is not under this master's name.
	out := runs[:1]
	for _, run := range runs[1:] {
		if len(run.entries) > 0 && run.id != self {
			out = append(out, run)
		}
	}
	return out
}

// lmAsk is what a list query asks after the list: nothing, the landmark
// runs, and with them the landmarks' RTTs to each other.
type lmAsk uint8

const (
	lmRuns  lmAsk = 1 << iota // q3.LandmarksKeyword
	lmPeers                   // q3.LandmarkPeersKeyword too
)

// landmarkPing is the datagram of a ping to another landmark (mesh.go).
var landmarkPing = q3.LandmarkPing()

// sendLandmarks appends the landmark packets for the list f selects, and
// with peers the landmarks' RTTs to each other (this master's row, then
// the others' it holds: mesh.go), reserved from the response limiter and
// the budget, all or nothing.
func (h *Handler) sendLandmarks(now time.Time, to netip.AddrPort, f filter, peers bool, lane replyLane, dst []Outgoing) []Outgoing {
	var outs []Outgoing
	for _, run := range h.reg.landmarkEntries(now, f, h.deps.Landmark) {
		pkts, err := q3.EncodeLandmarksResponses(run.id, run.entries, h.conf().MaxPacketBytes)
		if err != nil {
			h.log.Error("encoding landmark RTTs", "landmark", run.id, "err", err)
			continue
		}
		for _, p := range pkts {
			outs = append(outs, Outgoing{To: to, Kind: KindLandmarksResponse, Payload: p})
		}
	}
	if peers {
		outs = h.appendPeerRows(now, to, outs)
	}
	if len(outs) == 0 {
		return dst
	}
	return h.send(now, to, h.deps.Responses, lane, dst, outs...)
}

// appendPeerRows appends the getserversLandmarkPeersResponse packets to
// to: this master's RTTs to the other landmarks, then each other
// landmark's own (a fleet's), as measured at now.
func (h *Handler) appendPeerRows(now time.Time, to netip.AddrPort, outs []Outgoing) []Outgoing {
	rows := append([]MeshRow{{Landmark: h.deps.Landmark, RTTs: h.reg.mesh.Own()}}, h.reg.mesh.Rows()...)
	for i, row := range rows {
		if i > 0 && row.Landmark == h.deps.Landmark {
			continue
		}
		es := make([]q3.LandmarkPeerEntry, 0, len(row.RTTs))
		for _, e := range row.RTTs {
			es = append(es, q3.LandmarkPeerEntry{Peer: e.Landmark, RTT: e.RTT, Age: max(0, now.Sub(e.Measured))})
		}
		pkts, err := q3.EncodeLandmarkPeersResponses(row.Landmark, es, h.conf().MaxPacketBytes)
		if err != nil {
			h.log.Error("encoding landmark peer RTTs", "landmark", row.Landmark, "err", err)
			continue
		}
		for _, p := range pkts {
			outs = append(outs, Outgoing{To: to, Kind: KindLandmarkPeersResponse, Payload: p})
		}
	}
	return outs
}
