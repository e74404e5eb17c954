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

	"github.com/scout-discovery/scout/lab/demo"
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
	for _, want := range []string{"conventional", "adaptive, paper", "adaptive, scout", "default, no landmarks", "landmarks", "oracle", "initial probes", "playable found", "auto-stop", "landmarks: 3 landmarks", "matrix measured by the masters ("} {
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
	} else if b := img.Bounds(); b.Dx() != demo.PlotWidth || b.Dy() != demo.PlotHeight {
		t.Errorf("scout-demo.png is %dx%d", b.Dx(), b.Dy())
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("--out holds %d files, want the SVG and the PNG", len(es))
	}
	t.Log(out)
}
