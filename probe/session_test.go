package probe

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

var (
	srvA = netip.MustParseAddrPort("192.0.2.1:27960")
	srvB = netip.MustParseAddrPort("192.0.2.2:27960")
	// stranger is no target of any test.
	stranger = netip.MustParseAddrPort("198.51.100.9:27960")
)

// server is a scripted fake server: answer decides, for the n-th request
// (from 1) it receives, the payload and delay of its reply, or no reply.
type server struct {
	conn   *fakeConn
	addr   netip.AddrPort
	got    int
	answer func(n, kind int, tok string) (payload string, delay time.Duration, ok bool)
}

// network routes writes to scripted servers by address.
func network(servers ...*server) *fakeConn {
	byAddr := map[netip.AddrPort]*server{}
	c := newFakeConn(func(p packet) {
		s := byAddr[p.addr]
		if s == nil {
			return // the void
		}
		s.got++
		kind, tok := echoRequest(p.b)
		if payload, delay, ok := s.answer(s.got, kind, tok); ok {
			s.conn.deliver(s.addr, fmt.Appendf(nil, "R%d %s %s", kind, tok, payload), delay)
		}
	})
	for _, s := range servers {
		s.conn = c
		byAddr[s.addr] = s
	}
	return c
}

func run(t *testing.T, p *Prober, conn Conn, targets ...Target) ([]Result, Counts, time.Duration) {
	t.Helper()
	res := make([]Result, len(targets))
	calls := 0
	start := time.Now()
	counts, err := p.Run(t.Context(), conn, targets, func(i int, r Result) { res[i] = r; calls++ })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if calls != len(targets) {
		t.Fatalf("%d results for %d targets", calls, len(targets))
	}
	return res, counts, time.Since(start)
}

func TestRun_RTTIsFromTheAnsweredSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The first request is lost; the retry is answered after 80 ms.
		s := &server{addr: srvA, answer: func(n, _ int, _ string) (string, time.Duration, bool) {
			return "ok", 80 * time.Millisecond, n == 2
		}}
		p := &Prober{Timeout: time.Second}
		res, c, took := run(t, p, network(s), Target{srvA, echoDialect{}})
		r := res[0]
		if r.Err != nil || r.RTT != 80*time.Millisecond || r.Attempts != 2 {
			t.Fatalf("got RTT %v attempts %d err %v; want 80ms, 2, nil (the retry's RTT, not 1.08s)", r.RTT, r.Attempts, r.Err)
		}
		if took != 1080*time.Millisecond {
			t.Errorf("run took %v, want 1.08s", took)
		}
		if c.Sent != 2 || c.Retries != 1 || c.Matched != 1 || c.Destinations != 1 {
			t.Errorf("counts %+v", c)
		}
	})
}

func TestRun_LateReplyMatchesItsOwnSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every request is answered after 1.5 s: the reply to the first
		// send arrives 0.5 s after the retry went out, and must be
		// credited to the first send (RTT 1.5 s), not to the retry
		// (0.5 s). The reply to the retry then comes late.
		s := &server{addr: srvA, answer: func(int, int, string) (string, time.Duration, bool) {
			return "ok", 1500 * time.Millisecond, true
		}}
		p := &Prober{Timeout: time.Second}
		conn := network(s)
		res, c, _ := run(t, p, conn, Target{srvA, echoDialect{}})
		if r := res[0]; r.Err != nil || r.RTT != 1500*time.Millisecond || r.Attempts != 2 {
			t.Fatalf("got RTT %v attempts %d err %v; want 1.5s from the first send, 2 attempts", r.RTT, r.Attempts, r.Err)
		}
		if c.Matched != 1 || c.Late != 0 {
			t.Fatalf("counts %+v", c)
		}
		// The retry's reply arrives after Run returned; a second run on the
		// same conn sees it as unknown: tokens never outlive their run.
		time.Sleep(2 * time.Second) // bubble time: instant
		c2, err := p.Run(t.Context(), conn, []Target{{srvB, echoDialect{}}}, func(int, Result) {})
		if err != nil || c2.Unknown != 1 {
			t.Fatalf("second run: %v, counts %+v; want the stale reply counted unknown", err, c2)
		}
	})
}

func TestRun_LateReplyAfterAnswerIsCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Two steps; the first send of step 0 is answered after 1.2 s, its
		// retry after 0.1 s (at 1.1 s). Step 1's first send (the server's
		// 2nd request) is answered at 1.5 s, so the run is still going
		// when step 0's first reply arrives at 1.2 s: late.
		s := &server{addr: srvA, answer: func(n, kind int, _ string) (string, time.Duration, bool) {
			switch {
			case kind == 1:
				return "ok", 1500 * time.Millisecond, n == 2
			case n == 1:
				return "ok", 1200 * time.Millisecond, true
			}
			return "ok", 100 * time.Millisecond, true
		}}
		res, c, _ := run(t, &Prober{Timeout: time.Second}, network(s), Target{srvA, echoDialect{steps: 2}})
		if r := res[0]; r.Err != nil || r.RTT != 100*time.Millisecond {
			t.Fatalf("got %+v", r)
		}
		if c.Late != 1 || c.Matched != 2 || c.Sent != 4 {
			t.Fatalf("counts %+v; want 1 late, 2 matched, 4 sent", c)
		}
	})
}

