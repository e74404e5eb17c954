package probe

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// q3InfoReply is a getinfo reply that echoes sd's token.
func q3InfoReply(sd *send) []byte {
	return fmt.Appendf(nil, "\xff\xff\xff\xffinfoResponse\n\\challenge\\%s\\hostname\\t", q3Challenge(sd.tok))
}

// pacedSteps drives s from now in 1 ms steps for n steps, writing every
// send at once, and returns the time after them; sends collects them by
// address.
func pacedSteps(s *session, now time.Time, n int, sends map[netip.AddrPort][]*send) time.Time {
	for range n {
		for _, sd := range s.poll(now) {
			s.wrote(sd, now, nil)
			sends[sd.r.t.addr] = append(sends[sd.r.t.addr], sd)
		}
		now = now.Add(time.Millisecond)
	}
	return now
}

// TestSession_PacedRetryAfterTheHostsRTT: two servers on one address and
// one on another. One server of the pair is probed first, its sibling
// waits for it; it answers in 30 ms, its sibling goes next and its reply
// is lost: the sibling is sent again after 1.2 x 30 + 20 = 56 ms (at
// least 50), not after the run's retry timeout (the full second here:
// too few RTTs are in); the server of the other address waits the full
// second.
func TestSession_PacedRetryAfterTheHostsRTT(t *testing.T) {
	s := newSession((&Prober{Timeout: time.Second, Pace: &Pace{}}).settings())
	a1 := netip.MustParseAddrPort("198.18.0.1:27960")
	a2 := netip.MustParseAddrPort("198.18.0.1:27961")
	b := netip.MustParseAddrPort("198.18.0.2:27960")
	for _, a := range []netip.AddrPort{a1, a2, b} {
		s.add(Target{a, Q3Info})
	}
	s.closeInput()
	now := time.Unix(100, 0)
	sends := map[netip.AddrPort][]*send{}
	now = pacedSteps(s, now, 50, sends)
	first, sibling := a1, a2
	if len(sends[a1]) == 0 {
		first, sibling = a2, a1
	}
	if len(sends[first]) != 1 || len(sends[sibling]) != 0 || len(sends[b]) != 1 {
		t.Fatalf("after 50 ms: %d, %d and %d sends; want one to one server of the pair, none to its sibling, one to the other address", len(sends[first]), len(sends[sibling]), len(sends[b]))
	}
	sd := sends[first][0]
	s.receive(sd.at.Add(30*time.Millisecond), first, q3InfoReply(sd))
	pacedSteps(s, now, 2000, sends)
	if len(sends[sibling]) < 2 || len(sends[b]) < 2 {
		t.Fatalf("sends: %d to the lost sibling, %d to the other address", len(sends[sibling]), len(sends[b]))
	}
	if gap := sends[sibling][1].at.Sub(sends[sibling][0].at); gap != 56*time.Millisecond {
		t.Errorf("the sibling was sent again after %v, want 56ms", gap)
	}
	if gap := sends[b][1].at.Sub(sends[b][0].at); gap != time.Second {
		t.Errorf("the other address was sent again after %v, want the full 1s", gap)
	}
}

