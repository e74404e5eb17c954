package masterd

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/scout-discovery/scout/master"
)

// commit is one Apply a fakeStore received.
type commit struct {
	start, end time.Time
	puts       []master.Server
	deletes    []netip.AddrPort
}

// fakeStore records Applys under synctest's clock; each takes took (a
// commit's fsyncs) and the first fail of them fail.
type fakeStore struct {
	took time.Duration
	mu   sync.Mutex
	fail int
	log  []commit
}

func (f *fakeStore) Apply(puts []master.Server, deletes []netip.AddrPort) error {
	start := time.Now()
	time.Sleep(f.took)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return errors.New("disk full")
	}
	f.log = append(f.log, commit{start, time.Now(), puts, deletes})
	return nil
}

func (f *fakeStore) Load() ([]master.Server, int, error) { return nil, 0, nil }

func (f *fakeStore) commits() []commit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]commit(nil), f.log...)
}

func srvAt(i int) master.Server {
	return master.Server{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), 27960), Listed: true, Game: "Quake3Arena"}
}

func startWriter(st Store, interval time.Duration) (w *storeWriter, stop func()) {
	w = newStoreWriter(st, slog.New(slog.DiscardHandler), interval)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.run(ctx); close(done) }()
	return w, func() { cancel(); <-done }
}

// A burst of registrations after a quiet spell is committed at once (what
// has arrived when the writer wakes) and the rest one interval later.
func TestStoreWriter_BurstIsTwoCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &fakeStore{took: 20 * time.Millisecond}
		w, stop := startWriter(st, DefaultCommitInterval)
		defer stop()
		t0 := time.Now()
		for i := range 16384 {
			w.Put(srvAt(i))
		}
		synctest.Wait()
		time.Sleep(time.Second)
		c := st.commits()
		if len(c) == 0 || !c[0].start.Equal(t0) {
			t.Fatalf("%d commits, the first not at once", len(c))
		}
		if len(c) > 2 || len(c) == 2 && c[1].start.Sub(c[0].start) != DefaultCommitInterval {
			t.Errorf("%d commits, the second at +%v", len(c), c[len(c)-1].start.Sub(t0))
		}
		n := 0
		for _, c := range c {
			n += len(c.puts)
		}
		if n != 16384 {
			t.Errorf("%d servers committed", n)
		}
	})
}

// TestStoreWriter_CommitInterval pins the durability contract: under a
// steady stream of changes, commits start at least one interval apart, and
// every change is in a commit that starts at most one interval after it
// was made (so it is on disk by then plus one commit's duration).
func TestStoreWriter_CommitInterval(t *testing.T) {
	for _, took := range []time.Duration{time.Millisecond, 60 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			const interval = 100 * time.Millisecond
			st := &fakeStore{took: took}
			w, stop := startWriter(st, interval)
			made := map[netip.AddrPort]time.Time{}
			for i := range 1000 { // one change every 1.7 ms for 1.7 s
				a := srvAt(i)
				made[a.Addr] = time.Now()
				if i%10 == 9 {
					w.Delete(srvAt(i - 5).Addr)
					made[srvAt(i-5).Addr] = time.Now()
				}
				w.Put(a)
				time.Sleep(1700 * time.Microsecond)
			}
			synctest.Wait()
			time.Sleep(time.Second)
			stop()
			cs := st.commits()
			seen := map[netip.AddrPort]time.Time{}
			for i, c := range cs {
				if i > 0 && c.start.Sub(cs[i-1].start) < interval {
					t.Errorf("commit %d started %v after the previous", i, c.start.Sub(cs[i-1].start))
				}
				for _, s := range c.puts {
					seen[s.Addr] = c.start
				}
				for _, a := range c.deletes {
					seen[a] = c.start
				}
			}
			late := 0
			for a, m := range made {
				s, ok := seen[a]
				if !ok || s.Sub(m) > interval {
					late++
				}
			}
			if late > 0 {
				t.Errorf("commit %v: %d of %d changes not in a commit started within %v", took, late, len(made), interval)
			}
			if n := len(cs); n < 15 || n > 19 {
				t.Errorf("commit %v: %d commits in 1.7 s at most every %v", took, n, interval)
			}
		})
	}
}

// A clean stop commits what is pending at once, without waiting for the
// interval.
func TestStoreWriter_StopCommitsPendingAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &fakeStore{took: 5 * time.Millisecond}
		w, stop := startWriter(st, time.Hour)
		w.Put(srvAt(1)) // the first commit after quiet: at once
		time.Sleep(time.Second)
		for i := range 16384 {
			w.Put(srvAt(i))
		}
		t0 := time.Now()
		stop()
		if d := time.Since(t0); d != st.took {
			t.Errorf("stop took %v, want one commit (%v)", d, st.took)
		}
		c := st.commits()
		if len(c) != 2 || len(c[1].puts) != 16384 {
			t.Fatalf("%d commits", len(c))
		}
	})
}

// A failed commit keeps its changes, except those a newer change replaced,
// and they go in the next commit after a back-off.
func TestStoreWriter_FailedCommitRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &fakeStore{fail: 2}
		w, stop := startWriter(st, DefaultCommitInterval)
		defer stop()
		for i := range 10 {
			w.Put(srvAt(i))
		}
		synctest.Wait() // the first try failed
		w.Delete(srvAt(3).Addr)
		time.Sleep(10 * time.Second)
		c := st.commits()
		if len(c) != 1 || len(c[0].puts) != 9 || len(c[0].deletes) != 1 || c[0].deletes[0] != srvAt(3).Addr {
			t.Fatalf("commits after two failures: %+v", c)
		}
		if w.errs.Load() != 2 || w.Pending() != 0 {
			t.Errorf("errs %d, pending %d", w.errs.Load(), w.Pending())
		}
	})
}
