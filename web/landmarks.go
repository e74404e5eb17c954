package web

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/latency"
	"github.com/scout-discovery/scout/master"
)

// Landmarks. A master measures its round trip to every server
// it verifies (master.Server.RTT, the median of the last few); with
// Config.Landmark set it publishes them: each server of the list and the
// detail carries "landmarks", this master's RTT to it with when it was
// last measured, and /api/v1/landmarks describes the landmark (its
// identity and the place its operator gave). A client that also measures
// its own RTT to each landmark bounds every server's RTT before probing it
// (package landmark). The RTTs are those of the view: a view is rebuilt
// when the listing changes or the history slot turns, so a published RTT
// is at most one slot (history.Resolution) older than the registry's.
//
// In a fleet (package fleet) every instance that is a landmark shares its
// RTTs and its description through the shared registry: each server's
// "landmarks" holds this master's RTT first, then every other landmark's
// the registry holds (master.Server.Landmarks), and /api/v1/landmarks
// describes this master and then the fleet's other live landmarks
// (Config.Peers), so a client asking any one instance gets them all.

// LandmarksJSON is the answer of /api/v1/landmarks.
type LandmarksJSON struct {
	Landmarks []master.Landmark `json:"landmarks"`
}

// addLandmarks sets the landmark RTTs of v's rows from servers (the
// registry's, as v was built from them): this master's, if it is a
// landmark, then the other landmarks'.
func (a *API) addLandmarks(v *view, servers []master.Server) {
	lm := a.deps.Landmark
	places := a.landmarkPlaces()
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
		out := make([]master.LandmarkRTTJSON, 0, 1+len(s.Landmarks))
		if lm != nil && s.RTT > 0 {
			out = append(out, master.PublishRTT(lm.ID, s.RTT, s.RTTMeasured))
		}
		for _, p := range s.Landmarks {
			if lm == nil || p.Landmark != lm.ID {
				out = append(out, master.PublishRTT(p.Landmark, p.RTT, p.Measured))
			}
		}
		v.rows[i].Landmarks = out
		for _, l := range out {
			if at, ok := places[l.ID]; ok {
				v.rows[i].via = append(v.rows[i].via, viaLandmark{at: at, rtt: time.Duration(l.RTTMs * float64(time.Millisecond))})
			}
		}
	}
}

// landmarkPlaces are the places of this master and its fleet's other
// landmarks that give coordinates, by landmark id.
func (a *API) landmarkPlaces() map[string]latency.City {
	out := map[string]latency.City{}
	add := func(l master.Landmark) {
		if l.Lat != nil && l.Lon != nil {
			out[l.ID] = latency.City{Name: l.Place, Lat: *l.Lat, Lon: *l.Lon}
		}
	}
	if a.deps.Landmark != nil {
		add(*a.deps.Landmark)
	}
	if a.deps.Peers != nil {
		for _, l := range a.deps.Peers() {
			add(l)
		}
	}
	return out
}

func (a *API) landmarks(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	out := LandmarksJSON{Landmarks: []master.Landmark{}}
	if a.deps.Landmark != nil {
		self := *a.deps.Landmark
		self.RTTs = master.MeshJSON(a.reg.Mesh().Own())
		out.Landmarks = append(out.Landmarks, self)
	}
	if a.deps.Peers != nil {
		for _, p := range a.deps.Peers() {
			if a.deps.Landmark == nil || p.ID != a.deps.Landmark.ID {
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
