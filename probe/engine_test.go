package probe

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// answering is a fake network where every server answers every request
// after delay(addr).
func answering(delay func(netip.AddrPort) time.Duration, onSend func(packet)) *fakeConn {
	var conn *fakeConn
	conn = newFakeConn(func(p packet) {
		if onSend != nil {
			onSend(p)
		}
		kind, tok := echoRequest(p.b)
		conn.deliver(p.addr, fmt.Appendf(nil, "R%d %s ok", kind, tok), delay(p.addr))
	})
	return conn
}

func manyTargets(n int) []Target {
	out := make([]Target, n)
	for i := range out {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		out[i] = Target{netip.AddrPortFrom(a, 27960), echoDialect{}}
	}
	return out
}

func TestStrategy_ETWindowNeverExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		et, err := StrategyNamed("ET")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		inFlight, peak := 0, 0
		var conn *fakeConn
		conn = newFakeConn(func(p packet) {
			mu.Lock()
			inFlight++
			peak = max(peak, inFlight)
			mu.Unlock()
			kind, tok := echoRequest(p.b)
			// Delays from 10 to 400 ms, as the Internet from one place.
			d := time.Duration(10+int(p.addr.Addr().As4()[3])*13%391) * time.Millisecond
			time.AfterFunc(d, func() {
				mu.Lock()
				inFlight--
				mu.Unlock()
				conn.deliver(p.addr, fmt.Appendf(nil, "R%d %s ok", kind, tok), 0)
			})
		})
		res, c, _ := run(t, &et.Prober, conn, manyTargets(200)...)
		if peak != DefaultWindow {
			t.Errorf("peak in flight %d, want exactly the window %d", peak, DefaultWindow)
		}
		if c.PeakInFlight != DefaultWindow {
			t.Errorf("counted peak %d, want %d", c.PeakInFlight, DefaultWindow)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	})
}

func TestStrategy_Q4BurstsOf32ThenPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q4, _ := StrategyNamed("q4")
		start := time.Now()
		var times []time.Duration
		conn := answering(func(netip.AddrPort) time.Duration { return 5 * time.Millisecond },
			func(packet) { times = append(times, time.Since(start)) })
		run(t, &q4.Prober, conn, manyTargets(100)...)
		if len(times) != 100 {
			t.Fatalf("%d sends, want 100", len(times))
		}
		for i, at := range times {
			want := time.Duration(i/Q4Burst) * Q4Pause
			if at != want {
				t.Fatalf("send %d at %v, want %v (bursts of %d, %v apart)", i, at, want, Q4Burst, Q4Pause)
			}
		}
	})
}

func TestStrategy_QstatRTTFromFirstSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		qs, _ := StrategyNamed("qstat")
		s := &server{addr: srvA, answer: func(n, _ int, _ string) (string, time.Duration, bool) {
			return "ok", 80 * time.Millisecond, n == 2
		}}
		res, _, _ := run(t, &qs.Prober, network(s), Target{srvA, echoDialect{}})
		if want := DefaultTimeout + 80*time.Millisecond; res[0].RTT != want {
			t.Fatalf("qstat-like RTT %v, want %v (from the first send)", res[0].RTT, want)
		}
	})
}

func TestStrategyNamed_Unknown(t *testing.T) {
	if _, err := StrategyNamed("doom"); err == nil {
		t.Fatal("no error for an unknown strategy")
	}
}

func TestRun_PacingRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate = 1000 // probes per second
		start := time.Now()
		var times []time.Duration
		conn := answering(func(netip.AddrPort) time.Duration { return 50 * time.Millisecond },
			func(packet) { times = append(times, time.Since(start)) })
		p := &Prober{Interval: IntervalForRate(rate), Window: WindowForRate(rate, DefaultTimeout)}
		_, c, took := run(t, p, conn, manyTargets(500)...)
		for i, at := range times {
			if want := time.Duration(i) * time.Millisecond; at != want {
				t.Fatalf("send %d at %v, want %v", i, at, want)
			}
		}
		if took != 499*time.Millisecond+50*time.Millisecond {
			t.Errorf("took %v", took)
		}
		// 50 ms replies at 1 ms spacing: 50 or 51 in flight, never the window.
		if c.PeakInFlight > 51 {
			t.Errorf("peak in flight %d", c.PeakInFlight)
		}
	})
}

