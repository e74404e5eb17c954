package fleet

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkFleet_Convergence: three instances share a real redis-server;
// server k heartbeats to instance k%3; the figure is the time from its
// listing by that instance to its listing by the last of the other two
// (each registry polled every 100 µs), over b.N servers, one at a time.
// Reported: conv-p50-ms, conv-p99-ms, conv-max-ms.
//
//	go test -run '^$' -bench Convergence -benchtime 300x ./fleet
func BenchmarkFleet_Convergence(b *testing.B) {
	r := startRedis(b)
	var ins []*instance
	for i := range 3 {
		ins = append(ins, startInstance(b, fastConfig(r.URL(), fmt.Sprint("i", i)), 0))
	}
	servers := startGameServers(b, b.N)
	listed := func(in *instance, k int) bool {
		s, ok := in.m.Registry.Lookup(servers[k].addr)
		return ok && s.Listed
	}
	poll := func(d time.Duration, cond func() bool) bool {
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(100 * time.Microsecond)
		}
		return true
	}
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for k := range b.N {
		at := ins[k%3]
		servers[k].heartbeat(b, at.addr)
		if !poll(5*time.Second, func() bool { return listed(at, k) }) {
			b.Fatalf("server %d not listed", k)
		}
		start := time.Now()
		for _, in := range ins {
			if !poll(5*time.Second, func() bool { return listed(in, k) }) {
				b.Fatalf("server %d not converged", k)
			}
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(took[len(took)/2]), "conv-p50-ms")
	b.ReportMetric(ms(took[len(took)*99/100]), "conv-p99-ms")
	b.ReportMetric(ms(took[len(took)-1]), "conv-max-ms")
}
