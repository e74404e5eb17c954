package fleet

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/masterd"
)

var _ masterd.HistoryFleet = (*Node)(nil)

// A history write merges slot by slot with what Redis holds: a slot
// without a sample keeps the stored one. The day's hash expires when no
// History keeps the day any more.
func TestFleet_HistoryWriteMerges(t *testing.T) {
	r := startRedis(t)
	n, err := New(fastConfig(r.URL(), "h"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.rdb.Close()
	ctx := context.Background()
	a := netip.MustParseAddrPort("198.51.100.7:27960")
	day := history.KeepFrom(time.Now()) + history.RetentionDays - 1 // today
	blank := history.Day{Addr: a, Day: day}
	for i := range blank.Counts {
		blank.Counts[i] = history.NoSample
	}
	first, second := blank, blank
	first.Counts[0], first.Counts[1] = 3, 4
	second.Counts[1], second.Counts[200] = 5, 6
	for _, d := range []history.Day{first, second} {
		// The scripts are not loaded: the first write loads them.
		if w, err := n.SaveHistory(ctx, []history.Day{d}); err != nil || w != 1 {
			t.Fatalf("SaveHistory = %d, %v", w, err)
		}
	}
	got, corrupt, err := n.LoadHistory(ctx, day-1, day)
	if err != nil || corrupt != 0 || len(got) != 1 {
		t.Fatalf("LoadHistory = %d days, %d corrupt, %v", len(got), corrupt, err)
	}
	want := blank
	want.Counts[0], want.Counts[1], want.Counts[200] = 3, 5, 6
	if got[0] != want {
		t.Errorf("merged day differs: slots 0, 1, 200 = %d %d %d, want 3 5 6", got[0].Counts[0], got[0].Counts[1], got[0].Counts[200])
	}
	exp, err := r.client(t).ExpireTime(ctx, n.histKey(day)).Result()
	if want := time.Duration(histExpiry(day)) * time.Second; err != nil || exp != want {
		t.Errorf("expiry %v, %v; want %v (the end of the last day kept)", exp, err, want)
	}
	if last := int32(histExpiry(day)/86400) - 1; history.KeepFrom(time.Unix(histExpiry(day)-1, 0)) != day || history.KeepFrom(time.Unix(histExpiry(day), 0)) != day+1 || last != day+history.RetentionDays-1 {
		t.Errorf("expiry %d is not the first instant History stops keeping day %d", histExpiry(day), day)
	}
}

// The player history in a fleet: each server's days are written to Redis
// by the instance whose share it is, every instance serves the same
// history, and an instance started afterwards (a restart) reads it back.
func TestFleet_HistorySharedAndKeptAcrossRestart(t *testing.T) {
	r := startRedis(t)
	a := startInstance(t, fastConfig(r.URL(), "a"), 0)
	b := startInstance(t, fastConfig(r.URL(), "b"), 0)
	if !waitFor(5*time.Second, func() bool { return len(a.node.Live()) == 2 && len(b.node.Live()) == 2 }) {
		t.Fatal("the two instances do not see each other")
	}
	servers := startGameServers(t, 20)
	for _, g := range servers {
		g.heartbeat(t, a.addr)
	}
	if !waitFor(10*time.Second, func() bool { return a.listed() == len(servers) && b.listed() == len(servers) }) {
		t.Fatalf("listed %d and %d of %d", a.listed(), b.listed(), len(servers))
	}
	day := history.KeepFrom(time.Now()) + history.RetentionDays - 1
	rc := r.client(t)
	ctx := context.Background()
	if !waitFor(10*time.Second, func() bool { n, _ := rc.HLen(ctx, a.node.histKey(day)).Result(); return n == int64(len(servers)) }) {
		n, _ := rc.HLen(ctx, a.node.histKey(day)).Result()
		t.Fatalf("%d of %d servers' history in Redis", n, len(servers))
	}
	// Each counts its writes once its pipeline returned: after Redis
	// holds them.
	written := func() (uint64, uint64) { return a.node.stats.histWritten.Load(), b.node.stats.histWritten.Load() }
	if !waitFor(5*time.Second, func() bool { wa, wb := written(); return wa > 0 && wb > 0 }) {
		wa, wb := written()
		t.Errorf("days written by a %d, by b %d: the share was not divided", wa, wb)
	}
	recent := func(in *instance) []string {
		var out []string
		for _, g := range servers {
			out = append(out, fmt.Sprint(in.m.History.Recent(g.addr, history.SlotOf(time.Now())+1, 3)))
		}
		return out
	}
	ra := recent(a)
	if !slices.Equal(ra, recent(b)) {
		t.Errorf("instances keep different histories:\n%v\n%v", ra, recent(b))
	}
	if ra[0] == "[]" {
		t.Fatalf("no recent players for %v: %v", servers[0].addr, ra[0])
	}
	// A sample an hour ago, as both instances would have recorded it:
	// only Redis can give it to an instance started later.
	hourAgo := time.Now().Add(-time.Hour)
	for i, g := range servers {
		a.m.History.Record(g.addr, hourAgo, 100+i)
		b.m.History.Record(g.addr, hourAgo, 100+i)
	}
	ra = recent(a)
	a.stop() // each writes its share's changed days as it stops
	b.stop()
	c := startInstance(t, fastConfig(r.URL(), "c"), 0)
	if rc := recent(c); !slices.Equal(rc, ra) {
		t.Errorf("a restarted instance reads back\n%v\nwant\n%v", rc, ra)
	}
	slot := history.SlotOf(hourAgo)
	for i, g := range servers {
		if p := c.m.History.Points(g.addr, slot, slot+1); len(p) != 1 || p[0].Players != 100+i {
			t.Errorf("%v an hour ago: %v, want %d players", g.addr, p, 100+i)
		}
	}
}

// kill -9 of a real `scout master --store redis://...`: the player
// history it recorded was in Redis within FleetHistoryInterval of the
// servers' verification, and an instance started after the kill reads
// it back.
func TestFleet_Kill9KeepsHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scout")
	}
	r := startRedis(t)
	bin := buildScout(t)
	p := startScout(t, bin, r.URL(), "k0")
	const n = 10
	servers := startGameServers(t, n)
	for _, g := range servers {
		g.heartbeat(t, p.addr)
	}
	if !waitFor(15*time.Second, func() bool { got, _ := answer(p.addr); return got == n }) {
		got, err := answer(p.addr)
		t.Fatalf("%d of %d listed (%v)", got, n, err)
	}
	listed := time.Now()
	key := DefaultPrefix + "history:" + fmt.Sprint(history.KeepFrom(listed)+history.RetentionDays-1)
	rc := r.client(t)
	ctx := context.Background()
	if !waitFor(10*time.Second, func() bool { return rc.HLen(ctx, key).Val() == n }) {
		t.Fatalf("%d of %d servers' history in Redis", rc.HLen(ctx, key).Val(), n)
	}
	t.Logf("history of %d servers in Redis %v after they were listed (FleetHistoryInterval %v)", n, time.Since(listed), masterd.FleetHistoryInterval)
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	if got := rc.HLen(ctx, key).Val(); got != n {
		t.Fatalf("%d of %d servers' history in Redis after the kill", got, n)
	}
	q := startScout(t, bin, r.URL(), "k1")
	if !waitFor(15*time.Second, func() bool {
		return strings.Contains(q.log.String(), `"msg":"history restored from the fleet","servers":10,"days":10`)
	}) {
		t.Errorf("the instance started after the kill did not read the history back:\n%s", q.log.String())
	}
}
