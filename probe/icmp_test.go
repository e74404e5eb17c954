package probe

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestClassifyICMP(t *testing.T) {
	for _, c := range []struct {
		v6         bool
		typ, code  uint8
		want       ICMPKind
		wantString string
	}{
		{false, 3, 3, UnreachablePort, "port"},
		{false, 3, 1, UnreachableHost, "host"},
		{false, 3, 0, UnreachableNet, "net"},
		{false, 3, 2, UnreachableProtocol, "protocol"},
		{false, 3, 13, UnreachableProhibited, "prohibited"},
		{false, 3, 4, NotUnreachable, "not unreachable"}, // fragmentation needed
		{false, 3, 200, UnreachableOther, "other"},
		{false, 11, 0, NotUnreachable, "not unreachable"}, // time exceeded
		{true, 1, 4, UnreachablePort, "port"},
		{true, 1, 3, UnreachableHost, "host"},
		{true, 1, 0, UnreachableNet, "net"},
		{true, 1, 1, UnreachableProhibited, "prohibited"},
		{true, 2, 0, NotUnreachable, "not unreachable"}, // packet too big
		{true, 3, 0, NotUnreachable, "not unreachable"}, // time exceeded
		{true, 3, 3, NotUnreachable, "not unreachable"}, // an ICMPv4 port unreachable's numbers, in ICMPv6
	} {
		e := ICMPError{V6: c.v6, Type: c.typ, Code: c.code}
		if got := e.Kind(); got != c.want || got.String() != c.wantString {
			t.Errorf("v6 %v type %d code %d: %v, want %v", c.v6, c.typ, c.code, got, c.want)
		}
	}
}

// sentSession is a session with targets begun and their requests
// written at now: what an ICMP error can meet.
func sentSession(t *testing.T, now time.Time, targets ...Target) (*session, map[netip.AddrPort][][]byte) {
	t.Helper()
	s := newSession((&Prober{Timeout: time.Hour}).settings())
	for _, tg := range targets {
		s.add(tg)
	}
	s.closeInput()
	sent := map[netip.AddrPort][][]byte{}
	for _, sd := range s.poll(now) {
		sent[sd.r.t.addr] = append(sent[sd.r.t.addr], append([]byte(nil), sd.b...))
		s.wrote(sd, now, nil)
	}
	return s, sent
}

// TestSession_ICMPPolicy checks which ICMP errors end a target, one rule
// per case, on the pure session.
func TestSession_ICMPPolicy(t *testing.T) {
	now := time.Unix(1000, 0)
	two := echoDialect{steps: 2}
	port := func(to netip.AddrPort, quote []byte) ICMPError {
		return ICMPError{To: to, Type: 3, Code: 3, Quote: quote}
	}
	for _, c := range []struct {
		name  string
		icmp  func(sent map[netip.AddrPort][][]byte) ICMPError
		ended bool
	}{
		{"port unreachable quoting the request", func(m map[netip.AddrPort][][]byte) ICMPError { return port(srvA, m[srvA][0]) }, true},
		{"quoting its second request", func(m map[netip.AddrPort][][]byte) ICMPError { return port(srvA, m[srvA][1]) }, true},
		{"quoting the start of the request", func(m map[netip.AddrPort][][]byte) ICMPError { return port(srvA, m[srvA][0][:8]) }, true},
		{"quoting nothing (a router's 8 bytes)", func(map[netip.AddrPort][][]byte) ICMPError { return port(srvA, nil) }, true},
		{"quoting another token", func(m map[netip.AddrPort][][]byte) ICMPError {
			q := append([]byte(nil), m[srvA][0]...)
			q[len(q)-1] ^= 1
			return port(srvA, q)
		}, false},
		{"quoting what went to another target", func(m map[netip.AddrPort][][]byte) ICMPError { return port(srvA, m[srvB][0]) }, false},
		{"same address, other port", func(m map[netip.AddrPort][][]byte) ICMPError {
			return port(netip.AddrPortFrom(srvA.Addr(), srvA.Port()+1), nil)
		}, false},
		{"no target", func(map[netip.AddrPort][][]byte) ICMPError { return port(stranger, nil) }, false},
		{"time exceeded", func(map[netip.AddrPort][][]byte) ICMPError { return ICMPError{To: srvA, Type: 11} }, false},
		{"fragmentation needed", func(map[netip.AddrPort][][]byte) ICMPError { return ICMPError{To: srvA, Type: 3, Code: 4} }, false},
		{"IPv4-mapped destination", func(map[netip.AddrPort][][]byte) ICMPError {
			return port(netip.AddrPortFrom(netip.AddrFrom16(srvA.Addr().As16()), srvA.Port()), nil)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, sent := sentSession(t, now, Target{srvA, two}, Target{srvB, echoDialect{}})
			s.icmp(c.icmp(sent))
			fin := s.takeFinished()
			if c.ended {
				if len(fin) != 1 || fin[0].addr != srvA || !errors.Is(fin[0].res.Err, ErrUnreachable) || s.open != 1 ||
					s.counts.Unreachable != 1 || s.counts.ICMPUnmatched != 0 || len(s.waiting) != 1 {
					t.Fatalf("finished %d, open %d, counts %+v; want srvA ended with its 2 requests", len(fin), s.open, s.counts)
				}
				if got, want := fin[0].res.Err.Error(), "step0: unreachable: port"; got != want {
					t.Errorf("error %q, want %q", got, want)
				}
				// A second error for the ended target changes nothing.
				s.icmp(port(srvA, nil))
				if s.counts.ICMPUnmatched != 1 || s.counts.Unreachable != 1 {
					t.Errorf("second ICMP: counts %+v", s.counts)
				}
				return
			}
			if len(fin) != 0 || s.open != 3 || s.counts.ICMPUnmatched != 1 || s.counts.Unreachable != 0 || s.counts.ICMPErrors != 1 {
				t.Fatalf("finished %d, open %d, counts %+v; want nothing ended, the error counted unmatched", len(fin), s.open, s.counts)
			}
		})
	}
}

