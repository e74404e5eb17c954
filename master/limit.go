package master

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"time"
)

// Flood protection defaults. dpmaster's are throttle 5, decay 3 s, 512
// client records, and the protection is off unless -f is given; scout's
// master turns it on by default (see Config).
const (
	// DefaultThrottle is dpmaster's --fp-throttle: a source may send
	// Throttle-1 requests in a row, then one per DecayTime.
	DefaultThrottle = 5
	// DefaultDecayTime is dpmaster's --fp-decay-time.
	DefaultDecayTime = 3 * time.Second
	// DefaultMaxSources is the size of the per-source table (dpmaster's
	// --max-clients, 512 there). 53 bytes of heap per source tracked
	// (BenchmarkSourceLimiter_BytesPerSource); a source stays tracked
	// until the table is full and it has decayed.
	DefaultMaxSources = 16384
)

// SourceLimiter is dpmaster's per-source flood protection as an exact,
// pure structure. Each source (an IPv4 address, or an IPv6 /64) has a
// counter that goes up by one per accepted request and down by one every
// DecayTime; a request is refused when it would bring the counter to
// Throttle. So with throttle 5 and decay 3 s, 4 requests in a row pass, the
// 5th is refused, and one more passes every 3 s.
//
// It is kept as a GCRA "theoretical arrival time" per source: one
// timestamp, no float, exact to the nanosecond. Refused requests do not
// count (as in dpmaster). When the table is full, fully decayed sources
// are evicted; if none is, new sources are refused with
// ReasonSourceTableFull (failing closed: the master answers less rather
// than become an amplifier).
//
// mu guards the fields below it; methods are safe for concurrent use.
type SourceLimiter struct {
	decay     time.Duration
	tolerance time.Duration // (throttle-2)*decay: the backlog allowed before the request
	max       int

	mu        sync.Mutex
	tat       map[addrKey]stamp // 16-byte key and 8-byte value: a 24-byte map slot, where a netip.Prefix and a time.Time take 56
	nextSweep stamp             // no decayed entry can exist before this time
}

// NewSourceLimiter returns a limiter with dpmaster's semantics. throttle
// must be at least 2 (dpmaster's own bound), decay positive, max positive.
func NewSourceLimiter(throttle int, decay time.Duration, max int) (*SourceLimiter, error) {
	if throttle < 2 || decay <= 0 || max <= 0 {
		return nil, fmt.Errorf("master: flood protection throttle %d (>= 2), decay %v (> 0), table %d (> 0)", throttle, decay, max)
	}
	return &SourceLimiter{
		decay:     decay,
		tolerance: time.Duration(throttle-2) * decay,
		max:       max,
		tat:       make(map[addrKey]stamp),
	}, nil
}

// Allow decides whether a request from src at now may be answered, and
// counts it if so.
func (l *SourceLimiter) Allow(now time.Time, src netip.AddrPort) Reason {
	k, n := addrKeyOf(src.Addr()), stamp(now.UnixNano())
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.tat[k]
	if !ok {
		if len(l.tat) >= l.max && !l.sweepLocked(n) {
			return ReasonSourceTableFull
		}
		t = n
	}
	t = max(t, n)
	// t is when the backlog drains; the request is allowed if the backlog
	// before it is at most throttle-2 decays (so after it, throttle-1).
	if time.Duration(t-n) > l.tolerance {
		return ReasonRateLimited
	}
	l.tat[k] = t + stamp(l.decay)
	return OK
}

// sweepLocked evicts fully decayed sources and reports whether there is
// room now. A sweep that frees nothing records when the earliest entry will
// decay, so a flood of new sources costs one sweep per decay, not one per
// packet.
func (l *SourceLimiter) sweepLocked(now stamp) bool {
	if now < l.nextSweep {
		return false
	}
	earliest := stamp(math.MaxInt64)
	for k, t := range l.tat {
		if t <= now {
			delete(l.tat, k)
		} else {
			earliest = min(earliest, t)
		}
	}
	if len(l.tat) < l.max {
		return true
	}
	l.nextSweep = earliest
	return false
}

// SetLimits changes the throttle, decay and table size while the limiter
// is in use (a reload), with NewSourceLimiter's bounds. Sources already
// tracked keep their backlog, now draining at the new decay.
func (l *SourceLimiter) SetLimits(throttle int, decay time.Duration, max int) error {
	if throttle < 2 || decay <= 0 || max <= 0 {
		return fmt.Errorf("master: flood protection throttle %d (>= 2), decay %v (> 0), table %d (> 0)", throttle, decay, max)
	}
	l.mu.Lock()
	l.decay, l.tolerance, l.max = decay, time.Duration(throttle-2)*decay, max
	l.mu.Unlock()
	return nil
}

// Len returns the number of sources tracked.
func (l *SourceLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tat)
}

