//go:build linux

package probe

import (
	"encoding/binary"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// stampConn reads a UDP socket with SO_TIMESTAMPNS set: each datagram
// carries a SCM_TIMESTAMPNS control message, the time the kernel queued
// it on the socket (CLOCK_REALTIME, in a struct timespec).
type stampConn struct {
	*net.UDPConn
	oob []byte // one reader at a time (Run's reader goroutine)
}

func kernelTimestamps(c *net.UDPConn) (Conn, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return c, false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c, false
	}
	return &stampConn{UDPConn: c, oob: make([]byte, unix.CmsgSpace(16))}, true
}

func (c *stampConn) ReadStamped(b []byte) (int, netip.AddrPort, time.Time, time.Duration, error) {
	n, oobn, _, from, err := c.ReadMsgUDPAddrPort(b, c.oob)
	now := time.Now()
	if err != nil {
		return n, from, now, -1, err
	}
	if k, ok := parseTimestampNS(c.oob[:oobn]); ok {
		at, lag := stampAt(now, k)
		return n, from, at, lag, nil
	}
	return n, from, now, -1, nil
}

// parseTimestampNS finds SCM_TIMESTAMPNS in control messages.
func parseTimestampNS(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_TIMESTAMPNS {
			continue
		}
		switch len(m.Data) {
		case 16: // 64-bit time_t and long
			sec := int64(binary.NativeEndian.Uint64(m.Data[:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:]))
			return time.Unix(sec, nsec), true
		case 8: // 32-bit
			sec := int64(int32(binary.NativeEndian.Uint32(m.Data[:4])))
			nsec := int64(int32(binary.NativeEndian.Uint32(m.Data[4:])))
			return time.Unix(sec, nsec), true
		}
	}
	return time.Time{}, false
}