func TestSession_ICMPNotForUnsentOrBroadcast(t *testing.T) {
	now := time.Unix(1000, 0)
	// Window 1: srvB is not begun when srvA's request is in flight.
	s := newSession((&Prober{Timeout: time.Hour, Window: 1}).settings())
	s.add(Target{srvA, echoDialect{}})
	s.add(Target{srvB, echoDialect{}})
	s.closeInput()
	for _, sd := range s.poll(now) {
		s.wrote(sd, now, nil)
	}
	s.icmp(ICMPError{To: srvB, Type: 3, Code: 3})
	if s.counts.ICMPUnmatched != 1 || len(s.takeFinished()) != 0 {
		t.Fatalf("an error for a target not yet sent to ended it: %+v", s.counts)
	}
	// srvA ends by ICMP from a router: the slot is free, srvB begins.
	router := netip.MustParseAddr("203.0.113.1")
	s.icmp(ICMPError{To: srvA, From: router, Type: 3, Code: 1})
	fin := s.takeFinished()
	if len(fin) != 1 || fin[0].res.Err.Error() != "step0: unreachable: host (ICMP from 203.0.113.1)" {
		t.Fatalf("finished %v", fin)
	}
	if sends := s.poll(now); len(sends) != 1 || sends[0].r.t.addr != srvB {
		t.Fatalf("after the ICMP, poll sent %d; want srvB's request", len(sends))
	}

	b := newSession((&Prober{Timeout: time.Hour}).settings())
	b.add(Target{srvA, echoDialect{}}).broadcast = true
	b.closeInput()
	for _, sd := range b.poll(now) {
		b.wrote(sd, now, nil)
	}
	b.icmp(ICMPError{To: srvA, Type: 3, Code: 3})
	if b.counts.ICMPUnmatched != 1 || len(b.takeFinished()) != 0 {
		t.Fatalf("a broadcast target ended by ICMP: %+v", b.counts)
	}
}

// errFakeICMP is what fakeICMPConn's writes return while an ICMP error is
// pending, as Linux's ECONNREFUSED with IP_RECVERR.
var errFakeICMP = errors.New("fake: ICMP error pending")

// fakeICMPConn is a fakeConn where writes to dead addresses draw a port
// unreachable: queued for ReadICMP and pending, so that the next write,
// whatever its destination, fails once with errFakeICMP, as on Linux.
// Reads never report it: only the writer's path can find the error.
type fakeICMPConn struct {
	*fakeConn
	dead map[netip.AddrPort]bool

	mu      sync.Mutex // guards the fields below
	queue   []ICMPError
	pending bool
}

func (c *fakeICMPConn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending {
		c.pending = false
		return 0, fmt.Errorf("write: %w", errFakeICMP)
	}
	if c.dead[addr] {
		c.queue = append(c.queue, ICMPError{To: addr, From: addr.Addr(), Type: 3, Code: 3, Quote: append([]byte(nil), b...)})
		c.pending = true
		return len(b), nil
	}
	return c.fakeConn.WriteToUDPAddrPort(b, addr)
}

func (c *fakeICMPConn) ReadICMP() ([]ICMPError, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queue
	c.queue = nil
	c.pending = false
	return q, nil
}

func (c *fakeICMPConn) ICMPReported(err error) bool { return errors.Is(err, errFakeICMP) }

// TestRun_StaleICMPErrorOnWrite: a write that fails only because an
// earlier datagram drew an ICMP error is repeated, not charged to its own
// target, and the queued error ends the dead server at once.
func TestRun_StaleICMPErrorOnWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := &fakeICMPConn{dead: map[netip.AddrPort]bool{srvA: true},
			fakeConn: answering(func(netip.AddrPort) time.Duration { return 20 * time.Millisecond }, nil)}
		start := time.Now()
		var ended []time.Duration
		res := make([]Result, 2)
		counts, err := (&Prober{Timeout: time.Hour}).Run(t.Context(), conn, []Target{{srvA, echoDialect{}}, {srvB, echoDialect{}}},
			func(i int, r Result) { res[i] = r; ended = append(ended, time.Since(start)) })
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res[0].Err, ErrUnreachable) || res[0].Attempts != 1 || !strings.HasSuffix(res[0].Err.Error(), "unreachable: port") {
			t.Errorf("dead server: %+v", res[0])
		}
		if res[1].Err != nil || !res[1].Answered() {
			t.Errorf("live server: %+v", res[1])
		}
		// Bubble time: the dead server ends before anything is answered.
		if len(ended) != 2 || ended[0] != 0 || ended[1] != 20*time.Millisecond {
			t.Errorf("results at %v; want the dead one at 0, the live one at its 20ms", ended)
		}
		if counts.StaleSendErrors != 1 || counts.WriteErrors != 0 || counts.Sent != 2 || counts.Unreachable != 1 {
			t.Errorf("counts %+v", counts)
		}
	})
}