func TestRun_RetriesDoNotInflateRTT(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every server loses its first request; the retry is answered after
		// a delay of its own. The RTT must be that delay, not timeout+delay.
		var mu sync.Mutex
		seen := map[netip.AddrPort]bool{}
		var conn *fakeConn
		conn = newFakeConn(func(p packet) {
			mu.Lock()
			first := !seen[p.addr]
			seen[p.addr] = true
			mu.Unlock()
			if first {
				return
			}
			kind, tok := echoRequest(p.b)
			conn.deliver(p.addr, fmt.Appendf(nil, "R%d %s ok", kind, tok), time.Duration(p.addr.Addr().As4()[3])*time.Millisecond)
		})
		res, c, _ := run(t, &Prober{Timeout: 500 * time.Millisecond, Window: 64}, conn, manyTargets(50)...)
		for i, r := range res {
			if want := time.Duration(i) * time.Millisecond; r.RTT != max(want, time.Nanosecond) || r.Attempts != 2 {
				t.Fatalf("%v: RTT %v attempts %d, want %v after 2", r.Addr, r.RTT, r.Attempts, want)
			}
		}
		if c.Retries != 50 || c.Sent != 100 || c.Answered != 50 {
			t.Errorf("counts %+v", c)
		}
	})
}

func TestRun_HeapTimeoutsAtScale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 20,000 silent servers, 5,000 in flight: every one must time out
		// after exactly its attempts, and the run end on schedule.
		const n = 20000
		conn := newFakeConn(func(packet) {})
		p := &Prober{Timeout: 200 * time.Millisecond, Attempts: 2, Window: 5000}
		res, c, took := run(t, p, conn, manyTargets(n)...)
		for _, r := range res {
			if !errors.Is(r.Err, ErrTimeout) || r.Attempts != 2 {
				t.Fatalf("%v: err %v after %d", r.Addr, r.Err, r.Attempts)
			}
		}
		// Four rounds of 5,000, each 2 x 200 ms.
		if took != 1600*time.Millisecond {
			t.Errorf("took %v, want 1.6s", took)
		}
		if c.Sent != 2*n || c.Silent != n || c.Destinations != n || c.Targets != n || c.PeakInFlight != 5000 {
			t.Errorf("counts %+v", c)
		}
	})
}

func TestStream_ProbesBeforeTheListEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Targets arrive in two packets' worth, 500 ms apart; the first
		// probes must go out before the second packet's targets arrive.
		start := time.Now()
		var firstSend time.Duration = -1
		conn := answering(func(netip.AddrPort) time.Duration { return 20 * time.Millisecond },
			func(packet) {
				if firstSend < 0 {
					firstSend = time.Since(start)
				}
			})
		in := make(chan Target)
		targets := manyTargets(40)
		go func() {
			defer close(in)
			for i, tg := range targets {
				if i == 20 {
					time.Sleep(500 * time.Millisecond) // bubble time
				}
				in <- tg
			}
		}()
		var got []Result
		c, err := (&Prober{}).Stream(t.Context(), conn, in, func(i int, r Result) {
			if r.Addr != targets[i].Addr {
				t.Errorf("result %d for %v, want %v", i, r.Addr, targets[i].Addr)
			}
			got = append(got, r)
		})
		if err != nil || len(got) != 40 || c.Answered != 40 {
			t.Fatalf("err %v, %d results, counts %+v", err, len(got), c)
		}
		if firstSend != 0 {
			t.Errorf("first probe at %v, want 0 (before the rest of the list, at 500ms)", firstSend)
		}
	})
}

func TestStream_TokensExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// srvA answers twice, the second copy 10 s later, long after its
		// token expired: unknown, not late, and the token map is empty.
		var conn *fakeConn
		conn = newFakeConn(func(p packet) {
			kind, tok := echoRequest(p.b)
			if p.addr == srvA {
				conn.deliver(p.addr, fmt.Appendf(nil, "R%d %s ok", kind, tok), time.Millisecond)
				conn.deliver(p.addr, fmt.Appendf(nil, "R%d %s again", kind, tok), 10*time.Second)
			}
		})
		in := make(chan Target, 2)
		in <- Target{srvA, echoDialect{}}
		go func() {
			time.Sleep(9 * time.Second)
			in <- Target{srvB, echoDialect{}} // keeps the run going; never answers
			close(in)
		}()
		p := &Prober{Timeout: time.Second, Attempts: 3}
		c, err := p.Stream(t.Context(), conn, in, func(int, Result) {})
		if err != nil {
			t.Fatal(err)
		}
		if c.Unknown != 1 || c.Late != 0 || c.Expired < 1 {
			t.Fatalf("counts %+v; want the 10 s copy unknown after its token expired", c)
		}
	})
}

