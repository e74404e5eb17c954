//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"time"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/lab/loadgen/bench"
)

func init() {
	register(cli.Command{Name: "aggload", Summary: "measure what aggregating another master costs (datagrams and CPU per refresh)", Run: runAggload})
}

const aggloadAbout = `Starts two scout masters on loopback: an upstream, with which a swarm of
--servers emulated servers registers (70 % Quake3Arena 68, 15 % OpenArena
71, 15 % Xonotic 3: the million-server layout), and an aggregator, which
has the upstream as its only source (--aggregate UPSTREAM q3:68 OpenArena
Xonotic, every --interval seconds). It measures the aggregator's first
refresh (every server learned and checked with its own challenge, at
--checks first checks a second), then --refreshes steady refreshes (every
server known): the aggregator's datagrams in and out and CPU time, and the
upstream's CPU time and list packets per refresh. Neither master re-probes
(-g GAME reprobe=0) during the run; the upstream, holding the same servers
without aggregating, is the baseline: the difference of the two masters'
CPU over the steady refreshes is what aggregation costs.
The upstream runs without its defences on queries (--no-flood-protection),
so that the list's size, not its limiter, is measured.

Run it under flock /tmp/scout-bench.lock, as BENCHMARKS.md's commands.`

func runAggload(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("aggload", "[flags]", aggloadAbout, stderr)
	scout := fs.String("scout", "./scout", "the scout binary")
	servers := fs.Int("servers", 5000, "servers in the swarm")
	refreshes := fs.Int("refreshes", 3, "steady refreshes to measure")
	interval := fs.Int("interval", 10, "the aggregator's --aggregate-interval, seconds")
	checks := fs.Int("checks", 10000, "the aggregator's --aggregate-checks: first checks a second")
	rate := fs.Int("rate", loadgen.DefaultSwarmRate, "heartbeats per second offered to the upstream")
	upPort := fs.Int("port", 27990, "the upstream's port (the aggregator takes the next; HTTP on the two after)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	p := *upPort
	up := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(p))
	ag := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(p+1))
	upHTTP, agHTTP := "127.0.0.1:"+strconv.Itoa(p+2), "127.0.0.1:"+strconv.Itoa(p+3)
	n := strconv.Itoa(2 * *servers)
	noReprobe := []string{"-g", "Quake3Arena", "reprobe=0", "-g", "OpenArena", "reprobe=0", "-g", "Xonotic", "reprobe=0"}
	common := append([]string{"master", "--list-loopback", "--motd-port", "0", "-v", "0", "-n", n, "--max-pending", n}, noReprobe...)
	o := bench.AggregateOptions{
		Upstream: bench.Target{Name: "upstream", Addr: up, Argv: append(append([]string{*scout}, common...),
			"-l", up.String(), "--http", upHTTP, "--no-flood-protection", "--out-rate", "4000000000", "--out-burst", "100000000")},
		Aggregator: bench.Target{Name: "aggregator", Addr: ag, Argv: append(append([]string{*scout}, common...),
			"-l", ag.String(), "--http", agHTTP, "--aggregate", up.String(), "q3:68", "OpenArena", "Xonotic", "name=up",
			"--aggregate-interval", strconv.Itoa(*interval), "--aggregate-max-entries", n, "--aggregate-max-servers", n,
			"--aggregate-checks", strconv.Itoa(*checks))},
		UpstreamMetrics:   "http://" + upHTTP + "/metrics",
		AggregatorMetrics: "http://" + agHTTP + "/metrics",
		Swarm:             loadgen.SwarmConfig{Servers: *servers},
		Rate:              *rate,
		Refreshes:         *refreshes,
		Deadline:          10 * time.Minute,
	}
	if _, err := bench.Aggregate(ctx, stdout, o); err != nil {
		fmt.Fprintf(stderr, "scout-lab aggload: %v\n", err)
		return 1
	}
	return 0
}
