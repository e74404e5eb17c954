package world

import (
	"net/netip"
	"time"
)

// Rate limits, after ioquake3's sv_main.c. SVC_Info, SVC_Status and
// SV_GetChallenge each first call SVC_RateLimitAddress(from, 10, 1000) ("Prevent
// using getstatus as an amplifier": at most a burst of 10 queries per source
// address, one more each second) and then SVC_RateLimit(&outboundLeakyBucket,
// 10, 100) ("prevent excess outbound bandwidth usage when being flooded
// inbound": 10 per 100 ms for the whole server). The address is compared
// without its port. The emulator applies the same limits to every game's
// queries.
const (
	SourceBurst    = 10
	SourcePeriod   = 1000 * time.Millisecond
	OutboundBurst  = 10
	OutboundPeriod = 100 * time.Millisecond
	// MaxSourceBuckets bounds the per-source buckets one server keeps.
	// ioquake3 keeps MAX_BUCKETS (16384) for the whole server and treats a
	// source it has no room for as over the limit; so does this, per
	// server, after reclaiming buckets idle for burst*period.
	MaxSourceBuckets = 1024
)

// bucket is ioquake3's leakyBucket_t: a count of recent requests that leaks
// one per period.
type bucket struct {
	last  time.Time
	burst int
}

// limited is SVC_RateLimit: it reports whether one more request now exceeds
// burst per period, and counts the request if not.
func (b *bucket) limited(now time.Time, burst int, period time.Duration) bool {
	interval := now.Sub(b.last)
	expired := int(interval / period)
	if b.last.IsZero() || interval < 0 || expired > b.burst {
		b.burst = 0
		b.last = now
	} else {
		b.burst -= expired
		b.last = now.Add(-(interval % period))
	}
	if b.burst < burst {
		b.burst++
		return false
	}
	return true
}

// limiter holds one server's buckets. Not safe for concurrent use: the
// emulator's reader goroutine owns every limiter.
type limiter struct {
	sources  map[netip.Addr]*bucket
	outbound bucket
}

// allow reports whether a query from addr may be answered now, applying the
// per-source limit and then the outbound one, as ioquake3 does.
func (l *limiter) allow(now time.Time, addr netip.Addr) bool {
	if l.sources == nil {
		l.sources = make(map[netip.Addr]*bucket)
	}
	b := l.sources[addr]
	if b == nil {
		if len(l.sources) >= MaxSourceBuckets {
			l.reclaim(now)
		}
		if len(l.sources) >= MaxSourceBuckets {
			return false
		}
		b = &bucket{}
		l.sources[addr] = b
	}
	if b.limited(now, SourceBurst, SourcePeriod) {
		return false
	}
	return !l.outbound.limited(now, OutboundBurst, OutboundPeriod)
}

// reclaim drops buckets idle for longer than burst*period, when they have
// leaked empty.
func (l *limiter) reclaim(now time.Time) {
	for a, b := range l.sources {
		if d := now.Sub(b.last); d > SourceBurst*SourcePeriod || d < 0 {
			delete(l.sources, a)
		}
	}
}
