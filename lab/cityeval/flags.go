package cityeval

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/scout-discovery/scout/latency"
)

// MaxSeeds bounds a list of seeds (ParseSeeds).
const MaxSeeds = 100

// ParseSeeds reads "A-B" or "a,b,c": at most MaxSeeds seeds.
func ParseSeeds(s string) ([]uint64, error) {
	if a, b, ok := strings.Cut(s, "-"); ok {
		lo, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
		hi, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
		if err1 != nil || err2 != nil || hi < lo || hi-lo >= MaxSeeds {
			return nil, fmt.Errorf("%q: want A-B with A <= B and at most %d seeds", s, MaxSeeds)
		}
		var out []uint64
		for x := lo; x <= hi; x++ {
			out = append(out, x)
		}
		return out, nil
	}
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: want A-B or a list of seeds", s)
		}
		out = append(out, x)
	}
	if len(out) > MaxSeeds {
		return nil, fmt.Errorf("%q: at most %d seeds", s, MaxSeeds)
	}
	return out, nil
}

// ParseModels reads a comma-separated list of server delay models.
func ParseModels(s string) ([]Model, error) {
	var out []Model
	for _, m := range strings.Split(s, ",") {
		switch mm := Model(strings.TrimSpace(m)); mm {
		case Shared, PerPath:
			out = append(out, mm)
		default:
			return nil, fmt.Errorf("%q: %s, %s", s, Shared, PerPath)
		}
	}
	return out, nil
}

// FitAndReport returns the fit cities (Split's, with Examined) and the
// cities to report on: Split's report set for "", the fit set for "fit",
// else the Named cities.
func FitAndReport(cities string) (fit, report []latency.City, err error) {
	fit, report = Split(latency.Cities(), Examined...)
	switch cities {
	case "":
	case "fit":
		report = fit
	default:
		report, err = Named(cities)
	}
	return fit, report, err
}

// Named returns the WonderProxy cities of a comma-separated list of names.
func Named(names string) ([]latency.City, error) {
	byName := map[string]latency.City{}
	for _, c := range latency.Cities() {
		byName[c.Name] = c
	}
	var out []latency.City
	for _, n := range strings.Split(names, ",") {
		c, ok := byName[strings.TrimSpace(n)]
		if !ok {
			return nil, fmt.Errorf("no WonderProxy city %q", n)
		}
		out = append(out, c)
	}
	return out, nil
}