// TestSession_PacedOneServerPerAddressFirst: 40 addresses of 3 servers
// each. The first 40 sends go to one server of each address; the others
// of an address go only once it has answered (the replies here: 20-59
// ms, by address); those of an address that never answers go once its
// probe is overdue (the run's retry timeout: its floor of 250 ms here).
// Every server is probed.
func TestSession_PacedOneServerPerAddressFirst(t *testing.T) {
	s := newSession((&Prober{Timeout: time.Second, Pace: &Pace{}}).settings())
	const hosts, per = 40, 3
	silent := netip.AddrFrom4([4]byte{198, 18, 1, 39}) // never answers
	for h := range hosts {
		for k := range per {
			s.add(Target{netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 1, byte(h)}), uint16(27960+k)), Q3Info})
		}
	}
	s.closeInput()
	now := time.Unix(100, 0)
	sent := map[netip.Addr][]time.Time{} // first sends by address, in order
	answered := map[netip.Addr]time.Time{}
	var due []*send // sends awaiting their reply
	for range 3000 {
		for _, sd := range s.poll(now) {
			s.wrote(sd, now, nil)
			a := sd.r.t.addr.Addr()
			if sd.r.attempts == 1 {
				sent[a] = append(sent[a], now)
			}
			if a != silent {
				due = append(due, sd)
			}
		}
		kept := due[:0]
		for _, sd := range due {
			a := sd.r.t.addr.Addr()
			if rtt := time.Duration(20+int(a.As4()[3])) * time.Millisecond; !now.Before(sd.at.Add(rtt)) {
				s.receive(now, sd.r.t.addr, q3InfoReply(sd))
				if _, ok := answered[a]; !ok {
					answered[a] = now
				}
				continue
			}
			kept = append(kept, sd)
		}
		due = kept
		now = now.Add(time.Millisecond)
	}
	var lastFirst time.Time // the last address's first send
	for _, times := range sent {
		if times[0].After(lastFirst) {
			lastFirst = times[0]
		}
	}
	for a, times := range sent {
		if len(times) != per {
			t.Errorf("%v: %d sends, want %d", a, len(times), per)
			continue
		}
		after := answered[a]
		if a == silent {
			after = times[0].Add(paceRetryMin)
		}
		for _, at := range times[1:] {
			if at.Before(after) || !at.After(lastFirst) {
				t.Errorf("%v: probed at %v, its other servers at %v; want them after every address was probed (%v) and after it answered or was overdue (%v)",
					a, times[0].Format("05.000"), at.Format("05.000"), lastFirst.Format("05.000"), after.Format("05.000"))
			}
		}
	}
	if len(sent) != hosts {
		t.Errorf("%d addresses probed, want %d", len(sent), hosts)
	}
}

// TestSession_PacedLookaheadKeepsTheOrder: with a lookahead (the caller
// orders the targets as it goes, as the landmark order does, nearest
// first) a paced run parks nothing: the sibling of a server whose
// address has not answered goes as soon as it is drawn.
func TestSession_PacedLookaheadKeepsTheOrder(t *testing.T) {
	s := newSession((&Prober{Timeout: time.Second, Pace: &Pace{}, Lookahead: 4}).settings())
	a1 := netip.MustParseAddrPort("198.18.0.1:27960")
	a2 := netip.MustParseAddrPort("198.18.0.1:27961")
	s.add(Target{a1, Q3Info})
	s.add(Target{a2, Q3Info})
	s.closeInput()
	sends := map[netip.AddrPort][]*send{}
	pacedSteps(s, time.Unix(100, 0), 50, sends)
	if len(sends[a1]) != 1 || len(sends[a2]) != 1 || s.parked != 0 {
		t.Errorf("%d and %d sends, %d parked; want both sent, none parked", len(sends[a1]), len(sends[a2]), s.parked)
	}
}

// TestRun_PacedOrderAndRetry: a paced run sends its queue in random
// order, not the list's, and once 100 RTTs are in retries a lost reply
// after 1.2 times their 99th percentile plus 20 ms (at least 250 ms),
// not Timeout; a send made before they were in has its deadline brought
// forward to that.
func TestRun_PacedOrderAndRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		var order []int
		lossy := map[int][]time.Time{} // every tenth server loses its first reply
		servers := make([]*server, n)
		targets := make([]Target, n)
		for i := range n {
			addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), 27960)
			servers[i] = &server{addr: addr, answer: func(k, _ int, _ string) (string, time.Duration, bool) {
				if k == 1 {
					order = append(order, i)
				}
				if i%10 == 9 {
					lossy[i] = append(lossy[i], time.Now())
					return "ok", 50 * time.Millisecond, k == 2
				}
				return "ok", 50 * time.Millisecond, true
			}}
			targets[i] = Target{addr, echoDialect{}}
		}
		p := &Prober{Timeout: time.Second, Pace: &Pace{}}
		_, c, _ := run(t, p, network(servers...), targets...)
		if c.Answered != n || c.Retries != n/10 || c.PaceRate == 0 {
			t.Fatalf("counts %+v", c)
		}
		if slices.IsSorted(order) || len(order) != n {
			t.Errorf("servers contacted in the list's order (%d of them)", len(order))
		}
		quick, early := 0, 0
		for i, sends := range lossy {
			if len(sends) != 2 {
				t.Fatalf("server %d: %d sends", i, len(sends))
			}
			switch gap := sends[1].Sub(sends[0]); {
			case gap == paceRetryMin:
				quick++
			case gap > paceRetryMin && gap < time.Second:
				early++ // sent before the RTTs were in, brought forward since
			default:
				t.Errorf("server %d retried after %v, want 250ms to 1s", i, gap)
			}
		}
		if quick < 10 || quick+early != len(lossy) {
			t.Errorf("%d of %d lost replies retried after 250 ms (1.2 x 50 ms + 20 ms, at least 250 ms), %d brought forward from 1s; want most, and none after the full second", quick, len(lossy), early)
		}
	})
}

