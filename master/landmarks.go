package master

import (
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/q3"
)

// The landmark extension (issue 13; the wire format is q3's, see
// q3.LandmarksKeyword). A master with HandlerConfig.Landmark set answers a
// getserversExt that carries the word "landmarks" with its list, then
// with getserversLandmarksResponse packets: its RTT (Server.RTT, the
// median of the last RTTSamples) to each server of that list it has
// measured, and the measurement's age. Never to a query without the word
// (old clients never see one), never to the short getservers form, never
// without the list itself: the list's bytes and then these are reserved
// from the response rate limiter and the byte budget like any reply
// (all or nothing), so the extension adds at most about 1.6 times the
// list's bytes (11 bytes an IPv4 entry against 7) and only within the
// limiter's bounds.
//
// The RTTs are read from the registry under its lock for each such query
// (not cached per snapshot: they change on every verified check without
// the listing changing); the cost is one pass over the listed servers.

// landmarkEntries returns the RTTs of the servers that f selects at now,
// by their published address, for those this master has measured.
func (r *Registry) landmarkEntries(now time.Time, f filter) []q3.LandmarkEntry {
	snap := r.current(now)
	list := snap.appendMatching(f, 0, nil)
	if len(list) == 0 {
		return nil
	}
	want := make(map[netip.AddrPort]struct{}, len(list))
	for _, a := range list {
		want[a] = struct{}{}
	}
	out := make([]q3.LandmarkEntry, 0, len(list))
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.servers {
		if !e.Listed || e.rtt.n == 0 {
			continue
		}
		pub, _ := r.cfg.AddrMap.Map(e.Addr)
		if _, ok := want[pub]; !ok {
			continue
		}
		out = append(out, q3.LandmarkEntry{Addr: pub, RTT: e.rtt.median(), Age: max(0, now.Sub(e.rtt.at.Time()))})
	}
	return out
}

// sendLandmarks appends the landmark packets for the list f selects,
// reserved from the response limiter and the budget, all or nothing.
func (h *Handler) sendLandmarks(now time.Time, to netip.AddrPort, f filter, dst []Outgoing) []Outgoing {
	entries := h.reg.landmarkEntries(now, f)
	if len(entries) == 0 {
		return dst
	}
	pkts, err := q3.EncodeLandmarksResponses(h.cfg.Landmark, entries, h.cfg.MaxPacketBytes)
	if err != nil {
		h.log.Error("encoding landmark RTTs", "err", err)
		return dst
	}
	outs := make([]Outgoing, len(pkts))
	for i, p := range pkts {
		outs[i] = Outgoing{To: to, Kind: KindLandmarksResponse, Payload: p}
	}
	return h.send(now, to, h.cfg.Responses, dst, outs...)
}
