package probe

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// q3InfoReply is a getinfo reply that echoes sd's token.
func q3InfoReply(sd *send) []byte {
	return fmt.Appendf(nil, "\xff\xff\xff\xffinfoResponse\n\\challenge\\%s\\hostname\\t", q3Challenge(sd.tok))
}

// TestSession_PacedRetryAfterTheHostsRTT: two servers on one address;
// the first answers in 30 ms, the second's reply is lost. The second is
// sent again 1.5 x 30 + 50 = 95 ms, at least 100 ms, after its send, not after the
// run's retry timeout (the full second here: too few RTTs are in); a
// server of another address waits the full second.
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
	step := func() {
		for _, sd := range s.poll(now) {
			s.wrote(sd, now, nil)
			sends[sd.r.t.addr] = append(sends[sd.r.t.addr], sd)
		}
	}
	for range 50 { // all three sent
		step()
		now = now.Add(time.Millisecond)
	}
	first := sends[a1][0]
	s.receive(first.at.Add(30*time.Millisecond), a1, q3InfoReply(first))
	for range 2000 {
		step()
		now = now.Add(time.Millisecond)
	}
	if len(sends[a2]) < 2 || len(sends[b]) < 2 {
		t.Fatalf("sends: %d to the lost sibling, %d to the other address", len(sends[a2]), len(sends[b]))
	}
	if gap := sends[a2][1].at.Sub(sends[a2][0].at); gap != hostRetryMin {
		t.Errorf("the sibling was sent again after %v, want %v", gap, hostRetryMin)
	}
	if gap := sends[b][1].at.Sub(sends[b][0].at); gap != time.Second {
		t.Errorf("the other address was sent again after %v, want the full 1s", gap)
	}
}
