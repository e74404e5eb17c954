package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
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
	} {
		var out, errb bytes.Buffer
		if code := runSim(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("scout sim %v: exit %d, want 2 (stderr %q)", args, code, errb.String())
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
