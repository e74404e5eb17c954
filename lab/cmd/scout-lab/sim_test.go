package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
