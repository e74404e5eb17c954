//go:build !linux

package probe

import "net"

// Elsewhere than Linux datagrams are timed at their read.
func kernelTimestamps(c *net.UDPConn) (Conn, bool) {
	conn, _ := portableWrap(c)
	return conn, false
}
