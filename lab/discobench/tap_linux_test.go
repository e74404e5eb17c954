//go:build linux

package discobench

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestTap_CountsLoopbackDatagramsAndSegmentedSends(t *testing.T) {
	tp, err := openTap()
	if err != nil {
		t.Skipf("no tap here: %v", err)
	}
	defer tp.close()
	lc := func() *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	client, server := lc(), lc()
	saddr := server.LocalAddr().(*net.UDPAddr).AddrPort()
	caddr := client.LocalAddr().(*net.UDPAddr).AddrPort()

	tp.begin()
	for range 5 {
		if _, err := client.WriteToUDPAddrPort([]byte("\xff\xff\xff\xffgetinfo 1ITGmfJN2wC"), saddr); err != nil {
			t.Fatal(err)
		}
	}
	// One send the kernel cuts into 100 + 100 + 100 + 40 bytes.
	oob := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(oob[unix.CmsgLen(0):], 100)
	if _, _, err := server.WriteMsgUDPAddrPort(make([]byte, 340), oob, caddr); err != nil {
		t.Skipf("UDP_SEGMENT send: %v", err)
	}
	pkts, drops, over, err := tp.end()
	if err != nil {
		t.Fatal(err)
	}
	tr := classify(pkts, netip.MustParseAddrPort("127.0.0.1:1"), func(a netip.AddrPort) bool { return a == saddr })
	if tr.ToServers != (Flow{5, 5 * 23}) || tr.FromServers != (Flow{4, 340}) || drops != 0 || over != 0 {
		t.Fatalf("traffic %+v, drops %d, overflow %d", tr, drops, over)
	}
	// Nothing is recorded outside a window.
	client.WriteToUDPAddrPort([]byte("x"), saddr)
	tp.begin()
	pkts, _, _, _ = tp.end()
	if tr := classify(pkts, netip.AddrPort{}, func(a netip.AddrPort) bool { return a == saddr }); tr.ToServers.Datagrams != 0 {
		t.Errorf("a datagram from before the window was counted: %+v", tr)
	}
}
