package master

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// The landmarks' RTTs to each other. A client repairs the
// landmark vectors through the landmarks' RTTs to each other
// (landmark.Repair); a landmark master measures its own to the other
// landmark masters it knows, its peers: a fleet's other live landmarks
// (their addresses come with their descriptions, package fleet) or the
// ones its operator names (scout master --landmark-peer). It pings each
// with q3.LandmarkPing (the empty-list query every master answers with
// one 29-byte packet) every LandmarkPingInterval, from its own socket,
// and keeps the last RTTSamples round trips of each: the row it
// publishes is their median and when the last was taken (Own), as for
// its RTTs to servers. A reply is taken only from the peer's address,
// for a ping in flight, within LandmarkPingTimeout; anything else from
// there is dropped as before. The ping carries no nonce (every master
// must answer it), so a reply from a peer's address with no ping in
// flight (late, doubled, or spoofed to shorten the RTT) makes the peer's
// samples suspect: the sample taken just before it, within the wait, is
// undone (it may have been the spoofed reply, and this the real one),
// and no sample is taken while such replies came within the last
// interval and wait. A blind flood of spoofed replies, which must land
// in a window of one RTT every interval, so leaves the peer's RTT
// unmeasured (stale) instead of short. In a fleet the other instances' rows come
// with their descriptions (SetRows) and are published after this
// master's own: in the JSON API (/api/v1/landmarks, each landmark's
// "rtts") and, to a getserversExt that asks with both
// q3.LandmarksKeyword and q3.LandmarkPeersKeyword, in
// getserversLandmarkPeersResponse packets after the landmark runs,
// reserved with them from the response limiter and the budget.
//
// Pure: every method takes now; Mesh owns no socket. It is safe for
// concurrent use.

const (
	// DefaultLandmarkPingInterval is how often a landmark master pings
	// each peer.
	DefaultLandmarkPingInterval = 30 * time.Second
	// LandmarkPingTimeout is how long a ping waits for its reply (at most
	// the interval).
	LandmarkPingTimeout = 2 * time.Second
)

// LandmarkPeer is another landmark master: its landmark id and where it
// answers queries.
type LandmarkPeer struct {
	ID   string
	Addr netip.AddrPort
}

// MeshRow is one landmark's RTTs to the other landmarks, as published.
type MeshRow struct {
	Landmark string
	RTTs     []LandmarkRTT
}

// meshPeer is a peer and what this master measured of it.
type meshPeer struct {
	LandmarkPeer
	ring   rttRing
	next   time.Time // next ping
	sentAt time.Time // the ping in flight; zero if none
	stray  time.Time // the last reply with no ping in flight; zero if none
	prev   rttRing   // ring before the last sample, to undo it
	tookAt time.Time // when the last sample was taken; zero once undone
}

// Mesh is a landmark master's view of the other landmark masters (see
// above). The zero value has no peers; Registry holds one (Registry.Mesh).
type Mesh struct {
	interval time.Duration

	mu    sync.Mutex
	peers []*meshPeer
	rows  []MeshRow // the other landmarks' own rows (a fleet's)
	pings uint64    // pings handed out
	pongs uint64    // replies taken as samples
	stray uint64    // replies with no ping in flight
	spurn uint64    // samples refused or undone because of them
}

// carriedID reports whether the landmark extension can carry id.
func carriedID(id string) bool {
	_, err := q3.EncodeLandmarksResponses(id, nil, 0)
	return err == nil
}

// usablePeer reports whether p can be pinged and published: an id the
// extension can carry and a unicast address with a port.
func usablePeer(p LandmarkPeer) bool {
	a := p.Addr.Addr()
	return carriedID(p.ID) && p.Addr.IsValid() && p.Addr.Port() != 0 && !a.IsUnspecified() && !a.IsMulticast()
}

// SetPeers makes peers the landmarks this master pings, at most
// MaxLandmarks, in id order; a peer that stays (same id and address)
// keeps its samples and schedule, a new one is pinged at the next Tick.
// It returns how many it kept: a peer whose id the extension cannot
// carry, whose address cannot be pinged, or whose id came before is
// left out.
func (m *Mesh) SetPeers(now time.Time, peers []LandmarkPeer) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*meshPeer
	for _, p := range peers {
		p.Addr = netip.AddrPortFrom(p.Addr.Addr().Unmap(), p.Addr.Port())
		if len(out) >= MaxLandmarks || !usablePeer(p) || slices.ContainsFunc(out, func(q *meshPeer) bool { return q.ID == p.ID }) {
			continue
		}
		i := slices.IndexFunc(m.peers, func(q *meshPeer) bool { return q.LandmarkPeer == p })
		if i >= 0 {
			out = append(out, m.peers[i])
			continue
		}
		out = append(out, &meshPeer{LandmarkPeer: p, next: now})
	}
	slices.SortFunc(out, func(a, b *meshPeer) int { return strings.Compare(a.ID, b.ID) })
	m.peers = out
	return len(out)
}

