package adaptive_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/adaptive"
)

// A client in Australia discovers 60 servers: 20 in Australia at 30 ms, 40
// in Germany at 320 ms, Germany's listed first by the master.
func Example() {
	var list []adaptive.Target // step 1: the master's list, with step 2(a)'s country codes
	for i := range 40 {
		list = append(list, adaptive.Target{Addr: netip.MustParseAddrPort(fmt.Sprintf("85.%d.0.1:27960", i)), Country: "DE"})
	}
	for i := range 20 {
		list = append(list, adaptive.Target{Addr: netip.MustParseAddrPort(fmt.Sprintf("203.%d.0.1:27960", i)), Country: "AU"})
	}
	rtt := map[string]time.Duration{"AU": 30 * time.Millisecond, "DE": 320 * time.Millisecond}

	p := adaptive.Paper()
	p.Window = 10 // a small world: Algorithm 2's window, scaled down from 100
	planner, err := adaptive.New(list, p, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	count := make(map[adaptive.Phase]int)
	for {
		t, phase, ok := planner.Next()
		if !ok {
			break
		}
		count[phase]++
		// The prober sends the probe here; this world answers at once.
		planner.Observe(t.Addr, rtt[t.Country], true)
	}
	for _, c := range planner.Clusters() { // steps 3 to 5
		fmt.Printf("cluster %s: %d servers, %d sampled, RTT %v, rank %d\n", c.ID, c.Size, len(c.Samples), c.RTT, c.Rank)
	}
	stopped, why := planner.Stopped()
	fmt.Printf("calibration probes %d, re-ordered probes %d\n", count[adaptive.Calibrate], count[adaptive.Reordered])
	fmt.Printf("auto-stop %v after %d re-ordered probes, RTTbottom %v, %d servers never probed\n", stopped, why.Reordered, why.Bottom, why.Unprobed)
	// Output:
	// cluster DE 85.0.0.0/8: 40 servers, 7 sampled, RTT 320ms, rank 2
	// cluster AU 203.0.0.0/8: 20 servers, 5 sampled, RTT 30ms, rank 1
	// calibration probes 12, re-ordered probes 25
	// auto-stop true after 25 re-ordered probes, RTTbottom 320ms, 23 servers never probed
}