// TestSession_PacedRetryTimeoutSparesA2S: once the pacer has its RTTs, a
// Q3 send waits the quick retry timeout, an A2S send (no token in its
// reply) the full one.
func TestSession_PacedRetryTimeoutSparesA2S(t *testing.T) {
	s := newSession((&Prober{Timeout: time.Second, Pace: &Pace{}}).settings())
	for i := range 200 {
		s.pacer.Answered(time.Unix(90, 0).Add(time.Duration(i)*time.Millisecond), 50*time.Millisecond)
	}
	s.add(Target{srvA, Q3Info})
	s.add(Target{srvB, A2S})
	s.closeInput()
	now := time.Unix(100, 0)
	waits := map[netip.AddrPort]time.Duration{}
	for range 10 {
		for _, sd := range s.poll(now) {
			s.wrote(sd, now, nil)
			waits[sd.r.t.addr] = sd.r.deadline.Sub(now)
		}
		now = now.Add(10 * time.Millisecond)
	}
	if waits[srvA] != paceRetryMin || waits[srvB] != time.Second {
		t.Errorf("waits %v; want %v for Q3, 1s for A2S", waits, paceRetryMin)
	}
}

// TestSession_PacedTrains: a paced session sends its first paceTrains
// getinfo requests paceTrainProbes times each, every send with its own
// token, one deadline per request; the train's replies after the first
// count as train replies (not late), measure the path, and the request is
// answered once, timed from the send it answered.
func TestSession_PacedTrains(t *testing.T) {
	s := newSession((&Prober{Timeout: time.Second, Pace: &Pace{}}).settings())
	const n = paceTrainQueue + 10
	for i := range n {
		s.add(Target{netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), 27960), Q3Info})
	}
	s.closeInput()
	now := time.Unix(100, 0)
	byAddr := map[netip.AddrPort][]*send{}
	for range 2000 {
		for _, sd := range s.poll(now) {
			s.wrote(sd, now, nil)
			byAddr[sd.r.t.addr] = append(byAddr[sd.r.t.addr], sd)
		}
		now = now.Add(time.Millisecond)
		if len(s.queue) == 0 {
			break
		}
	}
	trains := 0
	for a, sends := range byAddr {
		switch len(sends) {
		case paceTrainProbes:
			trains++
			toks := map[uint64]bool{}
			for _, sd := range sends {
				toks[sd.tok] = true
			}
			if len(toks) != paceTrainProbes {
				t.Errorf("%v: %d tokens for %d sends", a, len(toks), len(sends))
			}
		case 1:
		default:
			t.Errorf("%v: %d sends", a, len(sends))
		}
	}
	if trains != paceTrains || len(s.waiting) != n || s.counts.PaceTrainSends != paceTrains*(paceTrainProbes-1) {
		t.Fatalf("%d trains, %d deadlines, %d train sends; want %d, %d, %d", trains, len(s.waiting), s.counts.PaceTrainSends, paceTrains, n, paceTrains*(paceTrainProbes-1))
	}
	var train []*send
	for _, sends := range byAddr {
		if len(sends) == paceTrainProbes {
			train = sends
			break
		}
	}
	at := now.Add(50 * time.Millisecond)
	for k, sd := range train {
		b := fmt.Appendf(nil, "\xff\xff\xff\xffinfoResponse\n\\challenge\\%s\\hostname\\t", q3Challenge(sd.tok))
		s.receive(at.Add(time.Duration(k)*176*time.Microsecond), sd.r.t.addr, b)
	}
	tg := train[0].r.t
	if !tg.done || !tg.res.Answered() || tg.res.RTT != at.Sub(train[0].at) || s.counts.Matched != 1 || s.counts.PaceTrainReplies != paceTrainProbes-1 || s.counts.Late != 0 {
		t.Errorf("done %v, RTT %v, counts %+v; want answered once at 50ms, %d train replies, none late", tg.done, tg.res.RTT, s.counts, paceTrainProbes-1)
	}
	if r := s.pacer.trainRate; math.Abs(r-1/176e-6) > 1 {
		t.Errorf("train rate %.0f probes/s, want %.0f", r, 1/176e-6)
	}
}