// Peers returns the landmarks this master pings, in id order.
func (m *Mesh) Peers() []LandmarkPeer {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]LandmarkPeer, len(m.peers))
	for i, p := range m.peers {
		out[i] = p.LandmarkPeer
	}
	return out
}

func (m *Mesh) every() time.Duration {
	if m.interval > 0 {
		return m.interval
	}
	return DefaultLandmarkPingInterval
}

// due returns the peers to ping at now and marks their pings in flight.
// A ping unanswered after LandmarkPingTimeout (or the interval, if
// shorter) is given up.
func (m *Mesh) due(now time.Time) []netip.AddrPort {
	m.mu.Lock()
	defer m.mu.Unlock()
	wait := min(LandmarkPingTimeout, m.every())
	var out []netip.AddrPort
	for _, p := range m.peers {
		if !p.sentAt.IsZero() && !now.Before(p.sentAt.Add(wait)) {
			p.sentAt = time.Time{} // lost
		}
		if p.sentAt.IsZero() && !now.Before(p.next) {
			p.sentAt, p.next = now, now.Add(m.every())
			out = append(out, p.Addr)
			m.pings++
		}
	}
	return out
}

// pong takes a ping's reply from from at now, and reports whether it was
// one: from a peer with a ping in flight, within its wait. A reply from a
// peer with none in flight is not one, and makes the peer's samples
// suspect (see above).
func (m *Mesh) pong(now time.Time, from netip.AddrPort) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	wait := min(LandmarkPingTimeout, m.every())
	var idle *meshPeer
	for _, p := range m.peers {
		if p.Addr != from {
			continue
		}
		if p.sentAt.IsZero() {
			idle = cmp.Or(idle, p)
			continue
		}
		d := now.Sub(p.sentAt)
		p.sentAt = time.Time{}
		if d < 0 || d > wait {
			return false
		}
		if !p.stray.IsZero() && now.Sub(p.stray) < m.every()+wait {
			m.spurn++
			return true
		}
		p.prev = p.ring
		p.ring.add(now, d)
		p.tookAt = now
		m.pongs++
		return true
	}
	if idle != nil {
		idle.stray = now
		m.stray++
		if !idle.tookAt.IsZero() && now.Sub(idle.tookAt) <= wait {
			idle.ring, idle.tookAt = idle.prev, time.Time{}
			m.spurn++
		}
	}
	return false
}

// Own returns this master's RTTs to its peers: the median of each one's
// last RTTSamples and when the last was taken, in id order; peers not
// measured yet are left out.
func (m *Mesh) Own() []LandmarkRTT {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []LandmarkRTT
	for _, p := range m.peers {
		if p.ring.n > 0 {
			out = append(out, LandmarkRTT{Landmark: p.ID, RTT: p.ring.median(), Measured: p.ring.at.Time()})
		}
	}
	return out
}

// SetRows keeps the other landmarks' own rows (a fleet's instances', as
// their descriptions last gave them), at most MaxLandmarks rows of at
// most MaxLandmarks entries each, in landmark order; entries the
// extension cannot carry are left out.
func (m *Mesh) SetRows(rows []MeshRow) {
	var out []MeshRow
	for _, r := range rows {
		if len(out) >= MaxLandmarks || !carriedID(r.Landmark) {
			continue
		}
		var rtts []LandmarkRTT
		for _, e := range r.RTTs {
			if len(rtts) < MaxLandmarks && e.RTT > 0 && e.RTT <= MaxRTT && carriedID(e.Landmark) {
				rtts = append(rtts, e)
			}
		}
		if len(rtts) > 0 {
			out = append(out, MeshRow{Landmark: r.Landmark, RTTs: rtts})
		}
	}
	slices.SortFunc(out, func(a, b MeshRow) int { return strings.Compare(a.Landmark, b.Landmark) })
	m.mu.Lock()
	m.rows = out
	m.mu.Unlock()
}

// Rows returns the other landmarks' rows SetRows kept.
func (m *Mesh) Rows() []MeshRow {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.rows)
}

// Counts returns the pings handed out and the replies taken as samples.
func (m *Mesh) Counts() (pings, pongs uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pings, m.pongs
}

// Strays returns the replies from peers with no ping in flight, and the
// samples refused or undone because of them.
func (m *Mesh) Strays() (replies, spurned uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stray, m.spurn
}

// Mesh returns the registry's view of the other landmark masters.
func (r *Registry) Mesh() *Mesh { return &r.mesh }
