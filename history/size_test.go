package history

import (
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// historyRecorder is what the size benchmarks fill: History, or the
// raw-array refHistory it replaced.
type historyRecorder interface {
	Record(a netip.AddrPort, t time.Time, count int)
	TakeDirty() []Day
}

type refRecorder struct{ *refHistory }

func (r refRecorder) Record(a netip.AddrPort, t time.Time, count int) {
	r.refHistory.Record(a, t, count)
}

// historySeries are the series the size benchmarks record for every
// server: count returns the count at slot i from the first sample, slots
// how many slots are recorded.
var historySeries = []struct {
	name  string
	slots int
	count func(server, i int) int
}{
	// What scout-lab load measures: a server just registered.
	{"first-sample", 1, func(s, i int) int { return s % 16 }},
	// 8 days of one count at every slot: most servers (nobody plays).
	{"constant-8d", RetentionDays * SlotsPerDay, func(s, i int) int { return 0 }},
	// 8 days, the count changing 12 times a day (an evening's games).
	{"12-changes-a-day-8d", RetentionDays * SlotsPerDay, func(s, i int) int { return (i / (SlotsPerDay / 12)) % 3 * (s%7 + 1) }},
	// 8 days, a new count at every slot: the worst case.
	{"every-slot-8d", RetentionDays * SlotsPerDay, func(s, i int) int { return (s + i*7) % 23 }},
}

// BenchmarkHistory_MemoryPerServer reports the live heap a History holds
// per server (after a GC, divided by the servers) for each of
// historySeries, and the same for the raw-array History it replaced
// ("ref"): go test -run '^$' -bench MemoryPerServer ./history
func BenchmarkHistory_MemoryPerServer(b *testing.B) {
	t0 := time.Date(2026, 11, 17, 7, 0, 0, 0, time.UTC)
	for _, impl := range []string{"compact", "ref"} {
		for _, ser := range historySeries {
			b.Run(impl+"/"+ser.name, func(b *testing.B) {
				servers := 5000
				if ser.slots > 1 {
					servers = 500
				}
				for range b.N {
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					var h historyRecorder = New()
					if impl == "ref" {
						h = refRecorder{newRefHistory()}
					}
					for s := range servers {
						a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(s >> 8), byte(s)}), 27960)
						for i := range ser.slots {
							h.Record(a, t0.Add(time.Duration(i)*Resolution), ser.count(s, i))
						}
					}
					h.TakeDirty() // as a master with a state file does every commit
					runtime.GC()
					runtime.ReadMemStats(&after)
					b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(servers), "B/server")
					runtime.KeepAlive(h)
				}
			})
		}
	}
}

// BenchmarkHistory_Record is the cost of one sample of a server with 7
// days of history already, the count changing 12 times a day.
func BenchmarkHistory_Record(b *testing.B) {
	t0 := time.Date(2026, 11, 17, 7, 0, 0, 0, time.UTC)
	a := netip.MustParseAddrPort("198.51.100.1:27960")
	for _, impl := range []string{"compact", "ref"} {
		b.Run(impl, func(b *testing.B) {
			var h historyRecorder = New()
			if impl == "ref" {
				h = refRecorder{newRefHistory()}
			}
			count := historySeries[2].count
			const past = 7 * SlotsPerDay
			for i := range past {
				h.Record(a, t0.Add(time.Duration(i)*Resolution), count(1, i))
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				j := past + i%SlotsPerDay
				h.Record(a, t0.Add(time.Duration(j)*Resolution), count(1, j)+i%2)
			}
		})
	}
}
