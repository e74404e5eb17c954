package adaptive

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// world is a random world for property tests.
type world struct {
	targets []Target
	rtt     map[netip.AddrPort]time.Duration // absent: never answers
}

func (w world) truth(t Target) (time.Duration, bool) {
	r, ok := w.rtt[t.Addr]
	return r, ok
}

// randomWorld makes n servers (and a few duplicates) in up to 8 countries,
// each country in a few /8s and /16s, some without a country or an AS, a
// tenth that never answer, RTTs by country and /16 with jitter.
func randomWorld(rng *rand.Rand, n int) world {
	countries := []string{"AU", "US", "DE", "JP", "BR", "GB", "FR", ""}[:1+rng.IntN(8)]
	base := make(map[string]time.Duration)
	for _, cc := range countries {
		base[cc] = ms(5 + rng.Float64()*400)
	}
	subs := make(map[[2]byte]time.Duration)
	w := world{rtt: make(map[netip.AddrPort]time.Duration)}
	for len(w.targets) < n {
		cc := countries[rng.IntN(len(countries))]
		a := byte(1 + rng.IntN(12))
		if rng.IntN(4) > 0 {
			a = byte(len(cc)*17 + len(countries)) // a favoured /8 per country
			if cc != "" {
				a += cc[0]
			}
		}
		b := byte(rng.IntN(6))
		addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{a, b, byte(rng.IntN(256)), byte(rng.IntN(256))}), uint16(27960+rng.IntN(4)))
		t := Target{Addr: addr, Country: cc}
		if rng.IntN(3) > 0 {
			t.ASN = uint32(100 + int(a)%5)
		}
		w.targets = append(w.targets, t)
		if rng.IntN(50) == 0 { // a duplicate, maybe under another country
			w.targets = append(w.targets, Target{Addr: addr, Country: countries[0]})
		}
		if _, dup := w.rtt[addr]; dup || rng.IntN(10) == 0 {
			continue
		}
		k := [2]byte{a, b}
		if _, ok := subs[k]; !ok {
			subs[k] = ms(rng.Float64() * 80)
		}
		w.rtt[addr] = base[cc] + subs[k] + ms(rng.ExpFloat64()*10)
	}
	return w
}

// randomParams are the paper's or a random mix of the options.
func randomParams(rng *rand.Rand) Params {
	p := Paper()
	if rng.IntN(2) == 0 {
		return p
	}
	p.ClusterBy = Key(rng.IntN(3))
	p.Stop = Rule(rng.IntN(4))
	p.FarCut = []time.Duration{0, 0, ms(10), ms(50)}[rng.IntN(4)]
	p.StopMargin = ms(float64(rng.IntN(30)))
	p.Rerank = rng.IntN(2) == 0
	p.SampleScale = []float64{0.5, 1, 2}[rng.IntN(3)]
	p.Window = 1 + rng.IntN(150)
	p.StopRun = 1 + rng.IntN(50)
	p.StopAgree = 1 + rng.IntN(50)
	return p
}

// TestProperty_Planner checks, over random worlds, parameters and orders of
// outcomes: no server is handed out twice; with auto-stop off every server
// is handed out exactly once; the live clusters partition the servers; each
// phase comes in order (calibration and split, then step 6).
func TestProperty_Planner(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	for i := range 60 {
		w := randomWorld(rng, 1+rng.IntN(1500))
		p := randomParams(rng)
		stopOff := rng.IntN(2) == 0
		if stopOff {
			p.StopRTT = 0
		}
		seed := rng.Uint64()
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			pl := newPlanner(t, w.targets, p, seed)
			inflight := 1 + rng.IntN(64)
			ps := driveBatched(t, pl, w.truth, rng, inflight)
			seen := make(map[netip.AddrPort]bool)
			for _, p := range ps {
				if seen[p.t.Addr] {
					t.Fatalf("%v handed out twice", p.t.Addr)
				}
				seen[p.t.Addr] = true
			}
			all := make(map[netip.AddrPort]bool)
			for _, x := range w.targets {
				all[x.Addr] = true
			}
			distinct := len(all)
			stopped, info := pl.Stopped()
			if stopOff && (stopped || len(ps) != distinct) {
				t.Fatalf("auto-stop off: stopped %v, %d of %d servers probed", stopped, len(ps), distinct)
			}
			if stopped && info.Sent != len(ps) {
				t.Errorf("stopped at %d sent, but %d handed out", info.Sent, len(ps))
			}
			if !stopped && len(ps) != distinct {
				t.Fatalf("not stopped, %d of %d servers probed", len(ps), distinct)
			}
			lastCal := -1
			firstRe := len(ps)
			for j, p := range ps {
				switch p.ph {
				case Calibrate, Split:
					lastCal = j
				case Reordered:
					firstRe = min(firstRe, j)
				default:
					t.Fatalf("phase %v", p.ph)
				}
			}
			if lastCal > firstRe {
				t.Errorf("calibration probe %d after step-6 probe %d", lastCal, firstRe)
			}
			total := 0
			for _, c := range pl.Clusters() {
				if !c.Dissolved {
					total += c.Size
				}
			}
			if total != distinct {
				t.Errorf("live clusters hold %d servers, want %d", total, distinct)
			}
		})
	}
}

