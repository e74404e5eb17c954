//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/freeport"
	"github.com/scout-discovery/scout/master"
)

// floodRun is one JSON line of scout-lab load --flood.
type floodRun struct {
	Spoofed, Refreshes, Complete, Cookies int
	FloodBytes                            int64 `json:"flood_bytes"`
	ClientBytes                           int64 `json:"client_bytes"`
	MaxNet                                int64 `json:"max_net_bytes"`
	MaxWide                               int64 `json:"max_wide_bytes"`
	SpoofedBytes                          int64 `json:"spoofed_bytes"`
	Elapsed                               time.Duration
}

// A real scout master with its default limits, flooded for 3 s with 300
// spoofed list requests a second spread over one address, a /24, a /16,
// the whole of 127.0.0.0/8 and (as root, where an IPv6 prefix can be
// routed to lo) a /32 of IPv6, while scout's own client refreshes from
// the victim's address: the bytes reaching the flooded address or network
// stay within its bound (ResponseLimits.FloodBound, NetFloodBound,
// WideFloodBound; across networks the global budget), and the client, on
// its cookie, gets every list.
func TestLoad_FloodSpreadsAgainstDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a real master for 3 s per spread")
	}
	_, scout := buildBinaries(t)
	lim := master.ResponseLimits{}
	// Across networks, the global budget (replies to addresses without a
	// cookie take all of its rate but not the last quarter of its burst).
	global := func(d time.Duration) int64 {
		return master.DefaultOutboundBurst + int64(float64(master.DefaultOutboundBytesPerSecond)*d.Seconds())
	}
	const prefix6 = "fd5c:5c07::/32"
	route6 := exec.Command("ip", "-6", "route", "add", "local", prefix6, "dev", "lo").Run() == nil
	if route6 {
		t.Cleanup(func() { exec.Command("ip", "-6", "route", "del", "local", prefix6, "dev", "lo").Run() })
	}
	for i, c := range []struct {
		spread, victim string
		flood          func(r floodRun) int64 // the bytes the bound is on
		bound          func(d time.Duration) int64
	}{
		{"address", "127.97.0.1", func(r floodRun) int64 { return r.FloodBytes }, lim.FloodBound},
		{"24", "127.97.1.1", func(r floodRun) int64 { return r.FloodBytes }, lim.NetFloodBound},
		{"16", "127.98.0.1", func(r floodRun) int64 { return r.FloodBytes }, lim.WideFloodBound},
		{"random4", "127.99.0.1", func(r floodRun) int64 { return r.FloodBytes }, global},
		{"random6", "fd5c:5c07:0:1::1", func(r floodRun) int64 { return r.FloodBytes }, global},
	} {
		t.Run(c.spread, func(t *testing.T) {
			if c.spread == "random6" && !route6 {
				t.Skip("no local route for " + prefix6 + " (ip -6 route add local ... dev lo needs root)")
			}
			var r floodRun
			freeport.Retry(t, 1, func(port uint16) error {
				mport := freeUDPPort(t)
				target := fmt.Sprintf("scout=127.0.0.1:%d", mport)
				cmd := fmt.Sprintf("scout=%s master -l 127.0.0.1 -l [::1] -p %d --list-loopback --motd-port 0 -v 0", scout, mport)
				var stdout, stderr bytes.Buffer
				code := run(t.Context(), []string{"load", "--target", target, "--exec", cmd,
					"--servers", "1000", "--per-addr", "4", "--fleet-base", fmt.Sprintf("127.96.%d.1", 10*i), "--fleet-port", fmt.Sprint(port),
					"--flood", "300", "--spread", c.spread, "--prefix6", prefix6, "--victim", c.victim, "--cookie", "--duration", "3s", "--runs", "1", "--json"}, &stdout, &stderr)
				if code != 0 && strings.Contains(stderr.String(), "address already in use") {
					return freeport.ErrInUse
				}
				if code != 0 {
					t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
				}
				line, _, _ := strings.Cut(stdout.String(), "\n")
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				return nil
			})
			got, bound := c.flood(r), c.bound(r.Elapsed)
			if r.Spoofed < 800 || got > bound {
				t.Errorf("%d spoofed; %d bytes reached the flooded network in %v, bound %d", r.Spoofed, got, r.Elapsed, bound)
			}
			if r.Refreshes < 2 || r.Complete != r.Refreshes || r.Cookies == 0 {
				t.Errorf("scout's client: %d of %d lists, %d cookies", r.Complete, r.Refreshes, r.Cookies)
			}
			t.Logf("%s: %d spoofed, %d bytes (%.1fx), worst /24 %d, /16 %d, bound %d; client %d/%d",
				c.spread, r.Spoofed, got, float64(got)/float64(r.SpoofedBytes), r.MaxNet, r.MaxWide, bound, r.Complete, r.Refreshes)
		})
	}
}

// freeUDPPort returns a UDP port free on 127.0.0.1 a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
