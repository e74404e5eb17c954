//go:build !linux

package probe

import "net"

// Elsewhere an unconnected socket learns nothing of ICMP errors (Go on
// Windows turns SIO_UDP_CONNRESET off; the BSDs and macOS report them to
// connected sockets only): a closed port times out.
func wrap(c *net.UDPConn) (Conn, Features) { return portableWrap(c) }
