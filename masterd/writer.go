package masterd

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/store"
)

// Store keeps the registry on disk (master/store implements it).
type Store interface {
	// Apply writes puts and deletes durably in one transaction: when it
	// returns nil all of them are on disk, when it fails none is.
	Apply(puts []master.Server, deletes []netip.AddrPort) error
	// Load reads every stored server; corrupt counts records skipped.
	Load() (servers []master.Server, corrupt int, err error)
}

// HistoryStore is a Store that also keeps the player-count history
// (master/store does): the writer then commits the history days that
// changed with the servers, in the same transaction, and deletes the days
// history.History no longer keeps.
type HistoryStore interface {
	Store
	ApplyWithHistory(puts []master.Server, deletes []netip.AddrPort, days []store.HistoryDay, keepFrom int32) error
	LoadHistory() (days []store.HistoryDay, corrupt int, err error)
}

// PlayerStore is a HistoryStore that also keeps the players' sightings
// (master/store does): the writer then commits the names whose sightings
// changed in the same transaction.
type PlayerStore interface {
	HistoryStore
	ApplyWithPlayers(puts []master.Server, deletes []netip.AddrPort, days []store.HistoryDay, keepFrom int32, players []store.PlayerRecord) error
	LoadPlayers() (players []store.PlayerRecord, corrupt int, err error)
}

// historyPrune is how often the writer drops the days History no longer
// keeps from memory (the store drops them at every commit).
const historyPrune = time.Hour

// DefaultCommitInterval is how often, at most, the state writer commits:
// every change is on disk at most this long plus one commit's duration
// after the handler made it.
const DefaultCommitInterval = 100 * time.Millisecond

// maxRetryWait bounds the wait between commits that keep failing (a full
// or read-only disk): the wait doubles from the commit interval up to it.
const maxRetryWait = 5 * time.Second

// storeWriter is the Persister the server gives its handler, and group
// commit: Put and Delete record the latest state of each address and wake
// the writer goroutine, so the packet path never waits for the disk; the
// writer commits everything pending in one Store.Apply, at most once per
// interval (the first change after a quiet spell at once). A failed
// commit keeps its changes pending (unless a newer change replaced one)
// for the next. Pending changes are bounded by the registry's MaxServers
// (one per address).
//
// mu guards pending; the counters are atomic, for the metrics.
type storeWriter struct {
	st       Store
	log      *slog.Logger
	interval time.Duration
	wake     chan struct{}

	errs     atomic.Uint64 // failed commits
	commits  atomic.Uint64 // successful commits
	written  atomic.Uint64 // changes (puts and deletes) committed
	commitNS atomic.Int64  // total time in successful commits
	lastNS   atomic.Int64  // duration of the last successful commit
	maxNS    atomic.Int64  // longest successful commit

	mu      sync.Mutex
	pending map[netip.AddrPort]*master.Server // nil value: delete

	// hist, with a HistoryStore, is committed with the servers; pruned is
	// when it was last pruned (the writer goroutine's).
	hist   *history.History
	pruned time.Time
	// seen, with a PlayerStore and a hist, is committed with them.
	seen *history.Sightings
}

// keepSightings makes the writer commit r's changed names with the
// history when its store is a PlayerStore, and wake on every change of r.
func (w *storeWriter) keepSightings(r *history.Sightings) {
	if _, ok := w.st.(PlayerStore); !ok || w.hist == nil {
		return
	}
	w.seen = r
	r.OnChange(w.wakeUp)
}

// keepHistory makes the writer commit h's changed days with the servers
// when its store is a HistoryStore, and wake on every change of h.
func (w *storeWriter) keepHistory(h *history.History) {
	if _, ok := w.st.(HistoryStore); !ok {
		return
	}
	w.hist = h
	h.OnChange(w.wakeUp)
}

// wakeUp wakes the writer goroutine if it is not already due to wake.
func (w *storeWriter) wakeUp() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func newStoreWriter(st Store, log *slog.Logger, interval time.Duration) *storeWriter {
	return &storeWriter{st: st, log: log, interval: interval, wake: make(chan struct{}, 1),
		pending: make(map[netip.AddrPort]*master.Server)}
}

func (w *storeWriter) Put(s master.Server) { w.set(s.Addr, &s) }

func (w *storeWriter) Delete(a netip.AddrPort) { w.set(a, nil) }

