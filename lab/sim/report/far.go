package report

import (
	"fmt"
	"io"
	"slices"

	"github.com/scout-discovery/scout/lab/sim"
)

// PrintFarRatios prints, for the far clients (AU, JP), what the data
// supports in place of a bound of 5% of the full probe: each
// strategy's probes as a multiple of the oracle's (which probes exactly
// the playable servers), the median and the largest over the seeds where
// it found at least 99.5% of the playable servers, how many seeds it
// found fewer on, and on the seeds where the oracle itself probes at most
// 5% (where a strategy can do so at all) the strategy's probes as a
// share of the full probe's, the smallest and the largest.
func PrintFarRatios(w io.Writer, results [][]*sim.Row, first uint64) {
	type acc struct {
		ratios   []float64 // seeds found >= minFoundPct
		short    int       // seeds found less
		feasible []float64 // probes %, seeds where the oracle <= farMaxProbesPct
	}
	var st strategyAccs[acc]
	feasible := map[string]int{}
	for _, rows := range results {
		for _, r := range rows {
			if r.Place != "AU" && r.Place != "JP" {
				continue
			}
			st.client(r.Client)
			conv := float64(max(r.Conventional.Probes, 1))
			ok5 := 100*float64(r.Oracle.Probes)/conv <= farMaxProbesPct
			if ok5 {
				feasible[r.Client]++
			}
			for _, o := range r.Variants {
				a := st.get(r.Client, o.Name)
				if o.FoundPct >= minFoundPct {
					a.ratios = append(a.ratios, float64(o.Probes)/float64(max(r.Oracle.Probes, 1)))
				} else {
					a.short++
				}
				if ok5 {
					a.feasible = append(a.feasible, 100*float64(o.Probes)/conv)
				}
			}
		}
	}
	clients, names, accs := st.clients, st.names, st.accs
	if len(clients) == 0 {
		return
	}
	fmt.Fprintf(w, "\nSeeds %d to %d, far clients against the oracle: probes / the oracle's (median max) over the seeds found >= %.1f%% | seeds found fewer | probes %% of the full probe's (min max) on the seeds where the oracle probes <= %d%%\n",
		first, first+uint64(len(results))-1, minFoundPct, farMaxProbesPct)
	tw := strategyTable(w, "oracle <= 5%\t", names)
	for _, c := range clients {
		fmt.Fprintf(tw, "%s\t%d/%d\t", c, feasible[c], len(results))
		for _, nm := range names {
			a := accs[c][nm]
			ratio := "-"
			if len(a.ratios) > 0 {
				s := slices.Sorted(slices.Values(a.ratios))
				ratio = fmt.Sprintf("%.2f %.2f", s[len(s)/2], s[len(s)-1])
			}
			share := "-"
			if len(a.feasible) > 0 {
				share = fmt.Sprintf("%.1f-%.1f", slices.Min(a.feasible), slices.Max(a.feasible))
			}
			fmt.Fprintf(tw, "%s | %d | %s\t", ratio, a.short, share)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
