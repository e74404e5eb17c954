package fleet

// The full read of the shared registry (HSCAN, in pages), for a join and
// for a catch-up the stream cannot give.

import (
	"context"
	"crypto/rand"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scout-discovery/scout/master"
)

// fullRead is a read of the whole hash, kept when a round trip cuts it
// short so that the next attempt goes on from the last page applied
// instead of from the first: a registry that takes longer to read than
// Redis stays responsive (a join given up at masterd.FleetJoinTimeout,
// round trips timing out while Redis is busy) is still read whole, in
// steps. An HSCAN cursor is good only with the Redis process that gave
// it (its hash seed is random per process), and the changes made during
// the read are replayed from the stream position taken before its first
// page: the read goes on only while both hold.
type fullRead struct {
	cursor uint64    // the HSCAN cursor after the last page applied
	lastID string    // the stream's last entry before the first page
	epoch  string    // the registry's epoch (PREFIX epoch) before the first page
	runID  string    // the Redis process (INFO server run_id)
	start  time.Time // the first attempt's start
	drop   bool      // remove what the hash no longer holds (a catch-up)
	seen   map[netip.AddrPort]struct{}
	spare  map[netip.AddrPort]struct{} // this instance's own writes since the read began (Node.sparing)
	read   int                         // records applied
	tries  int                         // attempts
	done   bool                        // every page applied
}

// resync reads the whole hash into the registry, in pages, then (with
// drop, after a first read) removes the listed servers the hash no longer
// holds (unless verified here since the read began, or waiting in the
// queue), and sets lastID to where the stream stood before the read, so
// that no change is missed. A read cut short by an error is kept and the
// next resync goes on with it (fullRead).
func (n *Node) resync(ctx context.Context, drop bool) error {
	fr, err := n.resumeRead(ctx)
	if err != nil {
		return err
	}
	if fr == nil {
		if fr, err = n.startRead(ctx, drop && n.synced()); err != nil {
			return err
		}
	}
	fr.tries++
	if err := n.readPages(ctx, fr); err != nil {
		n.partial = fr
		return err
	}
	rtts, err := n.resyncRTTs(ctx)
	if err != nil {
		n.partial = fr // every page applied (done): the next attempt reads none
		return err
	}
	if h := n.hooks; h != nil && h.afterPages != nil {
		h.afterPages()
	}
	removed := 0
	if fr.drop {
		removed = n.dropUnseen(fr)
	}
	n.lastID, n.epoch = fr.lastID, fr.epoch
	n.read.Store(true)
	n.stats.resyncs.Add(1)
	n.succeeded()
	n.log.Info("read the shared registry", "servers", fr.read, "landmark_rtts", rtts, "removed", removed, "attempts", fr.tries,
		"took", time.Since(fr.start).Round(time.Millisecond), "stream_id", fr.lastID)
	return nil
}

// dropUnseen removes the listed servers fr did not see in the hash,
// unless verified here since fr began, or written by this instance since
// (queued, in flight, or taken from the queue while fr read: the read may
// have passed their place before they landed; see Node.sparing). Each is
// logged.
func (n *Node) dropUnseen(fr *fullRead) int {
	removed := 0
	for _, v := range n.reg.VerifiedBefore(fr.start, nil) {
		if _, ok := fr.seen[v.Addr]; ok {
			continue
		}
		n.mu.Lock()
		_, queued := n.queue[v.Addr]
		_, spared := fr.spare[v.Addr]
		n.mu.Unlock()
		if queued || spared {
			continue
		}
		if n.reg.ApplyRemoval(v.Addr, v.LastVerified) {
			removed++
			n.log.Debug("removed: no longer in the shared registry", "server", v.Addr, "last_verified", v.LastVerified)
		}
	}
	n.mu.Lock()
	n.sparing = nil
	n.mu.Unlock()
	return removed
}

// peekVersion reads a hash field's address and its value's version
// without decoding the record.
func peekVersion(addr, v string) (netip.AddrPort, time.Time, bool) {
	if len(v) < 20 {
		return netip.AddrPort{}, time.Time{}, false
	}
	a, err := netip.ParseAddrPort(addr)
	if err != nil {
		return netip.AddrPort{}, time.Time{}, false
	}
	ns, err := strconv.ParseInt(v[:20], 10, 64)
	if err != nil || ns <= 0 {
		return netip.AddrPort{}, time.Time{}, false
	}
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()), time.Unix(0, ns), true
}

// synced reports whether the registry holds the hash: a full read done,
// which took the registry's epoch (takeEpoch sets a non-empty one).
func (n *Node) synced() bool { return n.epoch != "" }

