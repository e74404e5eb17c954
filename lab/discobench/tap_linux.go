//go:build linux

package discobench

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Settings of the loopback tap.
const (
	// tapBuffer is the receive buffer the tap asks for (forced past
	// net.core.rmem_max when the process may): room for every datagram of
	// a fast run, so that none is dropped while the reader sleeps.
	tapBuffer = 32 << 20
	// tapPoll bounds one read, so the reader sees Close.
	tapPoll = 50 * time.Millisecond
	// markerWait bounds the wait for the marker that closes a window;
	// markerGrace is the wait after it.
	markerWait  = 5 * time.Second
	markerGrace = 50 * time.Millisecond
	// headKeep is how many payload bytes of each datagram are kept.
	headKeep = 48
	// ethHeader is the link header of the loopback interface; vnetHeader
	// the virtio-net header before it (struct virtio_net_hdr).
	ethHeader  = 14
	vnetHeader = 10
	// gsoUDPL4 is VIRTIO_NET_HDR_GSO_UDP_L4 (UDP_SEGMENT).
	gsoUDPL4 = 5
)

// tap reads the IPv4 UDP datagrams that cross the loopback interface,
// with a packet socket (AF_PACKET, which needs CAP_NET_RAW), once each
// (the receiving copy; a sending copy, where a kernel gives one too, is
// skipped). The kernel hands a loopback datagram to the tap from the
// receive backlog, normally within the sender's send call: to close a
// window, the tap sends a marker datagram of its own once the client has
// exited, waits until it reads it, then waits markerGrace more for the
// backlog of other CPUs. A socket filter keeps UDP only, cut at tapSnap
// bytes. A send with UDP_SEGMENT (scout master's lists) crosses loopback
// as one large packet that the receiving socket cuts up; the virtio-net
// header the tap asks for (PACKET_VNET_HDR) gives its segment size, so it
// is counted as the datagrams it stands for.
type tap struct {
	fd     int
	marker []byte
	mkAddr *net.UDPConn

	mu        sync.Mutex
	recording bool
	pkts      []tapped
	overflow  uint64
	seen      chan struct{} // closed when the marker is read
	opening   bool          // the awaited marker opens a window (begin), not closes it
	stop      atomic.Bool
	done      chan struct{}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// openTap opens the tap on the loopback interface and starts its reader.
func openTap() (*tap, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	idx := 0
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 {
			idx = i.Index
			break
		}
	}
	if idx == 0 {
		return nil, errors.New("discobench: no loopback interface")
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_IP)))
	if err != nil {
		return nil, fmt.Errorf("discobench: packet socket (needs CAP_NET_RAW): %w", err)
	}
	fail := func(what string, err error) (*tap, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("discobench: tap: %s: %w", what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
		return fail("virtio-net header", err)
	}
	// The filter sees the loopback's 14-byte Ethernet header, then IPv4:
	// protocol (byte 14+9) UDP, keep the link header and tapSnap bytes;
	// anything else, nothing.
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: ethHeader + 9},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 0, Jf: 1, K: unix.IPPROTO_UDP},
		{Code: unix.BPF_RET | unix.BPF_K, K: ethHeader + tapSnap},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
		&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}); err != nil {
		return fail("filter", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: idx}); err != nil {
		return fail("bind", err)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, tapBuffer) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, tapBuffer)
	}
	tv := unix.NsecToTimeval(tapPoll.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail("timeout", err)
	}
	mk, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return fail("marker socket", err)
	}
	t := &tap{fd: fd, marker: make([]byte, 16), mkAddr: mk, done: make(chan struct{})}
	rand.Read(t.marker)
	go t.read()
	return t, nil
}

func (t *tap) read() {
	defer close(t.done)
	buf := make([]byte, 2048)
	mk := t.mkAddr.LocalAddr().(*net.UDPAddr).AddrPort()
	for !t.stop.Load() {
		n, from, err := unix.Recvfrom(t.fd, buf, 0)
		if err != nil {
			if t.stop.Load() {
				return
			}
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); !ok || ll.Pkttype == unix.PACKET_OUTGOING {
			continue // the sending copy of a datagram counted when received
		}
		if n < vnetHeader+ethHeader {
			continue
		}
		p, ok := parseTapped(buf[vnetHeader+ethHeader : n])
		if !ok {
			continue
		}
		// virtio_net_hdr: flags, gso_type, hdr_len, gso_size (host order).
		if buf[1]&^0x80 == gsoUDPL4 {
			p.segment = int(binary.NativeEndian.Uint16(buf[4:6]))
		}
		t.mu.Lock()
		if p.dst == mk && string(p.head[:min(len(p.head), len(t.marker))]) == string(t.marker) {
			if t.opening {
				// Everything read before the opening marker was sent
				// before begin: it is not the window's.
				t.pkts, t.overflow, t.recording, t.opening = nil, 0, true, false
			}
			if t.seen != nil {
				close(t.seen)
				t.seen = nil
			}
		} else if t.recording {
			if len(t.pkts) < maxTapped {
				p.head = append([]byte(nil), p.head[:min(len(p.head), headKeep)]...)
				t.pkts = append(t.pkts, p)
			} else {
				t.overflow++
			}
		}
		t.mu.Unlock()
	}
}

// begin starts a window: at the tap's own marker datagram, so that a
// datagram sent before the call and still queued to the tap is not
// counted. Should the marker not come back within markerWait, the window
// starts at once.
func (t *tap) begin() {
	unix.GetsockoptTpacketStats(t.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS) // counters reset on read
	seen := make(chan struct{})
	t.mu.Lock()
	t.pkts, t.overflow, t.recording, t.opening, t.seen = nil, 0, false, true, seen
	t.mu.Unlock()
	if _, err := t.mkAddr.WriteToUDPAddrPort(t.marker, t.mkAddr.LocalAddr().(*net.UDPAddr).AddrPort()); err == nil {
		select {
		case <-seen:
			return
		case <-time.After(markerWait):
		}
	}
	t.mu.Lock()
	t.recording, t.opening, t.seen = true, false, nil
	t.mu.Unlock()
}

// end closes the window once everything sent before the call has been
// read, and returns its datagrams, the kernel's drops and the overflow.
func (t *tap) end() ([]tapped, uint64, uint64, error) {
	seen := make(chan struct{})
	t.mu.Lock()
	t.seen = seen
	t.mu.Unlock()
	var err error
	if _, werr := t.mkAddr.WriteToUDPAddrPort(t.marker, t.mkAddr.LocalAddr().(*net.UDPAddr).AddrPort()); werr != nil {
		err = fmt.Errorf("discobench: tap marker: %w", werr)
	} else {
		select {
		case <-seen:
			time.Sleep(markerGrace)
		case <-time.After(markerWait):
			err = errors.New("discobench: the tap did not see its marker: the count may be short")
		}
	}
	var drops uint64
	if st, serr := unix.GetsockoptTpacketStats(t.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); serr == nil {
		drops = uint64(st.Drops)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	pkts, over := t.pkts, t.overflow
	t.pkts, t.overflow, t.recording, t.seen = nil, 0, false, nil
	return pkts, drops, over, err
}

// close stops the reader.
func (t *tap) close() {
	t.stop.Store(true)
	<-t.done // within tapPoll
	unix.Close(t.fd)
	t.mkAddr.Close()
}
