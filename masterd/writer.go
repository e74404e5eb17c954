package masterd

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/scout-discovery/scout/master"
)

// Store keeps the registry on disk (master/store implements it).
type Store interface {
	Put(master.Server) error
	Delete(netip.AddrPort) error
	Load() (servers []master.Server, corrupt int, err error)
}

// storeWriter is the Persister the server gives its handler: Put and
// Delete record the latest state of each address and wake a writer
// goroutine, so the packet path never waits for the disk. Pending
// writes are bounded by the registry's MaxServers (one per address).
//
// mu guards pending.
type storeWriter struct {
	st   Store
	log  *slog.Logger
	wake chan struct{}
	errs atomic.Uint64

	mu      sync.Mutex
	pending map[netip.AddrPort]*master.Server // nil value: delete
}

func newStoreWriter(st Store, log *slog.Logger) *storeWriter {
	return &storeWriter{st: st, log: log, wake: make(chan struct{}, 1), pending: make(map[netip.AddrPort]*master.Server)}
}

func (w *storeWriter) Put(s master.Server) { w.set(s.Addr, &s) }

func (w *storeWriter) Delete(a netip.AddrPort) { w.set(a, nil) }

func (w *storeWriter) set(a netip.AddrPort, s *master.Server) {
	w.mu.Lock()
	w.pending[a] = s
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run writes pending changes until ctx ends, then writes what is left.
func (w *storeWriter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			w.flush()
			return
		case <-w.wake:
			w.flush()
		}
	}
}

func (w *storeWriter) flush() {
	w.mu.Lock()
	batch := w.pending
	w.pending = make(map[netip.AddrPort]*master.Server)
	w.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	defer w.log.Debug("state written", "changes", len(batch))
	for a, s := range batch {
		var err error
		if s == nil {
			err = w.st.Delete(a)
		} else {
			err = w.st.Put(*s)
		}
		if err != nil {
			w.errs.Add(1)
			w.log.Error("writing the state file", "server", a, "err", err)
		}
	}
}
