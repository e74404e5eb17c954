package master

import (
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// BenchmarkSelect answers a full 5,000-server getservers (the reference:
// dpmaster 2.3 spends 0.23-0.31 ms of CPU per such answer).
func BenchmarkSelect(b *testing.B) {
	r := newTestRegistry(b, Config{MaxServersPerAddress: -1})
	for i := range 5000 {
		register(b, r, t0, ap(fmt.Sprintf("198.%d.%d.%d:27960", 51+i/62500, (i/250)%250, i%250+1)))
	}
	dst := make([]netip.AddrPort, 0, 5000)
	if got, _ := r.Select(t0, q71, dst); len(got) != 5000 {
		b.Fatalf("got %d", len(got))
	}
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = r.Select(t0, q71, dst[:0])
	}
}

func BenchmarkChallengeIssueCheck(b *testing.B) {
	c, _ := NewChallenger(DefaultRotationPeriod, &countRand{})
	a := ap("198.51.100.7:27960")
	b.ReportAllocs()
	for b.Loop() {
		x := c.Issue(t0, a)
		if c.Check(t0, a, x.Text) != OK {
			b.Fatal("bad")
		}
	}
}

// BenchmarkRegistry_LiveHeapPerServer lists 16,384 servers through the
// handler (OpenArena heartbeat and infoResponse, with the info keys of
// scout-lab load's fleet) and reports the live heap each one costs after a
// GC: the registry's entry, its maps, the info it keeps and its share of
// the answer snapshot (BENCHMARKS.md, "Memory per listed server"). It also
// reports the size of the registry's entry struct (entry-B, unsafe.Sizeof:
// the fixed part of the first line of that table).
func BenchmarkRegistry_LiveHeapPerServer(b *testing.B) {
	const n = 16384
	for b.Loop() {
		f := newHandlerFix(b, Config{MaxServersPerAddress: -1, MaxPending: n, AllowLoopback: true}, func(c *handlerSetup) { c.Persist = nil })
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		for i := range n {
			a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 16, byte(i >> 8), byte(i)}), 27960)
			c := challengeOf(b, f.in(a, oaHeartbeat), KindGetInfo)
			in := infostring.Info{{Key: "challenge", Value: c},
				{Key: "protocol", Value: "68"}, {Key: "hostname", Value: "loadgen " + strconv.Itoa(i)},
				{Key: "mapname", Value: "q3dm17"}, {Key: "clients", Value: strconv.Itoa(i % 17)},
				{Key: "sv_maxclients", Value: "16"}, {Key: "gametype", Value: "0"}, {Key: "pure", Value: "1"}}
			pkt, err := q3.InfoResponse{Info: in}.AppendBinary(nil)
			if err != nil {
				b.Fatal(err)
			}
			f.in(a, pkt)
		}
		if l, _ := f.h.Registry().Counts(); l != n {
			b.Fatalf("%d listed", l)
		}
		f.in(client, oob("getservers 68 empty full")) // builds the snapshot
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/n, "B/server")
		b.ReportMetric(float64(unsafe.Sizeof(entry{})), "entry-B")
		runtime.KeepAlive(f)
	}
}

// BenchmarkSourceLimiter_BytesPerSource reports the live heap the
// per-source table holds per source tracked, with DefaultMaxSources
// sources (one IPv4 address each, as game servers heartbeat).
func BenchmarkSourceLimiter_BytesPerSource(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l, err := NewSourceLimiter(DefaultThrottle, DefaultDecayTime, DefaultMaxSources)
		if err != nil {
			b.Fatal(err)
		}
		for i := range DefaultMaxSources {
			l.Allow(now, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), 27960))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/DefaultMaxSources, "B/source")
		runtime.KeepAlive(l)
	}
}
