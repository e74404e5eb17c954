package geo

import "net/netip"

// A ReservedPrefix is an address block that is never geolocated: it is
// private, shared, local to a host or link, multicast, set aside for
// documentation or benchmarking, or not allocated for unicast use at all.
// Addresses in it reach different machines from different places, or none,
// so no country or autonomous system can be attached to them, whatever a
// table says (some free tables map 10.0.0.0/8 to a country).
type ReservedPrefix struct {
	Prefix netip.Prefix
	Name   string // what the block is, with the document that sets it aside
}

// reserved lists the blocks that are never geolocated, after the IANA IPv4
// and IPv6 Special-Purpose Address Registries (RFC 6890 and its updates) and
// the IANA IPv6 Address Space registry. It is an array, so it cannot grow or
// be appended to. The generator leaves these blocks out of the embedded data
// and every lookup refuses them, so data from any source (a user's .mmdb, an
// old CSV table) cannot place them.
//
// Blocks that are special but reach one real host everywhere, such as the
// 192.0.0.9/32 and 192.0.0.10/32 anycast services, are still refused when
// they sit inside a larger reserved block: no game server lives there.
var reserved = [...]ReservedPrefix{
	// IPv4.
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network" (RFC 791, RFC 1122)`},
	{netip.MustParsePrefix("10.0.0.0/8"), "private-use (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space, carrier-grade NAT (RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (RFC 1122)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (RFC 3927)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private-use (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (RFC 6890)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation, TEST-NET-1 (RFC 5737)"},
	{netip.MustParsePrefix("192.31.196.0/24"), "AS112-v4 (RFC 7535)"},
	{netip.MustParsePrefix("192.52.193.0/24"), "AMT relay anycast (RFC 7450)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "deprecated 6to4 relay anycast (RFC 7526)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private-use (RFC 1918)"},
	{netip.MustParsePrefix("192.175.48.0/24"), "direct delegation AS112 service (RFC 7534)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (RFC 2544)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation, TEST-NET-2 (RFC 5737)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation, TEST-NET-3 (RFC 5737)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (RFC 5771)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved for future use, and limited broadcast 255.255.255.255 (RFC 1112, RFC 919)"},

	// IPv6. Only 2000::/3 is allocated for global unicast (RFC 4291, section
	// 2.4; IANA IPv6 Address Space); the blocks outside it are listed so that
	// the table covers all of ::/0 except 2000::/3, then the reserved parts of
	// 2000::/3 follow.
	{netip.MustParsePrefix("::/3"), "not global unicast: unspecified ::, loopback ::1, IPv4-compatible and IPv4-mapped (after Unmap), NAT64 64:ff9b::/96 (RFC 6052, RFC 8215), discard-only 100::/64 (RFC 6666)"},
	{netip.MustParsePrefix("4000::/2"), "not allocated (IANA IPv6 Address Space)"},
	{netip.MustParsePrefix("8000::/2"), "not allocated (IANA IPv6 Address Space)"},
	{netip.MustParsePrefix("c000::/3"), "not allocated (IANA IPv6 Address Space)"},
	{netip.MustParsePrefix("e000::/4"), "not allocated (IANA IPv6 Address Space)"},
	{netip.MustParsePrefix("f000::/5"), "not allocated (IANA IPv6 Address Space)"},
	{netip.MustParsePrefix("f800::/6"), "not allocated (IANA IPv6 Address Space)"},
	{netip.MustParsePrefix("fc00::/7"), "unique local, ULA (RFC 4193)"},
	{netip.MustParsePrefix("fe00::/9"), "not allocated (IANA IPv6 Address Space)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local unicast (RFC 4291)"},
	{netip.MustParsePrefix("fec0::/10"), "deprecated site-local (RFC 3879)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast (RFC 4291)"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments: Teredo, benchmarking 2001:2::/48, AS112, ORCHID (RFC 2928, RFC 4380, RFC 5180, RFC 7343)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (RFC 3849)"},
	{netip.MustParsePrefix("2002::/16"), "6to4 (RFC 3056): the host is wherever its embedded IPv4 address is"},
	{netip.MustParsePrefix("2620:4f:8000::/48"), "direct delegation AS112 service (RFC 7534)"},
	{netip.MustParsePrefix("3fff::/20"), "documentation (RFC 9637)"},
}

// Reserved reports whether addr is in a block that is never geolocated, and
// which block. An IPv4-mapped IPv6 address is judged as the IPv4 address it
// carries. The zero Addr is reported as not reserved, and not geolocated
// either.
func Reserved(addr netip.Addr) (netip.Prefix, bool) {
	addr = addr.Unmap()
	if !addr.IsValid() {
		return netip.Prefix{}, false
	}
	for i := range reserved {
		if reserved[i].Prefix.Contains(addr) {
			return reserved[i].Prefix, true
		}
	}
	return netip.Prefix{}, false
}

// ReservedPrefixes returns a new slice of the blocks that are never
// geolocated, IPv4 first, with a short description of each.
func ReservedPrefixes() []ReservedPrefix {
	return append([]ReservedPrefix(nil), reserved[:]...)
}

// clipReserved returns the largest prefix containing addr, no longer than p
// reaches, that overlaps no reserved block. addr must be in p and must not be
// reserved itself, so the loop ends at the latest at addr's host prefix.
func clipReserved(p netip.Prefix, addr netip.Addr) netip.Prefix {
	for i := 0; i < len(reserved); {
		if !reserved[i].Prefix.Overlaps(p) {
			i++
			continue
		}
		p = netip.PrefixFrom(addr, p.Bits()+1).Masked()
		i = 0
	}
	return p
}
