//go:build linux

package loadgen

import (
	"errors"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// udpSet is many non-blocking UDP sockets behind one epoll instance, so a
// goroutine or two can serve thousands of sockets: the fleet's emulated
// game servers and the query sources. Socket i is bound to local[i].
//
// Reads go through recvmmsg, several datagrams per system call, because a
// full-list answer is a burst of tens of datagrams to one socket.
//
// A udpSet is used by one goroutine at a time, except send, which is a
// single sendto and safe from several.
type udpSet struct {
	epfd  int
	fds   []int
	local []netip.AddrPort
	byFD  map[int32]int // fd -> index
}

// openUDPSet binds one UDP socket to each address (IPv4, or IPv6 with
// IPV6_V6ONLY; port 0 picks an ephemeral port) with a receive buffer of
// rcvbuf bytes (0 keeps the system's default).
func openUDPSet(addrs []netip.AddrPort, rcvbuf int) (*udpSet, error) {
	s, err := newUDPSet(len(addrs))
	if err != nil {
		return nil, err
	}
	for i, a := range addrs {
		fd, local, err := openSocket(a, rcvbuf)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("%w (socket %d of %d)", err, i, len(addrs))
		}
		if err := s.add(fd, local); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

func newUDPSet(n int) (*udpSet, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("loadgen: epoll: %w", err)
	}
	return &udpSet{epfd: epfd, byFD: make(map[int32]int, n)}, nil
}

// openSocket opens a non-blocking UDP socket bound to a and returns it
// with its bound address. A port in use is an error wrapping
// unix.EADDRINUSE.
func openSocket(a netip.AddrPort, rcvbuf int) (int, netip.AddrPort, error) {
	family := unix.AF_INET
	if !a.Addr().Is4() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, a, fmt.Errorf("loadgen: socket for %v: %w (raise the open-file limit)", a, err)
	}
	fail := func(what string, err error) (int, netip.AddrPort, error) {
		unix.Close(fd)
		return -1, a, fmt.Errorf("loadgen: %s %v: %w", what, a, err)
	}
	if rcvbuf > 0 {
		// SO_RCVBUFFORCE passes net.core.rmem_max when privileged;
		// otherwise the kernel caps SO_RCVBUF at that maximum.
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf)
		}
	}
	var sa unix.Sockaddr
	if family == unix.AF_INET {
		sa = &unix.SockaddrInet4{Port: int(a.Port()), Addr: a.Addr().As4()}
	} else {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return fail("IPV6_V6ONLY", err)
		}
		sa = &unix.SockaddrInet6{Port: int(a.Port()), Addr: a.Addr().As16()}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind", err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	switch got := got.(type) {
	case *unix.SockaddrInet4:
		return fd, netip.AddrPortFrom(netip.AddrFrom4(got.Addr), uint16(got.Port)), nil
	case *unix.SockaddrInet6:
		return fd, netip.AddrPortFrom(netip.AddrFrom16(got.Addr), uint16(got.Port)), nil
	}
	return fail("getsockname", fmt.Errorf("family %T", got))
}

// add puts the open socket fd, bound to local, in the set, which owns it
// from then on (close closes it, also when add fails).
func (s *udpSet) add(fd int, local netip.AddrPort) error {
	s.fds = append(s.fds, fd)
	s.local = append(s.local, local)
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("loadgen: epoll add %v: %w", local, err)
	}
	s.byFD[int32(fd)] = len(s.fds) - 1
	return nil
}

func (s *udpSet) len() int { return len(s.fds) }

// send sends b from socket i to to. A full send buffer is an error
// (unix.EAGAIN): the caller counts it and does not retry.
func (s *udpSet) send(i int, b []byte, to netip.AddrPort) error {
	if s.local[i].Addr().Is4() {
		return unix.Sendto(s.fds[i], b, unix.MSG_DONTWAIT, &unix.SockaddrInet4{Port: int(to.Port()), Addr: to.Addr().Unmap().As4()})
	}
	return unix.Sendto(s.fds[i], b, unix.MSG_DONTWAIT, &unix.SockaddrInet6{Port: int(to.Port()), Addr: to.Addr().As16()})
}

