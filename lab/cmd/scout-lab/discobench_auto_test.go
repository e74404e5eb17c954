//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestDiscobench_DefaultOrderFindsEveryPlayable runs scout-lab discobench
// (a real master, 5,000 emulated servers on loopback, up to four on one
// address, nothing geolocated) with scout servers' default order and with
// --order master, three rounds each, and checks that every round of the
// default found every server under 200 ms that master order found. The
// master's list turns over between rounds, so the rounds start from
// different servers. A stop rule that counts a far address's skipped
// ports as agreeing far outcomes stops the first round after 21 probes.
func TestDiscobench_DefaultOrderFindsEveryPlayable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 5,000-server world")
	}
	lab, _ := buildBinaries(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), lab, "discobench", "--runs", "3", "--only", "scout,scout-auto", "--loss", "0", "--json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("discobench: %v\n%s", err, stderr.String())
	}
	type measurement struct {
		Name     string `json:"name"`
		Playable int    `json:"playable"`
		Probes   uint64 `json:"probes"`
	}
	var master, auto []measurement
	for _, line := range strings.Split(stdout.String(), "\n") {
		var l struct {
			Measurement measurement `json:"measurement"`
		}
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		switch m := l.Measurement; m.Name {
		case "scout":
			master = append(master, m)
		case "scout-auto":
			auto = append(auto, m)
		}
	}
	if len(master) != 3 || len(auto) != 3 {
		t.Fatalf("%d master-order and %d default rounds in the output, want 3 each:\n%s", len(master), len(auto), stdout.String())
	}
	want := master[0].Playable
	for _, m := range master {
		if m.Playable != want || want == 0 {
			t.Fatalf("master order found %d, then %d playable servers: no reference", want, m.Playable)
		}
	}
	// A round that stops early finds a few of them; a reply of a server
	// under 200 ms that a loaded machine delays past 220 ms gets its
	// address's other ports skipped (the group rule's own risk, not the
	// stop's), a few servers at most.
	for i, m := range auto {
		t.Logf("round %d: the default found %d of %d playable servers with %d probes", i+1, m.Playable, want, m.Probes)
		if m.Playable < want*95/100 {
			t.Errorf("round %d: the default found %d of the %d playable servers master order found (%d probes): it stopped early", i+1, m.Playable, want, m.Probes)
		}
	}
}
