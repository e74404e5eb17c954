package population

import "net/netip"

// reservedBlocks returns the IPv4 blocks no game server is placed in (RFC 6890 and
// the multicast and future-use space).
func reservedBlocks() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.0.0.0/24"),
		netip.MustParsePrefix("192.0.2.0/24"),
		netip.MustParsePrefix("192.88.99.0/24"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("224.0.0.0/3"),
	}
}

// Reserved reports whether a lies in a private, shared, loopback,
// link-local, documentation, benchmarking, multicast or future-use IPv4
// block, or is not IPv4.
func Reserved(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() {
		return true
	}
	for _, p := range reservedBlocks() {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
