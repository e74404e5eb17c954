package fleet

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scout-discovery/scout/master"
)

// writeLoop writes the queue whenever something is queued, retrying with
// a backoff while Redis fails.
func (n *Node) writeLoop(ctx context.Context) {
	backoff := time.Duration(0)
	for {
		if backoff == 0 {
			select {
			case <-ctx.Done():
				return
			case <-n.wake:
			}
		}
		for n.Queued() > 0 {
			if err := n.flush(ctx); err != nil {
				n.failed(err)
				backoff = nextBackoff(backoff)
				if !sleep(ctx, backoff) {
					return
				}
				continue
			}
			backoff = 0
		}
		backoff = 0
	}
}

// flush writes up to PageSize queued writes in one pipeline. Writes that
// fail go back to the queue unless a newer write of their address came
// meanwhile.
func (n *Node) flush(ctx context.Context) error {
	n.mu.Lock()
	batch := make(map[netip.AddrPort]op, min(len(n.queue), n.cfg.PageSize))
	for a, o := range n.queue {
		if len(batch) == n.cfg.PageSize {
			break
		}
		batch[a] = o
		delete(n.queue, a)
		n.writing[a] = o
		if n.sparing != nil {
			n.sparing[a] = struct{}{}
		}
	}
	n.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	defer func() {
		n.mu.Lock()
		clear(n.writing)
		n.mu.Unlock()
	}()
	if h := n.hooks; h != nil && h.beforeWrite != nil {
		h.beforeWrite()
	}
	superseded, err := n.write(ctx, batch)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// Redis started again and forgot the scripts: load them.
		if err = n.loadScripts(ctx); err == nil {
			superseded, err = n.write(ctx, batch)
		}
	}
	if err != nil {
		n.mu.Lock()
		for a, o := range batch {
			if _, newer := n.queue[a]; !newer {
				n.queue[a] = o
			}
		}
		n.mu.Unlock()
		return err
	}
	if len(superseded) > 0 {
		// A write Redis refused (a newer record, or a removal since)
		// does not stand for a server this instance still lists.
		n.mu.Lock()
		if n.sparing != nil {
			for _, a := range superseded {
				delete(n.sparing, a)
			}
		}
		n.mu.Unlock()
	}
	n.succeeded()
	return nil
}

