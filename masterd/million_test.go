package masterd

import "net/netip"

// millionServers is the listing size the master is sized for: a million
// servers.
const millionServers = 1_000_000

// millionGame is the game, protocol and heartbeat tag of the i-th
// synthetic server: 70 % Quake III Arena 68 (the full answer asked for),
// 15 % OpenArena 71, 15 % Xonotic 3.
func millionGame(i int) (name, proto, tag string) {
	switch i % 20 {
	case 14, 15, 16:
		return "OpenArena", "71", "DarkPlaces"
	case 17, 18, 19:
		return "Xonotic", "3", "DarkPlaces"
	}
	return "Quake3Arena", "68", "QuakeArena-1"
}

// millionAddr is the i-th synthetic server's address: one in four IPv6
// (a /64 per 2 servers), the others IPv4, all public and none real
// hosts' (nothing is sent to them: registration is in-process).
func millionAddr(i int) netip.AddrPort {
	port := uint16(27960 + i%8)
	n := i / 8
	if i%4 == 3 {
		var b [16]byte
		b[0], b[1], b[2], b[3] = 0x2a, 0x0f, 0x5c, 0x0a
		b[5], b[6], b[7], b[15] = byte(n>>16), byte(n>>8), byte(n), 1
		return netip.AddrPortFrom(netip.AddrFrom16(b), port)
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{23, byte(n >> 16), byte(n >> 8), byte(n)}), port)
}