// startRead begins a full read: where the stream stands, and which Redis
// process answers.
func (n *Node) startRead(ctx context.Context, drop bool) (*fullRead, error) {
	fr := &fullRead{lastID: "0-0", start: time.Now(), drop: drop}
	info, err := n.rdb.XInfoStream(ctx, n.stream).Result()
	switch {
	case err == nil:
		fr.lastID = info.LastGeneratedID
	case redis.HasErrorPrefix(err, "no such key"):
	default:
		return nil, err
	}
	if fr.runID, err = n.runID(ctx); err != nil {
		return nil, err
	}
	if fr.epoch, err = n.takeEpoch(ctx); err != nil {
		return nil, err
	}
	if drop {
		fr.seen = make(map[netip.AddrPort]struct{})
		fr.spare = make(map[netip.AddrPort]struct{})
		n.mu.Lock()
		for a := range n.writing {
			fr.spare[a] = struct{}{}
		}
		n.sparing = fr.spare
		n.mu.Unlock()
	}
	return fr, nil
}

// resumeRead returns the read an error cut short, if it can go on: the
// same Redis process, and the stream still holding every change since
// the read began. Otherwise it is dropped (nil).
func (n *Node) resumeRead(ctx context.Context) (*fullRead, error) {
	fr := n.partial
	if fr == nil {
		return nil, nil
	}
	id, err := n.runID(ctx)
	if err != nil {
		return nil, err
	}
	l, err := n.streamLostSince(ctx, fr.lastID)
	if err != nil {
		return nil, err
	}
	n.partial = nil
	if id != fr.runID || l != lossNone {
		n.log.Info("reading the shared registry again from the start", "read", fr.read, "same_redis", id == fr.runID, "stream_kept", l == lossNone)
		return nil, nil
	}
	n.stats.resumed.Add(1)
	return fr, nil
}

// takeEpoch returns the registry's epoch, setting a new one if it has
// none (a new registry, or a Redis that lost its data).
func (n *Node) takeEpoch(ctx context.Context) (string, error) {
	if err := n.rdb.SetNX(ctx, n.epochK, rand.Text(), 0).Err(); err != nil {
		return "", err
	}
	return n.rdb.Get(ctx, n.epochK).Result()
}

// runID is the Redis process's run_id (INFO server).
func (n *Node) runID(ctx context.Context) (string, error) {
	info, err := n.rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for l := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "run_id:"); ok {
			return v, nil
		}
	}
	return "", errors.New("fleet: no run_id in INFO server")
}

// readPages reads fr's pages from its cursor to the end of the hash into
// the registry. The pages are read by a goroutine while the ones before
// are applied here, so Redis and this process work at once; fr.cursor
// moves on only when a page is applied.
func (n *Node) readPages(ctx context.Context, fr *fullRead) error {
	if fr.done {
		return nil
	}
	type page struct {
		kv   []string
		next uint64
		err  error
	}
	pages := make(chan page, 4)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(pages)
		cursor := fr.cursor
		for {
			kv, next, err := n.rdb.HScan(fctx, n.hash, cursor, "", int64(n.cfg.PageSize)).Result()
			select {
			case pages <- page{kv, next, err}:
			case <-fctx.Done():
				return
			}
			if cursor = next; err != nil || cursor == 0 {
				return
			}
		}
	}()
	for p := range pages {
		if p.err != nil {
			return p.err
		}
		now := time.Now()
		kv := p.kv
		for i := 0; i+1 < len(kv); i += 2 {
			if a, ver, ok := peekVersion(kv[i], kv[i+1]); ok && n.reg.Holds(a, ver) {
				// Held already (most records of a catch-up): no need to
				// decode it.
				if fr.seen != nil {
					fr.seen[a] = struct{}{}
				}
				fr.read++
				n.stats.held.Add(1)
				continue
			}
			n.stats.decoded.Add(1)
			s, err := decode(kv[i], kv[i+1])
			if err != nil {
				n.stats.corrupt.Add(1)
				n.log.Warn("a record in the shared registry cannot be read", "err", err)
				continue
			}
			if fr.seen != nil {
				fr.seen[s.Addr] = struct{}{}
			}
			if ch, why := n.reg.Apply(now, s); why != master.OK {
				n.stats.refused.Add(1)
			} else if ch != master.ChangeNone && n.obs != nil {
				n.obs.Verified(s.LastVerified, s)
			}
			fr.read++
		}
		fr.cursor = p.next
		if p.next == 0 {
			fr.done = true
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err // the read stopped short
	}
	return errors.New("fleet: the read of the shared registry stopped short")
}
