package discover

import (
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
)

// TestPlanDefault_LandmarksWhenAMasterIsOne: the default plan is the
// landmark plan (with the site check) under group probing when some
// master answered as a landmark and landmarks are asked for, Armitage's
// planner with scout's constants under group probing otherwise.
func TestPlanDefault_LandmarksWhenAMasterIsOne(t *testing.T) {
	a := netip.MustParseAddrPort("192.0.2.1:27960")
	b := netip.MustParseAddrPort("192.0.2.2:27960")
	ts := []adaptive.Target{{Addr: a, Country: "DE"}, {Addr: b, Country: "DE"}}
	ms := time.Millisecond
	lm := []MasterReport{{Landmark: "fra", Addr: netip.MustParseAddrPort("198.51.100.1:27950"), RTT: 30 * ms,
		LandmarkRTTs: map[netip.AddrPort]time.Duration{a: 10 * ms, b: 12 * ms}}}
	plain := []MasterReport{{Addr: netip.MustParseAddrPort("198.51.100.2:27950"), RTT: 20 * ms}}
	for _, c := range []struct {
		reps     []MasterReport
		ask      bool
		landmark bool
	}{{lm, true, true}, {lm, false, false}, {plain, true, false}} {
		pl, err := PlanDefault(ts, c.reps, PlanOptions{AutoStop: 200 * ms, Seed: 1, Landmarks: c.ask})
		if err != nil {
			t.Fatal(err)
		}
		if (pl.Landmark != nil) != c.landmark || pl.Groups == nil {
			t.Errorf("reports %v, landmarks asked %v: landmark plan %v, groups %v", c.reps, c.ask, pl.Landmark != nil, pl.Groups != nil)
		}
		if pl.Landmark != nil && pl.Landmark.Planner.SiteStats().Sites == 0 {
			t.Error("the landmark plan has no site check")
		}
	}
}

// TestPlanDefault_MemoryFirst: a group the memory holds as playable is
// probed first; the landmark plan is told which targets are remembered.
func TestPlanDefault_MemoryFirst(t *testing.T) {
	ms := time.Millisecond
	var ts []adaptive.Target
	for i := range 4 {
		ts = append(ts, adaptive.Target{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 1}), 27960), Country: "AU"})
	}
	prior := map[netip.Prefix]adaptive.Prior{adaptive.GroupKey(ts[3].Addr.Addr()): {Least: 40 * ms, Samples: 2}}
	pl, err := PlanDefault(ts, nil, PlanOptions{AutoStop: 200 * ms, Seed: 1, Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	if tg, _, ok := pl.Strategy().Next(); !ok || tg.Addr != ts[3].Addr {
		t.Errorf("first probe %v, want the remembered playable %v", tg.Addr, ts[3].Addr)
	}
}

func TestVantage_MastersThatAnswered(t *testing.T) {
	ms := time.Millisecond
	a := netip.MustParseAddrPort("198.51.100.1:27950")
	v := Vantage([]MasterReport{{Addr: a, RTT: 30 * ms, Pings: []time.Duration{25 * ms, 0}}, {Name: "unresolved"}})
	if len(v) != 1 || v[a] != 25*ms {
		t.Errorf("vantage %v", v)
	}
}
