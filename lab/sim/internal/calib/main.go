// Command calib measures how worlds of the paper's sizes compare with the
// paper's Table 2 (countries, /8 clusters, initial probes, servers playable
// from Melbourne) over a grid of the placement's scale parameters, and
// prints the fit of the chosen (calibrated) model. It lives under sim, not
// population, because the initial probes are the simulator's (sim.Simulate)
// and sim already imports population:
//
//	go run ./lab/sim/internal/calib            # the calibrated model (and the previous ones)
//	go run ./lab/sim/internal/calib -grid      # the grid search
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/sim"
)

type result struct {
	countries, slash8, clusters [2]float64 // ET, CS:S
	initial                     [6]float64 // AU-ET JP-ET CH-ET AU-CSS JP-CSS DE-CSS
	static                      [2]float64 // Measure's InitialProbes (no splits)
	auPlayable                  [2]float64 // share of servers under 200 ms from AU
	nearFar                     [2]float64 // share of servers at 200 ms or more from CH (ET) and DE (CS:S)
}

var paperInitial = [6]float64{396, 446, 492, 2136, 1694, 2159}

func measure(mk func(g population.Game, n int, seed uint64) population.Config, seeds int, withSim bool) result {
	var r result
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		for gi, g := range []struct {
			g      population.Game
			n      int
			places []string
		}{{population.ET, population.SizeET, []string{"AU", "JP", "CH"}}, {population.CSS, population.SizeCSS, []string{"AU", "JP", "DE"}}} {
			w, err := population.Build(mk(g.g, g.n, seed))
			if err != nil {
				log.Fatal(err)
			}
			st := population.Measure(w.Sites())
			r.countries[gi] += float64(len(st.Countries)) / float64(seeds)
			r.slash8[gi] += float64(st.Slash8Clusters) / float64(seeds)
			r.clusters[gi] += float64(clusters(st)) / float64(seeds)
			r.static[gi] += float64(st.InitialProbes) / float64(seeds)
			au := w.RTTs(population.Places()["AU"])
			var np int
			for _, d := range au {
				if d < 200*time.Millisecond {
					np++
				}
			}
			r.auPlayable[gi] += float64(np) / float64(len(au)) / float64(seeds)
			var nf int
			for _, d := range w.RTTs(population.Places()[g.places[2]]) {
				if d >= 200*time.Millisecond {
					nf++
				}
			}
			r.nearFar[gi] += float64(nf) / float64(len(au)) / float64(seeds)
			if !withSim {
				continue
			}
			for pi, pl := range g.places {
				row, err := sim.Simulate(sim.Spec{Place: pl, Game: g.g, Servers: g.n, Seed: seed, World: w, Variants: sim.Variants()[:1]})
				if err != nil {
					log.Fatal(err)
				}
				r.initial[3*gi+pi] += float64(row.InitialProbes) / float64(seeds)
			}
		}
	}
	return r
}

// clusters is Algorithm 1's step-3 cluster count: the /8 clusters plus the
// countries with servers left outside them.
func clusters(st population.Stats) int {
	return st.Slash8Clusters + st.CountryRests
}

func (r result) String() string {
	return fmt.Sprintf("countries %.1f/%.1f (51/70)  /8 clusters %.1f/%.1f (77-79/140-143)  step-3 clusters %.1f/%.1f  initial %.0f %.0f %.0f | %.0f %.0f %.0f (396 446 492 | 2136 1694 2159)  AU<200ms %.1f%%/%.1f%%  CH-ET/DE-CSS>=200ms %.1f%%/%.1f%%  static %.0f/%.0f",
		r.countries[0], r.countries[1], r.slash8[0], r.slash8[1], r.clusters[0], r.clusters[1],
		r.initial[0], r.initial[1], r.initial[2], r.initial[3], r.initial[4], r.initial[5], 100*r.auPlayable[0], 100*r.auPlayable[1],
		100*r.nearFar[0], 100*r.nearFar[1], r.static[0], r.static[1])
}

// loss: squared log errors of step-3 clusters (per world) and initial probes
// (per row; not counted when the rows were not simulated, -sim=false).
func (r result) loss() float64 {
	sq := func(a, b float64) float64 { d := math.Log(a / b); return d * d }
	l := sq(r.clusters[0], 78) + sq(r.clusters[1], 142)
	for i, p := range paperInitial {
		if r.initial[i] > 0 {
			l += sq(r.initial[i], p) / 3
		}
	}
	return l
}

