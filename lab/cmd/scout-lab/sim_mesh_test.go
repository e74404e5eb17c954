package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/lab/mesh"
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
