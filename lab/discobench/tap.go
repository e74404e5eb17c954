package discobench

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// HeaderBytes is what IPv4 and UDP add to every datagram on the wire (a
// 20-byte IPv4 header without options and the 8-byte UDP header); link
// headers are not counted.
const HeaderBytes = 28

// Limits of the loopback tap.
const (
	// tapSnap is how many bytes of each datagram the tap copies (IPv4 and
	// UDP headers and the start of the payload): lengths come from the
	// headers, the payload start names the request.
	tapSnap = 96
	// maxTapped bounds the datagrams one run window keeps; past it they
	// are counted in Traffic.Overflow and not classified.
	maxTapped = 1 << 20
	// maxShapes bounds the distinct request shapes a Traffic lists.
	maxShapes = 16
	// shapeWords is how much of a request names its shape.
	shapeWords = 40
)

// Flow counts datagrams and their UDP payload bytes in one direction.
type Flow struct {
	Datagrams uint64 `json:"datagrams"`
	Payload   uint64 `json:"payload"`
}

// Wire is the bytes on the wire: payload plus HeaderBytes per datagram.
func (f Flow) Wire() uint64 { return f.Payload + HeaderBytes*f.Datagrams }

func (f *Flow) add(n int) {
	f.Datagrams++
	f.Payload += uint64(n)
}

// Traffic is what one client exchanged during its run, as the loopback
// interface carried it: every datagram between the client and the
// world's servers and between the client and the master. The master's
// own exchanges with the servers (verifying getinfo, heartbeats) are not
// the client's and are left out. Replies the world dropped (its loss) never
// reach the wire and are not counted.
type Traffic struct {
	// ToServers and FromServers: the client's requests to the world's
	// servers and their replies.
	ToServers   Flow `json:"to_servers"`
	FromServers Flow `json:"from_servers"`
	// ToMaster and FromMaster: the client's master queries and the
	// server lists.
	ToMaster   Flow `json:"to_master"`
	FromMaster Flow `json:"from_master"`
	// Requests lists the shapes of the requests the servers got (the
	// command and the length of its argument, "getinfo <11>"), with
	// counts, most frequent first, at most maxShapes.
	Requests []Shape `json:"requests"`
	// Drops counts datagrams the kernel could not hand to the tap (its
	// buffer was full) and Overflow those past maxTapped: both are 0 in a
	// complete count.
	Drops    uint64 `json:"drops"`
	Overflow uint64 `json:"overflow"`
}

// Shape is one kind of request and how often it was sent.
type Shape struct {
	Shape string `json:"shape"`
	Size  int    `json:"size"` // payload bytes of the first one seen
	Count uint64 `json:"count"`
}

// Sent is everything the client sent, Received everything it got.
func (t Traffic) Sent() Flow {
	return Flow{t.ToServers.Datagrams + t.ToMaster.Datagrams, t.ToServers.Payload + t.ToMaster.Payload}
}

// Received is everything the client received.
func (t Traffic) Received() Flow {
	return Flow{t.FromServers.Datagrams + t.FromMaster.Datagrams, t.FromServers.Payload + t.FromMaster.Payload}
}

// Total is both directions together.
func (t Traffic) Total() Flow {
	s, r := t.Sent(), t.Received()
	return Flow{s.Datagrams + r.Datagrams, s.Payload + r.Payload}
}

// tapped is one IPv4 UDP datagram seen on loopback.
type tapped struct {
	src, dst netip.AddrPort
	size     int    // UDP payload length from the UDP header
	head     []byte // the first bytes of the payload (up to tapSnap in all)
	// segment, when positive, is the segment size of a UDP_SEGMENT send:
	// size bytes that leave the receiving end as datagrams of segment
	// bytes, the last one shorter.
	segment int
}

// count adds p to f as the datagrams it stands for.
func (p tapped) count(f *Flow) {
	if p.segment <= 0 || p.size <= p.segment {
		f.add(p.size)
		return
	}
	f.Datagrams += uint64((p.size + p.segment - 1) / p.segment)
	f.Payload += uint64(p.size)
}

// parseTapped reads an IPv4 packet (as much of it as the tap copied). It
// reports false for anything that is not a whole-header IPv4 UDP packet
// or a fragment after the first.
func parseTapped(b []byte) (tapped, bool) {
	if len(b) < 20 || b[0]>>4 != 4 || b[9] != 17 {
		return tapped{}, false
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < 20 || len(b) < ihl+8 {
		return tapped{}, false
	}
	if frag := uint16(b[6]&0x1f)<<8 | uint16(b[7]); frag != 0 {
		return tapped{}, false // a later fragment: counted with the first
	}
	src := netip.AddrFrom4([4]byte(b[12:16]))
	dst := netip.AddrFrom4([4]byte(b[16:20]))
	u := b[ihl:]
	ulen := int(u[4])<<8 | int(u[5])
	if ulen < 8 {
		return tapped{}, false
	}
	return tapped{
		src:  netip.AddrPortFrom(src, uint16(u[0])<<8|uint16(u[1])),
		dst:  netip.AddrPortFrom(dst, uint16(u[2])<<8|uint16(u[3])),
		size: ulen - 8,
		head: u[8:],
	}, true
}

// classify sums the datagrams of one run window into a Traffic. isServer
// tells the world's server addresses; master is the master's.
func classify(pkts []tapped, master netip.AddrPort, isServer func(netip.AddrPort) bool) Traffic {
	var t Traffic
	shapes := map[string]*Shape{}
	for _, p := range pkts {
		srcSrv, dstSrv := isServer(p.src), isServer(p.dst)
		switch {
		case dstSrv && !srcSrv && p.src != master:
			p.count(&t.ToServers)
			k := shapeOf(p.head, p.size)
			if s := shapes[k]; s != nil {
				s.Count++
			} else {
				shapes[k] = &Shape{Shape: k, Size: p.size, Count: 1}
			}
		case srcSrv && !dstSrv && p.dst != master:
			p.count(&t.FromServers)
		case p.dst == master && !srcSrv && p.src != master:
			p.count(&t.ToMaster)
		case p.src == master && !dstSrv && p.dst != master:
			p.count(&t.FromMaster)
		}
	}
	for _, s := range shapes {
		t.Requests = append(t.Requests, *s)
	}
	slices.SortFunc(t.Requests, func(a, b Shape) int {
		if a.Count != b.Count {
			return int(b.Count) - int(a.Count)
		}
		return strings.Compare(a.Shape, b.Shape)
	})
	if len(t.Requests) > maxShapes {
		t.Requests = t.Requests[:maxShapes]
	}
	return t
}

// shapeOf names a request by its command and the length of its
// argument, read from the payload's first bytes head and its size:
// "\xff\xff\xff\xffgetinfo 1ITGmfJN2wC" is "getinfo <11>",
// "\xff\xff\xff\xffgetinfo\n" is "getinfo\n". Bytes outside printable
// ASCII are written as Go escapes; a command is cut at shapeWords bytes.
func shapeOf(head []byte, size int) string {
	head = head[:min(len(head), size)]
	n := size
	if rest, ok := bytes.CutPrefix(head, []byte("\xff\xff\xff\xff")); ok {
		head, n = rest, size-4
	}
	cmd, _, spaced := bytes.Cut(head, []byte(" "))
	if len(cmd) > shapeWords {
		cmd, spaced = cmd[:shapeWords], false
	}
	q := fmt.Sprintf("%q", cmd)
	q = q[1 : len(q)-1]
	if !spaced {
		return q
	}
	return fmt.Sprintf("%s <%d>", q, n-len(cmd)-1)
}
