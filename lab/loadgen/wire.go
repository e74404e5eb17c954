package loadgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/scout-discovery/scout/protocol/q3"
)

// Wire layout of one getserversResponse datagram (see q3.ServersResponse):
//
//	FF FF FF FF "getserversResponse" { '\' a4 p2 } [ '\' "EOT" 00 00 00 ]
const (
	responseHeader = q3.Prefix + "getserversResponse"
	entryLen       = 7
	eotMarker      = "\\EOT\x00\x00\x00"
)

// errNotList is returned for a datagram that is not a getserversResponse.
var errNotList = errors.New("loadgen: not a getserversResponse")

// countEntries counts the IPv4 entries of one getserversResponse datagram
// and reports whether it ends with the EOT marker. It allocates nothing:
// the load generator counts hundreds of thousands of datagrams a second
// on the core it shares with nothing but the kernel. q3.Parse is the
// reference it is tested against (FuzzCountEntries). A datagram that
// breaks off mid-entry, has bytes after EOT, or an entry with port 0 or
// address 0.0.0.0, is an error.
func countEntries(p []byte) (entries int, eot bool, err error) {
	if len(p) < len(responseHeader) || string(p[:len(responseHeader)]) != responseHeader {
		return 0, false, errNotList
	}
	p = p[len(responseHeader):]
	for len(p) > 0 {
		if p[0] != '\\' {
			return entries, false, fmt.Errorf("loadgen: byte %#02x at entry %d", p[0], entries)
		}
		if len(p) >= len(eotMarker) && string(p[:len(eotMarker)]) == eotMarker {
			if len(p) != len(eotMarker) {
				return entries, true, fmt.Errorf("loadgen: %d bytes after EOT", len(p)-len(eotMarker))
			}
			return entries, true, nil
		}
		if len(p) < entryLen {
			return entries, false, fmt.Errorf("loadgen: entry %d cut at %d of %d bytes", entries, len(p), entryLen)
		}
		// What no master sends, and q3.Parse refuses: port 0, 0.0.0.0.
		if binary.LittleEndian.Uint16(p[5:7]) == 0 || binary.LittleEndian.Uint32(p[1:5]) == 0 {
			return entries, false, fmt.Errorf("loadgen: entry %d: port 0 or address 0.0.0.0", entries)
		}
		entries++
		p = p[entryLen:]
	}
	return entries, false, nil
}

// Layout returns n addresses for emulated servers or query sources: perAddr
// consecutive ports from port on each address, addresses counting up from
// base and skipping those whose last byte is 0 or 255. Every address must
// stay inside 127.0.0.0/8.
func Layout(base netip.Addr, port uint16, n, perAddr int) ([]netip.AddrPort, error) {
	if !base.Is4() || !base.IsLoopback() {
		return nil, fmt.Errorf("loadgen: base %v is not an IPv4 loopback address", base)
	}
	if n < 0 || perAddr < 1 || int(port)+perAddr-1 > 65535 || (port == 0 && perAddr != 1) {
		return nil, fmt.Errorf("loadgen: %d addresses, %d per address from port %d", n, perAddr, port)
	}
	out := make([]netip.AddrPort, 0, n)
	a := base
	for len(out) < n {
		for b := a.As4(); b[3] == 0 || b[3] == 255; b = a.As4() {
			a = a.Next()
		}
		if !a.IsLoopback() {
			return nil, fmt.Errorf("loadgen: %d addresses from %v leave 127.0.0.0/8", n, base)
		}
		for k := 0; k < perAddr && len(out) < n; k++ {
			out = append(out, netip.AddrPortFrom(a, port+uint16(k)))
		}
		a = a.Next()
	}
	return out, nil
}

// SpreadLayout returns n source addresses (port 0) spread round-robin
// over nets /16s: source i is in the /16 nets after base's by i%nets and
// is the (i/nets)-th address of it from base's last two bytes, so that no
// two sources share a /24 and a /16 holds at most ceil(n/nets) of them:
// clients from many networks, as a master's per-network limits see them.
// nets <= 1 is Layout's consecutive addresses.
func SpreadLayout(base netip.Addr, n, nets int) ([]netip.AddrPort, error) {
	if nets <= 1 {
		return Layout(base, 0, n, 1)
	}
	if !base.Is4() || !base.IsLoopback() || n < 0 {
		return nil, fmt.Errorf("loadgen: %d sources from %v", n, base)
	}
	b := base.As4()
	per := (n + nets - 1) / nets
	if int(b[1])+nets > 256 || int(b[2])+per > 256 {
		return nil, fmt.Errorf("loadgen: %d sources over %d /16s from %v leave 127.0.0.0/8", n, nets, base)
	}
	out := make([]netip.AddrPort, 0, n)
	for i := range n {
		a := [4]byte{127, b[1] + byte(i%nets), b[2] + byte(i/nets), max(b[3], 1)}
		out = append(out, netip.AddrPortFrom(netip.AddrFrom4(a), 0))
	}
	return out, nil
}
