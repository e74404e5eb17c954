package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
)

// A history write of many servers is split into script calls of at most
// HistoryBatch servers each, so that no call holds Redis (and the
// verifications waiting behind it) for long. The merge stays slot by slot.
func TestFleet_HistoryWritesInBoundedBatches(t *testing.T) {
	r := startRedis(t)
	n, err := New(fastConfig(r.URL(), "h"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.rdb.Close()
	ctx := context.Background()
	if err := n.loadScripts(ctx); err != nil {
		t.Fatal(err)
	}
	day := history.KeepFrom(time.Now()) + history.RetentionDays - 1
	const servers = 2*HistoryBatch + 1
	days := make([]history.Day, servers)
	for i := range days {
		d := &days[i]
		d.Addr, d.Day = netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), 27960), day
		for j := range d.Counts {
			d.Counts[j] = history.NoSample
		}
		d.Counts[i%history.SlotsPerDay] = uint8(i % 100)
	}
	before := commandCalls(t, r)["evalsha"]
	if w, err := n.SaveHistory(ctx, days); err != nil || w != servers {
		t.Fatalf("SaveHistory = %d, %v; want %d", w, err, servers)
	}
	if calls, want := commandCalls(t, r)["evalsha"]-before, (servers+HistoryBatch-1)/HistoryBatch; calls != want {
		t.Errorf("%d script calls for %d servers of one day, want %d (at most HistoryBatch = %d each)", calls, servers, want, HistoryBatch)
	}
	// A second sample of every server keeps the first (the merge).
	for i := range days {
		days[i].Counts[(i+1)%history.SlotsPerDay] = 7
		days[i].Counts[i%history.SlotsPerDay] = history.NoSample
	}
	if _, err := n.SaveHistory(ctx, days); err != nil {
		t.Fatal(err)
	}
	got, corrupt, err := n.LoadHistory(ctx, day, day)
	if err != nil || corrupt != 0 || len(got) != servers {
		t.Fatalf("LoadHistory = %d days, %d corrupt, %v", len(got), corrupt, err)
	}
	for _, d := range got {
		i := int(d.Addr.Addr().As4()[3])
		samples := 0
		for _, c := range d.Counts {
			if c != history.NoSample {
				samples++
			}
		}
		if d.Counts[i%history.SlotsPerDay] != uint8(i%100) || d.Counts[(i+1)%history.SlotsPerDay] != 7 || samples != 2 {
			t.Errorf("%v: slots %d, %d = %d, %d (%d samples); want %d, 7 (2)", d.Addr, i%history.SlotsPerDay, (i+1)%history.SlotsPerDay,
				d.Counts[i%history.SlotsPerDay], d.Counts[(i+1)%history.SlotsPerDay], samples, i%100)
		}
	}
}

// The records an instance reads when it joins feed its history (their
// last verification's player count), but they are not changes for it to
// write back to Redis: the instance that verified each wrote it. Written
// again, they were up to history.MaxServers servers' days at every
// join, scripts that held Redis for seconds (the 1,000,000-server fleet
// benchmark's SLOWLOG) while the fleet's verifications waited.
func TestFleet_JoinWritesNoHistoryBack(t *testing.T) {
	r := startRedis(t)
	rc := r.client(t)
	ctx := context.Background()
	now := time.Now()
	var addrs []netip.AddrPort
	for i := range 5 {
		s := master.Server{
			Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), 27960), Family: game.FamilyQ3,
			Game: "Quake3Arena", Protocol: 68, Gametype: "0", Clients: i + 1, MaxClients: 16, FirstSeen: now, LastVerified: now,
			Info: []master.Pair{{Key: "hostname", Value: "joined"}},
		}
		if err := rc.HSet(ctx, DefaultPrefix+"servers", s.Addr.String(), encode(s)).Err(); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, s.Addr)
	}
	node, err := New(fastConfig(r.URL(), "j"))
	if err != nil {
		t.Fatal(err)
	}
	defer node.rdb.Close()
	m, err := masterd.NewMaster(now, masterd.Config{
		Listen:     []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		Reloadable: masterd.Reloadable{Registry: master.Config{AllowLoopback: true, MaxServersPerAddress: -1, Catalogue: catalogue(t, 0)}},
	}, masterd.Deps{Fleet: node, Logger: masterd.NewLogger(&syncBuffer{}, slog.Level(-4), false)})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := m.Registry.Counts(); n != len(addrs) {
		t.Fatalf("joined with %d servers listed, want %d", n, len(addrs))
	}
	for i, a := range addrs {
		if got := m.History.Recent(a, history.SlotOf(now)+1, 1); len(got) != 1 || got[0] != i+1 {
			t.Errorf("%v: recent players %v after the join, want [%d]", a, got, i+1)
		}
	}
	if dirty := m.History.TakeDirty(); len(dirty) != 0 {
		t.Errorf("%d days to write back to Redis after the join, want none", len(dirty))
	}
}

// BenchmarkFleet_HistoryWriteAfterJoin: one SaveHistory of
// history.MaxServers servers' day with one sample each (what every
// joining instance wrote back before the join stopped marking its records
// changed) into a real redis-server that holds an earlier sample of each.
// Reported: the write's wall time, the script calls and round trips, and Redis's own
// microseconds per call and longest call (INFO commandstats, SLOWLOG with
// slowlog-log-slower-than 0): the longest time a verification's script
// can wait behind one history call.
func BenchmarkFleet_HistoryWriteAfterJoin(b *testing.B) {
	r := startRedis(b)
	n, err := New(Config{Redis: r.URL(), ID: "h", Timeout: time.Minute}) // long enough for the calls of 1,000 before HistoryBatch
	if err != nil {
		b.Fatal(err)
	}
	defer n.rdb.Close()
	ctx := context.Background()
	rc := r.client(b)
	day := history.KeepFrom(time.Now()) + history.RetentionDays - 1
	days := make([]history.Day, history.MaxServers)
	for i := range days {
		d := &days[i]
		d.Addr, d.Day = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 27960), day
		for j := range d.Counts {
			d.Counts[j] = history.NoSample
		}
	}
	var wall time.Duration
	for i := 0; b.Loop(); i++ {
		for j := range days {
			days[j].Counts[i%history.SlotsPerDay] = uint8(j % 17)
		}
		if err := rc.ConfigResetStat(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		rc.ConfigSet(ctx, "slowlog-log-slower-than", "0")
		rc.ConfigSet(ctx, "slowlog-max-len", "100000")
		rc.SlowLogReset(ctx)
		start := time.Now()
		if _, err := n.SaveHistory(ctx, days); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
	}
	s, _ := rc.Info(ctx, "commandstats").Result()
	var calls int
	var usec float64
	for _, l := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_evalsha:calls="); ok {
			f := strings.Split(rest, ",")
			fmt.Sscan(f[0], &calls)
			for _, kv := range f {
				if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
					fmt.Sscan(v, &usec)
				}
			}
		}
	}
	logs, _ := rc.SlowLogGet(ctx, -1).Result()
	var worst time.Duration
	for _, l := range logs {
		if len(l.Args) > 0 && strings.EqualFold(l.Args[0], "evalsha") {
			worst = max(worst, l.Duration)
		}
	}
	b.ReportMetric(wall.Seconds()*1e3/float64(b.N), "ms/write")
	b.ReportMetric(float64(calls), "calls/write")
	b.ReportMetric(usec, "us/call")
	b.ReportMetric(float64(worst.Microseconds()), "us-worst-call")
}
