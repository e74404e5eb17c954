package main

import (
	"testing"
	"time"
)

func TestParseRateAndQueue(t *testing.T) {
	rates := map[string]float64{"10mbit": 10e6, "10Mbit": 10e6, "512kbit": 512e3, "1gbit": 1e9, "1.5M": 1.5e6, "64000": 64000, "2mbps": 2e6}
	for in, want := range rates {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "-1mbit", "0", "mbit", "1e400", "NaN"} {
		if _, err := parseRate(bad); err == nil {
			t.Errorf("parseRate(%q) accepted", bad)
		}
	}
	queues := map[string]struct {
		d time.Duration
		b int
	}{"250ms": {250 * time.Millisecond, 0}, "64kB": {0, 64000}, "100000": {0, 100000}, "100000B": {0, 100000}, "1MB": {0, 1000000}}
	for in, want := range queues {
		if d, b, err := parseQueue(in); err != nil || d != want.d || b != want.b {
			t.Errorf("parseQueue(%q) = %v, %d, %v; want %v, %d", in, d, b, err, want.d, want.b)
		}
	}
	for _, bad := range []string{"", "0s", "-5ms", "0", "lots", "0.5B"} {
		if _, _, err := parseQueue(bad); err == nil {
			t.Errorf("parseQueue(%q) accepted", bad)
		}
	}
}
