package rttplot

import (
	"math/rand/v2"
	"slices"
	"time"
)

// synthetic builds a made-up pair of runs shaped like the paper's Figures 2
// and 4: a client far from most of n servers (a few near, most 200-350 ms
// away, some silent), probed every gap in master order (conventional), and
// by Algorithm 1 with Algorithm 2's auto-stop (adaptive): calibration probes
// first, then clusters in rank order. It is test data, not a simulation:
// the "clusters" are RTT bands and the ranking is their true order with
// some noise.
func synthetic(seed uint64, n int, gap time.Duration) (conventional, adaptive Series) {
	rng := rand.New(rand.NewPCG(seed, 1))
	type server struct {
		rtt     time.Duration
		answers bool
		band    int
	}
	bands := []struct {
		share    float64
		lo, span time.Duration
	}{
		{0.08, 15 * time.Millisecond, 50 * time.Millisecond},   // same country
		{0.07, 110 * time.Millisecond, 70 * time.Millisecond},  // Asia
		{0.35, 170 * time.Millisecond, 90 * time.Millisecond},  // US west and east
		{0.45, 280 * time.Millisecond, 110 * time.Millisecond}, // Europe
		{0.05, 350 * time.Millisecond, 300 * time.Millisecond}, // far and slow
	}
	servers := make([]server, n)
	for i := range servers {
		u, b := rng.Float64(), 0
		for b < len(bands)-1 && u > bands[b].share {
			u -= bands[b].share
			b++
		}
		rtt := bands[b].lo + time.Duration(rng.Int64N(int64(bands[b].span)))
		servers[i] = server{rtt: rtt, answers: rng.Float64() > 0.06, band: b}
	}
	probe := func(s server, at time.Duration, ph Phase) Probe {
		if !s.answers {
			return Probe{At: at, Phase: ph}
		}
		return Probe{At: at, RTT: s.rtt, Answered: true, Phase: ph}
	}

	conventional.Name = "conventional"
	for i, s := range servers {
		conventional.Probes = append(conventional.Probes, probe(s, time.Duration(i)*gap, Conventional))
	}

	adaptive.Name = "adaptive"
	order := rng.Perm(n)
	calib := n / 7
	at := time.Duration(0)
	for _, i := range order[:calib] {
		ph := Calibrate
		if rng.IntN(10) == 0 {
			ph = Split
		}
		adaptive.Probes = append(adaptive.Probes, probe(servers[i], at, ph))
		at += gap
	}
	rest := order[calib:]
	key := func(i int) float64 { return float64(servers[i].band) + rng.Float64()*0.8 } // ranking noise between neighbours
	keys := make(map[int]float64, len(rest))
	for _, i := range rest {
		keys[i] = key(i)
	}
	slices.SortStableFunc(rest, func(a, b int) int {
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return 0
	})
	for _, i := range rest {
		adaptive.Probes = append(adaptive.Probes, probe(servers[i], at, Reordered))
		at += gap
	}
	const window, pct = 100, 0.02
	adaptive.Bottom = Bottom(adaptive.Probes, window, pct)
	for j, b := range adaptive.Bottom {
		if b.RTT >= 200*time.Millisecond { // Algorithm 2 fires: probing ends here
			adaptive.StopAt = b.At
			adaptive.Bottom = adaptive.Bottom[:j+1]
			last := slices.IndexFunc(adaptive.Probes, func(p Probe) bool { return p.At > b.At })
			if last >= 0 {
				adaptive.Probes = adaptive.Probes[:last]
			}
			break
		}
	}
	conventional.Bottom = Bottom(conventional.Probes, window, pct)
	return conventional, adaptive
}
