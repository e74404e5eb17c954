//go:build linux

package masterd

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/q3"
)

// benchServers is the list size the master is compared with dpmaster at:
// dpmaster 2.3 answers it in 26
// packets (35.6 KB) for 0.23-0.31 ms of CPU.
const benchServers = 5000

// BenchmarkMaster_FullList5000 answers "getservers 68 empty full" for a
// list of 5,000 verified servers:
//
//   - socket: a real master on 127.0.0.1 (the socket loop of scout
//     master), 5,000 emulated servers registered over loopback by
//     loadgen, each op one full answer received and checked, 8 requests in
//     flight from 64 source addresses. The load generator runs in the same
//     process, so ns/op is wall time per answer under that shared load;
//     `scout-lab load` measures the master's own CPU (see BENCHMARKS.md).
//
// The handler alone is master's BenchmarkMaster_FullList5000/handler.
func BenchmarkMaster_FullList5000(b *testing.B) {
	req, err := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("socket", func(b *testing.B) { benchSocket(b, req) })
}

func benchSocket(b *testing.B, req []byte) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, stop := startMaster(b, Config{
		Listen: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		Reloadable: Reloadable{
			Registry:     master.Config{AllowLoopback: true},
			NoQueryLimit: true, OutRate: 4_000_000_000, OutBurst: 100_000_000,
			// dpmaster 2.x's layout: loadgen's ListServers stops at the first
			// end marker.
			Handler: master.HandlerConfig{EndOnLastOnly: true},
		},
	})
	defer stop()
	var addr netip.AddrPort
	for _, a := range m.Addrs() {
		if a.Addr().Is4() {
			addr = a
		}
	}

	fleet, err := loadgen.NewFleet(loadgen.FleetConfig{Servers: benchServers, Base: netip.MustParseAddr("127.80.0.1")})
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- fleet.Serve(ctx) }()
	defer func() { cancel(); <-served; fleet.Close() }()
	if n, err := loadgen.Populate(ctx, fleet, addr, loadgen.PopulateConfig{Query: req, Rate: 20000, Source: netip.MustParseAddr("127.79.0.1")}); err != nil {
		b.Fatalf("%d listed: %v", n, err)
	}

	b.ResetTimer()
	r, err := loadgen.Run(ctx, loadgen.Config{
		Master: addr, Query: req, Expect: benchServers,
		Sources: 64, SourceBase: netip.MustParseAddr("127.81.0.1"), Outstanding: 8,
		MaxRequests: b.N, Duration: time.Hour, Timeout: 2 * time.Second,
		Want: fleet.Addrs(), CheckEvery: 1000,
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if r.CheckFailed > 0 || r.Complete+r.Incomplete+r.Unanswered != b.N {
		b.Fatalf("result %+v", r)
	}
	b.ReportMetric(float64(r.PacketsPerAnswer), "packets/answer")
	b.ReportMetric(float64(r.BytesPerAnswer), "bytes/answer")
	b.ReportMetric(float64(r.LostPackets), "lost-packets")
	b.ReportMetric(r.AnswersPerSecond(), "answers/s")
}
