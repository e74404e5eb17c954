//go:build linux

package world

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"
)

// sockets is the emulator's set of UDP sockets, one per server, read
// through one epoll instance by one goroutine (readLoop) and written by one
// other (the releaser, through send). A socket per server keeps each
// server's identity (address and port) exactly what the kernel shows any
// client; serving many addresses from one socket would need a wildcard bind
// with IP_PKTINFO, which also receives from off-loopback interfaces and
// collides with other programs' ports on the shared machine.
//
// The sockets are raw non-blocking file descriptors rather than
// *net.UDPConn: the Go runtime would want one parked goroutine per blocked
// read, 50,000 goroutines for a large world.
type sockets struct {
	fds  []int
	epfd int
	// stop is a pipe whose read end is in the epoll set; a byte written to
	// stop[1] ends readLoop.
	stop [2]int
	// sa is the destination of send, reused so that sending allocates
	// nothing; only the releaser goroutine sends.
	sa syscall.SockaddrInet4
}

// EpollBatch is how many ready sockets one epoll_wait returns at most.
const EpollBatch = 256

// MaxDatagram is the receive buffer: no query the emulated servers answer
// is longer than a few dozen bytes; anything longer than this is cut and
// then refused by the codecs as garbage.
const MaxDatagram = 2048

// descriptorSlack is the number of descriptors kept free for everything
// else the process opens.
const descriptorSlack = 256

// raiseNoFile raises RLIMIT_NOFILE so that n more descriptors fit, raising
// the hard limit too when the process may (root).
func raiseNoFile(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	need := uint64(n + descriptorSlack)
	if lim.Cur >= need {
		return nil
	}
	want := lim
	want.Cur = need
	if want.Max < need {
		want.Max = need
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
		return nil
	}
	if lim.Max >= need {
		lim.Cur = need
		return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return fmt.Errorf("world: %d sockets need %d descriptors; the hard limit is %d (raise it with ulimit -Hn, or run fewer servers)", n, need, lim.Max)
}

// openSockets binds one socket per address. An address whose port is 0, or
// whose port is taken, gets a port from the kernel. It returns the bound
// addresses.
func openSockets(addrs []netip.AddrPort) (*sockets, []netip.AddrPort, error) {
	if err := raiseNoFile(len(addrs)); err != nil {
		return nil, nil, err
	}
	s := &sockets{epfd: -1, stop: [2]int{-1, -1}}
	fail := func(err error) (*sockets, []netip.AddrPort, error) {
		s.close()
		return nil, nil, err
	}
	var err error
	if s.epfd, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return fail(fmt.Errorf("epoll_create1: %w", err))
	}
	if err = syscall.Pipe2(s.stop[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		return fail(fmt.Errorf("pipe2: %w", err))
	}
	if err = syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_ADD, s.stop[0], &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: -1}); err != nil {
		return fail(fmt.Errorf("epoll_ctl: %w", err))
	}
	bound := make([]netip.AddrPort, len(addrs))
	s.fds = make([]int, 0, len(addrs))
	for i, a := range addrs {
		if !a.Addr().Is4() || !a.Addr().IsLoopback() {
			return fail(fmt.Errorf("world: refusing to bind %v: not IPv4 loopback", a))
		}
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return fail(fmt.Errorf("socket: %w", err))
		}
		s.fds = append(s.fds, fd)
		// Kernel receive timestamps: a reply's delay counts from when the
		// query reached the socket, not from when the reader got to it.
		if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1); err != nil {
			return fail(fmt.Errorf("SO_TIMESTAMPNS: %w", err))
		}
		sa := &syscall.SockaddrInet4{Port: int(a.Port()), Addr: a.Addr().As4()}
		err = syscall.Bind(fd, sa)
		if errors.Is(err, syscall.EADDRINUSE) && a.Port() != 0 {
			sa.Port = 0
			err = syscall.Bind(fd, sa)
		}
		if err != nil {
			return fail(fmt.Errorf("bind %v: %w", a, err))
		}
		got, err := syscall.Getsockname(fd)
		if err != nil {
			return fail(fmt.Errorf("getsockname: %w", err))
		}
		in4 := got.(*syscall.SockaddrInet4)
		bound[i] = netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port))
		if err := syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(i)}); err != nil {
			return fail(fmt.Errorf("epoll_ctl: %w", err))
		}
	}
	return s, bound, nil
}

// readLoop reads every datagram that arrives on any socket and hands it to
// handle with the time it was read, until stopReading is called. It is the
// only goroutine that reads the sockets; b is reused after handle returns.
func (s *sockets) readLoop(handle func(sock int, from netip.AddrPort, b []byte, at time.Time)) error {
	events := make([]syscall.EpollEvent, EpollBatch)
	buf := make([]byte, MaxDatagram)
	oob := make([]byte, syscall.CmsgSpace(16))
	for {
		n, err := syscall.EpollWait(s.epfd, events, -1)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range events[:n] {
			if ev.Fd < 0 {
				return nil // stopReading
			}
			fd := s.fds[ev.Fd]
			for { // drain the socket: epoll is level-triggered, but this saves wake-ups
				m, oobn, _, from, err := syscall.Recvmsg(fd, buf, oob, 0)
				if err != nil {
					break // EAGAIN: empty; other errors (ICMP-induced) are per datagram
				}
				at := arrival(time.Now(), oob[:oobn])
				in4, ok := from.(*syscall.SockaddrInet4)
				if !ok {
					continue
				}
				handle(int(ev.Fd), netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port)), buf[:m], at)
			}
		}
	}
}

// stopReading makes readLoop return.
func (s *sockets) stopReading() {
	syscall.Write(s.stop[1], []byte{0})
}

// send writes b from socket sock to to, which must be loopback. Errors
// (a full socket buffer) lose the datagram, as a congested link would.
func (s *sockets) send(sock int, to netip.AddrPort, b []byte) error {
	if !to.Addr().Is4() || !to.Addr().IsLoopback() {
		return errOffLoopback
	}
	s.sa.Port, s.sa.Addr = int(to.Port()), to.Addr().As4()
	return syscall.Sendto(s.fds[sock], b, 0, &s.sa)
}

// close closes every descriptor. Call it once, after readLoop has returned
// and the releaser has stopped.
func (s *sockets) close() {
	for _, fd := range s.fds {
		syscall.Close(fd)
	}
	s.fds = nil
	for _, fd := range append(s.stop[:], s.epfd) {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
	s.epfd, s.stop = -1, [2]int{-1, -1}
}

// MaxTimestampLag bounds how far back a kernel receive timestamp may move a
// datagram's arrival time; a larger gap means the wall clock stepped, and
// the read time is used instead.
const MaxTimestampLag = time.Second

// arrival returns when the datagram reached the socket: now moved back by
// the age of the kernel's SCM_TIMESTAMPNS (a wall-clock time), keeping now's
// monotonic reading. Without a usable timestamp it returns now.
func arrival(now time.Time, oob []byte) time.Time {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return now
	}
	for _, m := range msgs {
		if m.Header.Level != syscall.SOL_SOCKET || m.Header.Type != syscall.SCM_TIMESTAMPNS || len(m.Data) < 16 {
			continue
		}
		sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
		nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
		lag := now.Sub(time.Unix(sec, nsec)) // wall clock: time.Unix has no monotonic reading
		if lag >= 0 && lag <= MaxTimestampLag {
			return now.Add(-lag)
		}
	}
	return now
}
