package loopnat

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// PacketConn is the subset of *net.UDPConn that scout's master and probe
// engine use, and that Conn wraps.
type PacketConn interface {
	ReadFromUDPAddrPort(b []byte) (n int, addr netip.AddrPort, err error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	SetDeadline(t time.Time) error
	SetReadDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
	LocalAddr() net.Addr
	Close() error
}

// Stats counts the datagrams a Conn handled, by outcome.
type Stats struct {
	// SentTranslated went to a mapped public address's loopback side.
	SentTranslated uint64 `json:"sent_translated"`
	// SentLoopback went unchanged to a loopback address that is not
	// a public side (a client or master on 127.0.0.1).
	SentLoopback uint64 `json:"sent_loopback"`
	// DroppedUnmapped were addressed outside the table and off loopback;
	// they were not sent.
	DroppedUnmapped uint64 `json:"dropped_unmapped"`
	// ReadTranslated came from a mapped loopback address and were
	// returned with its public address.
	ReadTranslated uint64 `json:"read_translated"`
	// ReadLoopback came from an unmapped loopback address, returned as is.
	ReadLoopback uint64 `json:"read_loopback"`
	// DroppedForeign came from outside 127.0.0.0/8 and were discarded.
	DroppedForeign uint64 `json:"dropped_foreign"`
}

// Conn is a PacketConn that translates addresses through a Table (see the
// package doc). Like *net.UDPConn it may be used by one reader and one
// writer goroutine at a time; the counters are atomic.
type Conn struct {
	conn  PacketConn
	table *Table

	sentTranslated, sentLoopback, droppedUnmapped atomic.Uint64
	readTranslated, readLoopback, droppedForeign  atomic.Uint64
}

var _ PacketConn = (*Conn)(nil)

// Wrap returns conn seen through table. Closing the result closes conn.
func Wrap(conn PacketConn, table *Table) *Conn {
	return &Conn{conn: conn, table: table}
}

// WriteToUDPAddrPort sends b to addr's loopback side. A destination that
// is neither mapped nor loopback is not sent: the datagram is counted as
// DroppedUnmapped and reported written, as a packet lost in the network.
func (c *Conn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	addr = unmap(addr)
	if lo, ok := c.table.Loopback(addr); ok {
		c.sentTranslated.Add(1)
		return c.conn.WriteToUDPAddrPort(b, lo)
	}
	if !loopbackNet.Contains(addr.Addr()) {
		c.droppedUnmapped.Add(1)
		return len(b), nil
	}
	c.sentLoopback.Add(1)
	return c.conn.WriteToUDPAddrPort(b, addr)
}

// ReadFromUDPAddrPort reads the next datagram from a loopback source and
// returns it with the source's public address when the source is mapped.
// Datagrams from outside 127.0.0.0/8 are discarded (DroppedForeign) and the
// read goes on, within the deadline of the underlying socket.
func (c *Conn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	for {
		n, from, err := c.conn.ReadFromUDPAddrPort(b)
		if err != nil {
			return n, from, err
		}
		if from, ok := c.source(from); ok {
			return n, from, nil
		}
	}
}

// source returns the address a datagram from the loopback address from is
// returned with (its public address when mapped), counting it; false for
// a source outside 127.0.0.0/8, counted as DroppedForeign.
func (c *Conn) source(from netip.AddrPort) (netip.AddrPort, bool) {
	from = unmap(from)
	if pub, ok := c.table.Public(from); ok {
		c.readTranslated.Add(1)
		return pub, true
	}
	if loopbackNet.Contains(from.Addr()) {
		c.readLoopback.Add(1)
		return from, true
	}
	c.droppedForeign.Add(1)
	return from, false
}

// stampedReader is the method of a socket that tells when the kernel
// received each datagram: probe.StampedConn's, which probe.KernelTimestamps
// returns on Linux.
type stampedReader interface {
	ReadStamped(b []byte) (n int, from netip.AddrPort, at time.Time, lag time.Duration, err error)
}

// ReadStamped is ReadFromUDPAddrPort with the kernel's receive time of the
// datagram, when the wrapped socket gives it (a Conn of
// probe.KernelTimestamps): at is that time on the monotonic clock and lag
// how long the datagram waited to be read (see probe.StampedConn). Over a
// socket without it, at is the time of the read and lag -1. A prober reads
// through it when present, so the RTTs it measures over an emulated world
// leave out the time a busy client took to read the replies, as they do
// over the Internet.
func (c *Conn) ReadStamped(b []byte) (int, netip.AddrPort, time.Time, time.Duration, error) {
	sr, stamped := c.conn.(stampedReader)
	for {
		var (
			n    int
			from netip.AddrPort
			at   time.Time
			lag  = time.Duration(-1)
			err  error
		)
		if stamped {
			n, from, at, lag, err = sr.ReadStamped(b)
		} else {
			n, from, err = c.conn.ReadFromUDPAddrPort(b)
			at = time.Now()
		}
		if err != nil {
			return n, from, at, lag, err
		}
		if from, ok := c.source(from); ok {
			return n, from, at, lag, nil
		}
	}
}

// msgReader is the optional method of *net.UDPConn that returns control
// messages, such as the kernel receive timestamp (SO_TIMESTAMPNS).
type msgReader interface {
	ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error)
}

// ErrNoMsg reports that the wrapped socket has no ReadMsgUDPAddrPort.
var ErrNoMsg = errors.New("loopnat: the wrapped socket cannot read control messages")

// ReadMsgUDPAddrPort is ReadFromUDPAddrPort with the control messages (oob)
// of the underlying *net.UDPConn: a prober that enables SO_TIMESTAMPNS gets
// the kernel's receive time, which is the accurate end of an RTT (see
// package world's delay figures). It translates and drops as
// ReadFromUDPAddrPort does.
func (c *Conn) ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error) {
	mr, ok := c.conn.(msgReader)
	if !ok {
		return 0, 0, 0, netip.AddrPort{}, ErrNoMsg
	}
	for {
		n, oobn, flags, from, err := mr.ReadMsgUDPAddrPort(b, oob)
		if err != nil {
			return n, oobn, flags, from, err
		}
		if from, ok := c.source(from); ok {
			return n, oobn, flags, from, nil
		}
	}
}

// Stats returns the counters so far.
func (c *Conn) Stats() Stats {
	return Stats{
		SentTranslated:  c.sentTranslated.Load(),
		SentLoopback:    c.sentLoopback.Load(),
		DroppedUnmapped: c.droppedUnmapped.Load(),
		ReadTranslated:  c.readTranslated.Load(),
		ReadLoopback:    c.readLoopback.Load(),
		DroppedForeign:  c.droppedForeign.Load(),
	}
}

// SetDeadline sets the underlying socket's deadlines.
func (c *Conn) SetDeadline(t time.Time) error { return c.conn.SetDeadline(t) }

// SetReadDeadline sets the underlying socket's read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.conn.SetReadDeadline(t) }

// SetWriteDeadline sets the underlying socket's write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }

// LocalAddr returns the underlying socket's (loopback) address.
func (c *Conn) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// Close closes the underlying socket.
func (c *Conn) Close() error { return c.conn.Close() }
