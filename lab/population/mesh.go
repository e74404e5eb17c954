package population

import (
	"math"
	"time"

	"github.com/scout-discovery/scout/latency"
)

// CityMesh gives a measured city-to-city RTT in milliseconds (WonderProxy's
// matrix, read at run time by package mesh: it is not shipped); ok is false
// where the pair was not measured.
type CityMesh func(a, b latency.City) (ms float64, ok bool)

// MeshLatency is the latency mode whose city-to-city part is a measured
// mesh instead of the fitted distance model: the RTT from a requester at
// place p to a server s is
//
//	p.Access + mesh(p.City, s.City) + d_AS + d_/16
//
// with the fitted model's offsets of the server's own network (means
// Latency.ASOffset and Slash16Offset). The offsets are the server's: the
// same for every requester (the client and each landmark alike), so a
// landmark's measurement carries them as a master's real one would; with
// PerPath they are drawn per (requester, AS) and (requester, /16) as the
// fitted model draws them, a harder case where they are parts of the path
// no landmark sees. A pair the mesh lacks takes the fitted model's CityRTT
// (no residual) and is counted.
type MeshLatency struct {
	Mesh    CityMesh
	PerPath bool
}

// MeshRTTs returns the base RTT from p to every server in master order
// under m, and how many servers' city pairs the mesh lacked.
func (w *World) MeshRTTs(m MeshLatency, p Place) (rtts []time.Duration, fallback int) {
	rtts = make([]time.Duration, len(w.Servers))
	who := ""
	if m.PerPath {
		who = p.Name
	}
	for i, s := range w.Servers {
		d, measured := m.CityRTT(p.City, w.cities[s.Country+"/"+s.City])
		if !measured {
			fallback++
		}
		d += expDur(hashRand(w.Config.Seed, "mesh-as", who, s.Country, itoa(uint64(s.ASN))), w.latency.ASOffset)
		a := s.Addr.Addr().As4()
		d += expDur(hashRand(w.Config.Seed, "mesh-16", who, itoa(uint64(a[0])<<8|uint64(a[1]))), w.latency.Slash16Offset)
		rtts[i] = p.Access + d
	}
	return rtts, fallback
}

// CityRTT is m's city-to-city RTT from a to b: the mesh's where it measured
// the pair, else the fitted model's CityRTT (no residual), with measured
// false.
func (m MeshLatency) CityRTT(a, b latency.City) (d time.Duration, measured bool) {
	if ms, ok := m.Mesh(a, b); ok && !math.IsNaN(ms) && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond)), true
	}
	return latency.CityRTT(a, b), false
}

// City returns the city server i sits in.
func (w *World) City(i int) latency.City {
	s := w.Servers[i]
	return w.cities[s.Country+"/"+s.City]
}
