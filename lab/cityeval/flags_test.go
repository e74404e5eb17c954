package cityeval

import (
	"slices"
	"testing"

	"github.com/scout-discovery/scout/latency"
)

func TestParseSeeds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []uint64
	}{{"1-3", []uint64{1, 2, 3}}, {" 7 ", []uint64{7}}, {"5,2,9", []uint64{5, 2, 9}}, {"4-4", []uint64{4}}} {
		got, err := ParseSeeds(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "3-1", "1-101", "a", "1,,2", "-1", "1-x"} {
		if got, err := ParseSeeds(in); err == nil {
			t.Errorf("ParseSeeds(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseModelsAndNamed(t *testing.T) {
	if got, err := ParseModels("shared, per-path"); err != nil || !slices.Equal(got, []Model{Shared, PerPath}) {
		t.Errorf("ParseModels = %v, %v", got, err)
	}
	if _, err := ParseModels("shared,global"); err == nil {
		t.Error("ParseModels accepted an unknown model")
	}
	got, err := Named("Tokyo, Melbourne")
	if err != nil || len(got) != 2 || got[0].Name != "Tokyo" || got[1].Name != "Melbourne" {
		t.Errorf("Named = %v, %v", got, err)
	}
	if _, err := Named("Tokyo,Atlantis"); err == nil {
		t.Error("Named accepted a city WonderProxy has not")
	}
}

// FitAndReport: the report set is the rest of the cities by default, the
// fit set for "fit", the named cities otherwise; an unknown name fails.
func TestFitAndReport(t *testing.T) {
	fit, report, err := FitAndReport("")
	if err != nil || len(fit)+len(report) != len(latency.Cities()) {
		t.Fatalf("%d fit + %d report cities of %d, %v", len(fit), len(report), len(latency.Cities()), err)
	}
	if _, r, err := FitAndReport("fit"); err != nil || len(r) != len(fit) {
		t.Errorf("fit: %d cities, %v; want the %d fit cities", len(r), err, len(fit))
	}
	if _, r, err := FitAndReport("Zurich,Dallas"); err != nil || len(r) != 2 {
		t.Errorf("named: %v, %v", r, err)
	}
	if _, _, err := FitAndReport("Atlantis"); err == nil {
		t.Error("an unknown city was taken")
	}
}
