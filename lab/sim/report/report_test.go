package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/sim"
)

func TestPrintBounds(t *testing.T) {
	row := func(place string, lm, oracle, found float64) *sim.Row {
		return &sim.Row{Client: place + "-ET", Place: place,
			Conventional: sim.Outcome{Probes: 1000},
			Oracle:       sim.Outcome{Probes: int(oracle * 10)},
			Variants:     []sim.Outcome{{Name: "landmarks-8", Probes: int(lm * 10), FoundPct: found}}}
	}
	results := [][]*sim.Row{
		{row("AU", 4.9, 3, 100), row("CH", 92, 90, 100)},   // both met
		{row("AU", 5.1, 4, 100), row("CH", 92.1, 90, 100)}, // far over 5%, near 2.1 points over
		{row("AU", 4, 3, 99.4), row("CH", 95, 94, 99.4)},   // too few found
	}
	var out bytes.Buffer
	PrintBounds(&out, results, 1)
	s := out.String()
	for _, want := range []string{"AU-ET  3/3  1/3 | 1.9 |", "CH-ET  0/3  1/3 | 2.1 |"} {
		if !strings.Contains(strings.Join(strings.Fields(s), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// PrintFarRatios gives each strategy's probes as a multiple of the
// oracle's over the seeds it found enough on, the seeds it did not, and
// its share on the seeds where the oracle probes at most 5%.
func TestPrintFarRatios(t *testing.T) {
	row := func(lm, oracle, found float64) []*sim.Row {
		return []*sim.Row{{Client: "AU-ET", Place: "AU", Conventional: sim.Outcome{Probes: 1000},
			Oracle:   sim.Outcome{Probes: int(oracle * 10)},
			Variants: []sim.Outcome{{Name: "landmarks-8", Probes: int(lm * 10), FoundPct: found}}}}
	}
	results := [][]*sim.Row{row(8, 4, 100), row(9, 6, 100), row(12, 3, 100), row(5, 5, 99)} // ratios 2, 1.5, 4; one short
	var out bytes.Buffer
	PrintFarRatios(&out, results, 1)
	want := "AU-ET  3/4  2.00 4.00 | 1 | 5.0-12.0"
	if !strings.Contains(strings.Join(strings.Fields(out.String()), "  "), strings.Join(strings.Fields(want), "  ")) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}

// TestPlot_RunPastStop checks what --plot's help claims: the run drawn
// past the auto-stop (auto-stop off) is the paper's run, probe for probe,
// up to the stop.
func TestPlot_RunPastStop(t *testing.T) {
	sp := sim.Spec{Place: "AU", Game: population.ET, Servers: 600, Seed: 3, Trace: true,
		Variants: []sim.Variant{{Name: "paper", Params: adaptive.Paper()}}}
	r, err := sim.Simulate(sp)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Adaptive.Stopped {
		t.Skip("no auto-stop in this world")
	}
	all := adaptive.Paper()
	all.StopRTT = 0
	sp.Variants = []sim.Variant{{Name: "paper, no auto-stop", Params: all}}
	full, err := sim.Simulate(sp)
	if err != nil {
		t.Fatal(err)
	}
	sameUntilStop(t, r.AdaptiveTrace, full.AdaptiveTrace, r.Adaptive.StopTime, 100)
}

// sameUntilStop checks that a run with auto-stop (stopped) and the same run
// with it off (full) are the same, outcome for outcome, up to stopS (the
// stop's time in seconds), that at least atLeast outcomes came by then, and
// that full went on past the stop.
func sameUntilStop(t *testing.T, stopped, full []sim.Probe, stopS float64, atLeast int) {
	t.Helper()
	stop := time.Duration(stopS * float64(time.Second))
	n := 0
	for _, p := range stopped {
		if p.Done > stop {
			break
		}
		n++
	}
	if n < atLeast || len(full) <= len(stopped) {
		t.Fatalf("%d outcomes by the stop; %d with auto-stop, %d without", n, len(stopped), len(full))
	}
	for i, p := range stopped[:n] {
		if q := full[i]; q != p {
			t.Fatalf("outcome %d: %+v with auto-stop, %+v without", i, p, q)
		}
	}
}

// TestPrintTable_ScoutRows checks that the table prints the scout variant's
// own row figures after the paper's, and nothing of the kind without it.
func TestPrintTable_ScoutRows(t *testing.T) {
	row := &sim.Row{Client: "AU-ET", Servers: 10,
		Variants: []sim.Outcome{{Name: "paper", StopPct: 28}, {Name: "scout", Stopped: true, StopTime: 12.3, StopPct: 17, FoundPct: 99.5, LastPlayable: 11.5, Probes: 463, Initial: 282}}}
	var b strings.Builder
	PrintTable(&b, []*sim.Row{row})
	out := b.String()
	if !strings.Contains(out, "Variant scout") || !regexp.MustCompile(`AU-ET +282 +12\.3 +17 +99\.5 +11\.5 +463`).MatchString(out) {
		t.Errorf("no scout row in:\n%s", out)
	}
	row.Variants = row.Variants[:1]
	b.Reset()
	PrintTable(&b, []*sim.Row{row})
	if strings.Contains(b.String(), "Variant scout") {
		t.Errorf("a scout section without the variant:\n%s", b.String())
	}
}

// TestPlot_VariantRunPastStop checks --plot-variant scout the same way:
// the never-stopping run drawn is the scout run, probe for probe, up to its
// stop.
func TestPlot_VariantRunPastStop(t *testing.T) {
	sp := sim.Spec{Place: "AU", Game: population.ET, Servers: 600, Seed: 3, Trace: true, TraceVariant: "scout"}
	r, err := sim.Simulate(sp)
	if err != nil {
		t.Fatal(err)
	}
	var sc sim.Outcome
	for _, v := range r.Variants {
		if v.Name == "scout" {
			sc = v
		}
	}
	if !sc.Stopped {
		t.Skip("no auto-stop in this world")
	}
	if sp.Variants, err = neverStop("scout"); err != nil {
		t.Fatal(err)
	}
	full, err := sim.Simulate(sp)
	if err != nil {
		t.Fatal(err)
	}
	sameUntilStop(t, r.VariantTrace, full.VariantTrace, sc.StopTime, 50)
	if _, err := neverStop("paper"); err == nil {
		t.Error("neverStop(paper): no error, but the paper's rule is not the bound rule")
	}
}
