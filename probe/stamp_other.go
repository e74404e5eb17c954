//go:build !linux

package probe

import "net"

func kernelTimestamps(c *net.UDPConn) (Conn, bool) { return c, false }
