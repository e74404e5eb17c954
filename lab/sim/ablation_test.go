//go:build ablation

// The ablation commands of EVALUATION.md ("What each option buys", "Where
// the paper's rule misses"); not part of the normal test run:
//
//	go test -tags ablation -run Ablation/seeds -v ./lab/sim/                  # seeds 1-10
//	FROM=11 SEEDS=20 go test -tags ablation -run Ablation/seeds -v ./lab/sim/
//	SEED=5 CLIENT=JP-CSS VARIANT=paper go test -tags ablation -run Ablation/misses -v ./lab/sim/
//	SEEDS=30 ROWS=CH-ET,DE-CSS go test -tags ablation -run Ablation/perseed -v ./lab/sim/
//
// MODEL=global-residual (a name of Models) runs them on other worlds.

package sim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/population"
)

// ablationVariants are Variants() (same streams) and, after them, the scout
// variant with one option changed.
func ablationVariants() []Variant {
	vs := Variants()
	for _, a := range []struct {
		name string
		set  func(*adaptive.Params)
	}{
		{"scout+farfirst2", func(p *adaptive.Params) { p.FarFirst = 2 }},
		{"scout-farspread", func(p *adaptive.Params) { p.FarSpread = 0 }},
		{"scout+margin10", func(p *adaptive.Params) { p.StopMargin = 10 * time.Millisecond }},
		{"scout+agree10", func(p *adaptive.Params) { p.StopAgree = 10 }},
		{"scout+rerank", func(p *adaptive.Params) { p.Rerank = true }},
		{"scout-byAS", func(p *adaptive.Params) { p.ClusterBy = adaptive.ByAS }},
		{"scout+boundfirst", func(p *adaptive.Params) { p.BoundFirst = true }},
	} {
		p := adaptive.Scout()
		a.set(&p)
		vs = append(vs, Variant{a.name, p})
	}
	return vs
}

// specs are Table2Specs for seed with the world model MODEL names (Models;
// default vantage).
func specs(t *testing.T, seed uint64) []Spec {
	name := os.Getenv("MODEL")
	if name == "" {
		name = "vantage"
	}
	model, ok := Models()[name]
	if !ok {
		t.Fatalf("MODEL %q: no such model", name)
	}
	sp, err := Table2SpecsOf(model, seed)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return def
}

func TestAblation(t *testing.T) {
	t.Run("seeds", ablationSeeds)
	t.Run("misses", ablationMisses)
	t.Run("perseed", ablationPerSeed)
}

// ablationPerSeed prints, for the rows in ROWS (default CH-ET,DE-CSS) and
// seeds FROM to FROM+SEEDS-1, the paper's and scout's auto-stop and found
// shares and the oracle's stop, one line per row and seed.
func ablationPerSeed(t *testing.T) {
	from, n := uint64(envInt("FROM", 1)), envInt("SEEDS", 10)
	rows := strings.Split(os.Getenv("ROWS"), ",")
	if os.Getenv("ROWS") == "" {
		rows = []string{"CH-ET", "DE-CSS"}
	}
	for s := from; s < from+uint64(n); s++ {
		for _, sp := range specs(t, s) {
			r, err := Simulate(sp)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(rows, r.Client) {
				continue
			}
			var pa, sc Outcome
			for _, v := range r.Variants {
				switch v.Name {
				case "paper":
					pa = v
				case "scout":
					sc = v
				}
			}
			fmt.Printf("%-6s seed %2d  paper %5.1f%% found %5.1f  scout %5.1f%% found %5.1f  oracle %5.1f%%\n",
				r.Client, s, pa.StopPct, pa.FoundPct, sc.StopPct, sc.FoundPct, r.Oracle.StopPct)
		}
	}
}

