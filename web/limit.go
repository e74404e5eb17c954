package web

import (
	"math"
	"net/netip"
	"sync"
	"time"
)

// Per-client request limits: a token bucket per client, keyed by its IPv4
// address or its IPv6 /64 (one host's or one home's worth of addresses, as
// the master's UDP limits key their sources). A page load costs about four
// requests and a refresh two, a tracker polling every second one; a client
// may make DefaultBurst requests at once and DefaultRate per second after.
// Beyond, 429 Too Many Requests with Retry-After (whole seconds until the
// next token) and a JSON error.
const (
	DefaultRate  = 10
	DefaultBurst = 60
	// DefaultMaxClients bounds the clients tracked. When it is reached,
	// clients whose bucket has refilled are forgotten (at most once a
	// second); if none has, new clients share one bucket until some
	// have, so a flood of many addresses is limited as one client.
	DefaultMaxClients = 65536
)

// The API's limit over all clients: DefaultMaxRate requests a second
// after a burst of as many. Beyond it, 503 with Retry-After and a JSON
// error ("overloaded"). It bounds the CPU the HTTP side can take from the
// master's UDP answers (each request costs the master 25-40 us of CPU:
// BENCHMARKS.md, "Web API"), whatever the number of clients.
const DefaultMaxRate = 2000

type bucket struct {
	tokens float64
	last   time.Time
}

// limiter is the per-client token bucket. mu guards everything.
type limiter struct {
	rate, burst float64
	max         int
	mu          sync.Mutex
	m           map[netip.Prefix]*bucket
	shared      bucket
	swept       time.Time
}

func newLimiter(rate float64, burst, max int) *limiter {
	return &limiter{rate: rate, burst: float64(burst), max: max, m: map[netip.Prefix]*bucket{}}
}

// clientKey is a's /32 (IPv4, v4-mapped included) or /64 (IPv6).
func clientKey(a netip.Addr) netip.Prefix {
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// allow takes a token from a's bucket at now, or returns how long until
// one is there.
func (l *limiter) allow(now time.Time, a netip.Addr) (bool, time.Duration) {
	k := clientKey(a)
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[k]
	if b == nil {
		if len(l.m) >= l.max && now.Sub(l.swept) >= time.Second {
			l.swept = now
			for k, b := range l.m {
				if l.refill(now, b) >= l.burst {
					delete(l.m, k)
				}
			}
		}
		if len(l.m) >= l.max {
			b = &l.shared
		} else {
			b = &bucket{tokens: l.burst, last: now}
			l.m[k] = b
		}
	}
	b.tokens, b.last = l.refill(now, b), now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	return false, wait
}

// globalLimiter is one token bucket for every client. mu guards b.
type globalLimiter struct {
	rate, burst float64
	mu          sync.Mutex
	b           bucket
}

func (g *globalLimiter) allow(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.burst
	if !g.b.last.IsZero() {
		t = math.Min(g.burst, g.b.tokens+max(now.Sub(g.b.last).Seconds(), 0)*g.rate)
	}
	g.b.last = now
	if t < 1 {
		g.b.tokens = t
		return false
	}
	g.b.tokens = t - 1
	return true
}

func (l *limiter) refill(now time.Time, b *bucket) float64 {
	if b.last.IsZero() {
		return l.burst
	}
	dt := max(now.Sub(b.last).Seconds(), 0)
	return math.Min(l.burst, b.tokens+dt*l.rate)
}
