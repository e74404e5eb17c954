package discover

import (
	"context"
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/probe"
)

// LANPorts are the ports a Quake III client broadcasts getinfo to when it
// looks for servers on the local network (cl_main.c: NUM_SERVER_PORTS
// from PORT_SERVER).
var LANPorts = [...]uint16{27960, 27961, 27962, 27963}

// DefaultLANWindow is how long LAN replies are collected: a server on the
// local network answers within milliseconds; the Quake III client's
// browser waits about as long before it shows its first page.
const DefaultLANWindow = time.Second

// LANTargets returns getinfo requests to the LAN ports of addr, the
// network's broadcast address (255.255.255.255 in the Quake III client),
// or in tests a loopback address.
func LANTargets(addr netip.Addr) []probe.Target {
	out := make([]probe.Target, 0, len(LANPorts))
	for _, p := range LANPorts {
		out = append(out, probe.Target{Addr: netip.AddrPortFrom(addr, p), Dialect: probe.Q3Info})
	}
	return out
}

// LAN sends each target's request once and reports every server that
// answers within window (0 means DefaultLANWindow), from whatever address,
// through found. conn must be allowed to broadcast (Go sets SO_BROADCAST
// on its UDP sockets).
func LAN(ctx context.Context, conn probe.Conn, targets []probe.Target, window time.Duration, found func(Server)) (probe.Counts, error) {
	p := probe.Prober{Timeout: or(window, DefaultLANWindow), Attempts: 1}
	return p.Broadcast(ctx, conn, targets, func(r probe.Result) { found(Server{Result: r}) })
}