// ablationSeeds prints, per variant and row over seeds FROM to
// FROM+SEEDS-1: auto-stop % of the full probe (min/mean/max), the lowest
// share of playable servers found, and on how many seeds found >= 99%,
// stop <= 25% (AU rows), stop >= 95% (CH, DE rows), stop later than
// conventional.
func ablationSeeds(t *testing.T) {
	from, n := uint64(envInt("FROM", 1)), envInt("SEEDS", 10)
	vs := ablationVariants()
	type key struct{ client, name string }
	stop, found := map[key][]float64{}, map[key][]float64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan bool, 2)
	for s := from; s < from+uint64(n); s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- true
			defer func() { <-sem }()
			for _, sp := range specs(t, s) {
				sp.Variants = vs
				r, err := Simulate(sp)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, o := range append(slices.Clone(r.Variants), r.Oracle, r.Conventional) {
					k := key{r.Client, o.Name}
					stop[k] = append(stop[k], o.StopPct)
					found[k] = append(found[k], o.FoundPct)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Printf("seeds %d-%d: stop %% min/mean/max | lowest found %% | seeds found>=99, stop<=25 (AU) or >=95 (CH, DE), later than conventional\n", from, from+uint64(n)-1)
	names := []string{}
	for _, v := range vs {
		names = append(names, v.Name)
	}
	for _, nm := range append(names, "oracle") {
		fmt.Printf("%-19s", nm)
		for _, c := range []string{"AU-ET", "JP-ET", "CH-ET", "AU-CSS", "JP-CSS", "DE-CSS"} {
			st, fd, cv := stop[key{c, nm}], found[key{c, nm}], stop[key{c, "conventional"}]
			lo, hi, sum, worst := st[0], st[0], 0.0, fd[0]
			n99, target, later := 0, 0, 0
			for i, x := range st {
				lo, hi, sum, worst = min(lo, x), max(hi, x), sum+x, min(worst, fd[i])
				if fd[i] >= 99 {
					n99++
				}
				if strings.HasPrefix(c, "AU") && x <= 25 || (strings.HasPrefix(c, "CH") || strings.HasPrefix(c, "DE")) && x >= 95 {
					target++
				}
				if x > cv[i] {
					later++
				}
			}
			fmt.Printf(" %s %.0f/%.0f/%.0f|%.1f %d,%d,%d", c, lo, sum/float64(len(st)), hi, worst, n99, target, later)
		}
		fmt.Println()
	}
}

// ablationMisses lists, for one row, seed and variant, the playable servers
// (base RTT under 200 ms, not silent) whose answer did not arrive by the
// stop, by cluster (the live cluster holding the server, found by group and
// longest prefix), with the cluster's rank, RTT estimate and samples.
func ablationMisses(t *testing.T) {
	seed, client, name := uint64(envInt("SEED", 1)), os.Getenv("CLIENT"), os.Getenv("VARIANT")
	if client == "" {
		t.Skip("CLIENT (e.g. JP-CSS) and VARIANT (e.g. paper) not set")
	}
	vs := ablationVariants()
	vi := slices.IndexFunc(vs, func(v Variant) bool { return v.Name == name })
	if vi < 0 {
		t.Fatalf("no variant %q", name)
	}
	for _, sp := range specs(t, seed) {
		w := sp.World
		if sp.Place+"-"+strings.ToUpper(map[population.Game]string{population.ET: "et", population.CSS: "css"}[sp.Game]) != client {
			continue
		}
		targets := make([]adaptive.Target, len(w.Servers))
		for i, s := range w.Servers {
			targets[i] = adaptive.Target{Addr: s.Addr, Country: s.Country, ASN: s.ASN, Index: i}
		}
		rtts := w.RTTs(population.Places()[sp.Place])
		in := Input{Targets: targets, RTTs: rtts, Pacing: PacingFor(sp.Game, len(targets)), Seed: sp.Seed ^ 0x9e3779b97f4a7c15, Playable: 200 * time.Millisecond}
		pl, err := adaptive.New(targets, vs[vi].Params, rand.New(rand.NewPCG(sp.Seed, uint64(vi)+1))) // Simulate's stream
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(pl, in)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s seed %d %s: stop at %v after %d probes, found %d of %d playable\n", client, seed, name, r.StopTime, r.StopSent, r.Found, r.Playable)
		got := map[int]bool{}
		for _, p := range r.Trace {
			if p.Answered && (!r.Stopped || p.Done <= r.StopTime) {
				got[p.Index] = true
			}
		}
		by := map[int][]float64{}
		for i, d := range rtts {
			if d < in.Playable && !silent(in.Seed, i, in.Pacing.Loss) && !got[i] {
				c := clusterOf(r.Clusters, targets[i])
				by[c] = append(by[c], float64(d)/1e6)
			}
		}
		var ks []int
		for k := range by {
			ks = append(ks, k)
		}
		sort.Slice(ks, func(a, b int) bool { return len(by[ks[a]]) > len(by[ks[b]]) })
		for _, k := range ks {
			c := r.Clusters[k]
			var ss []string
			for _, s := range c.Samples {
				if s.Answered {
					ss = append(ss, fmt.Sprintf("%.0f", float64(s.RTT)/1e6))
				} else {
					ss = append(ss, "x")
				}
			}
			m := by[k]
			slices.Sort(m)
			fmt.Printf("  %-26s size %4d probed %4d rank %3d est %4.0f ms samples [%s] missed %d (%.0f-%.0f ms)\n",
				c.ID, c.Size, c.Probed, c.Rank, float64(c.RTT)/1e6, strings.Join(ss, " "), len(m), m[0], m[len(m)-1])
		}
	}
}

// clusterOf is the live cluster holding t: of its group, the longest
// prefix containing it, else the group's rest.
func clusterOf(cs []adaptive.ClusterInfo, t adaptive.Target) int {
	groups := []string{t.Country, fmt.Sprintf("%s AS%d", t.Country, t.ASN), fmt.Sprintf("AS%d", t.ASN)}
	best, bits := -1, -1
	for i, c := range cs {
		if c.Dissolved || !slices.Contains(groups, c.Group) {
			continue
		}
		switch {
		case c.Prefix.IsValid() && c.Prefix.Contains(t.Addr.Addr()) && c.Prefix.Bits() > bits:
			best, bits = i, c.Prefix.Bits()
		case !c.Prefix.IsValid() && bits < 0:
			best = i
		}
	}
	return best
}
