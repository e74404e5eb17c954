package discover

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/scout-discovery/scout/q3"
)

// Landmarks (issue 13). With Config.Landmarks, every getserversExt asks
// for the master's RTTs to the servers it lists (the word
// q3.LandmarksKeyword; a master that does not know it ignores it) and the
// getserversLandmarksResponse packets a landmark master sends after its
// list are kept in its MasterReport: the landmark's id and its RTT to each
// server. MasterReport.RTT is the client's own round trip to the master:
// the last query to the first packet of its reply. A landmark packet that
// does not parse counts as garbled; its entries are bounded like the
// list's (Config.MaxServers), and a packet naming another landmark than
// the master's first is refused.

// landmarkHeader starts a getserversLandmarksResponse.
var landmarkHeader = []byte(q3.Prefix + q3.LandmarksResponseCommand)

// withLandmarks returns the query packets of r asking for landmark RTTs
// too: the keyword added to each getserversExt form.
func (r *Request) withLandmarks() Request {
	if r.Protocol != ProtocolQ3 || !r.Q3.Ext {
		return *r
	}
	c := *r
	add := func(g q3.GetServers) q3.GetServers {
		if !slices.Contains(g.Other, q3.LandmarksKeyword) {
			g.Other = append(slices.Clip(g.Other), q3.LandmarksKeyword)
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
	if !s.cfg.Landmarks || m.Protocol != ProtocolQ3 || !bytes.HasPrefix(b, landmarkHeader) {
		return false
	}
	r, err := q3.ParseLandmarksResponse(b)
	if err == nil && m.rep.Landmark != "" && r.Landmark != m.rep.Landmark {
		err = fmt.Errorf("landmark %q after %q from the same master", r.Landmark, m.rep.Landmark)
	}
	if err != nil {
		m.rep.Garbled++
		m.lastErr = err
		return true
	}
	m.rep.Landmark = r.Landmark
	m.rep.LandmarkPackets++
	if m.rep.LandmarkRTTs == nil {
		m.rep.LandmarkRTTs = map[netip.AddrPort]time.Duration{}
	}
	max := s.cfg.maxServers(m.Protocol)
	for _, e := range r.Entries {
		if len(m.rep.LandmarkRTTs) >= max {
			break
		}
		m.rep.LandmarkRTTs[netip.AddrPortFrom(e.Addr.Addr().Unmap(), e.Addr.Port())] = e.RTT
	}
	return true
}
