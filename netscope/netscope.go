// Package netscope tells where an address can be reached from (the whole
// Internet, one site, one link, one host) and holds the rule that keeps a
// server list from aiming its reader at the reader's own network.
//
// A master server on the public Internet decides what its clients send
// datagrams to. A list that names 127.0.0.1, 192.168.1.1 or the master
// itself turns every client that probes it into a scanner of its own
// network, or of the master's. The Quake III client ignores lists of
// local addresses from a remote master; [Refused] is that rule, for the
// discovery client and for a master that learns servers from another
// master alike. A master that is itself local (a LAN or test master) may
// list local servers: that is what it is for.
//
// The ranges are those of IANA's special-purpose address registries
// (RFC 6890 and its updates); the package is pure.
package netscope

import "net/netip"

// Scope is how far an address reaches.
type Scope uint8

// Scopes. Every scope but Public is local: a datagram to it stays on a
// host, a link or a site, or goes nowhere.
const (
	Public        Scope = iota // routed on the Internet
	Unspecified                // 0.0.0.0, ::, and the rest of 0.0.0.0/8 ("this network")
	Loopback                   // 127.0.0.0/8, ::1
	Private                    // RFC 1918, shared address space (100.64.0.0/10), IPv6 unique local (fc00::/7) and site-local (fec0::/10)
	LinkLocal                  // 169.254.0.0/16, fe80::/10
	Multicast                  // 224.0.0.0/4, ff00::/8
	Documentation              // 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20
	Reserved                   // 240.0.0.0/4 with the broadcast, benchmarking (198.18.0.0/15, 2001:2::/48), IETF protocol assignments (192.0.0.0/24), discard-only (100::/64), IPv4-compatible (::/96)
)

var names = [...]string{"public", "unspecified", "loopback", "private", "link-local", "multicast", "documentation", "reserved"}

// String names the scope in lower case, as the counters and JSON do.
func (s Scope) String() string {
	if int(s) < len(names) {
		return names[s]
	}
	return "unknown"
}

// Local reports whether s is any scope but Public.
func (s Scope) Local() bool { return s != Public }

// prefixes maps the special-purpose ranges to their scopes. Loopback,
// link-local, multicast, private and unspecified are netip's own tests
// (Of); these are the rest.
var prefixes = []struct {
	p netip.Prefix
	s Scope
}{
	{netip.MustParsePrefix("0.0.0.0/8"), Unspecified},
	{netip.MustParsePrefix("100.64.0.0/10"), Private},
	{netip.MustParsePrefix("192.0.0.0/24"), Reserved},
	{netip.MustParsePrefix("192.0.2.0/24"), Documentation},
	{netip.MustParsePrefix("198.51.100.0/24"), Documentation},
	{netip.MustParsePrefix("203.0.113.0/24"), Documentation},
	{netip.MustParsePrefix("198.18.0.0/15"), Reserved},
	{netip.MustParsePrefix("240.0.0.0/4"), Reserved},
	{netip.MustParsePrefix("2001:db8::/32"), Documentation},
	{netip.MustParsePrefix("3fff::/20"), Documentation},
	{netip.MustParsePrefix("2001:2::/48"), Reserved},
	{netip.MustParsePrefix("100::/64"), Reserved},
	{netip.MustParsePrefix("fec0::/10"), Private},
	{netip.MustParsePrefix("::/96"), Reserved},
}

// Embedding prefixes: an IPv6 address that carries an IPv4 one reaches
// where the IPv4 address does (NAT64's well-known prefix, 6to4).
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// Of returns a's scope. IPv4-mapped IPv6 addresses are unmapped first;
// an invalid address is Unspecified.
func Of(a netip.Addr) Scope {
	a = a.Unmap().WithZone("")
	switch {
	case !a.IsValid() || a.IsUnspecified():
		return Unspecified
	case a.IsLoopback():
		return Loopback
	case a.IsMulticast():
		return Multicast
	case a.IsLinkLocalUnicast():
		return LinkLocal
	case a.IsPrivate():
		return Private
	case nat64.Contains(a):
		b := a.As16()
		return Of(netip.AddrFrom4([4]byte(b[12:16])))
	case sixTo4.Contains(a):
		b := a.As16()
		return Of(netip.AddrFrom4([4]byte(b[2:6])))
	}
	for _, p := range prefixes {
		if p.p.Contains(a) {
			return p.s
		}
	}
	return Public
}

// Reason is why a listed server is not probed: a Scope's name, or
// ReasonMaster. The empty Reason allows it.
type Reason string

// ReasonMaster refuses a server at the master's own address, on any port:
// a list can aim its clients at the master's host as well as at theirs.
const ReasonMaster Reason = "master"

// Refused decides whether a server that master listed may be probed (or,
// for a master, verified) without the user's leave: "" when it may, else
// why not. A master with a Public address may not list a server at a
// local address, nor at its own address (any port); a master at a local
// address (a LAN or test master) may list anything, its own host
// included. Ports are not looked at but for the master's identity.
func Refused(master, server netip.AddrPort) Reason {
	m := master.Addr().Unmap().WithZone("")
	if Of(m).Local() {
		return ""
	}
	s := server.Addr().Unmap().WithZone("")
	if sc := Of(s); sc.Local() {
		return Reason(sc.String())
	}
	if s == m {
		return ReasonMaster
	}
	return ""
}
