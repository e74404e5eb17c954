package discover

import (
	"math"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
)

// The masters' own landmarks come first with the client's RTT to them; a
// fleet instance's other landmarks follow with none, unless another master
// the client asked is that landmark; each vector takes each landmark's
// RTTs from whichever report holds them.
func TestLandmarkInput_OwnThenOtherLandmarks(t *testing.T) {
	a := netip.MustParseAddrPort("192.0.2.1:27960")
	b := netip.MustParseAddrPort("192.0.2.2:27960")
	ms := time.Millisecond
	reps := []MasterReport{
		{Landmark: "fra", RTT: 30 * ms, LandmarkRTTs: map[netip.AddrPort]time.Duration{a: 10 * ms},
			OtherLandmarks: map[string]map[netip.AddrPort]time.Duration{
				"tyo": {a: 250 * ms, b: 5 * ms},
				"nyc": {a: 90 * ms},
			}},
		{Landmark: "nyc", RTT: 80 * ms, LandmarkRTTs: map[netip.AddrPort]time.Duration{a: 91 * ms, b: 160 * ms}},
		{Name: "not a landmark", RTT: 20 * ms},
	}
	in, names := LandmarkInput([]adaptive.Target{{Addr: a}, {Addr: b}}, reps)
	if !slices.Equal(names, []string{"fra", "nyc", "tyo"}) {
		t.Fatalf("names %v", names)
	}
	if in.Client[0] != 30 || in.Client[1] != 80 || !math.IsNaN(in.Client[2]) {
		t.Errorf("client %v", in.Client)
	}
	va, vb := in.Vectors[0], in.Vectors[1]
	if va[0] != 10 || va[1] != 91 || va[2] != 250 || !math.IsNaN(vb[0]) || vb[1] != 160 || vb[2] != 5 {
		t.Errorf("vectors %v %v", va, vb)
	}
	if !in.LandmarksDerived || len(in.Landmarks) != 3 || in.Landmarks[0][1] != 101 || in.Landmarks[1][2] != 165 {
		t.Errorf("matrix %v", in.Landmarks)
	}
}
