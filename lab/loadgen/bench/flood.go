//go:build linux

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/scout-discovery/scout/lab/loadgen"
)

// runFlood runs the --flood measurement: runs reflection attacks on each
// target in turn, one line per run and target.
func runFlood(ctx context.Context, stdout, stderr io.Writer, targets []*Target, cfg loadgen.FloodConfig, runs int, asJSON bool) error {
	const format = "%3v %-10.10s %8v %9v %10v %9v %9v %8v %7v %6v %10v\n"
	if !asJSON {
		client := "a game client"
		if cfg.Cookie {
			client = "scout's client (cookie)"
		}
		fmt.Fprintf(stdout, "flood: %.0f spoofed requests/s spread over %s of %v (then the next each run) for %v, ports %s; %s refreshes every %v from %v before\n",
			cfg.Rate, spreadText(cfg), cfg.Victim, cfg.Duration, floodPortsText(cfg.Ports), client, cfg.Refresh, cfg.Refresh/2)
		fmt.Fprintf(stdout, format, "run", "target", "spoofed", "spoof B", "victim B", "victim B/s", "max /24 B/s", "answered", "ampl", "wire", "client")
	}
	enc := json.NewEncoder(stdout)
	failed := false
	// Each run attacks the next address, so no run starts with a budget
	// the one before spent.
	victim := cfg.Victim
	for run := 1; run <= runs; run++ {
		order := slices.Clone(targets)
		if run%2 == 0 {
			slices.Reverse(order)
		}
		for _, t := range order {
			c := cfg
			c.Master, c.Victim = t.Addr, victim
			victim = cfg.Spread.NextVictim(victim)
			r, err := loadgen.Flood(ctx, c)
			if err != nil {
				return fmt.Errorf("%s flood run %d: %w", t.Name, run, err)
			}
			failed = failed || r.Complete != r.Refreshes
			if asJSON {
				_ = enc.Encode(struct {
					Run    int    `json:"run"`
					Target string `json:"target"`
					loadgen.FloodResult
					VictimBytes   int64   `json:"victim_bytes"`
					Amplification float64 `json:"amplification"`
					Wire          float64 `json:"wire_amplification"`
				}{run, t.Name, r, r.VictimBytes(), r.Amplification(), r.WireAmplification()})
				continue
			}
			fmt.Fprintf(stdout, format, run, t.Name, r.Spoofed, r.SpoofedBytes, r.VictimBytes(),
				fmt.Sprintf("%.0f", r.VictimBytesPerSecond()), fmt.Sprintf("%.0f", r.MaxNetBytesPerSecond()), r.FloodAnswered,
				fmt.Sprintf("%.2f", r.Amplification()), fmt.Sprintf("%.2f", r.WireAmplification()),
				fmt.Sprintf("%d/%d", r.Complete, r.Refreshes))
			if len(r.Missed) > 0 {
				fmt.Fprintf(stdout, "    %s: refreshes not answered complete: %v\n", t.Name, r.Missed)
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	if failed {
		fmt.Fprintln(stderr, "scout-lab load: the victim's client was not answered every time")
	}
	return nil
}

func spreadText(cfg loadgen.FloodConfig) string {
	switch cfg.Spread {
	case loadgen.Spread24:
		return "the /24"
	case loadgen.Spread16:
		return "the /16"
	case loadgen.SpreadRandom4:
		return "127.0.0.0/8, away from"
	case loadgen.SpreadRandom6:
		return cfg.Prefix6.String() + ", away from"
	}
	return "the address"
}

func floodPortsText(n int) string {
	if n == 0 {
		return "a fresh one per request"
	}
	return fmt.Sprint(n)
}
