//go:build !linux

package world

import (
	"errors"
	"net/netip"
	"time"
)

// The emulator's sockets need Linux: epoll, SO_TIMESTAMPNS, and all of
// 127.0.0.0/8 routed to lo. The model, the generator and the responders
// build everywhere.

var errUnsupported = errors.New("world: the emulator runs on Linux only")

type sockets struct{}

// SocketMode chooses how servers are given sockets (see the Linux build).
type SocketMode uint8

// Socket modes.
const (
	SocketsAuto SocketMode = iota
	SocketsPerServer
	SocketsPerPort
)

func (s *sockets) count() int { return 0 }

func openSockets([]netip.AddrPort, SocketMode) (*sockets, []netip.AddrPort, error) {
	return nil, nil, errUnsupported
}
func (s *sockets) readLoop(func(int, netip.AddrPort, []byte, time.Time)) error {
	return errUnsupported
}
func (s *sockets) stopReading()                           {}
func (s *sockets) send(int, netip.AddrPort, []byte) error { return errUnsupported }
func (s *sockets) close()                                 {}

func lockRealTime() bool    { return false }
func sleep(d time.Duration) { time.Sleep(d) }
