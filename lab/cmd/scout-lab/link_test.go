package main

import (
	"math"
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

// FuzzLinkFlags: any text given to --link or --link-queue is a clear
// error or a value the world accepts; never a panic, NaN or a negative.
func FuzzLinkFlags(f *testing.F) {
	for _, s := range []string{"10mbit", "512kbit", "1.5M", "250ms", "64kB", "100000B", "", "-1", "NaN", "1e400", "0x10", "inf", "1e-300mbit"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := parseRate(s); err == nil && !(r > 0 && r < math.Inf(1)) {
			t.Errorf("parseRate(%q) = %v", s, r)
		}
		if d, b, err := parseQueue(s); err == nil && (d < 0 || b < 0 || (d == 0) == (b == 0)) {
			t.Errorf("parseQueue(%q) = %v, %d", s, d, b)
		}
		down, queue := s, "250ms"
		lf := linkFlags{down: &down, up: new(string), queue: &queue}
		if l, err := lf.link(); err == nil && l.Validate() != nil {
			t.Errorf("--link %q: %+v accepted but invalid", s, l)
		}
	})
}
