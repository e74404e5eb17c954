package demo

import (
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/world"
)

// Build makes the demonstration's world from the population model: ET
// servers at their public addresses with the delays from place, and the
// true RTT of each server.
func Build(cfg Config) (world.World, population.Place, error) {
	w, place, _, err := build(cfg)
	return w, place, err
}

// build is Build, with the population the world was made from.
func build(cfg Config) (world.World, population.Place, *population.World, error) {
	cfg = cfg.withDefaults()
	place, ok := population.Places()[cfg.Place]
	if !ok {
		return world.World{}, place, nil, fmt.Errorf("demo: unknown place %q (known: %v)", cfg.Place, placeNames())
	}
	pop, err := population.Build(population.FittedVantage(population.ET, cfg.Servers, cfg.Seed))
	if err != nil {
		return world.World{}, place, nil, err
	}
	rtts := pop.RTTs(place)
	gen, err := world.Generate(world.Spec{Servers: len(pop.Servers), Games: world.Mix{{Game: world.ET, Weight: 1}},
		Full: 0.1, Empty: 0.5, Seed: cfg.Seed})
	if err != nil {
		return world.World{}, place, nil, err
	}
	w := world.World{Version: world.FormatVersion, Seed: cfg.Seed}
	hosts := map[netip.Addr]netip.Addr{}
	for i, ps := range pop.Servers {
		s := gen.Servers[i]
		lo, ok := hosts[ps.Addr.Addr()]
		if !ok {
			lo = loopbackHost(len(hosts))
			hosts[ps.Addr.Addr()] = lo
		}
		rtt := min(rtts[i], world.MaxRTT)
		jitter := 2 * (1100*time.Microsecond + rtt/200) // uniform [0, 2*mean): the model's per-ping mean
		s.Public, s.Loopback = ps.Addr, netip.AddrPortFrom(lo, ps.Addr.Port())
		s.Link = world.Link{RTT: world.Duration(rtt), Jitter: world.Duration(jitter), Loss: cfg.Loss}
		s.Country, s.ASN = ps.Country, ps.ASN
		w.Servers = append(w.Servers, s)
	}
	return w, place, pop, nil
}

// loopbackHost is the i-th server host: 127.1.0.1 upwards, skipping .0 and
// .255 (127.0.0.0/16 is left to the clients and the master).
func loopbackHost(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(1 + i/(256*254)), byte(i / 254 % 256), byte(1 + i%254)})
}

func placeNames() []string {
	var out []string
	for k := range population.Places() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