// Outbound budget defaults.
const (
	// DefaultOutboundBytesPerSecond is the global outbound budget for
	// answers to queries: 12.5 MB/s (100 Mbit/s), about 350 full answers of
	// 5,000 servers per second. Raise it for a bigger pipe; it exists so
	// that a spoofed query flood cannot turn the master into an amplifier
	// beyond this rate.
	DefaultOutboundBytesPerSecond = 12_500_000
	// DefaultOutboundBurst is the budget's bucket size in bytes.
	DefaultOutboundBurst = 1 << 20
)

// ByteBudget is a global token bucket over bytes, kept as a GCRA
// timestamp: each byte costs 1s/rate, and the bucket holds burst bytes.
// A reservation is all or nothing.
//
// mu guards the fields below it; methods are safe for concurrent use.
type ByteBudget struct {
	perByte   float64 // nanoseconds per byte
	tolerance time.Duration
	burst     int

	mu  sync.Mutex
	tat int64 // Unix nanoseconds
}

// NewByteBudget returns a budget of rate bytes per second with a bucket
// of burst bytes. Both must be positive.
func NewByteBudget(rate, burst int) (*ByteBudget, error) {
	if rate <= 0 || burst <= 0 {
		return nil, fmt.Errorf("master: outbound budget %d B/s, burst %d B: both must be positive", rate, burst)
	}
	b := &ByteBudget{perByte: 1e9 / float64(rate), burst: burst}
	b.tolerance = b.cost(burst)
	return b, nil
}

// SetLimits changes the rate and the burst while the budget is in use (a
// reload); both must be positive.
func (b *ByteBudget) SetLimits(rate, burst int) error {
	if rate <= 0 || burst <= 0 {
		return fmt.Errorf("master: outbound budget %d B/s, burst %d B: both must be positive", rate, burst)
	}
	b.mu.Lock()
	b.perByte, b.burst = 1e9/float64(rate), burst
	b.tolerance = b.cost(burst)
	b.mu.Unlock()
	return nil
}

func (b *ByteBudget) cost(n int) time.Duration {
	return time.Duration(float64(n)*b.perByte + 0.5)
}

// Reserve takes n bytes from the budget at now if they are all there:
// OK, ReasonBudgetExhausted, or ReasonReplyTooLarge when n exceeds the
// burst (it could never pass).
func (b *ByteBudget) Reserve(now time.Time, n int) Reason {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.burst {
		return ReasonReplyTooLarge
	}
	c := b.cost(n)
	if !take(&b.tat, now.UnixNano(), int64(c), int64(b.tolerance)) {
		return ReasonBudgetExhausted
	}
	return OK
}

// Charge takes n bytes from the budget at now whatever is left in it:
// the master's own requests (checks of servers, registrations forwarded
// upstream, queries to upstream masters, landmark pings) are small and
// bounded by what drives them, and the master's work depends on them, so
// they count against the lists' share but are never refused; a large
// list paced on the budget does not hold up the checks of the servers
// that heartbeat meanwhile.
func (b *ByteBudget) Charge(now time.Time, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tat = max(b.tat, now.UnixNano()) + int64(b.cost(n))
}

// The global budget's share for replies to addresses that have not proven
// their return path (no cookie): they may not take the last
// BudgetReserveShare of its burst, and a paced one may not be scheduled
// more than DefaultBudgetLegacyWait ahead. So a spoofed flood spread over
// the whole Internet, which no network's budget sees, cannot take the
// global budget from scout's clients: what it leaves in the bucket is
// theirs first.
const (
	BudgetReserveShare      = 4 // a quarter
	DefaultBudgetLegacyWait = time.Second
)

// ReservePaced takes n bytes from the budget at now for a reply that may
// be paced: one that fits the burst goes at once or not at all; a larger
// one is taken if its last byte can go within wait (0: never), and it
// returns the budget's pace line (Pace). A reply to an address without a
// cookie (legacy) leaves BudgetReserveShare of the burst to the others
// (the master's own probes, and replies to addresses with a cookie).
func (b *ByteBudget) ReservePaced(now time.Time, n int, legacy bool, wait time.Duration) (paceLine, Reason) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tol := int64(b.tolerance)
	if legacy {
		tol -= tol / BudgetReserveShare
	}
	t := now.UnixNano()
	c := int64(b.cost(n))
	s := max(b.tat, t)
	end := s + c - tol
	switch {
	case c > tol && wait <= 0:
		return paceLine{}, ReasonReplyTooLarge
	case c > tol && end > t+int64(wait), c <= tol && end > t:
		return paceLine{}, ReasonBudgetExhausted
	}
	b.tat = s + c
	return paceLine{start: s, per: b.perByte, tol: tol}, OK
}

// sourceKey is the unit of per-address accounting: an IPv4 address, or
// the /64 of an IPv6 address (one subscriber's prefix).
func sourceKey(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}
