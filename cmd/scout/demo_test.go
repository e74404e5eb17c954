//go:build linux

package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/demo"
)

// TestDemo_SmallWorldComparison runs scout demo with 300 servers seen from
// Melbourne and checks that the table has its four runs and its columns,
// that the plot is written to --out (created when missing) and decodes at
// its size, and that nothing else is written there.
func TestDemo_SmallWorldComparison(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 300-server world for several seconds")
	}
	dir := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"demo", "--servers", "300", "--seed", "3", "--out", dir, "--max-time", "90s"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	for _, want := range []string{"conventional", "adaptive, paper", "adaptive, scout", "landmarks", "oracle", "initial probes", "playable found", "auto-stop", "landmarks: 3 landmarks"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "scout-demo.svg"))
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("scout-demo.svg: %v (%d bytes)", err, len(svg))
	}
	f, err := os.Open(filepath.Join(dir, "scout-demo.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil {
		t.Errorf("scout-demo.png does not decode: %v", err)
	} else if b := img.Bounds(); b.Dx() != demoPlotWidth || b.Dy() != demoPlotHeight {
		t.Errorf("scout-demo.png is %dx%d", b.Dx(), b.Dy())
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("--out holds %d files, want the SVG and the PNG", len(es))
	}
	t.Log(out)
}

// TestDemo_Invariants runs the demo package directly on a small world and
// checks the report against the world's ground truth (see demo.Found):
// conventional and the oracle find every playable server the master listed
// (one retry makes a server lost to 1% loss twice rare: at most one is
// allowed), the scout variant finds nine in ten at least and misses more
// than one only by its auto-stop (see below), the paper's variant may stop
// before some (its rule is the paper's, whose Table 2 runs miss servers
// too) but never sends more probes than conventional, the landmark run
// (three landmark masters, scout servers --order landmarks' planner)
// hears from the three landmarks, finds nine in ten at least, misses more
// than one only by its stop rule and never sends more probes than
// conventional, and the oracle probes only playable servers.
func TestDemo_Invariants(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 300-server world for several seconds")
	}
	rep, err := demo.Demo(t.Context(), demo.Config{Servers: 300, Seed: 5, LandmarkPlan: demoLandmarkPlan(adaptive.Paper().StopRTT, 5)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 5 {
		t.Fatalf("%d runs", len(rep.Runs))
	}
	conv, paper, scout, lm, oracle := rep.Runs[0], rep.Runs[1], rep.Runs[2], rep.Runs[3], rep.Runs[4]
	if lm.Name != "landmarks" || oracle.Name != "oracle" {
		t.Fatalf("runs %s, %s: want landmarks, oracle", lm.Name, oracle.Name)
	}
	t.Logf("listed %d, playable %d; found: conventional %d, paper %d, scout %d, landmarks %d (%d probes, landmarks %v), oracle %d",
		rep.Listed, rep.Playable, conv.Found, paper.Found, scout.Found, lm.Found, lm.Summary.Probe.Sent, lm.Landmarks, oracle.Found)
	if len(lm.Landmarks) != len(demo.DefaultLandmarks) {
		t.Errorf("the landmark run heard from %v, want the %d landmark masters", lm.Landmarks, len(demo.DefaultLandmarks))
	}
	if lm.Found > rep.Playable || lm.Found < rep.Playable*9/10 || (lm.Found < rep.Playable-1 && !lm.Ordering.Stopped) {
		t.Errorf("landmarks found %d playable of %d listed, stopped %v", lm.Found, rep.Playable, lm.Ordering.Stopped)
	}
	if lm.Summary.Probe.Sent > conv.Summary.Probe.Sent {
		t.Errorf("landmarks sent %d probes, conventional %d", lm.Summary.Probe.Sent, conv.Summary.Probe.Sent)
	}
	if rep.Listed < rep.Servers*95/100 {
		t.Errorf("master listed %d of %d", rep.Listed, rep.Servers)
	}
	if rep.Playable < 3 || rep.Playable > rep.WorldPlayable {
		t.Errorf("%d playable listed, %d in the world: the test needs some", rep.Playable, rep.WorldPlayable)
	}
	if conv.Summary.Listed != rep.Listed || len(conv.Ordering.Probes) != rep.Listed {
		t.Errorf("conventional listed %d and probed %d of %d", conv.Summary.Listed, len(conv.Ordering.Probes), rep.Listed)
	}
	for _, r := range []demo.Run{conv, oracle} {
		if r.Found < rep.Playable-1 || r.Found > rep.Playable {
			t.Errorf("%s found %d playable of %d listed", r.Name, r.Found, rep.Playable)
		}
	}
	// The scout variant's bound rule finds every playable server when the
	// RTTs it measures are the world's (the simulator checks that exactly:
	// sim's tests and EVALUATION.md). Live, on a machine whose both cores
	// are busy, the emulator's delays grow by tens of milliseconds and a
	// near network's first sample can read as far (FarCut), so it may stop
	// before one or two: then its auto-stop must have fired, and it must
	// still find nine in ten (2 of 50 were missed once in about 20 runs at
	// load average 15).
	if scout.Found > rep.Playable || scout.Found < rep.Playable*9/10 ||
		(scout.Found < rep.Playable-1 && !scout.Ordering.Stopped) {
		t.Errorf("scout found %d playable of %d listed, stopped %v", scout.Found, rep.Playable, scout.Ordering.Stopped)
	}
	if paper.Found > rep.Playable || (paper.Found < rep.Playable && !paper.Ordering.Stopped) {
		t.Errorf("paper found %d of %d playable, stopped %v", paper.Found, rep.Playable, paper.Ordering.Stopped)
	}
	for _, a := range []demo.Run{paper, scout} {
		if a.Params == nil {
			t.Fatalf("%s has no params", a.Name)
		}
		if a.Summary.Probe.Sent > conv.Summary.Probe.Sent || a.Summary.Probe.Destinations > conv.Summary.Probe.Destinations {
			t.Errorf("%s sent %d probes to %d servers, conventional %d to %d", a.Name,
				a.Summary.Probe.Sent, a.Summary.Probe.Destinations, conv.Summary.Probe.Sent, conv.Summary.Probe.Destinations)
		}
		if a.Ordering.Located < rep.Listed*9/10 {
			t.Errorf("%s geolocated %d of %d", a.Name, a.Ordering.Located, rep.Listed)
		}
	}
	if paper.Params.ClusterBy == scout.Params.ClusterBy {
		t.Errorf("both adaptive runs cluster by %v: the variants are not the paper's and scout's", paper.Params.ClusterBy)
	}
	if oracle.Summary.Probe.Destinations > rep.Playable {
		t.Errorf("oracle probed %d servers, %d playable", oracle.Summary.Probe.Destinations, rep.Playable)
	}
	for _, r := range rep.Runs {
		if r.Ordering.Refused != 0 {
			t.Errorf("%s: %d outcomes refused", r.Name, r.Ordering.Refused)
		}
	}
}
