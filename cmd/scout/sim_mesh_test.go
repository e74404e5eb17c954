package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/mesh"
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
		{"--mesh", t.TempDir()},
		{"--mesh", dir, "--plot", "x.svg"},
	} {
		var out, errb bytes.Buffer
		if code := runSim(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("scout sim %v: exit %d, want 2 (stderr %q)", args, code, errb.String())
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