func TestRun_TimeoutAfterAllAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server{addr: srvA, answer: func(int, int, string) (string, time.Duration, bool) { return "", 0, false }}
		res, c, took := run(t, &Prober{Timeout: 500 * time.Millisecond, Attempts: 4}, network(s), Target{srvA, echoDialect{}})
		r := res[0]
		if !errors.Is(r.Err, ErrTimeout) || r.Attempts != 4 || r.Answered() {
			t.Fatalf("got err %v attempts %d; want ErrTimeout after 4", r.Err, r.Attempts)
		}
		if took != 2*time.Second {
			t.Errorf("gave up after %v, want 4 x 500ms", took)
		}
		if s.got != 4 || c.Sent != 4 || c.Retries != 3 {
			t.Errorf("server got %d, counts %+v", s.got, c)
		}
	})
}

func TestRun_UnknownAndStrayRepliesAreDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var conn *fakeConn
		s := &server{addr: srvA, answer: func(n, _ int, tok string) (string, time.Duration, bool) {
			// Before the real reply: a guessed token from the target, and
			// a reply from a stranger.
			conn.deliver(srvA, []byte("R0 00000000deadbeef forged"), 0)
			conn.deliver(stranger, []byte("R0 "+tok+" spoof"), 0)
			conn.deliver(stranger, []byte("garbage"), 0)
			return "real", 10 * time.Millisecond, true
		}}
		conn = network(s)
		res, c, _ := run(t, &Prober{}, conn, Target{srvA, echoDialect{}})
		if v, _ := res[0].Info.Get("k0"); v != "real" || res[0].Err != nil {
			t.Fatalf("got %+v; want the real reply", res[0])
		}
		// The stranger carried our token: misdirected, not accepted.
		if c.Unknown != 2 || c.Misdirected != 1 || c.Matched != 1 || c.Received != 4 {
			t.Fatalf("counts %+v; want 2 unknown, 1 misdirected, 1 matched of 4", c)
		}
	})
}

func TestRun_MisdirectedReplyIsTheReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var conn *fakeConn
		s := &server{addr: srvA, answer: func(_, _ int, tok string) (string, time.Duration, bool) {
			conn.deliver(stranger, []byte("R0 "+tok+" hi"), time.Millisecond)
			return "", 0, false
		}}
		conn = network(s)
		res, _, _ := run(t, &Prober{Attempts: 1}, conn, Target{srvA, echoDialect{}})
		if !errors.Is(res[0].Err, ErrMisdirected) {
			t.Fatalf("err = %v, want ErrMisdirected naming %v", res[0].Err, stranger)
		}
	})
}

func TestRun_GarbledReplyIsTheReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var conn *fakeConn
		s := &server{addr: srvA, answer: func(int, int, string) (string, time.Duration, bool) {
			conn.deliver(srvA, []byte("\xff\xff\xff\xffprint\nbanned\n"), time.Millisecond)
			return "", 0, false
		}}
		conn = network(s)
		res, c, _ := run(t, &Prober{Attempts: 2}, conn, Target{srvA, echoDialect{}})
		if !errors.Is(res[0].Err, ErrGarbled) || !errors.Is(res[0].Err, res[0].Err) {
			t.Fatalf("err = %v, want ErrGarbled", res[0].Err)
		}
		if c.Garbled != 2 {
			t.Fatalf("counts %+v", c)
		}
	})
}

func TestRun_WindowBoundsRequestsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, window = 50, 7
		var mu sync.Mutex // the handler and the AfterFunc goroutines count
		inFlight, peak := 0, 0
		var conn *fakeConn
		conn = newFakeConn(func(p packet) {
			mu.Lock()
			defer mu.Unlock()
			inFlight++
			peak = max(peak, inFlight)
			kind, tok := echoRequest(p.b)
			time.AfterFunc(time.Duration(p.addr.Port()%13+1)*time.Millisecond, func() {
				mu.Lock()
				inFlight--
				mu.Unlock()
				conn.deliver(p.addr, fmt.Appendf(nil, "R%d %s ok", kind, tok), 0)
			})
		})
		var targets []Target
		for i := range n {
			targets = append(targets, Target{netip.AddrPortFrom(srvA.Addr(), uint16(1000+i)), echoDialect{steps: 2}})
		}
		res, c, _ := run(t, &Prober{Window: window}, conn, targets...)
		// Replies due at the same instant race to the reader, so the
		// peak is the window or one less (a server's two requests).
		if peak > window || peak < window-1 {
			t.Errorf("peak in flight %d, want the window, %d", peak, window)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("%v: %v", r.Addr, r.Err)
			}
		}
		if c.Sent != 2*n || c.Destinations != n {
			t.Errorf("counts %+v", c)
		}
	})
}

