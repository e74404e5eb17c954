package web

import (
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// BenchmarkHistory_MemoryPerServer reports the live heap a History holds
// per server with its full retention (RetentionDays days of samples at
// every slot): go test -run '^$' -bench MemoryPerServer ./web
func BenchmarkHistory_MemoryPerServer(b *testing.B) {
	const servers = 5000
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		h := NewHistory()
		t0 := time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC)
		for i := range servers {
			a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}), 27960)
			for d := range RetentionDays {
				// One sample per day is enough to allocate the day's chunk.
				h.Record(a, t0.Add(time.Duration(d)*24*time.Hour), i%16)
			}
		}
		h.TakeDirty()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/servers, "B/server")
		runtime.KeepAlive(h)
	}
}