func TestSession_TokensAreForgotten(t *testing.T) {
	s := newSession((&Prober{Timeout: time.Second, Attempts: 1}).settings())
	s.add(Target{srvA, echoDialect{}})
	now := time.Unix(1000, 0)
	sends := s.poll(now)
	s.wrote(sends[0], now, nil)
	s.receive(now.Add(time.Millisecond), srvA, fmt.Appendf(nil, "R0 %016x ok", sends[0].tok))
	life := s.tokenLifetime()
	s.poll(now.Add(life - time.Nanosecond))
	if len(s.byTok) != 1 {
		t.Fatalf("token gone %v before its lifetime", time.Nanosecond)
	}
	s.poll(now.Add(life))
	if len(s.byTok) != 0 || len(s.tokens) != 0 || s.counts.Expired != 1 {
		t.Fatalf("token kept at its lifetime: %d tokens, counts %+v", len(s.byTok), s.counts)
	}
}

func TestRateForBandwidth(t *testing.T) {
	// The seed's 43-byte getinfo: 71 bytes with headers. 568 kbit/s is
	// 1,000 of them a second.
	if got := RateForBandwidth(568_000, 43); got != 1000 {
		t.Errorf("RateForBandwidth = %v, want 1000", got)
	}
	if got := IntervalForRate(1000); got != time.Millisecond {
		t.Errorf("IntervalForRate(1000) = %v", got)
	}
	if IntervalForRate(0) != 0 || RateForBandwidth(-1, 43) != 0 {
		t.Error("non-positive rate or bandwidth must mean no pacing")
	}
	// getinfo with scout's 11-character challenge.
	if got := RequestSize(Q3Info); got != len("\xff\xff\xff\xffgetinfo 1ITGmfJN2wC") {
		t.Errorf("RequestSize(Q3Info) = %d", got)
	}
	if got := WindowForRate(1000, time.Second); got != 1000 {
		t.Errorf("WindowForRate = %d", got)
	}
}

func TestStampAt(t *testing.T) {
	now := time.Now()
	k := now.Round(0).Add(-300 * time.Microsecond) // wall clock only, as the kernel's
	at, lag := stampAt(now, k)
	if lag != 300*time.Microsecond || now.Sub(at) != lag {
		t.Fatalf("lag %v, at %v before now", lag, now.Sub(at))
	}
	if _, lag := stampAt(now, k.Add(time.Hour)); lag != -1 {
		t.Fatalf("a stamp from the future was used: lag %v", lag)
	}
}

func TestBroadcast_EveryAnswerIsAServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bcast := netip.MustParseAddrPort("192.0.2.255:27960")
		lan := []netip.AddrPort{netip.MustParseAddrPort("192.0.2.7:27960"), netip.MustParseAddrPort("192.0.2.9:27960")}
		var conn *fakeConn
		sends := 0
		conn = newFakeConn(func(p packet) {
			sends++
			kind, tok := echoRequest(p.b)
			if p.addr != bcast {
				return
			}
			for i, a := range lan {
				conn.deliver(a, fmt.Appendf(nil, "R%d %s hi", kind, tok), time.Duration(i+1)*time.Millisecond)
			}
			conn.deliver(lan[0], fmt.Appendf(nil, "R%d %s dup", kind, tok), 5*time.Millisecond)
			conn.deliver(stranger, []byte("R0 0000000000000001 forged"), 0)
		})
		var found []Result
		p := &Prober{Timeout: 800 * time.Millisecond, Attempts: 1}
		start := time.Now()
		c, err := p.Broadcast(t.Context(), conn, []Target{{bcast, echoDialect{}}, {srvB, echoDialect{}}},
			func(r Result) { found = append(found, r) })
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 2 || found[0].Addr != lan[0] || found[1].Addr != lan[1] || found[1].RTT != 2*time.Millisecond {
			t.Fatalf("found %+v", found)
		}
		if took := time.Since(start); took != 800*time.Millisecond {
			t.Errorf("collected for %v, want the 800ms window", took)
		}
		if sends != 2 || c.Late != 1 || c.Unknown != 1 {
			t.Errorf("sends %d, counts %+v", sends, c)
		}
	})
}
