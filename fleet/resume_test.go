package fleet

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
)

// A full read of the shared registry that Redis keeps cutting short goes
// on from where it stopped. Here Redis stops answering (CLIENT PAUSE,
// longer than the node's round-trip timeout) after every pauseEvery HSCAN
// pages of the read, as a Redis held up by other work would: the join
// gives up at the first pause, and the read the node goes on with after
// it is cut again and again. Before, each attempt began again at the
// first page, so a registry that took longer to read than Redis stayed
// responsive was never read whole (a million-server join on a busy
// machine still listed a quarter two minutes after it gave up); now each
// attempt goes on from the last page it
// applied, with the stream position of the first, and the read ends.
func TestFleet_InterruptedReadResumes(t *testing.T) {
	const (
		servers    = 20000
		page       = 100 // 200 pages
		pauseEvery = 40  // pages
	)
	r := startRedis(t)
	fillRedis(t, r, servers)
	fc := fastConfig(r.URL(), "reader")
	fc.PageSize = page
	fc.Timeout = 200 * time.Millisecond
	node, err := New(fc)
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, master.Config{MaxServers: 2 * servers, MaxServersPerAddress: -1})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pauses atomic.Int64
	paused := make(chan struct{})
	go func() {
		defer close(paused)
		pauses.Store(pauseRedisEvery(ctx, t, r, pauseEvery, 3*fc.Timeout))
	}()

	node.Join(ctx, reg, nil)
	joined, _ := reg.Counts()
	done := make(chan struct{})
	rctx, stop := context.WithCancel(ctx)
	go func() { node.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()

	wait := time.Minute
	if d, ok := t.Deadline(); ok {
		wait = min(wait, time.Until(d)/2)
	}
	ok := waitFor(wait, func() bool { n, _ := reg.Counts(); return n == servers })
	cancel()
	<-paused
	listed, _ := reg.Counts()
	t.Logf("joined with %d, then %d of %d listed; Redis paused %d times; reads resumed %d times", joined, listed, servers, pauses.Load(), node.stats.resumed.Load())
	if !ok {
		t.Fatalf("%d of %d listed after %v: the interrupted read did not go on", listed, servers, wait)
	}
	if joined == servers || pauses.Load() < 3 || node.stats.resumed.Load() == 0 {
		t.Fatalf("the read was not cut short and resumed as meant (joined with %d, %d pauses, %d reads resumed)", joined, pauses.Load(), node.stats.resumed.Load())
	}
}

// pauseRedisEvery pauses every client of r for d (CLIENT PAUSE ALL) each
// time pages more HSCAN calls were served, until ctx ends, and returns how
// many times it did.
func pauseRedisEvery(ctx context.Context, t *testing.T, r *redisProc, pages int64, d time.Duration) int64 {
	rc := r.client(t)
	tick := time.NewTicker(time.Millisecond) // the poll's pace
	defer tick.Stop()
	var last, n int64
	for ; ctx.Err() == nil; <-tick.C {
		info, err := rc.Info(ctx, "commandstats").Result()
		if err != nil {
			continue
		}
		calls := hscanCalls(info)
		if calls-last >= pages {
			if rc.ClientPause(ctx, d).Err() == nil {
				n++
			}
			last = calls
		}
	}
	return n
}

// hscanCalls reads the HSCAN calls of INFO commandstats.
func hscanCalls(info string) int64 {
	for l := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_hscan:calls="); ok {
			v, _, _ = strings.Cut(v, ",")
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
