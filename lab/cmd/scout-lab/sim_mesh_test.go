package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/lab/mesh"
	"github.com/scout-discovery/scout/lab/sim"
)

func TestSimMesh_BadUsage(t *testing.T) {
	dir := peer.SharedData(t, mesh.WonderProxyPings)
	for _, args := range [][]string{
		{"--mesh", dir, "--landmarks", "9"},
		{"--mesh", dir, "--landmarks", "3,x"},
		{"--mesh", dir, "--landmarks", "2", "--drop", "2"},
		{"--mesh", dir, "--landmark-rule", "random"},
		{"--mesh", dir, "--estimator", "gnp"},
		{"--mesh", dir, "--stop-on", "gnp"},
		{"--mesh", dir, "--margin-quantile", "0"},
		{"--mesh", dir, "--unmeasured", "2"},
		{"--mesh", dir, "--stop-after", "-1"},
		{"--mesh", dir, "--margin", "x"},
		{"--mesh", dir, "--margin", "NaN"},
		{"--mesh", t.TempDir()},
		{"--mesh", dir, "--plot", "x.svg"},
	} {
		var out, errb bytes.Buffer
		if code := runSim(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("scout-lab sim %v: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}

func TestSimMesh_OneRow(t *testing.T) {
	dir := peer.SharedData(t, mesh.WonderProxyPings)
	var out, errb bytes.Buffer
	if code := runSim(context.Background(), []string{"--mesh", dir, "--client", "AU", "--servers", "600", "--landmarks", "3"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"landmarks-3: Frankfurt NewYork Tokyo, stop on lower, margin", "landmarks-3+run", "landmarks-3+scout", "Probes % of the full probe's"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSimMesh_JSONIsRowsOnly(t *testing.T) {
	dir := peer.SharedData(t, mesh.WonderProxyPings)
	var out, errb bytes.Buffer
	if code := runSim(context.Background(), []string{"--mesh", dir, "--client", "DE", "--servers", "300", "--landmarks", "3", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "{") || !strings.Contains(lines[0], `"landmarks-3+scout"`) {
		t.Errorf("--json output:\n%s", out.String())
	}
}

func TestPrintTargets(t *testing.T) {
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
	printTargets(&out, results, 1)
	s := out.String()
	for _, want := range []string{"AU-ET  3/3  1/3 | 1.9 |", "CH-ET  0/3  1/3 | 2.1 |"} {
		if !strings.Contains(strings.Join(strings.Fields(s), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// printFarRatios gives each strategy's probes as a multiple of the
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
	printFarRatios(&out, results, 1)
	want := "AU-ET  3/4  2.00 4.00 | 1 | 5.0-12.0"
	if !strings.Contains(strings.Join(strings.Fields(out.String()), "  "), strings.Join(strings.Fields(want), "  ")) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}

// --margin replaces the fitted margin, and --derive says so in the notes.
func TestSimMesh_MarginAndDerive(t *testing.T) {
	dir := peer.SharedData(t, mesh.WonderProxyPings)
	var out, errb bytes.Buffer
	if code := runSim(context.Background(), []string{"--mesh", dir, "--client", "AU", "--servers", "600", "--landmarks", "3", "--margin", "-7.5", "--derive"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "margin -7.5 ms (given by --margin), drop 0, repair true, order by upper, client height known true, derived true"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}

// --siblings and its bounds reach the landmark strategies (the notes say
// so), and bad values are refused.
func TestSimMesh_Siblings(t *testing.T) {
	dir := peer.SharedData(t, mesh.WonderProxyPings)
	var out, errb bytes.Buffer
	args := []string{"--mesh", dir, "--client", "AU", "--servers", "600", "--landmarks", "8", "--siblings", "4", "--sibling-margin", "10", "--sibling-delta", "50", "--sibling-near", "50"}
	if code := runSim(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "siblings within 4 ms, margin 10 ms, differing by at most 50 ms, for a client within 50 ms of a landmark"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	for _, bad := range [][]string{{"--siblings", "-1"}, {"--siblings", "4", "--sibling-near", "-1"}, {"--siblings", "4", "--sibling-delta", "-3"}} {
		out.Reset()
		errb.Reset()
		if code := runSim(context.Background(), append([]string{"--mesh", dir, "--client", "AU", "--servers", "600"}, bad...), &out, &errb); code == 0 {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestLandmarks_RTT(t *testing.T) {
	dir := peer.SharedData(t, mesh.WonderProxyPings)
	var out, errb bytes.Buffer
	if code := runLandmarks(context.Background(), []string{"--data", dir, "--rtt", "Melbourne:Adelaide,melbourne"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "Melbourne -> Adelaide: ") || lines[1] != "Melbourne -> Melbourne: 0 ms" {
		t.Errorf("output:\n%s", out.String())
	}
	for _, bad := range []string{"Melbourne", "Nowhere:Adelaide", "Melbourne:Nowhere"} {
		out.Reset()
		if code := runLandmarks(context.Background(), []string{"--data", dir, "--rtt", bad}, &out, &errb); code != 2 {
			t.Errorf("--rtt %q: exit %d, want 2", bad, code)
		}
	}
}
