package fleet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
)

// Redis killed and restarted with its append-only file: no server lost;
// meanwhile every instance answers from memory, queues its writes, says
// so in its log and metrics, reconnects and catches up.
func TestFleet_RedisDownAndRestarted(t *testing.T) {
	r := startRedis(t)
	a := startInstance(t, fastConfig(r.URL(), "a"), 0)
	b := startInstance(t, fastConfig(r.URL(), "b"), 0)
	servers := startGameServers(t, 40)
	for _, g := range servers[:20] {
		g.heartbeat(t, a.addr)
	}
	if !waitFor(5*time.Second, func() bool { return b.listed() == 20 && a.node.Queued() == 0 }) {
		t.Fatalf("b lists %d of 20", b.listed())
	}
	r.kill()
	// Redis is gone: both go on answering from memory.
	for _, g := range servers[20:] {
		g.heartbeat(t, a.addr)
	}
	if !waitFor(5*time.Second, func() bool { return a.listed() == 40 && !a.node.Up() }) {
		t.Fatalf("without Redis, a lists %d of 40 (up %v)", a.listed(), a.node.Up())
	}
	if got := list(t, b.addr); len(got) != 20 {
		t.Errorf("without Redis, b answers %d of its 20", len(got))
	}
	if got := list(t, a.addr); len(got) != 40 {
		t.Errorf("without Redis, a answers %d of 40", len(got))
	}
	if !waitFor(5*time.Second, func() bool { return a.node.Queued() == 20 }) {
		t.Errorf("a queued %d writes, want the 20 verified without Redis", a.node.Queued())
	}
	if !strings.Contains(a.log.String(), "redis unreachable") {
		t.Error("a's log does not say Redis is unreachable")
	}
	resp, err := http.Get("http://" + a.m.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`scout_fleet_redis_up{instance_id="a"} 0`, `scout_fleet_queued_writes{instance_id="a"} 20`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("a's /metrics lacks %s while Redis is down", want)
		}
	}
	r.start()
	if !waitFor(10*time.Second, func() bool { return b.listed() == 40 && a.node.Queued() == 0 }) {
		t.Fatalf("after Redis came back b lists %d of 40, a still queues %d", b.listed(), a.node.Queued())
	}
	if !strings.Contains(a.log.String(), "redis reachable again") {
		t.Error("a's log does not say Redis is back")
	}
	if n := r.client(t).HLen(context.Background(), DefaultPrefix+"servers").Val(); n != 40 {
		t.Errorf("Redis holds %d of 40 after its restart", n)
	}
	// A third instance started now reads them all.
	c := startInstance(t, fastConfig(r.URL(), "c"), 0)
	if c.listed() != 40 {
		t.Errorf("a new instance starts with %d of 40", c.listed())
	}
}

// An instance started while Redis is down starts empty, and reads the
// shared registry when Redis comes up.
func TestFleet_StartsWithoutRedisAndCatchesUp(t *testing.T) {
	r := startRedis(t)
	a := startInstance(t, fastConfig(r.URL(), "a"), 0)
	servers := startGameServers(t, 10)
	a.registerAll(t, servers, 10)
	r.kill()
	b := startInstance(t, fastConfig(r.URL(), "b"), 0)
	if b.listed() != 0 || b.node.Up() {
		t.Fatalf("b lists %d, up %v, with Redis down", b.listed(), b.node.Up())
	}
	r.start()
	if !waitFor(10*time.Second, func() bool { return b.listed() == 10 }) {
		t.Fatalf("b lists %d of 10 after Redis came up", b.listed())
	}
}

