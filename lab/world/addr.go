package world

import (
	"net/netip"
)

// emulatorNet is where emulated servers live: 127.0.0.0/8. Their addresses
// are handed out from 127.1.0.1 upwards, leaving 127.0.0.0/16 to the
// programs that talk to the world (masters, clients on 127.0.0.1).
var emulatorNet = netip.MustParsePrefix("127.0.0.0/8")

// reservedNet is 127.0.0.0/16, never given to an emulated server.
var reservedNet = netip.MustParsePrefix("127.0.0.0/16")

// notPublic lists the IPv4 ranges that are not public unicast: IANA's
// special-purpose address registry (RFC 6890 and updates), multicast and
// the reserved class E. Generated public addresses are never drawn from
// them.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("10.0.0.0/8"),      // private, RFC 1918
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT, RFC 6598
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link local
	netip.MustParsePrefix("172.16.0.0/12"),   // private, RFC 1918
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("192.31.196.0/24"), // AS112-v4
	netip.MustParsePrefix("192.52.193.0/24"), // AMT
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast (deprecated)
	netip.MustParsePrefix("192.168.0.0/16"),  // private, RFC 1918
	netip.MustParsePrefix("192.175.48.0/24"), // direct delegation AS112
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and 255.255.255.255
}

// IsPublic reports whether a is a public unicast IPv4 address: IPv4 (or
// IPv4-mapped) and in none of the special-purpose ranges.
func IsPublic(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// loopbackHost returns the i-th emulator address: 127.1.0.1, 127.1.0.2,
// ..., 127.1.0.254, 127.1.1.1, ... (host bytes 0 and 255 skipped), so that
// i from 0 to 254*256*254-1 maps to distinct addresses outside
// 127.0.0.0/16.
func loopbackHost(i int) netip.Addr {
	const perC = 254
	c := i % perC
	b := (i / perC) % 256
	a := i / (perC * 256)
	return netip.AddrFrom4([4]byte{127, byte(1 + a), byte(b), byte(1 + c)})
}

// maxLoopbackHosts is how many addresses loopbackHost hands out.
const maxLoopbackHosts = 254 * 256 * 254
