//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/freeport"
)

// TestAggload_MeasuresARefresh: scout-lab aggload on a small swarm, real
// scout masters: the aggregator lists every server the upstream holds,
// sends one getinfo to each to learn it, and a steady refresh brings the
// upstream's list packets in for its four queries out.
func TestAggload_MeasuresARefresh(t *testing.T) {
	const n = 400
	_, scout := buildBinaries(t)
	var out string
	err := freeport.Retry(t, 3, func(port uint16) error {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"aggload", "--scout", scout, "--servers", strconv.Itoa(n),
			"--refreshes", "1", "--interval", "10", "--port", strconv.Itoa(int(port))}, &stdout, &stderr)
		out = stdout.String()
		switch {
		case code == 0:
			return nil
		case strings.Contains(stderr.String()+out, "address already in use"):
			return freeport.ErrInUse
		}
		return fmt.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	})
	if err != nil {
		t.Fatal(err)
	}
	learn := regexp.MustCompile(`aggregator lists (\d+) servers after \S+: (\d+) datagrams in, (\d+) out`).FindStringSubmatch(out)
	steady := regexp.MustCompile(`per steady refresh \(1, each an interval\): aggregator (\d+) datagrams in, (\d+) out, .* (\d+) list packets; aggregator lists (\d+)`).FindStringSubmatch(out)
	if learn == nil || steady == nil {
		t.Fatalf("output:\n%s", out)
	}
	num := func(s string) int { v, _ := strconv.Atoi(s); return v }
	// Each server answers one getinfo; a lost one is tried again.
	if num(learn[1]) != n || num(learn[3]) < n || num(learn[3]) > 3*n+10 {
		t.Errorf("first refresh: %s", learn[0])
	}
	// Four queries (q3:68, OpenArena by name and anonymously, Xonotic),
	// each answered with at least one packet; all servers still listed.
	if in, sent := num(steady[1]), num(steady[2]); in < 4 || sent < 1 || sent > 8 || num(steady[4]) != n || num(steady[3]) < 4 {
		t.Errorf("steady refresh: %s", steady[0])
	}
	t.Log(out)
}