// TestProperty_NoStopProbesEveryone checks that with a StopRTT no answered
// probe reaches and every server answering, adaptive discovery probes every
// server, whatever the rule.
func TestProperty_NoStopProbesEveryone(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	for i := range 20 {
		w := randomWorld(rng, 200+rng.IntN(2000))
		all := func(t Target) (time.Duration, bool) {
			r, ok := w.rtt[t.Addr]
			if !ok {
				r = time.Second
			}
			return r, true
		}
		p := randomParams(rng)
		p.StopRTT = time.Hour
		pl := newPlanner(t, w.targets, p, uint64(i))
		ps := drive(t, pl, all)
		if stopped, info := pl.Stopped(); stopped && info.Unprobed > 0 {
			t.Fatalf("world %d: stopped with %d unprobed: %+v", i, info.Unprobed, info)
		}
		if got, want := len(ps), pl.Stats().Targets; got != want {
			t.Fatalf("world %d: %d probes, want %d", i, got, want)
		}
	}
}

// refClusters is a slow reference for step 2 by country: the cluster ID of
// each distinct address, straight from the paper's wording.
func refClusters(ts []Target) map[netip.AddrPort]string {
	first := make(map[netip.AddrPort]Target)
	var list []Target
	for _, t := range ts {
		if _, dup := first[t.Addr]; !dup {
			first[t.Addr] = t
			list = append(list, t)
		}
	}
	country := func(t Target) string {
		if t.Country == "" {
			return UnknownCountry
		}
		return t.Country
	}
	out := make(map[netip.AddrPort]string)
	for _, t := range list {
		inCountry, inSlash8 := 0, 0
		for _, u := range list {
			if country(u) != country(t) {
				continue
			}
			inCountry++
			if u.Addr.Addr().As4()[0] == t.Addr.Addr().As4()[0] {
				inSlash8++
			}
		}
		id := country(t)
		// More than 10 servers, and more than 10% of the country: 10*n > total.
		if inSlash8 > 10 && 10*inSlash8 > inCountry {
			id += fmt.Sprintf(" %d.0.0.0/8", t.Addr.Addr().As4()[0])
		}
		out[t.Addr] = id
	}
	return out
}

// TestProperty_ClustersMatchReference checks step 2 against refClusters.
func TestProperty_ClustersMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	for i := range 30 {
		w := randomWorld(rng, 1+rng.IntN(800))
		want := refClusters(w.targets)
		pl := newPlanner(t, w.targets, Paper(), 1)
		got := make(map[netip.AddrPort]string)
		cs := pl.Clusters()
		for ci, c := range cs {
			for j := range pl.cl[ci].members {
				got[pl.targets[pl.cl[ci].members[j]].Addr] = c.ID
			}
		}
		if len(got) != len(want) {
			t.Fatalf("world %d: %d servers clustered, want %d", i, len(got), len(want))
		}
		for a, id := range want {
			if got[a] != id {
				t.Fatalf("world %d: %v in %q, want %q", i, a, got[a], id)
			}
		}
	}
}
