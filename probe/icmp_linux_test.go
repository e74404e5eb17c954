//go:build linux

package probe

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"unsafe"

	"golang.org/x/sys/unix"
)

// errQueueCmsg builds the control message Linux gives with an error-queue
// read on an AF_INET6 socket: IPV6_RECVERR, a sock_extended_err, then the
// offender as a sockaddr_in6 (as read on this machine for a closed port
// on 127.0.0.1: origin 2, type 3, code 3, offender ::ffff:127.0.0.1).
func errQueueCmsg(origin, typ, code uint8, offender netip.Addr) []byte {
	data := make([]byte, sizeofSockExtendedErr+28)
	binary.NativeEndian.PutUint32(data, uint32(unix.ECONNREFUSED))
	data[4], data[5], data[6] = origin, typ, code
	binary.NativeEndian.PutUint16(data[16:], unix.AF_INET6)
	a := offender.As16()
	copy(data[24:40], a[:])
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.SOL_IPV6, unix.IPV6_RECVERR
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func TestParseErrQueue(t *testing.T) {
	to := &unix.SockaddrInet6{Port: 27960, Addr: netip.MustParseAddr("::ffff:127.0.0.1").As16()}
	lo := netip.MustParseAddr("127.0.0.1")
	e, ok := parseErrQueue(to, []byte("quote"), errQueueCmsg(unix.SO_EE_ORIGIN_ICMP, 3, 3, lo))
	if !ok || e.To != netip.MustParseAddrPort("127.0.0.1:27960") || e.From != lo || e.V6 || e.Kind() != UnreachablePort || string(e.Quote) != "quote" {
		t.Fatalf("got %+v, %v", e, ok)
	}
	if e, ok := parseErrQueue(to, nil, errQueueCmsg(unix.SO_EE_ORIGIN_ICMP6, 1, 4, netip.IPv6Loopback())); !ok || !e.V6 || e.Kind() != UnreachablePort {
		t.Fatalf("ICMPv6: %+v, %v", e, ok)
	}
	if _, ok := parseErrQueue(to, nil, errQueueCmsg(unix.SO_EE_ORIGIN_LOCAL, 0, 0, lo)); ok {
		t.Fatal("a local error was taken for an ICMP error")
	}
	if _, ok := parseErrQueue(to, nil, errQueueCmsg(unix.SO_EE_ORIGIN_ICMP, 3, 3, lo)[:20]); ok {
		t.Fatal("a cut control message parsed")
	}
}

// FuzzParseErrQueue: whatever the control bytes, no panic, and a result
// only with a valid destination.
func FuzzParseErrQueue(f *testing.F) {
	f.Add([]byte("q"), errQueueCmsg(unix.SO_EE_ORIGIN_ICMP, 3, 3, netip.MustParseAddr("127.0.0.1")))
	f.Add([]byte{}, errQueueCmsg(unix.SO_EE_ORIGIN_ICMP6, 1, 4, netip.IPv6Loopback()))
	to := &unix.SockaddrInet4{Port: 1, Addr: [4]byte{127, 0, 0, 1}}
	f.Fuzz(func(t *testing.T, quote, oob []byte) {
		if e, ok := parseErrQueue(to, quote, oob); ok && !e.To.IsValid() {
			t.Fatalf("%+v without a destination", e)
		}
		offender(oob)
	})
}
