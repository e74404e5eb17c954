package fleet

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
)

// record is a verified Quake III Arena server at 127.3.x.y:27960,
// verified at at.
func record(i int, at time.Time) master.Server {
	a := netip.AddrFrom4([4]byte{127, 3, byte(i >> 8), byte(i)})
	return master.Server{Addr: netip.AddrPortFrom(a, 27960), Family: game.FamilyQ3, Game: "Quake3Arena", Protocol: 68,
		Gametype: "0", Clients: 1, MaxClients: 16, FirstSeen: at, LastVerified: at,
		Info: []master.Pair{{Key: "hostname", Value: "own"}}}
}

// drain applies every change of the stream after n's last one, as its
// follower would, without blocking.
func drain(t *testing.T, n *Node) {
	t.Helper()
	res, err := n.rdb.XRead(context.Background(), &redis.XReadArgs{Streams: []string{n.stream, n.lastID}, Count: 10000, Block: -1}).Result()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	for _, s := range res {
		for _, m := range s.Messages {
			n.applyMessage(time.Now(), m)
			n.lastID = m.ID
		}
	}
}

// A catch-up's full read drops the servers the hash no longer holds, but
// not this instance's own, verified while it was cut off, whose writes
// were in flight when the read passed their place in the hash: neither a
// batch being written while the read runs, nor one written after the
// read passed them. The steps are ordered by the node's hooks, so the
// race is the same every run.
func TestFleet_CatchUpKeepsOwnWritesInFlight(t *testing.T) {
	for _, c := range []string{"batch-being-written", "written-after-the-scan"} {
		t.Run(c, func(t *testing.T) {
			r := startRedis(t)
			ctx := context.Background()
			// Others' servers, so that the read has pages to go through.
			other, _ := joinedNode(t, r.URL(), "other")
			old := time.Now().Add(-time.Minute)
			for i := range 300 {
				other.Put(record(1000+i, old))
			}
			for other.Queued() > 0 {
				if err := other.flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			b, reg := joinedNode(t, r.URL(), "b")
			b.cfg.PageSize = 7
			// b verified 40 servers while cut off: listed here, queued.
			cut := time.Now().Add(-time.Second)
			own := make([]master.Server, 40)
			for i := range own {
				own[i] = record(i, cut)
				if _, why := reg.Apply(cut, own[i]); why != master.OK {
					t.Fatal(why)
				}
				b.Put(own[i])
			}
			b.cfg.PageSize = len(own) // one batch
			var wrote chan error
			switch c {
			case "batch-being-written":
				// The batch is taken from the queue and held before Redis
				// while the whole read runs.
				taken, release := make(chan struct{}), make(chan struct{})
				b.hooks = &nodeHooks{beforeWrite: func() { close(taken); <-release }}
				wrote = make(chan error, 1)
				go func() { wrote <- b.flush(ctx) }()
				<-taken
				b.hooks = nil
				b.cfg.PageSize = 7
				if err := b.catchUp(ctx, true); err != nil {
					t.Fatal(err)
				}
				close(release)
			case "written-after-the-scan":
				// Every page read, then the batch written, then the drop.
				b.cfg.PageSize = 7
				b.hooks = &nodeHooks{afterPages: func() {
					b.hooks = nil
					b.cfg.PageSize = len(own) // one batch
					if err := b.flush(ctx); err != nil {
						t.Error(err)
					}
					b.cfg.PageSize = 7
				}}
				if err := b.catchUp(ctx, true); err != nil {
					t.Fatal(err)
				}
			}
			if wrote != nil {
				if err := <-wrote; err != nil {
					t.Fatal(err)
				}
			}
			missing := 0
			for _, s := range own {
				if _, ok := reg.Lookup(s.Addr); !ok {
					missing++
				}
			}
			if missing > 0 {
				t.Errorf("the catch-up dropped %d of this instance's own %d servers", missing, len(own))
			}
			if n, _ := reg.Counts(); n != 340 {
				t.Errorf("b lists %d, want 340", n)
			}
			if n := r.client(t).HLen(ctx, DefaultPrefix+"servers").Val(); n != 340 {
				t.Errorf("Redis holds %d, want 340", n)
			}
		})
	}
}

// A server that says it is shutting down during a Redis outage, and then
// does not answer its check, is removed by the instance it told, and
// stays removed when Redis comes back, though another instance re-probed
// it during the outage, before the shutdown: the removal's version is the
// check's time, newer than that re-probe, and Redis remembers it, so the
// re-probe's write is refused whether it lands before or after the
// removal. Both instances end without it.
func TestFleet_ShutdownDuringOutageWinsOverOlderReprobe(t *testing.T) {
	for _, order := range []string{"removal-first", "reprobe-first"} {
		t.Run(order, func(t *testing.T) {
			r := startRedis(t)
			ctx := context.Background()
			a, ra := joinedNode(t, r.URL(), "a")
			b, rb := joinedNode(t, r.URL(), "b")
			t0 := time.Now().Add(-time.Minute)
			s := record(7, t0)
			a.Put(s)
			if err := a.flush(ctx); err != nil {
				t.Fatal(err)
			}
			ra.Apply(t0, s)
			drain(t, b)
			if _, ok := rb.Lookup(s.Addr); !ok {
				t.Fatal("b does not list the server")
			}
			// Redis goes down. b re-probes the server (answered); then the
			// server flatlines to a, and does not answer a's check.
			t1 := t0.Add(20 * time.Second)
			re := s
			re.LastVerified = t1
			rb.Apply(t1, re)
			b.Put(re)
			t2 := t0.Add(40 * time.Second)
			rm := master.Removal{Addr: s.Addr, Listed: true, Reason: master.ReasonCheckUnanswered, LastVerified: t0, Shutdown: t2}
			ra.ApplyRemoval(s.Addr, rm.Version())
			a.Remove(rm)
			// Redis answers again: the two queues are written, in either
			// order, and each instance follows the stream.
			first, second := a, b
			if order == "reprobe-first" {
				first, second = b, a
			}
			for _, n := range []*Node{first, second} {
				if err := n.flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			drain(t, a)
			drain(t, b)
			if v, err := r.client(t).HExists(ctx, DefaultPrefix+"servers", s.Addr.String()).Result(); err != nil || v {
				t.Errorf("Redis holds the server that shut down (%v)", err)
			}
			if _, ok := ra.Lookup(s.Addr); ok {
				t.Error("a lists the server that shut down")
			}
			if _, ok := rb.Lookup(s.Addr); ok {
				t.Error("b lists the server that shut down")
			}
			// A verification after the shutdown (the server came back)
			// lists it again.
			back := s
			back.LastVerified = t2.Add(time.Second)
			b.Put(back)
			if err := b.flush(ctx); err != nil {
				t.Fatal(err)
			}
			drain(t, a)
			if _, ok := ra.Lookup(s.Addr); !ok {
				t.Error("a server verified after its shutdown is not listed again")
			}
		})
	}
}

// An instance cut off from Redis reports itself alone in
// scout_fleet_instances once the others have taken it for dead, as they
// report it gone, instead of the fleet it last saw.
func TestFleet_CutOffInstanceReportsItselfAlone(t *testing.T) {
	r := startRedis(t)
	var ins []*instance
	for _, id := range []string{"a", "b", "c"} {
		ins = append(ins, startInstance(t, fastConfig(r.URL(), id), 0))
	}
	instances := func(in *instance) float64 {
		reg := prometheus.NewRegistry()
		reg.MustRegister(in.node)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "scout_fleet_instances" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}
	if !waitFor(patience(t), func() bool { return instances(ins[0]) == 3 && instances(ins[1]) == 3 && instances(ins[2]) == 3 }) {
		t.Fatalf("instances: %v %v %v, want 3 each", instances(ins[0]), instances(ins[1]), instances(ins[2]))
	}
	ins[2].node.rdb.Close() // c is cut off
	if !waitFor(DefaultDead+patience(t), func() bool { return instances(ins[0]) == 2 && instances(ins[1]) == 2 && instances(ins[2]) == 1 }) {
		t.Errorf("after c was cut off: a %v, b %v, c %v; want 2, 2 and 1", instances(ins[0]), instances(ins[1]), instances(ins[2]))
	}
}

// A catch-up's full read of a registry this instance holds nearly whole
// decodes only the records that changed (the others are held at their
// version), and finds the servers the hash no longer holds without
// copying the listing: at a million servers the read took 8.6-30.7 s
// after a partition against 2.2 s for a fresh join, and the registry's
// lock was held for seconds at a time (BENCHMARKS.md, "Catching up").
func TestFleet_CatchUpDecodesOnlyWhatChanged(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	other, _ := joinedNode(t, r.URL(), "other")
	old := time.Now().Add(-time.Minute)
	for i := range 2000 {
		other.Put(record(i, old))
	}
	flushNode(t, other)
	b, reg := joinedNode(t, r.URL(), "b")
	if n, _ := reg.Counts(); n != 2000 {
		t.Fatalf("joined with %d", n)
	}
	decoded0 := b.stats.decoded.Load()
	// While b was cut off, the others re-verified ten servers and removed
	// five.
	later := time.Now()
	for i := range 10 {
		other.Put(record(i, later))
	}
	for i := 100; i < 105; i++ {
		other.Remove(master.Removal{Addr: record(i, old).Addr, Listed: true, LastVerified: old})
	}
	flushNode(t, other)
	if err := b.catchUp(ctx, true); err != nil {
		t.Fatal(err)
	}
	if d := b.stats.decoded.Load() - decoded0; d != 10 {
		t.Errorf("the catch-up decoded %d records, want the 10 that changed", d)
	}
	if n, _ := reg.Counts(); n != 1995 {
		t.Errorf("b lists %d, want 1,995", n)
	}
	if s, _ := reg.Lookup(record(3, later).Addr); !s.LastVerified.Equal(later.Round(0)) && !s.LastVerified.Equal(later) {
		t.Errorf("a re-verified server is at %v, want %v", s.LastVerified, later)
	}
}

func flushNode(t *testing.T, n *Node) {
	t.Helper()
	for n.Queued() > 0 {
		if err := n.flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
