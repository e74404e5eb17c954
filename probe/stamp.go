package probe

import (
	"net"
	"net/netip"
	"time"
)

// StampedConn is a Conn that can tell when the kernel received each
// datagram. Run and Stream read through ReadStamped when conn has it.
type StampedConn interface {
	Conn
	// ReadStamped reads like ReadFromUDPAddrPort and returns the receive
	// time on the monotonic clock, and lag, how long the datagram waited
	// between the kernel's timestamp and the read (-1 when the kernel gave
	// no timestamp and at is the time of the read).
	ReadStamped(b []byte) (n int, from netip.AddrPort, at time.Time, lag time.Duration, err error)
}

// maxStampLag bounds the lag a kernel timestamp may claim. The timestamp
// is on the wall clock, the send times on the monotonic one; only the
// short span between the kernel and the read is taken from the wall clock,
// and a span outside [0, maxStampLag] (the wall clock stepped) is ignored.
const maxStampLag = time.Second

// stampAt returns the monotonic receive time of a datagram read at now
// (monotonic and wall) that the kernel stamped at kernel (wall).
func stampAt(now, kernel time.Time) (time.Time, time.Duration) {
	lag := now.Sub(kernel) // wall clock: kernel has no monotonic reading
	if lag < 0 || lag > maxStampLag {
		return now, -1
	}
	return now.Add(-lag), lag
}

// KernelTimestamps returns a Conn that reads c with the kernel's receive
// timestamps where the platform gives them (Linux: SO_TIMESTAMPNS), and
// whether it does. Elsewhere it returns c, timed at the read.
func KernelTimestamps(c *net.UDPConn) (Conn, bool) { return kernelTimestamps(c) }
