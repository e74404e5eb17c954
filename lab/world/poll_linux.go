//go:build linux

package world

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
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
	// fds are the sockets; server i sends from fds[sockOf[i]].
	fds    []int
	sockOf []int
	// shared is set in per-port mode: then src[i] is server i's loopback
	// IP, set as the source of its datagrams (IP_PKTINFO), and servers maps
	// (destination IP, socket index) to the server a datagram is for.
	shared  bool
	src     [][4]byte
	servers map[sharedKey]int
	epfd    int
	// stop is a pipe whose read end is in the epoll set; a byte written to
	// stop[1] ends readLoop.
	stop [2]int
	// sa is the destination of send, reused so that sending allocates
	// nothing; only the releaser goroutine sends.
	sa  syscall.SockaddrInet4
	oob []byte
}

type sharedKey struct {
	ip   [4]byte
	sock int
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

// SocketMode chooses how servers are given sockets.
type SocketMode uint8

const (
	// SocketsAuto uses SocketsPerServer when the descriptor limit can be
	// raised far enough, SocketsPerPort otherwise.
	SocketsAuto SocketMode = iota
	// SocketsPerServer binds each server's own loopback address and port:
	// what every client sees is exactly a real server's socket.
	SocketsPerServer
	// SocketsPerPort serves every server that shares a public port from
	// one socket: bound to the wildcard address and a kernel-chosen port,
	// confined to the lo device (SO_BINDTODEVICE, so it receives nothing
	// from another interface and can send nowhere else), told each
	// datagram's destination by IP_PKTINFO and setting each reply's source
	// the same way. A world needs only as many sockets as distinct ports
	// (a few dozen), so 50,000 servers fit a 20,000-descriptor limit. The
	// loopback ports differ from the public ones (the table maps them);
	// the kernel-chosen port collides with no other program.
	SocketsPerPort
)

// openSockets gives every address a socket (see SocketMode) and returns
// the bound addresses. Per server, an address whose port is 0, or whose
// port is taken, gets a port from the kernel.
func openSockets(addrs []netip.AddrPort, mode SocketMode) (*sockets, []netip.AddrPort, error) {
	for _, a := range addrs {
		if !a.Addr().Is4() || !a.Addr().IsLoopback() {
			return nil, nil, fmt.Errorf("world: refusing to bind %v: not IPv4 loopback", a)
		}
	}
	if mode != SocketsPerPort {
		err := raiseNoFile(len(addrs))
		switch {
		case err == nil:
			mode = SocketsPerServer
		case mode == SocketsAuto:
			mode = SocketsPerPort
		default:
			return nil, nil, err
		}
	}
	s := &sockets{epfd: -1, stop: [2]int{-1, -1}, shared: mode == SocketsPerPort}
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
	// open creates a socket bound to a (or to the wildcard on lo when
	// shared) and returns its index and bound port.
	open := func(a netip.AddrPort) (int, uint16, error) {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return 0, 0, fmt.Errorf("socket: %w", err)
		}
		idx := len(s.fds)
		s.fds = append(s.fds, fd)
		// Kernel receive timestamps: a reply's delay counts from when the
		// query reached the socket, not from when the reader got to it.
		if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1); err != nil {
			return 0, 0, fmt.Errorf("SO_TIMESTAMPNS: %w", err)
		}
		sa := &syscall.SockaddrInet4{Port: int(a.Port()), Addr: a.Addr().As4()}
		if s.shared {
			if err := syscall.SetsockoptString(fd, syscall.SOL_SOCKET, syscall.SO_BINDTODEVICE, "lo"); err != nil {
				return 0, 0, fmt.Errorf("SO_BINDTODEVICE lo: %w", err)
			}
			if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_IP, syscall.IP_PKTINFO, 1); err != nil {
				return 0, 0, fmt.Errorf("IP_PKTINFO: %w", err)
			}
			sa = &syscall.SockaddrInet4{} // wildcard address (on lo only), kernel-chosen port
		}
		err = syscall.Bind(fd, sa)
		if errors.Is(err, syscall.EADDRINUSE) && sa.Port != 0 {
			sa.Port = 0
			err = syscall.Bind(fd, sa)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("bind %v: %w", a, err)
		}
		got, err := syscall.Getsockname(fd)
		if err != nil {
			return 0, 0, fmt.Errorf("getsockname: %w", err)
		}
		if err := syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(idx)}); err != nil {
			return 0, 0, fmt.Errorf("epoll_ctl: %w", err)
		}
		return idx, uint16(got.(*syscall.SockaddrInet4).Port), nil
	}
	bound := make([]netip.AddrPort, len(addrs))
	s.sockOf = make([]int, len(addrs))
	if !s.shared {
		for i, a := range addrs {
			idx, port, err := open(a)
			if err != nil {
				return fail(err)
			}
			s.sockOf[i] = idx
			bound[i] = netip.AddrPortFrom(a.Addr(), port)
		}
		return s, bound, nil
	}
	s.src = make([][4]byte, len(addrs))
	s.servers = make(map[sharedKey]int, len(addrs))
	s.oob = make([]byte, syscall.CmsgSpace(syscall.SizeofInet4Pktinfo))
	type portSock struct {
		idx  int
		port uint16
	}
	byPort := map[uint16]portSock{}
	for i, a := range addrs {
		ps, ok := byPort[a.Port()]
		if !ok {
			idx, port, err := open(a)
			if err != nil {
				return fail(err)
			}
			ps = portSock{idx, port}
			byPort[a.Port()] = ps
		}
		k := sharedKey{a.Addr().As4(), ps.idx}
		if _, dup := s.servers[k]; dup {
			return fail(fmt.Errorf("world: two servers on %v share a port", a))
		}
		s.servers[k] = i
		s.sockOf[i], s.src[i] = ps.idx, a.Addr().As4()
		bound[i] = netip.AddrPortFrom(a.Addr(), ps.port)
	}
	return s, bound, nil
}