func TestRun_IntervalPacesSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var times []time.Duration
		start := time.Now()
		var conn *fakeConn
		conn = newFakeConn(func(p packet) {
			times = append(times, time.Since(start))
			kind, tok := echoRequest(p.b)
			conn.deliver(p.addr, fmt.Appendf(nil, "R%d %s ok", kind, tok), time.Millisecond)
		})
		var targets []Target
		for i := range 4 {
			targets = append(targets, Target{netip.AddrPortFrom(srvA.Addr(), uint16(1000+i)), echoDialect{}})
		}
		run(t, &Prober{Interval: 10 * time.Millisecond}, conn, targets...)
		want := []time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}
		if fmt.Sprint(times) != fmt.Sprint(want) {
			t.Fatalf("sends at %v, want %v", times, want)
		}
	})
}

func TestRun_FollowUpAndSplitReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Step 0 answers "next" (a challenge round trip); step 1 answers in
		// two parts.
		var conn *fakeConn
		conn = newFakeConn(func(p packet) {
			kind, tok := echoRequest(p.b)
			if kind == 0 {
				conn.deliver(p.addr, fmt.Appendf(nil, "R0 %s next", tok), 30*time.Millisecond)
				return
			}
			conn.deliver(p.addr, fmt.Appendf(nil, "R1 %s more", tok), 20*time.Millisecond)
			conn.deliver(p.addr, fmt.Appendf(nil, "R1 %s last", tok), 21*time.Millisecond)
		})
		res, c, took := run(t, &Prober{}, conn, Target{srvA, echoDialect{}})
		r := res[0]
		if v, _ := r.Info.Get("k1"); v != "last" || r.Err != nil || r.RTT != 20*time.Millisecond {
			t.Fatalf("got %+v", r)
		}
		if took != 51*time.Millisecond || c.Matched != 3 || c.Sent != 2 {
			t.Fatalf("took %v counts %+v", took, c)
		}
	})
}

func TestRun_ReplyWithoutTokenMatchesByAddressAndKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var conn *fakeConn
		conn = newFakeConn(func(p packet) {
			kind, _ := echoRequest(p.b)
			conn.deliver(p.addr, fmt.Appendf(nil, "N%d plain", kind), 5*time.Millisecond)
			conn.deliver(p.addr, fmt.Appendf(nil, "N%d again", kind), 6*time.Millisecond)
		})
		res, c, _ := run(t, &Prober{}, conn, Target{srvA, echoDialect{}})
		if v, _ := res[0].Info.Get("k0"); v != "plain" || res[0].RTT != 5*time.Millisecond {
			t.Fatalf("got %+v", res[0])
		}
		if c.Matched != 1 {
			t.Fatalf("counts %+v", c)
		}
	})
}

func TestRun_ContextEndsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := newFakeConn(func(packet) {})
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		var got []Result
		_, err := (&Prober{}).Run(ctx, conn, []Target{{srvA, echoDialect{}}, {srvB, echoDialect{}}},
			func(_ int, r Result) { got = append(got, r) })
		if !errors.Is(err, context.DeadlineExceeded) || len(got) != 2 || !errors.Is(got[0].Err, context.DeadlineExceeded) {
			t.Fatalf("err %v, results %+v", err, got)
		}
	})
}

func TestRun_WriteErrorIsTheReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := newFakeConn(func(packet) {})
		conn.writeErr = syscall.ENETUNREACH
		res, c, took := run(t, &Prober{}, conn, Target{srvA, echoDialect{}})
		if !errors.Is(res[0].Err, syscall.ENETUNREACH) || took != 0 || c.WriteErrors != 1 || c.Sent != 0 {
			t.Fatalf("err %v after %v, counts %+v", res[0].Err, took, c)
		}
	})
}

func TestRun_DuplicateAndTooManyTargets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server{addr: srvA, answer: func(int, int, string) (string, time.Duration, bool) { return "ok", time.Millisecond, true }}
		res, _, _ := run(t, &Prober{}, network(s), Target{srvA, echoDialect{}}, Target{srvA, echoDialect{}})
		if res[0].Err != nil || !errors.Is(res[1].Err, ErrDuplicate) {
			t.Fatalf("got %v, %v", res[0].Err, res[1].Err)
		}
		var got []Result
		_, err := (&Prober{MaxTargets: 1}).Run(t.Context(), network(s),
			[]Target{{srvA, echoDialect{}}, {srvB, echoDialect{}}}, func(_ int, r Result) { got = append(got, r) })
		if !errors.Is(err, ErrTooManyTargets) || len(got) != 2 || s.got != 1 {
			t.Fatalf("err %v, %d results, server got %d", err, len(got), s.got)
		}
	})
}
