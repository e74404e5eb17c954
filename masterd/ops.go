package masterd

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"time"
)

// ReadyFleet is a Fleet that tells whether it has read the whole shared
// registry once (package fleet's Node does).
type ReadyFleet interface {
	Ready() bool
}

// BackupStore is a Store that can copy itself while in use (master/store
// does): fn gets the copy's size and a function writing it, from one
// consistent view.
type BackupStore interface {
	Backup(fn func(size int64, write func(io.Writer) (int64, error)) error) error
}

// notReady says why the master is not ready to answer with its full list,
// or "" when it is. The state file is restored before the HTTP listener
// opens (NewMaster), so only a fleet's first read can be missing.
func (m *Master) notReady() string {
	if f, ok := m.deps.Fleet.(ReadyFleet); ok && !f.Ready() {
		return "the fleet's shared registry is not read yet"
	}
	return ""
}

// serveReady answers /readyz: 200 once the master answers with its full
// list, 503 and the reason before.
func (m *Master) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if why := m.notReady(); why != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, why)
		return
	}
	w.Write([]byte("ok\n"))
}

// serveBackup answers /backup with a consistent copy of the state file,
// taken while the master runs. Only a client on a loopback address (the
// master's own host) gets it, and never through a proxy (a request with
// Forwarded or X-Forwarded-For is refused): the copy is the whole
// registry, and a large one.
func (m *Master) serveBackup(w http.ResponseWriter, r *http.Request) {
	from, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !from.Addr().Unmap().IsLoopback() || r.Header.Get("Forwarded") != "" || r.Header.Get("X-Forwarded-For") != "" {
		http.Error(w, "backup: only for a client on this host's loopback address, not through a proxy", http.StatusForbidden)
		return
	}
	bs, ok := m.deps.Store.(BackupStore)
	if !ok {
		http.Error(w, "backup: this master keeps no state file (--state); a fleet's registry is in Redis: back up Redis", http.StatusNotFound)
		return
	}
	name := "scout-master-" + time.Now().UTC().Format("20060102T150405Z") + ".db"
	started := false
	err = bs.Backup(func(size int64, write func(io.Writer) (int64, error)) error {
		started = true
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.Header().Set("Cache-Control", "no-store")
		_, err := write(w)
		return err
	})
	if err != nil {
		m.Log.Warn("backup failed", "err", err)
		if !started {
			http.Error(w, "backup failed: "+err.Error(), http.StatusInternalServerError)
		}
		// Else the status is sent: the short body tells the client
		// (Content-Length).
		return
	}
	m.Log.Info("backup sent", "to", from.String())
}