func floats(s string) []float64 {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			log.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func main() {
	grid := flag.Bool("grid", false, "search the grid of scale parameters")
	seeds := flag.Int("seeds", 3, "seeds 1..N")
	spas := flag.String("spa", "1.25,1.5,2,3,4.465", "servers per address")
	kases := flag.String("kas", "1,1.5,2,3,4", "multipliers of the modern ASes-per-country scale")
	k16s := flag.String("k16", "1,2,3,4", "multipliers of the modern /16s-per-AS scale")
	auRanks := flag.String("aurank", "", "with -grid: Australia's ranks to try instead of the scale grid")
	withSim := flag.Bool("sim", true, "simulate the six rows for the initial probes")
	far := flag.Bool("far", false, "print, per model, the countries of the servers at 200 ms or more from CH (ET) and DE (CS:S)")
	flag.Parse()
	if *far {
		farCountries(*seeds)
		return
	}
	if !*grid {
		fmt.Println("modern:         ", measure(population.Modern, *seeds, *withSim))
		fmt.Println("calibrated:     ", measure(population.Fitted, *seeds, *withSim))
		fmt.Println("vantage:        ", measure(population.FittedVantage, *seeds, *withSim))
		return
	}
	if *auRanks != "" {
		for _, rk := range floats(*auRanks) {
			mk := func(g population.Game, n int, seed uint64) population.Config {
				c := population.Fitted(g, n, seed)
				c.Ranking = moveTo(population.CountryRank(), "AU", int(rk))
				return c
			}
			r := measure(mk, *seeds, *withSim)
			fmt.Printf("AU rank %d  loss %.3f  %v\n", int(rk), r.loss(), r)
		}
		return
	}
	type cand struct {
		spa, kas, k16 float64
		r             result
	}
	var best []cand
	for _, spa := range floats(*spas) {
		for _, kas := range floats(*kases) {
			for _, k16 := range floats(*k16s) {
				mk := func(g population.Game, n int, seed uint64) population.Config {
					c := population.Fitted(g, n, seed)
					c.ServersPerAddr = spa
					c.ASPerCountryC = kas * 1.0480
					c.Slash16PerASC = k16 * 1.0357
					return c
				}
				r := measure(mk, *seeds, *withSim)
				fmt.Printf("spa %.2f  kAS x%.1f  k16 x%.1f  loss %.3f  %v\n", spa, kas, k16, r.loss(), r)
				best = append(best, cand{spa, kas, k16, r})
			}
		}
	}
	// The grid's best fits, lowest loss first.
	sort.SliceStable(best, func(i, j int) bool { return best[i].r.loss() < best[j].r.loss() })
	fmt.Println("best by loss:")
	for _, c := range best[:min(5, len(best))] {
		fmt.Printf("spa %.2f  kAS x%.1f  k16 x%.1f  loss %.3f\n", c.spa, c.kas, c.k16, c.r.loss())
	}
}

// farCountries prints the share of all servers that are 200 ms or more from
// Zurich (ET worlds) and Frankfurt (CS:S worlds), by country, over seeds
// 1..seeds, for Fitted and FittedVantage.
func farCountries(seeds int) {
	for _, m := range []struct {
		name string
		mk   func(population.Game, int, uint64) population.Config
	}{{"calibrated (global residual)", population.Fitted}, {"vantage", population.FittedVantage}} {
		for _, g := range []struct {
			g     population.Game
			n     int
			place string
		}{{population.ET, population.SizeET, "CH"}, {population.CSS, population.SizeCSS, "DE"}} {
			by := map[string]int{}
			total, far := 0, 0
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				w, err := population.Build(m.mk(g.g, g.n, seed))
				if err != nil {
					log.Fatal(err)
				}
				for i, d := range w.RTTs(population.Places()[g.place]) {
					total++
					if d >= 200*time.Millisecond {
						far++
						by[w.Servers[i].Country]++
					}
				}
			}
			var ccs []string
			for cc := range by {
				ccs = append(ccs, cc)
			}
			sort.Slice(ccs, func(a, b int) bool { return by[ccs[a]] > by[ccs[b]] || by[ccs[a]] == by[ccs[b]] && ccs[a] < ccs[b] })
			fmt.Printf("%s, %s from %s: %.1f%% at 200 ms or more:", m.name, g.g, g.place, 100*float64(far)/float64(total))
			for _, cc := range ccs[:min(8, len(ccs))] {
				fmt.Printf(" %s %.2f", cc, 100*float64(by[cc])/float64(total))
			}
			fmt.Println()
		}
	}
}

// moveTo returns rank with cc moved to position k (1-based).
func moveTo(rank []string, cc string, k int) []string {
	var out []string
	for _, c := range rank {
		if c != cc {
			out = append(out, c)
		}
	}
	return append(out[:k-1], append([]string{cc}, out[k-1:]...)...)
}
