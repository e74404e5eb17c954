package master

import (
	"fmt"
	"net/netip"
	"strings"
)

// classify checks a server's source address: its Unmap()ed form and OK, or
// a reason to refuse it. Loopback servers are refused unless allowLoopback
// or a mapping exists for them (dpmaster's rule: a mapped loopback server is
// published under its public mapping).
func classify(a netip.AddrPort, allowLoopback, refusePrivate bool, m *AddrMap) (netip.AddrPort, Reason) {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	ip := a.Addr()
	if !ip.IsValid() || ip.IsUnspecified() || ip.IsMulticast() || a.Port() == 0 ||
		(ip.Is4() && ip == netip.AddrFrom4([4]byte{255, 255, 255, 255})) || ip.Zone() != "" {
		return a, ReasonBadAddress
	}
	if ip.IsLoopback() && !allowLoopback {
		if _, mapped := m.Map(a); !mapped {
			return a, ReasonLoopback
		}
	}
	if refusePrivate && (ip.IsPrivate() || ip.IsLinkLocalUnicast()) {
		if _, mapped := m.Map(a); !mapped {
			return a, ReasonPrivate
		}
	}
	return a, OK
}

// Mapping is one dpmaster "-m FROM=TO" address mapping: a server seen at
// From is published to clients as To. A zero From port maps every port of
// the host; a zero To port keeps the server's port.
type Mapping struct {
	From, To netip.AddrPort
}

// AddrMap is dpmaster's -m address mapping table, as a pure lookup: a
// server behind the master's NAT (at a private or loopback address) is
// listed under a configured public address. Exact host:port mappings win
// over host-wide ones. It is immutable after NewAddrMap and safe for
// concurrent use; a nil *AddrMap maps nothing.
type AddrMap struct {
	exact map[netip.AddrPort]netip.AddrPort
	host  map[netip.Addr]netip.AddrPort
}

// ParseMapping parses "FROM=TO" where each side is a numeric IP address
// with an optional ":port" (IPv6 in brackets). Host names are the caller's
// to resolve first, as dpmaster resolves them at start-up.
func ParseMapping(s string) (Mapping, error) {
	from, to, ok := strings.Cut(s, "=")
	if !ok {
		return Mapping{}, fmt.Errorf("master: mapping %q: want FROM=TO", s)
	}
	f, err := parseHostPort(from)
	if err != nil {
		return Mapping{}, fmt.Errorf("master: mapping %q: %w", s, err)
	}
	t, err := parseHostPort(to)
	if err != nil {
		return Mapping{}, fmt.Errorf("master: mapping %q: %w", s, err)
	}
	return Mapping{From: f, To: t}, nil
}

func parseHostPort(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(a, 0), nil
}

// NewAddrMap checks and indexes mappings. As in dpmaster, mapping from or
// to an unspecified address, or to a loopback address, is refused, as are
// two mappings from the same address, and mappings across address families.
func NewAddrMap(ms ...Mapping) (*AddrMap, error) {
	m := &AddrMap{exact: make(map[netip.AddrPort]netip.AddrPort), host: make(map[netip.Addr]netip.AddrPort)}
	for _, x := range ms {
		f := netip.AddrPortFrom(x.From.Addr().Unmap(), x.From.Port())
		t := netip.AddrPortFrom(x.To.Addr().Unmap(), x.To.Port())
		switch {
		case !f.Addr().IsValid() || !t.Addr().IsValid() || f.Addr().IsUnspecified() || t.Addr().IsUnspecified():
			return nil, fmt.Errorf("master: mapping %v=%v: from or to an unspecified address", f, t)
		case t.Addr().IsLoopback():
			return nil, fmt.Errorf("master: mapping %v=%v: to a loopback address", f, t)
		case f.Addr().Is4() != t.Addr().Is4():
			return nil, fmt.Errorf("master: mapping %v=%v: across address families", f, t)
		}
		if f.Port() == 0 {
			if _, dup := m.host[f.Addr()]; dup {
				return nil, fmt.Errorf("master: several mappings for %v", f.Addr())
			}
			m.host[f.Addr()] = t
		} else {
			if _, dup := m.exact[f]; dup {
				return nil, fmt.Errorf("master: several mappings for %v", f)
			}
			m.exact[f] = t
		}
	}
	return m, nil
}

// Map returns the address under which a server at a is published, and
// whether a mapping applied.
func (m *AddrMap) Map(a netip.AddrPort) (netip.AddrPort, bool) {
	if m == nil {
		return a, false
	}
	t, ok := m.exact[a]
	if !ok {
		t, ok = m.host[a.Addr()]
	}
	if !ok {
		return a, false
	}
	if t.Port() == 0 {
		t = netip.AddrPortFrom(t.Addr(), a.Port())
	}
	return t, true
}
