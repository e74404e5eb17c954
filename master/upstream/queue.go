package upstream

import "net/netip"

// The servers learned and not yet known to the master wait in a queue:
// the master takes a few each tick (its per-tick budget of new checks),
// so a list of 100,000 servers is verified at a pace the master sets, not
// at the pace the list arrives. The queue holds each address once and at
// most MaxLearned × the number of sources entries; beyond, a server is
// dropped and counted (it comes back at its source's next refresh).

// Queue appends the servers of found to the queue of those to verify,
// each address once, and returns how many it dropped because the queue
// was full.
func (a *Aggregator) Queue(found []Found) (dropped int) {
	if a.queued == nil {
		a.queued = map[netip.AddrPort]struct{}{}
	}
	limit := a.cfg.MaxLearned * max(1, len(a.sources))
	for _, f := range found {
		if _, dup := a.queued[f.Addr]; dup {
			continue
		}
		if len(a.queued) >= limit {
			dropped++
			if f.Source >= 0 && f.Source < len(a.sources) {
				a.sources[f.Source].h.QueueFull++
			}
			continue
		}
		a.queued[f.Addr] = struct{}{}
		a.queue = append(a.queue, f)
	}
	return dropped
}

// Next removes and returns up to n servers from the head of the queue,
// appended to dst.
func (a *Aggregator) Next(n int, dst []Found) []Found {
	n = min(n, len(a.queue))
	for _, f := range a.queue[:n] {
		delete(a.queued, f.Addr)
		dst = append(dst, f)
	}
	a.queue = a.queue[n:]
	if len(a.queue) == 0 {
		a.queue = nil // let the backing array go
	}
	return dst
}

// Requeue puts back at the head of the queue servers Next returned that
// the master could not take yet (too many checks pending).
func (a *Aggregator) Requeue(fs []Found) {
	if len(fs) == 0 {
		return
	}
	if a.queued == nil {
		a.queued = map[netip.AddrPort]struct{}{}
	}
	head := make([]Found, 0, len(fs)+len(a.queue))
	for _, f := range fs {
		if _, dup := a.queued[f.Addr]; !dup {
			a.queued[f.Addr] = struct{}{}
			head = append(head, f)
		}
	}
	a.queue = append(head, a.queue...)
}

// Queued returns the servers waiting to be verified.
func (a *Aggregator) Queued() int { return len(a.queue) }

// remapQueue renumbers the queue's sources after Reconfigure (from[i] is
// the old index of new source i), dropping the servers of sources gone.
func (a *Aggregator) remapQueue(from []int) {
	to := map[int]int{}
	for i, j := range from {
		if j >= 0 {
			to[j] = i
		}
	}
	kept := a.queue[:0]
	for _, f := range a.queue {
		if i, ok := to[f.Source]; ok {
			f.Source = i
			kept = append(kept, f)
		} else {
			delete(a.queued, f.Addr)
		}
	}
	a.queue = kept
}
