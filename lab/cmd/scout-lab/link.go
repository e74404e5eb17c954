package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/lab/world"
)

// linkFlags are the access-link flags of `scout-lab world` and `scout-lab
// discobench` (world.AccessLink).
type linkFlags struct {
	down, up, queue *string
}

func addLinkFlags(fs *flag.FlagSet) linkFlags {
	return linkFlags{
		down:  fs.String("link", "", "emulate the client's access link: downstream `rate` shared by every reply to one client (e.g. 10mbit, 512kbit); empty: none"),
		up:    fs.String("link-up", "", "upstream `rate` of the access link, shared by every request from one client; empty: requests unshaped"),
		queue: fs.String("link-queue", "250ms", "the access link's queue (each direction): the time to drain it (250ms) or bytes (64kB, 100000B); tail drop when full"),
	}
}

// link returns the access link the flags describe.
func (f linkFlags) link() (world.AccessLink, error) {
	var l world.AccessLink
	var err error
	if *f.down != "" {
		if l.Rate, err = parseRate(*f.down); err != nil {
			return l, fmt.Errorf("--link: %v", err)
		}
	}
	if *f.up != "" {
		if l.UpRate, err = parseRate(*f.up); err != nil {
			return l, fmt.Errorf("--link-up: %v", err)
		}
	}
	if l.QueueDelay, l.QueueBytes, err = parseQueue(*f.queue); err != nil {
		return l, fmt.Errorf("--link-queue: %v", err)
	}
	return l, l.Validate()
}

// parseRate reads a rate in bits per second as tc writes it: a number
// with an optional unit bit, kbit, mbit or gbit (case-insensitive; k, M
// and G alone are taken as kbit, mbit, gbit; bps is bits too).
func parseRate(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "bit"), "bps")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, t[:len(t)-1]
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, t[:len(t)-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad rate %q (bits per second: 10mbit, 512kbit, 1.5M)", s)
	}
	return v * mult, nil
}

// parseQueue reads a queue bound: a duration (250ms) or a size in bytes
// (100000, 100000B, 64kB, 1MB; k and M are 1,000 and 1,000,000).
func parseQueue(s string) (time.Duration, int, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, 0, fmt.Errorf("queue %q: not positive", s)
		}
		return d, 0, nil
	}
	t, mult := cutKM(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "B"), "b"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v >= 1) || v*mult > 1<<40 {
		return 0, 0, fmt.Errorf("bad queue %q (a duration such as 250ms, or bytes such as 64kB)", s)
	}
	return 0, int(v * mult), nil
}

// cutKM cuts a trailing k or K (1,000) or M (1,000,000) off s and
// returns the rest and the multiplier (1 without one).
func cutKM(s string) (string, float64) {
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		return s[:len(s)-1], 1e3
	case strings.HasSuffix(s, "M"):
		return s[:len(s)-1], 1e6
	}
	return s, 1
}
