package discover

import (
	"net/netip"
	"sync"
	"time"

	"github.com/scout-discovery/scout/internal/fakeudp"
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
	c := &fakeConn{net: n}
	return c
}

// fakeConn is a socket of fakeNet (probe.Conn).
type fakeConn struct {
	fakeudp.Inbox
	net *fakeNet
}

// deliver queues b from from after delay (bubble time).
func (c *fakeConn) deliver(from netip.AddrPort, b []byte, delay time.Duration) {
	c.Deliver(from, b, delay)
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
