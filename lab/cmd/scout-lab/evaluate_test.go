package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/scout-discovery/scout/lab/cityeval"
)

// TestEvaluate_FoundFloor reads scout-lab evaluate's JSON on a small
// configuration (the fitted latency model, which needs no data; 600
// Enemy Territory servers; ten client cities on every continent; two
// seeds; both server delay models) and holds the found-rate floor: the
// default strategies, with landmark masters (landmarks) and without
// (scout+groups), and their remembered runs find at least 99.5% of the
// playable servers for every client city and seed.
func TestEvaluate_FoundFloor(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"evaluate", "--no-fit", "--servers", "600", "--seeds", "1-2", "--json",
		"--cities", "Seoul,Johannesburg,Santiago,Lagos,Perth,Reykjavik,Honolulu,Vladivostok,Zurich,Dallas"}
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep cityeval.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, r := range rep.Results {
		switch r.Strategy {
		case cityeval.ScoutGroups, cityeval.Landmarks, cityeval.ScoutGroups + cityeval.Remembered, cityeval.Landmarks + cityeval.Remembered:
		default:
			continue
		}
		held++
		if r.Summary.Cities != 10 || len(r.Seeds) != 2 {
			t.Errorf("%s, %s: %d cities, seeds %v", r.Strategy, r.Model, r.Summary.Cities, r.Seeds)
		}
		for _, c := range r.Cities {
			if c.FoundWorst < cityeval.MinFound {
				t.Errorf("%s, %s: %s found %.1f%% of the playable servers on seed %d; misses %+v", r.Strategy, r.Model, c.Name, c.FoundWorst, c.WorstSeed, c.Misses)
			}
		}
	}
	if held != 8 {
		t.Errorf("%d results of the default strategies, want 4 in each of 2 models", held)
	}
	if rep.Params != rep.Product {
		t.Errorf("--no-fit reported %+v, not the product's constants %+v", rep.Params, rep.Product)
	}
}
