//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/web"
)

// TestWebload_MeasuresUDPAndAPI: scout-lab webload against an in-process
// master (UDP and HTTP on loopback, no per-client API limit): every phase
// is measured, the list phases get 200s, the conditional ones 304s only,
// and UDP answers come in every UDP phase.
func TestWebload_MeasuresUDPAndAPI(t *testing.T) {
	m := inProcessMaster(t, masterd.Config{
		Listen: []netip.AddrPort{netip.MustParseAddrPort("127.46.0.1:0")},
		HTTP:   "127.46.0.1:0",
		Reloadable: masterd.Reloadable{
			Registry:     master.Config{AllowLoopback: true},
			NoQueryLimit: true,
			OutRate:      1_000_000_000,
			API:          web.Config{Rate: -1, MaxRate: -1, MinRefresh: -1},
		},
	})

	code, stdout, stderr := runFleetPort(t, loadgen.DefaultPerAddr-1, func(port string) []string {
		return []string{"webload", "--master", m.Addrs()[0].String(), "--http", m.HTTPAddr().String(),
			"--servers", "40", "--fleet-base", "127.46.1.1", "--fleet-port", port, "--per-page", "15", "--clients", "2",
			"--list-rate", "50", "--cond-rate", "100", "--sources", "2", "--outstanding", "2",
			"--duration", "300ms", "--runs", "1", "--json"}
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	type row struct {
		Phase    string
		UDP      *loadgen.Result
		HTTP     *loadgen.HTTPResult
		UDPPerS  float64 `json:"udp_answers_per_second"`
		HTTPPerS float64 `json:"http_requests_per_second"`
	}
	var phases []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		phases = append(phases, r.Phase)
		udp := r.Phase == "udp" || r.Phase[:3] == "udp"
		http := r.Phase != "udp"
		cond := r.Phase == "udp+304" || r.Phase == "udp+304!" || r.Phase == "304!"
		if udp && (r.UDP == nil || r.UDP.Complete == 0 || r.UDP.Incomplete+r.UDP.Unanswered != 0) {
			t.Errorf("%s: udp %+v", r.Phase, r.UDP)
		}
		if http {
			h := r.HTTP
			switch {
			case h == nil || h.Other+h.Errors != 0:
				t.Errorf("%s: http %+v", r.Phase, h)
			case cond && (h.NotModified == 0 || h.OK != 0):
				t.Errorf("%s: %d 304s, %d 200s", r.Phase, h.NotModified, h.OK)
			case !cond && (h.OK == 0 || h.NotModified != 0):
				t.Errorf("%s: %d 200s, %d 304s", r.Phase, h.OK, h.NotModified)
			}
		}
	}
	if len(phases) != 7 {
		t.Errorf("phases %v", phases)
	}
}
