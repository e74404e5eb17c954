package master

import (
	"net/netip"
	"slices"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// Other landmarks' RTTs (a fleet's instances are landmarks). In
// a fleet each instance measures its own RTT to the servers it verifies
// (rtt.go) and the fleet shares them (package fleet): a peer's sample is
// applied here with ApplyLandmarkRTT, kept per server and per landmark
// (the peer's median and when it was taken, 16 bytes; with the map, 112 B
// of live heap per server with two other landmarks:
// BenchmarkRegistry_PeerRTTBytesPerServer), published with the
// server (Server.Landmarks, and the landmark extension's packets, one run
// per landmark: landmarks.go) and dropped with the server. At most
// MaxLandmarks other landmarks are kept; ForgetLandmarks drops those that
// left the fleet.

// MaxLandmarks bounds the other landmarks whose RTTs a registry keeps: a
// sample from one more is refused until one is forgotten.
const MaxLandmarks = 32

// LandmarkRTT is one landmark's RTT to a server: the median of that
// landmark's last RTTSamples, and when the last was taken.
type LandmarkRTT struct {
	Landmark string
	RTT      time.Duration
	Measured time.Time
}

// peerRTT is one other landmark's sample of a server.
type peerRTT struct {
	at  stamp
	lm  uint16 // index in Registry.landmarks
	rtt uint16 // RTTUnit
}

// ApplyLandmarkRTT keeps landmark's RTT rtt to the listed server a,
// measured at (the last sample's time), unless an older or equal one
// replaces a newer. It refuses (false) a server not listed here, an RTT
// outside (0, MaxRTT], a landmark name the extension cannot carry
// (q3.LandmarksResponse), and a new landmark beyond MaxLandmarks.
func (r *Registry) ApplyLandmarkRTT(a netip.AddrPort, landmark string, rtt time.Duration, at time.Time) bool {
	if landmark == "" || rtt <= 0 || rtt > MaxRTT || at.IsZero() {
		return false
	}
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	u := uint16(max(1, min(65535, (rtt+RTTUnit/2)/RTTUnit)))
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.servers[keyOf(a)]; !ok || !e.Listed {
		return false
	}
	k := slices.Index(r.landmarks, landmark)
	if k < 0 {
		if len(r.landmarks) >= MaxLandmarks {
			return false
		}
		if _, err := q3.EncodeLandmarksResponses(landmark, nil, 0); err != nil {
			return false // a name the extension cannot carry
		}
		k = len(r.landmarks)
		r.landmarks = append(r.landmarks, landmark)
	}
	if r.peers == nil {
		r.peers = make(map[serverKey][]peerRTT)
	}
	key := keyOf(a)
	ps := r.peers[key]
	for i := range ps {
		if int(ps[i].lm) == k {
			if ps[i].at >= stampOf(at) {
				return false
			}
			ps[i].at, ps[i].rtt = stampOf(at), u
			return true
		}
	}
	r.peers[key] = append(ps, peerRTT{at: stampOf(at), lm: uint16(k), rtt: u})
	return true
}

// ForgetLandmarks drops the RTTs of every other landmark for which keep
// is false (those that left the fleet), so that their names free their
// places among MaxLandmarks.
func (r *Registry) ForgetLandmarks(keep func(landmark string) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []bool
	for i, id := range r.landmarks {
		if !keep(id) {
			if gone == nil {
				gone = make([]bool, len(r.landmarks))
			}
			gone[i] = true
		}
	}
	if gone == nil {
		return
	}
	// Renumber the kept landmarks and drop the others' samples.
	index := make([]int, len(r.landmarks))
	var kept []string
	for i, id := range r.landmarks {
		index[i] = -1
		if !gone[i] {
			index[i] = len(kept)
			kept = append(kept, id)
		}
	}
	r.landmarks = kept
	for a, ps := range r.peers {
		out := ps[:0]
		for _, p := range ps {
			if j := index[p.lm]; j >= 0 {
				p.lm = uint16(j)
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			delete(r.peers, a)
		} else {
			r.peers[a] = out
		}
	}
}

// Landmarks returns the other landmarks whose RTTs the registry holds.
func (r *Registry) Landmarks() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.landmarks)
}

// peerRTTsLocked returns the other landmarks' RTTs to a, nil if none.
func (r *Registry) peerRTTsLocked(a netip.AddrPort) []LandmarkRTT {
	ps := r.peers[keyOf(a)]
	if len(ps) == 0 {
		return nil
	}
	out := make([]LandmarkRTT, len(ps))
	for i, p := range ps {
		out[i] = LandmarkRTT{Landmark: r.landmarks[p.lm], RTT: time.Duration(p.rtt) * RTTUnit, Measured: p.at.Time()}
	}
	return out
}
