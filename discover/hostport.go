package discover

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/scout-discovery/scout/probe"
)

// HostPort is a master's or a server's address as a user gave it: a
// literal address, or a host name to resolve when it is asked.
type HostPort struct {
	// Text is the address as given.
	Text string
	// Literal is the address when Text is one (IPv4-mapped IPv6
	// unmapped); zero for a host name.
	Literal netip.AddrPort
	// Host and Port are the host name to resolve and the port, for a
	// host name.
	Host string
	Port uint16
}

// ParseHostPort reads host, host:port, an IPv4 or IPv6 literal, or
// [IPv6]:port; a missing port is defPort.
func ParseHostPort(s string, defPort uint16) (HostPort, error) {
	hp := HostPort{Text: s, Port: defPort}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		hp.Literal = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		return hp, nil
	}
	host := s
	bare := s
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		bare = s[1 : len(s)-1]
	}
	if ip, err := netip.ParseAddr(bare); err == nil {
		hp.Literal = netip.AddrPortFrom(ip.Unmap(), defPort) // bare address, IPv6 with or without brackets
		return hp, nil
	}
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return hp, fmt.Errorf("bad port in %q", s)
		}
		host, hp.Port = h, uint16(n)
	}
	if host == "" || strings.ContainsAny(host, "[]/ ") || strings.Count(host, ":") > 0 {
		return hp, fmt.Errorf("bad address %q (want host, host:port or [IPv6]:port)", s)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		hp.Literal = netip.AddrPortFrom(ip.Unmap(), hp.Port)
		return hp, nil
	}
	hp.Host = host
	return hp, nil
}

// Resolve returns the address to ask: the literal, or the host name's
// first address (IPv4 preferred, as game servers mostly are).
func (hp HostPort) Resolve(ctx context.Context) (netip.AddrPort, error) {
	if hp.Literal.IsValid() {
		return hp.Literal, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", hp.Host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("resolving %s: %w", hp.Host, err)
	}
	best := ips[0]
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			best = ip
			break
		}
	}
	return netip.AddrPortFrom(best.Unmap(), hp.Port), nil
}

// QueryHosts asks the servers hosts names with dialect d, by p, and
// returns a result per host in their order: a host that does not resolve
// gets its error in its result, unprobed. err is set when nothing could
// be queried at all.
func QueryHosts(ctx context.Context, p *probe.Prober, d probe.Dialect, hosts []HostPort) ([]probe.Result, error) {
	results := make([]probe.Result, len(hosts))
	var targets []probe.Target
	var index []int // targets[j] is hosts[index[j]]
	for i, h := range hosts {
		results[i].Game = d.Name()
		ap, err := h.Resolve(ctx)
		if err != nil {
			results[i].Err = err
			continue
		}
		results[i].Addr = ap
		targets = append(targets, probe.Target{Addr: ap, Dialect: d})
		index = append(index, i)
	}
	got, _, err := p.Query(ctx, targets)
	if err != nil && len(got) == 0 {
		return results, err
	}
	for j, r := range got {
		results[index[j]] = r
	}
	return results, nil
}
