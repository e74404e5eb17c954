package report

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/sim"
)

// Seeds runs Table 2 for n seeds from first (on the mesh ms, if not nil)
// and prints, per row and strategy, the spread of the auto-stop share and
// of the playable servers found; on a mesh also the probe shares, the
// bounds and the far clients' ratios (PrintBounds, PrintFarRatios) and
// where the landmark strategies missed.
func Seeds(ctx context.Context, stdout io.Writer, model func(population.Game, int, uint64) population.Config, first uint64, n int, ms *sim.MeshSpec) error {
	type acc struct {
		stop, found, probes []float64
		missed, wasted      map[string]int
	}
	var st strategyAccs[acc]
	// Seeds run on up to two workers (the simulation is single-threaded and
	// deterministic); their rows are gathered in seed order.
	results := make([][]*sim.Row, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(2, runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				specs, err := sim.Table2SpecsOf(model, first+uint64(k))
				if err != nil {
					errs[k] = err
					continue
				}
				for _, sp := range specs {
					SetMesh(&sp, ms)
					if err := ctx.Err(); err != nil {
						errs[k] = err
						break
					}
					r, err := sim.Simulate(sp)
					if err != nil {
						errs[k] = err
						break
					}
					results[k] = append(results[k], r)
				}
			}
		}()
	}
	for k := range n {
		next <- k
	}
	close(next)
	wg.Wait()
	for k := range n {
		if errs[k] != nil {
			return errs[k]
		}
		for _, r := range results[k] {
			st.client(r.Client)
			for _, o := range append(append([]sim.Outcome(nil), r.Variants...), r.Oracle) {
				a := st.get(r.Client, o.Name)
				a.stop = append(a.stop, o.StopPct)
				a.found = append(a.found, o.FoundPct)
				a.probes = append(a.probes, 100*float64(o.Probes)/float64(max(r.Conventional.Probes, 1)))
				if o.Missed != nil {
					if a.missed == nil {
						a.missed, a.wasted = map[string]int{}, map[string]int{}
					}
					for reg, n := range o.Missed {
						a.missed[reg] += n
					}
					for reg, n := range o.Wasted {
						a.wasted[reg] += n
					}
				}
			}
		}
	}
	clients, names, accs := st.clients, st.names, st.accs
	spread := func(v []float64) string {
		lo, hi, sum := v[0], v[0], 0.0
		for _, x := range v {
			lo, hi, sum = min(lo, x), max(hi, x), sum+x
		}
		return fmt.Sprintf("%.0f %.0f %.0f", lo, sum/float64(len(v)), hi)
	}
	lowest := func(v []float64) string {
		lo := v[0]
		for _, x := range v {
			lo = min(lo, x)
		}
		return fmt.Sprintf("%.1f", lo)
	}
	// table prints one cell per client and strategy.
	table := func(cell func(a *acc) string) {
		tw := strategyTable(stdout, "", names)
		for _, c := range clients {
			fmt.Fprintf(tw, "%s\t", c)
			for _, nm := range names {
				fmt.Fprintf(tw, "%s\t", cell(accs[c][nm]))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	fmt.Fprintf(stdout, "Seeds %d to %d: auto-stop %% of the full probe (min mean max) | lowest %% of playable servers found\n", first, first+uint64(n)-1)
	table(func(a *acc) string { return spread(a.stop) + " | " + lowest(a.found) })
	if ms == nil {
		return nil
	}
	fmt.Fprintf(stdout, "\nSeeds %d to %d: probes %% of the full probe's (min mean max) | lowest %% of playable servers found\n", first, first+uint64(n)-1)
	table(func(a *acc) string { return spreadDecimal(a.probes) + " | " + lowest(a.found) })
	PrintBounds(stdout, results, first)
	PrintFarRatios(stdout, results, first)
	fmt.Fprintf(stdout, "\nSeeds %d to %d, landmark strategies: playable servers missed / unplayable servers probed, summed over the seeds, by the server's region\n", first, first+uint64(n)-1)
	for _, nm := range names {
		if accs[clients[0]][nm].missed == nil {
			continue
		}
		fmt.Fprintf(stdout, "%s:", nm)
		for _, c := range clients {
			a := accs[c][nm]
			fmt.Fprintf(stdout, "  %s %s;", c, regionCounts(a.missed, a.wasted))
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