func (w *storeWriter) set(a netip.AddrPort, s *master.Server) {
	w.mu.Lock()
	w.pending[a] = s
	w.mu.Unlock()
	w.wakeUp()
}

// Pending returns the number of changes not yet committed.
func (w *storeWriter) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// run commits pending changes until ctx ends, then commits what is left
// once and returns.
func (w *storeWriter) run(ctx context.Context) {
	var last time.Time // start of the last commit
	failed := 0        // commits failed in a row
	for {
		select {
		case <-ctx.Done():
			w.flush(true)
			return
		case <-w.wake:
		}
		wait := w.interval
		if failed > 0 {
			wait = min(w.interval<<min(failed, 16), maxRetryWait)
		}
		if wait -= time.Since(last); !last.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				w.flush(true)
				return
			case <-t.C:
			}
		}
		last = time.Now()
		switch err := w.flush(false); {
		case err != nil:
			if failed == 0 {
				w.log.Error("writing the state file; retrying", "err", err)
			}
			failed++
		case failed > 0:
			w.log.Info("state file written again", "failed_commits", failed)
			failed = 0
		}
	}
}

// flush commits every pending change in one Apply. On failure the changes
// go back to pending (except those a newer change replaced) and the writer
// wakes itself to try again; final is the last try, at stop, whose failure
// loses them.
func (w *storeWriter) flush(final bool) error {
	// The commit starts before it takes the pending changes: every change
	// made before start is in it (the crash test relies on this, reading
	// start as the log line's time minus took).
	start := time.Now()
	w.mu.Lock()
	batch := w.pending
	w.pending = make(map[netip.AddrPort]*master.Server, len(batch)/2)
	w.mu.Unlock()
	var days []history.Day
	if w.hist != nil {
		if start.Sub(w.pruned) >= historyPrune {
			w.hist.Prune(start)
			w.pruned = start
		}
		days = w.hist.TakeDirty()
	}
	var seen []history.SightingRecord
	if w.seen != nil {
		seen = w.seen.TakeDirty()
	}
	if len(batch) == 0 && len(days) == 0 && len(seen) == 0 {
		return nil
	}
	puts := make([]master.Server, 0, len(batch))
	var dels []netip.AddrPort
	for a, s := range batch {
		if s == nil {
			dels = append(dels, a)
		} else {
			puts = append(puts, *s)
		}
	}
	var err error
	if w.hist != nil {
		hd := make([]store.HistoryDay, len(days))
		for i := range days {
			hd[i] = store.HistoryDay{Addr: days[i].Addr, Day: days[i].Day, Counts: days[i].Counts[:]}
		}
		if w.seen != nil {
			ps := make([]store.PlayerRecord, len(seen))
			for i, r := range seen {
				ps[i] = store.PlayerRecord{Key: r.Key, Value: r.Value}
			}
			err = w.st.(PlayerStore).ApplyWithPlayers(puts, dels, hd, history.KeepFrom(start), ps)
		} else {
			err = w.st.(HistoryStore).ApplyWithHistory(puts, dels, hd, history.KeepFrom(start))
		}
	} else {
		err = w.st.Apply(puts, dels)
	}
	d := time.Since(start)
	if err != nil {
		w.errs.Add(1)
		if w.hist != nil {
			w.hist.Redirty(days)
		}
		if w.seen != nil {
			w.seen.Redirty(seen)
		}
		err = fmt.Errorf("committing %d changes, %d history days and %d players' sightings: %w", len(batch), len(days), len(seen), err)
		if final {
			w.log.Error("writing the state file at stop; these changes are lost", "err", err)
			return err
		}
		w.mu.Lock()
		for a, s := range batch {
			if _, newer := w.pending[a]; !newer {
				w.pending[a] = s
			}
		}
		w.mu.Unlock()
		w.wakeUp()
		return err
	}
	w.commits.Add(1)
	w.written.Add(uint64(len(batch)))
	w.commitNS.Add(int64(d))
	w.lastNS.Store(int64(d))
	for m := w.maxNS.Load(); int64(d) > m && !w.maxNS.CompareAndSwap(m, int64(d)); m = w.maxNS.Load() {
	}
	w.log.Debug("state written", "puts", len(puts), "deletes", len(dels), "history_days", len(days), "players", len(seen), "took", d)
	return nil
}
