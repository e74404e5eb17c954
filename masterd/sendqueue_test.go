package masterd

import (
	"context"
	"crypto/rand"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/q3"
)

// queueConn is an in-process PacketConn whose writes to one address wait
// until released: a deterministic stand-in for a slow long send.
type queueConn struct {
	in      chan datagram
	wake    chan struct{} // closed by a deadline in the past
	once    sync.Once
	slow    netip.AddrPort
	blocked chan struct{} // closed at the first write to slow
	bOnce   sync.Once
	release chan struct{}

	mu      sync.Mutex
	written map[netip.AddrPort]int
	probed  chan struct{} // one per datagram to anyone but slow
}

type datagram struct {
	from netip.AddrPort
	b    []byte
}

func (c *queueConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	select {
	case d := <-c.in:
		return copy(b, d.b), d.from, nil
	case <-c.wake:
		return 0, netip.AddrPort{}, os.ErrDeadlineExceeded
	}
}

func (c *queueConn) WriteToUDPAddrPort(b []byte, a netip.AddrPort) (int, error) {
	if a == c.slow {
		c.bOnce.Do(func() { close(c.blocked) })
		<-c.release
	}
	c.mu.Lock()
	c.written[a]++
	c.mu.Unlock()
	if a != c.slow {
		c.probed <- struct{}{}
	}
	return len(b), nil
}

func (c *queueConn) SetReadDeadline(t time.Time) error {
	if t.Before(time.Now()) {
		c.once.Do(func() { close(c.wake) })
	}
	return nil
}

func (c *queueConn) LocalAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 27950}
}

// A long reply stuck in its send does not stop the socket loop: later
// requests are read and answered meanwhile, long replies beyond
// MaxQueuedReplies are dropped and counted, and the queued ones all leave
// once the send moves again.
func TestPacketServer_LongRepliesDoNotStallTheLoop(t *testing.T) {
	chal, err := master.NewChallenger(master.DefaultRotationPeriod, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := master.NewRegistry(master.Config{AllowLoopback: true, MaxServersPerAddress: -1}, chal)
	if err != nil {
		t.Fatal(err)
	}
	// One server per datagram: 100 servers make a 100-datagram reply.
	h, err := master.NewHandler(master.HandlerConfig{MaxEntries: 1}, master.HandlerDeps{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	const servers = 100
	for i := range servers {
		listQ3(t, h, time.Now(), netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 5, 0, byte(i)}), 27960))
	}
	slow, probe := ap("127.0.0.2:1000"), ap("127.0.0.3:1000")
	c := &queueConn{
		in: make(chan datagram), wake: make(chan struct{}), slow: slow,
		blocked: make(chan struct{}), release: make(chan struct{}),
		written: map[netip.AddrPort]int{}, probed: make(chan struct{}, servers),
	}
	s := NewPacketServer(h, nil)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, c, false) }()

	list, _ := q3.GetServers{Protocol: 71, Empty: true, Full: true}.AppendBinary(nil)
	c.in <- datagram{slow, list}
	<-c.blocked // the sender goroutine is stuck in the first reply
	const extra = 2
	for range MaxQueuedReplies + extra {
		c.in <- datagram{slow, list}
	}
	// A short reply (no servers of protocol 68: one datagram), sent by
	// the loop while the long one is stuck.
	short, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	c.in <- datagram{probe, short}
	<-c.probed
	if got := s.QueueDrops(); got != extra {
		t.Errorf("QueueDrops = %d, want %d (the long replies beyond the queue)", got, extra)
	}
	close(c.release)
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if want := (1 + MaxQueuedReplies) * servers; c.written[slow] != want {
		t.Errorf("%d datagrams to the slow client, want %d (the stuck reply and the queued ones)", c.written[slow], want)
	}
}