// wait returns the indexes of the sockets with datagrams waiting, blocking
// at most msec milliseconds. ready is reused.
func (s *udpSet) wait(events []unix.EpollEvent, ready []int, msec int) ([]int, error) {
	ready = ready[:0]
	n, err := unix.EpollWait(s.epfd, events, msec)
	if err != nil {
		if errors.Is(err, unix.EINTR) {
			return ready, nil
		}
		return ready, fmt.Errorf("loadgen: epoll wait: %w", err)
	}
	for _, ev := range events[:n] {
		if i, ok := s.byFD[ev.Fd]; ok {
			ready = append(ready, i)
		}
	}
	return ready, nil
}

// batch is the reusable state of recvmmsg: up to len(bufs) datagrams per
// call, each with its length and source.
type batch struct {
	bufs  [][]byte
	iov   []unix.Iovec
	names []unix.RawSockaddrInet6 // room for either family
	hdrs  []mmsghdr
}

// mmsghdr is struct mmsghdr from <sys/socket.h>.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

func newBatch(n, size int) *batch {
	b := &batch{
		bufs:  make([][]byte, n),
		iov:   make([]unix.Iovec, n),
		names: make([]unix.RawSockaddrInet6, n),
		hdrs:  make([]mmsghdr, n),
	}
	for i := range n {
		b.bufs[i] = make([]byte, size)
		b.iov[i].Base = &b.bufs[i][0]
		b.iov[i].SetLen(size)
		b.hdrs[i].hdr.Iov = &b.iov[i]
		b.hdrs[i].hdr.SetIovlen(1)
		b.hdrs[i].hdr.Name = (*byte)(unsafe.Pointer(&b.names[i]))
	}
	return b
}

// recv reads up to len(b.bufs) waiting datagrams from socket i and returns
// how many it read; 0 when none is waiting.
func (s *udpSet) recv(i int, b *batch) (int, error) {
	for k := range b.hdrs {
		b.hdrs[k].hdr.Namelen = unix.SizeofSockaddrInet6
		b.hdrs[k].len = 0
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(s.fds[i]),
			uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(len(b.hdrs)), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, nil
		}
		return 0, fmt.Errorf("loadgen: recvmmsg: %w", errno)
	}
}

// datagram returns the k-th datagram of the last recv and its source.
func (b *batch) datagram(k int) ([]byte, netip.AddrPort) {
	n := &b.names[k]
	p := (*[2]byte)(unsafe.Pointer(&n.Port)) // network byte order, at the same offset in both families
	port := uint16(p[0])<<8 | uint16(p[1])
	if n.Family == unix.AF_INET {
		n4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(n))
		return b.bufs[k][:b.hdrs[k].len], netip.AddrPortFrom(netip.AddrFrom4(n4.Addr), port)
	}
	return b.bufs[k][:b.hdrs[k].len], netip.AddrPortFrom(netip.AddrFrom16(n.Addr), port)
}

func (s *udpSet) close() error {
	var first error
	for _, fd := range s.fds {
		if err := unix.Close(fd); err != nil && first == nil {
			first = err
		}
	}
	s.fds = nil
	if s.epfd >= 0 {
		if err := unix.Close(s.epfd); err != nil && first == nil {
			first = err
		}
		s.epfd = -1
	}
	return first
}

// raiseOpenFiles lifts the soft RLIMIT_NOFILE to at least n, up to the
// hard limit, and returns the soft limit in force.
func raiseOpenFiles(n uint64) (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur >= n {
		return lim.Cur, nil
	}
	if n > lim.Max {
		// Raising the hard limit needs CAP_SYS_RESOURCE; without it the
		// soft limit goes as far as the hard one.
		up := unix.Rlimit{Cur: n, Max: n}
		if unix.Setrlimit(unix.RLIMIT_NOFILE, &up) == nil {
			return n, nil
		}
	}
	lim.Cur = min(n, lim.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	return lim.Cur, nil
}