// sockets returns how many sockets are open.
func (s *sockets) count() int { return len(s.fds) }

// readLoop reads every datagram that arrives on any socket and hands it to
// handle with the time it was read, until stopReading is called. It is the
// only goroutine that reads the sockets; b is reused after handle returns.
func (s *sockets) readLoop(handle func(sock int, from netip.AddrPort, b []byte, at time.Time)) error {
	events := make([]syscall.EpollEvent, EpollBatch)
	buf := make([]byte, MaxDatagram)
	oob := make([]byte, syscall.CmsgSpace(16)+syscall.CmsgSpace(syscall.SizeofInet4Pktinfo))
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
				at, dst := control(time.Now(), oob[:oobn])
				in4, ok := from.(*syscall.SockaddrInet4)
				if !ok || in4.Addr[0] != 127 {
					continue // never answer anything but loopback
				}
				server := int(ev.Fd)
				if s.shared {
					if server, ok = s.servers[sharedKey{dst, int(ev.Fd)}]; !ok {
						continue // no server at that address
					}
				}
				handle(server, netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port)), buf[:m], at)
			}
		}
	}
}

// stopReading makes readLoop return.
func (s *sockets) stopReading() {
	syscall.Write(s.stop[1], []byte{0})
}

// send writes b from server i's socket to to, which must be loopback.
// Errors (a full socket buffer) lose the datagram, as a congested link
// would. Only the releaser goroutine calls it.
func (s *sockets) send(i int, to netip.AddrPort, b []byte) error {
	if !to.Addr().Is4() || !to.Addr().IsLoopback() {
		return errOffLoopback
	}
	s.sa.Port, s.sa.Addr = int(to.Port()), to.Addr().As4()
	fd := s.fds[s.sockOf[i]]
	if !s.shared {
		return syscall.Sendto(fd, b, 0, &s.sa)
	}
	// IP_PKTINFO with ipi_spec_dst: the datagram leaves from server i's
	// loopback address.
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&s.oob[0]))
	h.Level, h.Type = syscall.IPPROTO_IP, syscall.IP_PKTINFO
	h.SetLen(syscall.CmsgLen(syscall.SizeofInet4Pktinfo))
	info := (*syscall.Inet4Pktinfo)(unsafe.Pointer(&s.oob[syscall.CmsgLen(0)]))
	*info = syscall.Inet4Pktinfo{Spec_dst: s.src[i]}
	return syscall.Sendmsg(fd, b, s.oob, &s.sa, 0)
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
	at, _ := control(now, oob)
	return at
}

// control reads the control messages of a datagram: its arrival time (see
// arrival) and, with IP_PKTINFO, the address it was sent to.
func control(now time.Time, oob []byte) (at time.Time, dst [4]byte) {
	at = now
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return at, dst
	}
	for _, m := range msgs {
		switch {
		case m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16:
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			lag := now.Sub(time.Unix(sec, nsec)) // wall clock: time.Unix has no monotonic reading
			if lag >= 0 && lag <= MaxTimestampLag {
				at = now.Add(-lag)
			}
		case m.Header.Level == syscall.IPPROTO_IP && m.Header.Type == syscall.IP_PKTINFO && len(m.Data) >= syscall.SizeofInet4Pktinfo:
			copy(dst[:], m.Data[8:12]) // ipi_addr: the header's destination address
		}
	}
	return at, dst
}
