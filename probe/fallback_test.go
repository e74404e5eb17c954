package probe

import (
	"errors"
	"net"
	"testing"
	"time"
)

// TestPortableWrap_OverLoopback runs the prober the way it runs on every
// platform but Linux (no kernel timestamps, no ICMP errors), here too:
// live servers answer with an RTT timed at the read, and a closed port
// times out instead of ending at an ICMP error.
func TestPortableWrap_OverLoopback(t *testing.T) {
	targets := loopbackFleet(t, 4)
	dead := closedPort(t, net.IPv4(127, 0, 0, 1))
	targets = append(targets, Target{dead, Q3Info})
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn, f := portableWrap(c)
	if f != (Features{}) {
		t.Fatalf("features %+v, want none", f)
	}
	if _, ok := conn.(StampedConn); ok {
		t.Fatal("the portable conn claims kernel timestamps")
	}
	if _, ok := conn.(ICMPConn); ok {
		t.Fatal("the portable conn claims ICMP errors")
	}
	p := &Prober{Timeout: 300 * time.Millisecond, Attempts: 1}
	counts, err := p.Run(t.Context(), conn, targets, func(_ int, r Result) {
		if r.Addr == dead {
			if r.Answered() || errors.Is(r.Err, ErrUnreachable) {
				t.Errorf("closed port %v: answered=%v err=%v, want a timeout", r.Addr, r.Answered(), r.Err)
			}
			return
		}
		if !r.Answered() || r.RTT <= 0 || r.RTT > p.Timeout {
			t.Errorf("%v: answered=%v rtt=%v err=%v", r.Addr, r.Answered(), r.RTT, r.Err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if counts.Answered != 4 || counts.Silent != 1 || counts.Unreachable != 0 || counts.KernelStamped != 0 || counts.ICMPErrors != 0 {
		t.Fatalf("counts %+v; want 4 answered at the read, 1 silent, no ICMP", counts)
	}
}