func (n *Node) loadScripts(ctx context.Context) error {
	for _, s := range []*redis.Script{n.put, n.del, n.beat, n.hist} {
		if err := s.Load(ctx, n.rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

// write runs batch's scripts in one pipeline; it fails as a whole if any
// failed (the scripts are idempotent: a put or a removal done twice
// leaves what it left once). It returns the puts Redis did not take (a
// newer record, or a removal since).
func (n *Node) write(ctx context.Context, batch map[netip.AddrPort]op) (superseded []netip.AddrPort, err error) {
	start := time.Now()
	pipe := n.rdb.Pipeline()
	keys := []string{n.hash, n.stream, n.rtts, n.gone}
	addrs := make([]netip.AddrPort, 0, len(batch))
	var ids []any // the landmarks whose records a removal deletes
	for a, o := range batch {
		addrs = append(addrs, a)
		if o.srv != nil {
			field, value := n.putRTT(a, *o.srv)
			pipe.EvalSha(ctx, n.put.Hash(), keys, a.String(), encode(*o.srv), n.cfg.StreamLen, n.cfg.ID, field, value, o.ver/1e6)
		} else {
			if ids == nil {
				ids = n.landmarkIDs()
			}
			args := append([]any{a.String(), fmtVersion(o.ver), n.cfg.StreamLen, n.cfg.ID, o.ver / 1e6, n.cfg.RemovedTTL.Milliseconds()}, ids...)
			pipe.EvalSha(ctx, n.del.Hash(), keys, args...)
		}
	}
	cmds, err := pipe.Exec(ctx)
	n.stats.observe(start)
	if err != nil {
		return nil, err
	}
	for i, c := range cmds {
		if v, _ := c.(*redis.Cmd).Int(); v == 1 {
			n.stats.written.Add(1)
		} else {
			n.stats.superseded.Add(1)
			if batch[addrs[i]].srv != nil {
				superseded = append(superseded, addrs[i])
			}
		}
	}
	return superseded, nil
}

// follow applies the other instances' changes until ctx ends, catching up
// after every failure. The wait before trying again grows while the
// tries fail and starts again from MinBackoff once one has read the
// stream, so an outage after hours of service is retried as soon as the
// first one was.
func (n *Node) follow(ctx context.Context) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		read, err := n.followOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		n.failed(err)
		backoff = followBackoff(backoff, read)
		if !sleep(ctx, backoff) {
			return
		}
	}
}

// followBackoff is the wait before the next try after one that failed:
// the next step of the backoff, from its start if the try read the stream.
func followBackoff(last time.Duration, read bool) time.Duration {
	if read {
		last = 0
	}
	return nextBackoff(last)
}

// followOnce catches up (the stream from the last change applied, or the
// whole hash if the stream lost changes since), then reads the stream
// until an error; read reports whether a read of the stream succeeded.
func (n *Node) followOnce(ctx context.Context) (read bool, err error) {
	if err := n.catchUp(ctx, !n.synced()); err != nil {
		return false, err
	}
	for {
		if err := n.readOnce(ctx); err != nil {
			return read, err
		}
		read = true
		if err := n.checkEpoch(ctx); err != nil {
			return read, err
		}
	}
}

// readOnce reads the stream once after the last change applied (waiting
// up to Block for one) and applies what it got. XREAD skips without a
// word the changes trimmed away before it ran, so when it got any, the
// stream is checked to have still held every change after the position
// the read started from; if not, the whole hash is read.
func (n *Node) readOnce(ctx context.Context) error {
	start := time.Now()
	from := n.lastID
	res, err := n.rdb.XRead(ctx, &redis.XReadArgs{
		Streams: []string{n.stream, from}, Count: int64(n.cfg.ReadCount), Block: n.cfg.Block,
	}).Result()
	switch {
	case errors.Is(err, redis.Nil): // no change within Block
	case err != nil:
		return err
	default:
		n.stats.observe(start)
	}
	n.succeeded()
	now := time.Now()
	got := 0
	for _, s := range res {
		for _, m := range s.Messages {
			n.applyMessage(now, m)
			n.lastID = m.ID
			got++
		}
	}
	if got == 0 {
		return nil
	}
	l, err := n.streamLostSince(ctx, from)
	if err != nil {
		return err
	}
	return n.recover(ctx, l, false)
}

// checkEpoch catches up when the last beat read another epoch than the
// one of the last full read: Redis lost the registry (flushed) while the
// stream's XREAD went on blocking, which no error told.
func (n *Node) checkEpoch(ctx context.Context) error {
	n.mu.Lock()
	seen, known := n.beatEpoch, n.beatEpochSet
	n.mu.Unlock()
	if !known || n.epoch == "" || seen == n.epoch {
		return nil
	}
	if err := n.catchUp(ctx, false); err != nil {
		return err
	}
	n.mu.Lock()
	n.beatEpochSet = false // until a beat reads the epoch again
	n.mu.Unlock()
	return nil
}

// catchUp reads the whole hash when the stream no longer holds every
// change after lastID (or when full is set). When Redis lost the
// registry (started again without its data), the servers this instance
// lists are kept and written to Redis again, not dropped.
func (n *Node) catchUp(ctx context.Context, full bool) error {
	l, err := n.streamLost(ctx)
	if err != nil {
		return err
	}
	return n.recover(ctx, l, full)
}

// recover reads the whole hash after a loss of the stream (or when full
// is set); see catchUp.
func (n *Node) recover(ctx context.Context, l loss, full bool) error {
	switch {
	case l == lossReset:
		n.stats.resets.Add(1)
		n.log.Warn("redis lost the shared registry (started again without its data): keeping this instance's list and writing it again", "listed", func() int { c, _ := n.reg.Counts(); return c }())
		if err := n.resync(ctx, false); err != nil {
			return err
		}
		n.republish()
	case l == lossTrimmed:
		n.stats.behind.Add(1)
		return n.resync(ctx, true)
	case full:
		return n.resync(ctx, true)
	}
	return nil
}

// republish queues every server this instance lists for writing (each
// write keeps a newer record that another instance wrote meanwhile).
func (n *Node) republish() {
	for _, s := range n.reg.Servers(nil) {
		n.Put(s)
	}
}

// What streamLost found.
type loss uint8

const (
	lossNone    loss = iota
	lossTrimmed      // changes after lastID were trimmed or deleted
	lossReset        // the stream is older than lastID or gone: Redis lost its data
)

// streamLost reports whether the stream may no longer hold every change
// after lastID: trimmed past it (XADD MAXLEN) or entries deleted after it
// (XDEL), lossTrimmed; started again or gone (a Redis without its
// append-only file, or flushed), lossReset.
func (n *Node) streamLost(ctx context.Context) (loss, error) {
	if n.lastID == "" {
		return lossTrimmed, nil
	}
	return n.streamLostSince(ctx, n.lastID)
}

// streamLostSince is streamLost for the changes after id. A registry
// whose epoch is not the one of the last full read lost its data, even
// when another instance has already written to it again: its stream is
// new, its entries after id by their clocks, and only the epoch tells.
func (n *Node) streamLostSince(ctx context.Context, id string) (loss, error) {
	// One round trip: the epoch (when known) and the stream's state.
	pipe := n.rdb.Pipeline()
	var epoch *redis.StringCmd
	if n.epoch != "" {
		epoch = pipe.Get(ctx, n.epochK)
	}
	stream := pipe.XInfoStream(ctx, n.stream)
	pipe.Exec(ctx) // each command's error is its own, read below
	if epoch != nil {
		e, err := epoch.Result()
		switch {
		case errors.Is(err, redis.Nil) || (err == nil && e != n.epoch):
			return lossReset, nil
		case err != nil:
			return lossNone, err
		}
	}
	info, err := stream.Result()
	if err != nil {
		if redis.HasErrorPrefix(err, "no such key") {
			if id != "0-0" {
				return lossReset, nil
			}
			return lossNone, nil
		}
		return lossNone, err
	}
	if cmpID(info.LastGeneratedID, id) < 0 {
		return lossReset, nil
	}
	// Joined before the stream existed (id 0-0): its first entry is then
	// the first change made since, not the oldest left by a trim, unless
	// entries were trimmed or deleted since (XINFO STREAM's entries-added
	// and max-deleted-entry-id, Redis 7.0).
	if id == "0-0" && info.EntriesAdded == info.Length && info.MaxDeletedEntryID == "0-0" {
		return lossNone, nil
	}
	// Trimming removes the oldest entries: while the last change applied
	// is still the stream's (not older than its first entry), the
	// ones after it are all there. Its own removal is taken as a loss,
	// which may read the hash once more than needed.
	if cmpID(info.MaxDeletedEntryID, id) > 0 || (info.Length > 0 && cmpID(info.FirstEntry.ID, id) > 0) {
		return lossTrimmed, nil
	}
	return lossNone, nil
}

// applyMessage applies one change of another instance: a put (v), its
// landmark RTT (l, r) if any, or a removal (d). This instance's own
// removals are applied too: a put of another instance may have come
// before one in the stream (written while this one's removal waited for
// Redis), and the removal, later in the stream, is the one that stands.
func (n *Node) applyMessage(now time.Time, m redis.XMessage) {
	if id, _ := m.Values["i"].(string); id == n.cfg.ID {
		if _, removal := m.Values["d"]; !removal {
			return
		}
	}
	addr, _ := m.Values["a"].(string)
	v, put := m.Values["v"].(string)
	lm, _ := m.Values["l"].(string)
	r, rtt := m.Values["r"].(string)
	if put {
		s, err := decode(addr, v)
		switch {
		case err != nil:
			n.stats.corrupt.Add(1)
			n.log.Warn("a change in the stream cannot be read", "id", m.ID, "err", err)
		default:
			if ch, why := n.reg.Apply(now, s); why != master.OK {
				n.stats.refused.Add(1)
			} else if ch != master.ChangeNone {
				n.stats.applied[opPut].Add(1)
				if n.obs != nil {
					n.obs.Verified(s.LastVerified, s)
				}
			}
		}
	}
	if rtt {
		n.applyRTT(addr, lm, r)
	}
	if put || rtt {
		return
	}
	d, _ := m.Values["d"].(string)
	a, err := netip.ParseAddrPort(addr)
	ver, err2 := strconv.ParseInt(d, 10, 64)
	if err != nil || err2 != nil {
		n.stats.corrupt.Add(1)
		return
	}
	if n.reg.ApplyRemoval(a, time.Unix(0, ver)) {
		n.stats.applied[opDel].Add(1)
	}
}

// cmpID compares two stream IDs ("ms-seq"); "" is the smallest.
func cmpID(a, b string) int {
	am, as := splitID(a)
	bm, bs := splitID(b)
	switch {
	case am != bm:
		return cmpU(am, bm)
	default:
		return cmpU(as, bs)
	}
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func splitID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	s, _ := strconv.ParseUint(seq, 10, 64)
	return m, s
}

// Servers reads every server of the shared registry (HSCAN, in pages): the
// list any instance serves the same. Unreadable records are skipped.
func (n *Node) Servers(ctx context.Context) ([]master.Server, error) {
	var out []master.Server
	var cursor uint64
	for {
		kv, next, err := n.rdb.HScan(ctx, n.hash, cursor, "", int64(n.cfg.PageSize)).Result()
		if err != nil {
			return nil, err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if s, err := decode(kv[i], kv[i+1]); err == nil {
				out = append(out, s)
			}
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}
