//go:build linux

package probe

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// icmpConn reads a UDP socket with IP_RECVERR (and IPV6_RECVERR) set: the
// kernel then queues the ICMP errors that answer the socket's datagrams
// on its error queue, read with recvmsg(MSG_ERRQUEUE), and also sets the
// socket's pending error, which the next read or write returns once
// (ECONNREFUSED for a closed port) whatever its own destination.
type icmpConn struct {
	*stampConn
	rc syscall.RawConn
}

// maxICMPQueueRead bounds the errors one ReadICMP takes, so a flood of
// ICMP cannot hold the caller; the rest stay queued for the next call
// (the kernel bounds the queue by the socket's receive buffer).
const maxICMPQueueRead = 64

// icmpQuoteMax is the most of the quoted payload ReadICMP keeps: more than
// any request of this package.
const icmpQuoteMax = 512

func wrap(c *net.UDPConn) (Conn, Features) {
	rc, err := c.SyscallConn()
	if err != nil {
		return c, Features{}
	}
	var f Features
	var v4err, v6err error
	if err := rc.Control(func(fd uintptr) {
		f.KernelTimestamps = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) == nil
		// An AF_INET6 socket (Go's "udp" on the wildcard) takes both:
		// IPV6_RECVERR for IPv6 peers, IP_RECVERR for IPv4-mapped ones.
		// An AF_INET socket refuses the IPv6 option.
		v4err = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_RECVERR, 1)
		v6err = unix.SetsockoptInt(int(fd), unix.SOL_IPV6, unix.IPV6_RECVERR, 1)
	}); err != nil {
		return c, Features{}
	}
	f.ICMPErrors = v4err == nil || v6err == nil
	sc := &stampConn{UDPConn: c, oob: make([]byte, unix.CmsgSpace(16))}
	if !f.ICMPErrors {
		if f.KernelTimestamps {
			return sc, f
		}
		return c, f
	}
	return &icmpConn{stampConn: sc, rc: rc}, f
}

// ICMPReported: the errnos Linux maps ICMP errors to (icmp_err_convert,
// icmpv6_err_convert), which IP_RECVERR makes a read or write return.
func (c *icmpConn) ICMPReported(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH, unix.EHOSTDOWN, unix.ENONET,
		unix.ENOPROTOOPT, unix.EOPNOTSUPP, unix.EMSGSIZE, unix.EPROTO, unix.EACCES:
		return true
	}
	return false
}

// ReadICMP drains the error queue (up to maxICMPQueueRead entries). It
// goes through Control, not Read: Run's reader goroutine holds the read
// side while it waits for a datagram, and the writer must be able to
// drain the queue meanwhile. The socket is non-blocking; MSG_DONTWAIT
// says so again.
func (c *icmpConn) ReadICMP() ([]ICMPError, error) {
	var out []ICMPError
	var rerr error
	buf := make([]byte, icmpQuoteMax)
	oob := make([]byte, 256)
	err := c.rc.Control(func(fd uintptr) {
		for range maxICMPQueueRead {
			n, oobn, flags, from, err := unix.Recvmsg(int(fd), buf, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
			if err != nil {
				if err != unix.EAGAIN && err != unix.EWOULDBLOCK && err != unix.EINTR {
					rerr = err
				}
				return
			}
			if flags&unix.MSG_CTRUNC != 0 {
				continue
			}
			if e, ok := parseErrQueue(from, buf[:n], oob[:oobn]); ok {
				out = append(out, e)
			}
		}
	})
	if err == nil {
		err = rerr
	}
	return out, err
}

// sock_extended_err: errno:4 origin:1 type:1 code:1 pad:1 info:4 data:4,
// then the offender's sockaddr.
const sizeofSockExtendedErr = 16

// parseErrQueue reads one error-queue message: the original destination
// (msg_name), the quoted payload (the data) and the IP_RECVERR or
// IPV6_RECVERR control message. Errors that did not come by ICMP (local
// ones, timestamps) are skipped.
func parseErrQueue(to unix.Sockaddr, quote, oob []byte) (ICMPError, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return ICMPError{}, false
	}
	for _, m := range msgs {
		if !(m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR) &&
			!(m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_RECVERR) {
			continue
		}
		d := m.Data
		if len(d) < sizeofSockExtendedErr {
			return ICMPError{}, false
		}
		e := ICMPError{Type: d[5], Code: d[6], Quote: append([]byte(nil), quote...)}
		switch d[4] {
		case unix.SO_EE_ORIGIN_ICMP:
		case unix.SO_EE_ORIGIN_ICMP6:
			e.V6 = true
		default:
			return ICMPError{}, false
		}
		e.To = sockaddrAddrPort(to)
		e.From = offender(d[sizeofSockExtendedErr:])
		return e, e.To.IsValid()
	}
	return ICMPError{}, false
}

func sockaddrAddrPort(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// offender reads the sockaddr_in or sockaddr_in6 that follows the
// sock_extended_err (SO_EE_OFFENDER); family AF_UNSPEC means unknown.
func offender(b []byte) netip.Addr {
	if len(b) < 2 {
		return netip.Addr{}
	}
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) >= 8 {
			return netip.AddrFrom4([4]byte(b[4:8]))
		}
	case unix.AF_INET6:
		if len(b) >= 24 {
			return netip.AddrFrom16([16]byte(b[8:24])).Unmap()
		}
	}
	return netip.Addr{}
}
