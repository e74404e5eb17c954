package discover

import (
	"net/netip"
	"os"
	"sync"
	"time"
)

// fakeNet is an in-process network for tests under testing/synctest.
// Each node is a handler called with every datagram sent to its address;
// it answers through reply.
type fakeNet struct {
	mu    sync.Mutex
	nodes map[netip.AddrPort]handler
	sent  map[netip.AddrPort][]time.Time // send times by destination
}

// handler answers a datagram b sent from from.
type handler func(b []byte, reply func(b []byte, delay time.Duration))

func newNet() *fakeNet {
	return &fakeNet{nodes: map[netip.AddrPort]handler{}, sent: map[netip.AddrPort][]time.Time{}}
}

func (n *fakeNet) node(a netip.AddrPort, h handler) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nodes[a] = h
}

func (n *fakeNet) sends(to netip.AddrPort) []time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]time.Time(nil), n.sent[to]...)
}

// conn returns a new socket on the network.
func (n *fakeNet) conn() *fakeConn {
	c := &fakeConn{kick: make(chan struct{}), net: n}
	return c
}

type packet struct {
	from netip.AddrPort
	b    []byte
}

// fakeConn is a socket of fakeNet (probe.Conn).
type fakeConn struct {
	net      *fakeNet
	mu       sync.Mutex
	in       []packet
	deadline time.Time
	kick     chan struct{}
}

func (c *fakeConn) wakeLocked() {
	close(c.kick)
	c.kick = make(chan struct{})
}

// deliver queues b from from after delay (bubble time).
func (c *fakeConn) deliver(from netip.AddrPort, b []byte, delay time.Duration) {
	b = append([]byte(nil), b...)
	push := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.in = append(c.in, packet{from, b})
		c.wakeLocked()
	}
	if delay <= 0 {
		push()
		return
	}
	time.AfterFunc(delay, push)
}

func (c *fakeConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	for {
		c.mu.Lock()
		if len(c.in) > 0 {
			p := c.in[0]
			c.in = c.in[1:]
			c.mu.Unlock()
			return copy(b, p.b), p.from, nil
		}
		d, kick := c.deadline, c.kick
		c.mu.Unlock()
		if d.IsZero() {
			<-kick
			continue
		}
		wait := time.Until(d)
		if wait <= 0 {
			return 0, netip.AddrPort{}, os.ErrDeadlineExceeded
		}
		t := time.NewTimer(wait)
		select {
		case <-kick:
		case <-t.C:
		}
		t.Stop()
	}
}

func (c *fakeConn) WriteToUDPAddrPort(b []byte, to netip.AddrPort) (int, error) {
	n := c.net
	n.mu.Lock()
	h := n.nodes[to]
	n.sent[to] = append(n.sent[to], time.Now())
	n.mu.Unlock()
	if h != nil {
		h(append([]byte(nil), b...), func(r []byte, delay time.Duration) { c.deliver(to, r, delay) })
	}
	return len(b), nil
}

func (c *fakeConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	c.wakeLocked()
	return nil
}
