package master

import (
	"math"
	"time"
)

// Landmark describes a master as a landmark, as it publishes itself in the
// JSON API (/api/v1/landmarks) and, in a fleet, to the other instances
// through the shared registry.
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
	// median of the last RTTSamples, Mesh), by their ids: what a client
	// repairs the landmark vectors through.
	RTTs []LandmarkRTTJSON `json:"rtts,omitempty"`
}

// LandmarkRTTJSON is one landmark's round trip to a server or to another
// landmark, as published.
type LandmarkRTTJSON struct {
	ID       string    `json:"id"`
	RTTMs    float64   `json:"rtt_ms"`   // median of the landmark's last RTTSamples, 0.1 ms resolution
	Measured time.Time `json:"measured"` // when the last sample was taken
}

// PublishRTT is landmark id's RTT measured at measured, as published: in
// milliseconds at 0.1 ms (RTTUnit) resolution, the time in UTC.
func PublishRTT(id string, rtt time.Duration, measured time.Time) LandmarkRTTJSON {
	return LandmarkRTTJSON{ID: id, RTTMs: math.Round(float64(rtt)/float64(RTTUnit)) / 10, Measured: measured.UTC()}
}

// MeshJSON turns a landmark's row (Mesh.Own) into its published RTTs.
func MeshJSON(row []LandmarkRTT) []LandmarkRTTJSON {
	var out []LandmarkRTTJSON
	for _, e := range row {
		out = append(out, PublishRTT(e.Landmark, e.RTT, e.Measured))
	}
	return out
}

// MeshRow turns a landmark's published RTTs back into its row, dropping
// the ones that are not a positive, finite number of milliseconds.
func (l Landmark) MeshRow() MeshRow {
	r := MeshRow{Landmark: l.ID}
	for _, e := range l.RTTs {
		if e.RTTMs > 0 && !math.IsInf(e.RTTMs, 0) && !math.IsNaN(e.RTTMs) {
			r.RTTs = append(r.RTTs, LandmarkRTT{Landmark: e.ID, RTT: time.Duration(e.RTTMs * float64(time.Millisecond)), Measured: e.Measured})
		}
	}
	return r
}
