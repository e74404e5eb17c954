package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/sim"
)

func TestSim_BadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--game", "quake"},
		{"--client", "NZ"},
		{"--servers", "50001"},
		{"--servers", "-1"},
		{"--loss", "1.5"},
		{"--seeds", "3"},
		{"--table2", "--seeds", "3", "--json"},
		{"extra"},
		{"--table2", "--plot", "t2.svg"},
		{"--plot", "fig.jpg"},
		{"--plot", "fig.png", "--plot-width", "-1"},
	} {
		var out, errb bytes.Buffer
		if code := runSim(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("scout-lab sim %v: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}

func TestSim_OneRunJSONAndTrace(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.csv")
	args := []string{"--client", "au", "--game", "et", "--servers", "600", "--seed", "3", "--json", "--trace", trace}
	var out, errb bytes.Buffer
	if code := runSim(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var row struct {
		Client    string  `json:"client"`
		Servers   int     `json:"servers"`
		Initial   int     `json:"initial_probes"`
		FullProbe float64 `json:"full_probe_s"`
		Adaptive  struct {
			Probes int `json:"probes"`
		} `json:"adaptive"`
	}
	if err := json.Unmarshal(out.Bytes(), &row); err != nil {
		t.Fatalf("%v: %q", err, out.String())
	}
	if row.Client != "AU-ET" || row.Servers < 570 || row.Initial == 0 || row.FullProbe < 60 {
		t.Fatalf("row %+v", row)
	}
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != "client,strategy,seq,sent_s,done_s,rtt_ms,answered,phase,bottom_ms,index" {
		t.Fatalf("header %v", recs[0])
	}
	var adaptive, conventional int
	for _, r := range recs[1:] {
		switch r[1] {
		case "adaptive":
			adaptive++
		case "conventional":
			conventional++
		}
	}
	if conventional != row.Servers || adaptive < row.Adaptive.Probes {
		t.Fatalf("trace: %d conventional rows for %d servers, %d adaptive for %d probes", conventional, row.Servers, adaptive, row.Adaptive.Probes)
	}

	var again bytes.Buffer
	runSim(context.Background(), args[:len(args)-2], &again, &errb)
	if again.String() != out.String() {
		t.Fatal("two runs of one seed print different rows")
	}
}

// TestSim_Plot draws one small row as SVG and as PNG: the files exist, the
// SVG names both series and the RTTstop line, and the PNG decodes at the
// size asked for.
func TestSim_Plot(t *testing.T) {
	dir := t.TempDir()
	svg, pngPath := filepath.Join(dir, "fig.svg"), filepath.Join(dir, "fig.png")
	for _, path := range []string{svg, pngPath} {
		args := []string{"--client", "AU", "--game", "et", "--servers", "400", "--seed", "2", "--plot", path, "--plot-width", "900", "--plot-height", "400"}
		var out, errb bytes.Buffer
		if code := runSim(context.Background(), args, &out, &errb); code != 0 {
			t.Fatalf("scout-lab sim %v: exit %d: %s", args, code, errb.String())
		}
		if !strings.Contains(out.String(), "AU-ET") {
			t.Errorf("%s: the table is missing: %q", path, out.String())
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "conventional (master order)", "adaptive (re-ordered)", "auto-stop", "AU-ET"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the SVG does not contain %q", want)
		}
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the PNG does not decode: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 900 || b.Dy() != 400 {
		t.Errorf("the PNG is %v, want 900x400", b)
	}
}

// TestSim_PlotRunPastStop checks what --plot's help claims: the run drawn
// past the auto-stop (auto-stop off) is the paper's run, probe for probe,
// up to the stop.
func TestSim_PlotRunPastStop(t *testing.T) {
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

// TestSim_PrintScoutRows checks that the table prints the scout variant's
// own row figures after the paper's, and nothing of the kind without it.
func TestSim_PrintScoutRows(t *testing.T) {
	row := &sim.Row{Client: "AU-ET", Servers: 10,
		Variants: []sim.Outcome{{Name: "paper", StopPct: 28}, {Name: "scout", Stopped: true, StopTime: 12.3, StopPct: 17, FoundPct: 99.5, LastPlayable: 11.5, Probes: 463, Initial: 282}}}
	var b strings.Builder
	printSimTable(&b, []*sim.Row{row})
	out := b.String()
	if !strings.Contains(out, "Variant scout") || !regexp.MustCompile(`AU-ET +282 +12\.3 +17 +99\.5 +11\.5 +463`).MatchString(out) {
		t.Errorf("no scout row in:\n%s", out)
	}
	row.Variants = row.Variants[:1]
	b.Reset()
	printSimTable(&b, []*sim.Row{row})
	if strings.Contains(b.String(), "Variant scout") {
		t.Errorf("a scout section without the variant:\n%s", b.String())
	}
}

// TestSim_PlotVariantRunPastStop checks --plot-variant scout the same way:
// the never-stopping run drawn is the scout run, probe for probe, up to its
// stop.
func TestSim_PlotVariantRunPastStop(t *testing.T) {
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
