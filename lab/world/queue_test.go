package world

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"
)

// TestReleaser_OnTime runs the releaser under synctest: every datagram
// leaves exactly at its due time, in due order, and a datagram that becomes
// the earliest while the releaser waits for a later one is not held back.
func TestReleaser_OnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		q := newQueue()
		type sent struct {
			at time.Time
			b  string
		}
		got := make(chan sent, 16)
		r := &releaser{q: q, mode: WaitTimer, late: &histogram{}, send: func(p outPacket) {
			got <- sent{time.Now(), string(p.b)}
		}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.run(ctx); close(done) }()

		to := netip.MustParseAddrPort("127.0.0.1:1")
		q.push(outPacket{due: start.Add(300 * time.Millisecond), to: to, b: []byte("c")})
		q.push(outPacket{due: start.Add(100 * time.Millisecond), to: to, b: []byte("a")})
		q.push(outPacket{due: start.Add(300 * time.Millisecond), to: to, b: []byte("d")}) // same time: push order
		q.push(outPacket{due: start.Add(200 * time.Millisecond), to: to, b: []byte("b")})

		want := []struct {
			after time.Duration
			b     string
		}{{100 * time.Millisecond, "a"}, {200 * time.Millisecond, "b"}, {300 * time.Millisecond, "c"}, {300 * time.Millisecond, "d"}}
		for i, w := range want {
			s := <-got
			if s.b != w.b || s.at.Sub(start) != w.after {
				t.Errorf("datagram %d: %q at %v, want %q at %v", i, s.b, s.at.Sub(start), w.b, w.after)
			}
			if i == 0 {
				// Waiting for b (due at 200 ms), an earlier one arrives.
				q.push(outPacket{due: time.Now().Add(10 * time.Millisecond), to: to, b: []byte("early")})
				if s := <-got; s.b != "early" || s.at.Sub(start) != 110*time.Millisecond {
					t.Errorf("early datagram: %q at %v, want at 110ms", s.b, s.at.Sub(start))
				}
			}
		}
		if p99 := r.late.quantile(0.99); p99 != HistogramBucket {
			t.Errorf("lateness p99 %v under fake time, want the first bucket", p99)
		}
		cancel()
		<-done
	})
}

// TestReleaser_Drains checks that a draining releaser sends what is queued
// and then returns.
func TestReleaser_Drains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue()
		n := 0
		r := &releaser{q: q, mode: WaitTimer, late: &histogram{}, send: func(outPacket) { n++ }}
		for i := range 5 {
			q.push(outPacket{due: time.Now().Add(time.Duration(i) * time.Second)})
		}
		r.draining.Store(true)
		r.run(t.Context())
		if n != 5 {
			t.Errorf("sent %d of 5 before returning", n)
		}
	})
}

func TestShape(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	l := Link{RTT: Duration(100 * time.Millisecond), Jitter: Duration(10 * time.Millisecond), Loss: 0.1}
	const n = 100_000
	lost := 0
	for range n {
		due, isLost := shape(l, rng, at, false)
		if isLost {
			lost++
			continue
		}
		if d := due.Sub(at); d < 100*time.Millisecond || d >= 110*time.Millisecond {
			t.Fatalf("delay %v outside [RTT, RTT+jitter)", d)
		}
	}
	if lost < n*9/100 || lost > n*11/100 {
		t.Errorf("%d of %d lost, want about 10%%", lost, n)
	}
	// Heartbeats: one way, never lost.
	for range 1000 {
		due, isLost := shape(Link{RTT: Duration(100 * time.Millisecond), Loss: 1}, rng, at, true)
		if isLost || due.Sub(at) != 50*time.Millisecond {
			t.Fatalf("one-way: %v lost=%v, want 50ms and never lost", due.Sub(at), isLost)
		}
	}
	if _, isLost := shape(Link{Loss: 1}, rng, at, false); !isLost {
		t.Error("loss 1 delivered a reply")
	}
}

func TestHistogramQuantile(t *testing.T) {
	var h histogram
	if h.quantile(0.5) != 0 {
		t.Error("empty histogram")
	}
	for i := range 100 {
		h.add(time.Duration(i) * time.Microsecond) // 0..99 us
	}
	if q := h.quantile(0.5); q != 50*time.Microsecond {
		t.Errorf("p50 %v, want the bucket edge 50us", q)
	}
	if q := h.quantile(0.99); q != 100*time.Microsecond {
		t.Errorf("p99 %v", q)
	}
	h.add(time.Hour)
	if q := h.quantile(1); q < HistogramMax {
		t.Errorf("max %v, want overflow", q)
	}
}

// TestHistogram_Overflow checks that a quantile beyond HistogramMax is the
// longest lateness seen, not math.MaxInt64 (printed once by scout-lab world as
// 2562047h47m16.854775807s).
func TestHistogram_Overflow(t *testing.T) {
	var h histogram
	if got := h.quantile(0.999); got != 0 || h.count() != 0 {
		t.Errorf("empty: %v of %d, want 0", got, h.count())
	}
	for range 998 {
		h.add(5 * time.Microsecond)
	}
	h.add(150 * time.Millisecond)
	h.add(HistogramMax + 3*time.Millisecond)
	if got := h.quantile(0.5); got != HistogramBucket {
		t.Errorf("p50 %v, want %v", got, HistogramBucket)
	}
	if got := h.quantile(0.999); got != 150*time.Millisecond {
		t.Errorf("p99.9 %v, want the longest, 150ms", got)
	}
	if h.count() != 1000 {
		t.Errorf("count %d, want 1000", h.count())
	}
}
