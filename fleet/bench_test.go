package fleet

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/master"
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

// fillRedis writes n records straight into the hash (pipelines of 10,000
// HSET), as n verified servers of several games, a quarter of them IPv6.
func fillRedis(b testing.TB, r *redisProc, n int) {
	b.Helper()
	rc := r.client(b)
	ctx := context.Background()
	games := []struct {
		name  string
		proto int
	}{{"Quake3Arena", 68}, {"Quake3Arena", 71}, {"et", 84}, {"Nexuiz", 3}, {"Warsow", 22}}
	now := time.Now()
	pipe := rc.Pipeline()
	for i := range n {
		var a netip.Addr
		if i%4 == 3 {
			a = netip.AddrFrom16([16]byte{0x2a, 0x00, 0, 0, 0, 0, 0, 0, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), 0, 0, 0, 1})
		} else {
			a = netip.AddrFrom4([4]byte{byte(1 + i>>24), byte(i >> 16), byte(i >> 8), byte(i)})
		}
		g := games[i%len(games)]
		s := master.Server{
			Addr: netip.AddrPortFrom(a, 27960), Game: g.name, Protocol: g.proto, Gametype: "0",
			Clients: i % 17, MaxClients: 16, FirstSeen: now, LastVerified: now,
			Info: []master.Pair{{Key: "hostname", Value: fmt.Sprint("server ", i)}, {Key: "mapname", Value: "q3dm17"}},
		}
		pipe.HSet(ctx, DefaultPrefix+"servers", s.Addr.String(), encode(s))
		if (i+1)%10000 == 0 || i == n-1 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkFleet_Join: an instance joining a fleet whose Redis holds N
// servers reads them all (HSCAN pages of 1,000) into its registry.
// Reported: join-s, and the Go heap per server after it (heap-B/server).
//
//	go test -run '^$' -bench Join -benchtime 1x ./fleet
func BenchmarkFleet_Join(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := startRedis(b)
			fillRedis(b, r, n)
			for b.Loop() {
				chal, err := master.NewChallenger(master.DefaultRotationPeriod, rand.Reader)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				reg, err := master.NewRegistry(master.Config{MaxServers: n, MaxServersPerAddress: -1}, chal)
				if err != nil {
					b.Fatal(err)
				}
				node, err := New(Config{Redis: r.URL(), ID: "join"})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				node.Join(context.Background(), reg, nil)
				took := time.Since(start)
				if l, _ := reg.Counts(); l != n {
					b.Fatalf("joined with %d of %d", l, n)
				}
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				b.ReportMetric(took.Seconds(), "join-s")
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-B/server")
				node.rdb.Close()
				runtime.KeepAlive(reg)
			}
		})
	}
}

// BenchmarkFleet_RedisMemoryWeekOld: what a fleet's Redis holds per
// server, measured with INFO memory (used_memory) on a real redis-server:
// N servers registered (records as a busy OpenArena server's, with its
// info), then a week of player history for each (history.RetentionDays
// days, every 5-minute slot sampled: a server up the whole week), then
// the change stream filled to its cap by re-verifications. Reported:
// record-B/server, history-B/server, stream-MB (a fixed cost, whatever
// the servers), and total-B/server at N.
//
//	go test -run '^$' -bench RedisMemoryWeekOld -benchtime 1x ./fleet
func BenchmarkFleet_RedisMemoryWeekOld(b *testing.B) {
	const n = 20_000
	for b.Loop() {
		r := startRedis(b)
		rc := r.client(b)
		ctx := context.Background()
		used := func() int64 {
			info, err := rc.Info(ctx, "memory").Result()
			if err != nil {
				b.Fatal(err)
			}
			for l := range strings.Lines(info) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
					x, _ := strconv.ParseInt(v, 10, 64)
					return x
				}
			}
			b.Fatal("no used_memory")
			return 0
		}
		reg := newRegistry(b, master.Config{MaxServers: n + 1024, MaxServersPerAddress: -1})
		node, err := New(Config{Redis: r.URL(), ID: "mem", Timeout: 30 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		node.Join(ctx, reg, nil)
		base := used()
		now := time.Now()
		servers := make([]master.Server, n)
		for i := range servers {
			servers[i] = weekOldServer(i, now)
			node.Put(servers[i])
		}
		flushAll(b, node)
		records := used()
		today := int32(now.Unix() / 86400)
		var days []history.Day
		for d := range int32(history.RetentionDays) {
			for _, s := range servers {
				day := history.Day{Addr: s.Addr, Day: today - d}
				for k := range day.Counts {
					day.Counts[k] = uint8((k + int(d)) % 17)
				}
				days = append(days, day)
			}
		}
		for len(days) > 0 {
			k := min(len(days), 4096)
			if _, err := node.SaveHistory(ctx, days[:k]); err != nil {
				b.Fatal(err)
			}
			days = days[k:]
		}
		hist := used()
		for i := 0; int64(i) < node.cfg.StreamLen+node.cfg.StreamLen/8; i++ {
			s := servers[i%n]
			s.LastVerified = now.Add(time.Duration(i+1) * time.Millisecond)
			node.Put(s)
			if node.Queued() >= node.cfg.PageSize {
				flushAll(b, node)
			}
		}
		flushAll(b, node)
		stream := used()
		xl, _ := rc.XLen(ctx, node.stream).Result()
		b.ReportMetric(float64(records-base)/n, "record-B/server")
		b.ReportMetric(float64(hist-records)/n, "history-B/server")
		b.ReportMetric(float64(stream-hist)/1e6, "stream-MB")
		b.ReportMetric(float64(stream-base)/n, "total-B/server")
		b.Logf("%d servers: records %d B, history %d B, stream of %d entries %.1f MB: %d B a server in all",
			n, (records-base)/n, (hist-records)/n, xl, float64(stream-hist)/1e6, (stream-base)/n)
		node.rdb.Close()
		r.kill()
	}
}

// weekOldServer is an OpenArena server's record as the fleet keeps it.
func weekOldServer(i int, now time.Time) master.Server {
	a := netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
	info := []master.Pair{{Key: "hostname", Value: fmt.Sprintf("^1Open^7Arena server %d | FFA 24/7", i)}, {Key: "mapname", Value: "oasago2"},
		{Key: "gametype", Value: "0"}, {Key: "protocol", Value: "71"}, {Key: "clients", Value: "3"}, {Key: "sv_maxclients", Value: "16"},
		{Key: "g_humanplayers", Value: "2"}, {Key: "g_needpass", Value: "0"}, {Key: "pure", Value: "1"}, {Key: "gamename", Value: "Quake3Arena"},
		{Key: "game", Value: "baseoa"}, {Key: "sv_allowAnonymous", Value: "0"}}
	return master.Server{Addr: netip.AddrPortFrom(a, 27960), Family: game.FamilyQ3, Game: "Quake3Arena", Protocol: 71, Gametype: "0",
		Clients: 3, MaxClients: 16, FirstSeen: now.Add(-7 * 24 * time.Hour), LastVerified: now, Info: info}
}

func flushAll(b *testing.B, node *Node) {
	for node.Queued() > 0 {
		if err := node.flush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
