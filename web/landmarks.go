package web

import (
	"math"
	"net/http"
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/master"
)

// Landmarks (issue 13). A master measures its round trip to every server
// it verifies (master.Server.RTT, the median of the last few); with
// Config.Landmark set it publishes them: each server of the list and the
// detail carries "landmarks", this master's RTT to it with when it was
// last measured, and /api/v1/landmarks describes the landmark (its
// identity and the place its operator gave). A client that also measures
// its own RTT to each landmark bounds every server's RTT before probing it
// (package landmark). The RTTs are those of the view: a view is rebuilt
// when the listing changes or the history slot turns, so a published RTT
// is at most one slot (Resolution) older than the registry's.
//
// In a fleet (package fleet) every instance that is a landmark shares its
// RTTs and its description through the shared registry: each server's
// "landmarks" holds this master's RTT first, then every other landmark's
// the registry holds (master.Server.Landmarks), and /api/v1/landmarks
// describes this master and then the fleet's other live landmarks
// (Config.Peers), so a client asking any one instance gets them all.

// Landmark describes the master as a landmark.
type Landmark struct {
	// ID names it among landmarks: the fleet instance id, or the
	// master's address.
	ID string `json:"id"`
	// Address is where clients query it for the list ("" if not known).
	Address string `json:"address,omitempty"`
	// Place is the operator's name of where it runs ("Frankfurt", or
	// "" for coordinates alone).
	Place string `json:"place,omitempty"`
	// Lat and Lon are its coordinates in degrees, if given.
	Lat *float64 `json:"lat,omitempty"`
	Lon *float64 `json:"lon,omitempty"`
	// RTTs are its RTTs to the other landmark masters it pings (the
	// median of the last master.RTTSamples, master.Mesh), by their ids:
	// what a client repairs the landmark vectors through.
	RTTs []LandmarkRTTJSON `json:"rtts,omitempty"`
}

// rttMs is d in milliseconds at 0.1 ms (master.RTTUnit) resolution.
func rttMs(d time.Duration) float64 { return math.Round(float64(d)/float64(master.RTTUnit)) / 10 }

// MeshJSON turns a landmark's row (master.Mesh.Own) into its RTTs.
func MeshJSON(row []master.LandmarkRTT) []LandmarkRTTJSON {
	var out []LandmarkRTTJSON
	for _, e := range row {
		out = append(out, LandmarkRTTJSON{ID: e.Landmark, RTTMs: rttMs(e.RTT), Measured: e.Measured.UTC()})
	}
	return out
}

// MeshRow turns a landmark's published RTTs back into its row.
func (l Landmark) MeshRow() master.MeshRow {
	r := master.MeshRow{Landmark: l.ID}
	for _, e := range l.RTTs {
		if e.RTTMs > 0 && !math.IsInf(e.RTTMs, 0) && !math.IsNaN(e.RTTMs) {
			r.RTTs = append(r.RTTs, master.LandmarkRTT{Landmark: e.ID, RTT: time.Duration(e.RTTMs * float64(time.Millisecond)), Measured: e.Measured})
		}
	}
	return r
}

// LandmarkRTTJSON is one landmark's round trip to a server.
type LandmarkRTTJSON struct {
	ID       string    `json:"id"`
	RTTMs    float64   `json:"rtt_ms"`   // median of the landmark's last master.RTTSamples, 0.1 ms resolution
	Measured time.Time `json:"measured"` // when the last sample was taken
}

// LandmarksJSON is the answer of /api/v1/landmarks.
type LandmarksJSON struct {
	Landmarks []Landmark `json:"landmarks"`
}

// addLandmarks sets the landmark RTTs of v's rows from servers (the
// registry's, as v was built from them): this master's, if it is a
// landmark, then the other landmarks'.
func (a *API) addLandmarks(v *view, servers []master.Server) {
	lm := a.cfg.Landmark
	byAddr := make(map[netip.AddrPort]int, len(servers))
	for i := range servers {
		if (lm != nil && servers[i].RTT > 0) || len(servers[i].Landmarks) > 0 {
			byAddr[servers[i].Addr] = i
		}
	}
	for i := range v.rows {
		j, ok := byAddr[v.rows[i].reg]
		if !ok {
			continue
		}
		s := &servers[j]
		out := make([]LandmarkRTTJSON, 0, 1+len(s.Landmarks))
		if lm != nil && s.RTT > 0 {
			out = append(out, LandmarkRTTJSON{ID: lm.ID, RTTMs: rttMs(s.RTT), Measured: s.RTTMeasured.UTC()})
		}
		for _, p := range s.Landmarks {
			if lm == nil || p.Landmark != lm.ID {
				out = append(out, LandmarkRTTJSON{ID: p.Landmark, RTTMs: rttMs(p.RTT), Measured: p.Measured.UTC()})
			}
		}
		v.rows[i].Landmarks = out
	}
}

func (a *API) landmarks(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	out := LandmarksJSON{Landmarks: []Landmark{}}
	if a.cfg.Landmark != nil {
		self := *a.cfg.Landmark
		self.RTTs = MeshJSON(a.reg.Mesh().Own())
		out.Landmarks = append(out.Landmarks, self)
	}
	if a.cfg.Peers != nil {
		for _, p := range a.cfg.Peers() {
			if a.cfg.Landmark == nil || p.ID != a.cfg.Landmark.ID {
				out.Landmarks = append(out.Landmarks, p)
			}
		}
	}
	v := a.current(now)
	key := "landmarks"
	b, hit := v.cache.get(key, func() ([]byte, any) { return marshal(out), nil })
	a.count(hit)
	a.answer(w, r, `W/"landmarks"`, v.built, false, v.cache, key, b)
}