// A stream trimmed past an instance's position makes it read the whole
// hash: it learns what it missed, removals included.
func TestFleet_TrimmedStreamResyncs(t *testing.T) {
	r, a := trimmingFleet(t)
	servers := startGameServers(t, 20)
	a.registerAll(t, servers[:10], 10)
	// b joins, then stops following (cut off) while a writes 10 more
	// and removes one.
	b, reg := joinedNode(t, r.URL(), "b")
	ctx := context.Background()
	if n, _ := reg.Counts(); n != 10 {
		t.Fatalf("b joined with %d of 10", n)
	}
	for _, g := range servers[10:] {
		g.heartbeat(t, a.addr)
	}
	gone, _ := a.m.Registry.Lookup(servers[0].addr)
	a.node.Remove(master.Removal{Addr: gone.Addr, Listed: true, LastVerified: gone.LastVerified})
	// a follows its own removal too (a removal in the stream stands over
	// any older put before it).
	if !waitFor(5*time.Second, func() bool { return a.listed() == 19 && a.node.Queued() == 0 }) {
		t.Fatalf("a lists %d of 19", a.listed())
	}
	lost, err := b.streamLost(ctx)
	if err != nil || lost != lossTrimmed {
		t.Fatalf("streamLost = %v, %v; the stream was trimmed past b", lost, err)
	}
	if err := b.catchUp(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n, _ := reg.Counts(); n != 19 {
		t.Errorf("after the resync b lists %d, want 19", n)
	}
	if _, ok := reg.Lookup(servers[0].addr); ok {
		t.Error("the server removed while b was cut off is still listed")
	}
	if lost, _ := b.streamLost(ctx); lost != lossNone {
		t.Error("the stream is still lost after the resync")
	}
}

// A read of the stream after changes were trimmed away gets only the
// ones left, and XREAD does not say what it skipped: the follower sees
// that the stream no longer starts where it left off and reads the hash.
func TestFleet_ReadAfterTrimReadsTheHash(t *testing.T) {
	r, a := trimmingFleet(t)
	servers := startGameServers(t, 10)
	a.registerAll(t, servers[:1], 1)
	b, reg := joinedNode(t, r.URL(), "b")
	a.registerAll(t, servers, 10)
	ctx := context.Background()
	if err := b.readOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := reg.Counts(); n != 10 {
		t.Errorf("after one read of a trimmed stream b lists %d of 10", n)
	}
	if n := b.stats.behind.Load(); n != 1 {
		t.Errorf("b read the whole hash %d times, want once", n)
	}
}

// trimmingFleet starts a Redis and an instance a whose every write trims
// the stream to its last entry (MAXLEN ~ trims whole nodes: one entry
// each here).
func trimmingFleet(t *testing.T) (*redisProc, *instance) {
	t.Helper()
	r := startRedis(t)
	if err := r.client(t).ConfigSet(context.Background(), "stream-node-max-entries", "1").Err(); err != nil {
		t.Fatal(err)
	}
	fa := fastConfig(r.URL(), "a")
	fa.StreamLen = 1
	return r, startInstance(t, fa, 0)
}

// An instance that joined before the stream existed (a fresh Redis) is
// not behind when another instance then makes it: every change since its
// join is in the stream, so it follows it without reading the hash
// again. An entry deleted since is a loss again.
func TestFleet_StreamMadeAfterJoinIsNotALoss(t *testing.T) {
	r := startRedis(t)
	b, _ := joinedNode(t, r.URL(), "b")
	ctx := context.Background()
	if b.lastID != "0-0" {
		t.Fatalf("b joined an empty Redis at %q, want 0-0", b.lastID)
	}
	a := startInstance(t, fastConfig(r.URL(), "a"), 0)
	servers := startGameServers(t, 3)
	a.registerAll(t, servers, 3)
	if lost, err := b.streamLost(ctx); err != nil || lost != lossNone {
		t.Fatalf("streamLost = %v, %v; the stream holds every change since b joined", lost, err)
	}
	if err := b.catchUp(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := b.stats.behind.Load(); n != 0 {
		t.Errorf("b read the whole hash %d times, want none", n)
	}
	first, err := r.client(t).XRangeN(ctx, b.stream, "-", "+", 1).Result()
	if err != nil || len(first) != 1 {
		t.Fatalf("first entry: %v, %v", first, err)
	}
	if err := r.client(t).XDel(ctx, b.stream, first[0].ID).Err(); err != nil {
		t.Fatal(err)
	}
	if lost, err := b.streamLost(ctx); err != nil || lost != lossTrimmed {
		t.Errorf("streamLost = %v, %v after an entry since b's join was deleted; want lossTrimmed", lost, err)
	}
}

// Redis started again without its data (no append-only file): the
// instances keep their lists and write them to Redis again, and go on
// sharing new servers.
func TestFleet_RedisBackWithoutItsData(t *testing.T) {
	r := startRedis(t)
	a := startInstance(t, fastConfig(r.URL(), "a"), 0)
	b := startInstance(t, fastConfig(r.URL(), "b"), 0)
	servers := startGameServers(t, 21)
	for _, g := range servers[:20] {
		g.heartbeat(t, a.addr)
	}
	if !waitFor(5*time.Second, func() bool { return b.listed() == 20 && a.node.Queued() == 0 }) {
		t.Fatalf("b lists %d of 20", b.listed())
	}
	r.kill()
	if err := os.RemoveAll(r.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(r.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r.start()
	rc := r.client(t)
	ctx := context.Background()
	if !waitFor(10*time.Second, func() bool { return rc.HLen(ctx, DefaultPrefix+"servers").Val() == 20 }) {
		t.Fatalf("Redis holds %d of the 20 the instances list", rc.HLen(ctx, DefaultPrefix+"servers").Val())
	}
	if a.listed() != 20 || b.listed() != 20 {
		t.Fatalf("after Redis lost its data a lists %d, b %d, of 20", a.listed(), b.listed())
	}
	// Whichever instance noticed first wrote the 20 again; a notices by
	// its next beat at the latest.
	if !waitFor(5*time.Second, func() bool {
		return a.node.stats.resets.Load() > 0 && strings.Contains(a.log.String(), "redis lost the shared registry")
	}) {
		t.Error("a does not say Redis lost the registry")
	}
	servers[20].heartbeat(t, b.addr)
	if !waitFor(5*time.Second, func() bool { return a.listed() == 21 }) {
		t.Fatal("a server verified by b after the loss does not reach a")
	}
}

// A Redis that lost its data and that another instance wrote to first
// is a registry started again, not a trimmed stream: its new stream's
// entries are after the instance's position by their clocks, and only
// the registry's epoch tells. The instance keeps its list and writes it
// again; a trimmed stream's full read would have dropped every server
// the new hash does not hold yet.
func TestFleet_RedisEmptiedAndWrittenFirstIsAReset(t *testing.T) {
	r := startRedis(t)
	a := startInstance(t, fastConfig(r.URL(), "a"), 0)
	servers := startGameServers(t, 11)
	a.registerAll(t, servers[:10], 10)
	b, reg := joinedNode(t, r.URL(), "b")
	ctx := context.Background()
	if n, _ := reg.Counts(); n != 10 {
		t.Fatalf("b joined with %d of 10", n)
	}
	// Redis loses everything; a, which does not notice until then (its
	// blocking read goes on), verifies one more server and so writes
	// first (and, reading its own write back, finds the registry lost
	// and writes its list again).
	rc := r.client(t)
	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	servers[10].heartbeat(t, a.addr)
	if !waitFor(5*time.Second, func() bool { return rc.HLen(ctx, DefaultPrefix+"servers").Val() >= 1 && a.node.Queued() == 0 }) {
		t.Fatalf("Redis holds %d servers after a's write, want a's new one at least", rc.HLen(ctx, DefaultPrefix+"servers").Val())
	}
	if lost, err := b.streamLost(ctx); err != nil || lost != lossReset {
		t.Fatalf("streamLost = %v, %v; Redis lost the registry", lost, err)
	}
	if err := b.catchUp(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n, _ := reg.Counts(); n != 11 {
		t.Errorf("after the reset b lists %d, want its 10 and a's new one", n)
	}
	if err := b.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rc.HLen(ctx, DefaultPrefix+"servers").Val(); n != 11 {
		t.Errorf("Redis holds %d after b wrote its list again, want 11", n)
	}
	if lost, _ := b.streamLost(ctx); lost != lossNone {
		t.Error("the registry is still lost after b's catch-up")
	}
}

// Redis flushed under two following instances: no round trip fails
// (their XREADs go on blocking on a stream that is gone), but the beat
// reads no epoch, so each catches up, keeps its list and writes it
// again, and a server verified after is shared as before.
func TestFleet_RedisFlushedUnderFollowersIsWrittenAgain(t *testing.T) {
	r := startRedis(t)
	a := startInstance(t, fastConfig(r.URL(), "a"), 0)
	b := startInstance(t, fastConfig(r.URL(), "b"), 0)
	servers := startGameServers(t, 11)
	a.registerAll(t, servers[:10], 10)
	if !waitFor(5*time.Second, func() bool { return b.listed() == 10 }) {
		t.Fatalf("b lists %d of 10", b.listed())
	}
	rc := r.client(t)
	ctx := context.Background()
	if err := rc.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(patience(t), func() bool { return rc.HLen(ctx, DefaultPrefix+"servers").Val() == 10 }) {
		t.Fatalf("Redis holds %d of the 10 the instances list after the flush", rc.HLen(ctx, DefaultPrefix+"servers").Val())
	}
	if a.listed() != 10 || b.listed() != 10 {
		t.Fatalf("after the flush a lists %d, b %d, of 10", a.listed(), b.listed())
	}
	if a.node.stats.resets.Load()+b.node.stats.resets.Load() == 0 {
		t.Error("neither instance says Redis lost the registry")
	}
	servers[10].heartbeat(t, b.addr)
	if !waitFor(5*time.Second, func() bool { return a.listed() == 11 }) {
		t.Fatal("a server verified by b after the flush does not reach a")
	}
}

// A Redis that answers nothing for a while takes no instance for dead,
// however long the stall: past an instance's Redis timeout, and past
// Config.Dead (no instance could beat meanwhile, so the first to beat
// again must not take the others, whose beats are as old as its own, for
// dead). Once Redis answers again every instance beats, none was removed
// from the live set (no ZREM, no HDEL of a description) and each still
// sees the three. A loaded machine stalls redis-server so (it fsyncs
// every write to a shared disk): 2.6 s in one run of the fleet tests at
// load average 7, after which one instance took another for dead and
// TestFleet_SilentServerExpiresOnce counted 7 removals for 6 servers.
func TestFleet_RedisStallIsNoDeath(t *testing.T) {
	fc := fastConfig("", "")
	for _, stall := range []time.Duration{fc.Timeout + (fc.Dead-fc.Timeout)/4, fc.Dead + fc.Timeout} {
		t.Run(stall.String(), func(t *testing.T) { redisStall(t, stall) })
	}
}

// redisStall starts three instances, pauses their Redis for stall, and
// checks that none was taken for dead.
func redisStall(t *testing.T, stall time.Duration) {
	r := startRedis(t)
	var ins []*instance
	for i := range 3 {
		ins = append(ins, startInstance(t, fastConfig(r.URL(), fmt.Sprint("i", i)), 0))
	}
	live := func() bool {
		for _, in := range ins {
			if len(in.node.Live()) != 3 {
				return false
			}
		}
		return true
	}
	if !waitFor(patience(t), live) {
		t.Fatal("the instances do not see each other")
	}
	rc := r.client(t)
	ctx := context.Background()
	now, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	rc.ConfigResetStat(ctx)
	if err := rc.Do(ctx, "CLIENT", "PAUSE", stall.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	// Every instance has beaten since the pause ended (Redis's clock),
	// and then for Dead more: long enough to take a silent one for dead.
	after := float64(now.Add(stall + fastConfig("", "").Dead).UnixMilli())
	if !waitFor(patience(t)+stall+fastConfig("", "").Dead, func() bool {
		zs, err := rc.ZRangeWithScores(ctx, DefaultPrefix+"instances", 0, -1).Result()
		if err != nil || len(zs) != 3 {
			return false
		}
		for _, z := range zs {
			if z.Score <= after {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the instances did not all beat again after the pause")
	}
	calls := commandCalls(t, r)
	if calls["zrem"] != 0 || calls["hdel"] != 0 || !live() {
		var views []int
		for _, in := range ins {
			views = append(views, len(in.node.Live()))
		}
		t.Errorf("a %v stall of Redis took an instance for dead (live views %v): %v", stall, views, calls)
	}
	t.Logf("after a %v stall: %v", stall, calls)
}

// The wait before following the stream again grows while tries fail and
// starts from MinBackoff again once a try has read the stream: a second
// outage hours after the first is retried at once, not after MaxBackoff.
func TestFollowBackoff_ResetsAfterARead(t *testing.T) {
	b := time.Duration(0)
	for range 10 {
		b = followBackoff(b, false)
	}
	if b != MaxBackoff {
		t.Fatalf("after 10 failed tries the wait is %v, want MaxBackoff %v", b, MaxBackoff)
	}
	if got := followBackoff(b, true); got != MinBackoff {
		t.Errorf("a try that read the stream then failed waits %v, want MinBackoff %v", got, MinBackoff)
	}
	if got := followBackoff(MinBackoff, false); got != 2*MinBackoff {
		t.Errorf("a second failed try in a row waits %v, want %v", got, 2*MinBackoff)
	}
}

// joinedNode is a node of the fleet at url that joined with a registry of
// its own and does not follow the stream (its catch-ups are the test's),
// closed when the test ends.
func joinedNode(t *testing.T, url, id string) (*Node, *master.Registry) {
	t.Helper()
	reg := newRegistry(t, master.Config{AllowLoopback: true, MaxServersPerAddress: -1})
	n, err := New(fastConfig(url, id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.rdb.Close() })
	n.Join(context.Background(), reg, nil)
	return n, reg
}

// registerAll heartbeats each of gs to in and waits until in lists want
// servers with nothing left to write to Redis.
func (in *instance) registerAll(t *testing.T, gs []*gameServer, want int) {
	t.Helper()
	for _, g := range gs {
		g.heartbeat(t, in.addr)
	}
	if !waitFor(5*time.Second, func() bool { return in.listed() == want && in.node.Queued() == 0 }) {
		t.Fatalf("%s lists %d of %d, %d writes queued", in.node.cfg.ID, in.listed(), want, in.node.Queued())
	}
}
