package discover

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// Landmarks. With Config.Landmarks, every getserversExt asks
// for the master's RTTs to the servers it lists (the word
// q3.LandmarksKeyword; a master that does not know it ignores it) and the
// getserversLandmarksResponse packets a landmark master sends after its
// list are kept in its MasterReport: the landmark's id and its RTT to each
// server. MasterReport.RTT is the client's own round trip to the master:
// the last query to the first packet of its reply. The first id a master
// sends is taken as its own (a master sends its own run first, as its id
// alone when it has measured none of the listed servers: q3's wire
// format; a packet with no entries is kept as such); a fleet
// instance then sends the other instances' runs under their ids, kept in
// MasterReport.OtherLandmarks (at most MaxOtherLandmarks ids). A landmark
// packet that does not parse counts as garbled, as does one naming an id
// past that bound; the entries of each id are bounded like the list's
// (Config.MaxServers).
//
// The query also carries q3.LandmarkPeersKeyword: a landmark master that
// measures its RTTs to the other landmark masters sends them after its
// runs (getserversLandmarkPeersResponse: its own row, then, in a fleet,
// the other instances'), kept in MasterReport.PeerRTTs by the measuring
// landmark's id, at most MaxOtherLandmarks+1 rows of MaxOtherLandmarks+1
// entries (a packet past those bounds counts as garbled). A master that
// does not know the word ignores it.

// landmarkHeader starts a getserversLandmarksResponse, peersHeader a
// getserversLandmarkPeersResponse.
var (
	landmarkHeader = []byte(q3.Prefix + q3.LandmarksResponseCommand)
	peersHeader    = []byte(q3.Prefix + q3.LandmarkPeersResponseCommand)
)

// withLandmarks returns the query packets of r asking for landmark RTTs
// too: the keyword added to each getserversExt form.
func (r *Request) withLandmarks() Request {
	if r.Protocol != ProtocolQ3 || !r.Q3.Ext {
		return *r
	}
	c := *r
	add := func(g q3.GetServers) q3.GetServers {
		for _, w := range []string{q3.LandmarksKeyword, q3.LandmarkPeersKeyword} {
			if !slices.Contains(g.Other, w) {
				g.Other = append(slices.Clip(g.Other), w)
			}
		}
		return g
	}
	c.Q3 = add(c.Q3)
	c.Q3Also = make([]q3.GetServers, len(r.Q3Also))
	for i, g := range r.Q3Also {
		c.Q3Also[i] = add(g)
	}
	return c
}

// receiveLandmarks handles a landmark packet from m; it reports whether b
// was one.
func (s *session) receiveLandmarks(now time.Time, m *collecting, b []byte) bool {
	if !s.cfg.Landmarks || m.Protocol != ProtocolQ3 {
		return false
	}
	if bytes.HasPrefix(b, peersHeader) {
		if err := m.peerRow(b); err != nil {
			m.rep.Garbled++
			m.lastErr = err
		} else {
			m.rep.LandmarkPackets++
		}
		return true
	}
	if !bytes.HasPrefix(b, landmarkHeader) {
		return false
	}
	r, err := q3.ParseLandmarksResponse(b)
	var rtts map[netip.AddrPort]time.Duration
	if err == nil {
		rtts, err = m.landmarkRun(r.Landmark)
	}
	if err != nil {
		m.rep.Garbled++
		m.lastErr = err
		return true
	}
	m.rep.LandmarkPackets++
	max := s.cfg.maxServers(m.Protocol)
	for _, e := range r.Entries {
		if len(rtts) >= max {
			break
		}
		rtts[netip.AddrPortFrom(e.Addr.Addr().Unmap(), e.Addr.Port())] = e.RTT
	}
	return true
}

// MaxOtherLandmarks bounds the other landmarks' ids a master's report
// keeps (master.MaxLandmarks is the fleet's own bound, 32).
const MaxOtherLandmarks = 64

// landmarkRun returns the map that landmark id's entries go to: the
// master's own (its first id) or another landmark's.
func (m *collecting) landmarkRun(id string) (map[netip.AddrPort]time.Duration, error) {
	if m.rep.Landmark == "" {
		m.rep.Landmark = id
	}
	if id == m.rep.Landmark {
		if m.rep.LandmarkRTTs == nil {
			m.rep.LandmarkRTTs = map[netip.AddrPort]time.Duration{}
		}
		return m.rep.LandmarkRTTs, nil
	}
	rtts, ok := m.rep.OtherLandmarks[id]
	if !ok {
		if len(m.rep.OtherLandmarks) >= MaxOtherLandmarks {
			return nil, fmt.Errorf("landmark %q: more than %d other landmarks from one master (discover.MaxOtherLandmarks)", id, MaxOtherLandmarks)
		}
		if m.rep.OtherLandmarks == nil {
			m.rep.OtherLandmarks = map[string]map[netip.AddrPort]time.Duration{}
		}
		rtts = map[netip.AddrPort]time.Duration{}
		m.rep.OtherLandmarks[id] = rtts
	}
	return rtts, nil
}

// peerRow keeps the landmark RTTs to each other of the packet b
// (getserversLandmarkPeersResponse) in m's report.
func (m *collecting) peerRow(b []byte) error {
	r, err := q3.ParseLandmarkPeersResponse(b)
	if err != nil {
		return err
	}
	row, ok := m.rep.PeerRTTs[r.Landmark]
	if !ok {
		if len(m.rep.PeerRTTs) > MaxOtherLandmarks {
			return fmt.Errorf("landmark %q: RTTs to the other landmarks from more than %d landmarks (discover.MaxOtherLandmarks+1)", r.Landmark, MaxOtherLandmarks+1)
		}
		if m.rep.PeerRTTs == nil {
			m.rep.PeerRTTs = map[string]map[string]time.Duration{}
		}
		row = map[string]time.Duration{}
		m.rep.PeerRTTs[r.Landmark] = row
	}
	for _, e := range r.Entries {
		if _, ok := row[e.Peer]; !ok && len(row) > MaxOtherLandmarks {
			return fmt.Errorf("landmark %q: RTTs to more than %d other landmarks (discover.MaxOtherLandmarks+1)", r.Landmark, MaxOtherLandmarks+1)
		}
		if e.Peer != r.Landmark {
			row[e.Peer] = e.RTT
		}
	}
	return nil
}
