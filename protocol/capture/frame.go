package capture

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Link is a link-layer header type, numbered as the pcap LINKTYPE_ registry
// (https://www.tcpdump.org/linktypes.html) numbers it.
type Link uint32

// The link types UDP understands. LinkNone marks a packet that was not taken
// from a frame (its Payload is the input as it is).
const (
	LinkNull      Link = 0   // BSD loopback: 4-byte address family in the capturing host's byte order
	LinkEthernet  Link = 1   // Ethernet II, with any number (up to MaxVLANTags) of 802.1Q / 802.1ad tags
	LinkRaw       Link = 101 // raw IPv4 or IPv6, told apart by the version nibble
	LinkLoop      Link = 108 // OpenBSD loopback: 4-byte address family, big-endian
	LinkLinuxSLL  Link = 113 // Linux cooked capture v1 (16-byte header)
	LinkIPv4      Link = 228 // raw IPv4
	LinkIPv6      Link = 229 // raw IPv6
	LinkLinuxSLL2 Link = 276 // Linux cooked capture v2 (20-byte header)

	LinkNone Link = 0xFFFFFFFF // not a frame: no header was stripped
)

func (l Link) String() string {
	switch l {
	case LinkNull:
		return "null"
	case LinkEthernet:
		return "ethernet"
	case LinkRaw:
		return "raw-ip"
	case LinkLoop:
		return "loop"
	case LinkLinuxSLL:
		return "linux-sll"
	case LinkIPv4:
		return "ipv4"
	case LinkIPv6:
		return "ipv6"
	case LinkLinuxSLL2:
		return "linux-sll2"
	case LinkNone:
		return "none"
	}
	return fmt.Sprintf("link(%d)", uint32(l))
}

// supported reports whether UDP decodes frames of link type l.
func (l Link) supported() bool {
	switch l {
	case LinkNull, LinkEthernet, LinkRaw, LinkLoop, LinkLinuxSLL, LinkIPv4, LinkIPv6, LinkLinuxSLL2:
		return true
	}
	return false
}

// Header limits.
const (
	// MaxVLANTags is how many stacked 802.1Q/802.1ad tags an Ethernet frame may
	// carry before UDP gives up with ErrMalformed (real networks use one or two).
	MaxVLANTags = 4
	// MaxIPv6ExtHeaders is how many IPv6 extension headers UDP follows before
	// it gives up with ErrMalformed.
	MaxIPv6ExtHeaders = 8
)

// Header sizes.
const (
	ethernetLen = 14
	vlanTagLen  = 4
	sllLen      = 16
	sll2Len     = 20
	nullLen     = 4
	ipv4MinLen  = 20
	ipv6Len     = 40
	udpLen      = 8
)

// EtherTypes and IP protocol numbers.
const (
	etherIPv4  = 0x0800
	etherIPv6  = 0x86DD
	etherVLAN  = 0x8100
	etherQinQ  = 0x88A8
	etherQinQ2 = 0x9100 // pre-standard QinQ

	protoHopByHop = 0
	protoUDP      = 17
	protoRouting  = 43
	protoFragment = 44
	protoAH       = 51
	protoDstOpts  = 60
)

// Datagram is the UDP datagram UDP found in a frame.
type Datagram struct {
	Src, Dst netip.AddrPort
	// Payload is the part of the UDP payload present in the frame. It is
	// shorter than Length when the frame was cut (snap length, a first IP
	// fragment, an elided dump). It aliases the frame.
	Payload []byte
	// Length is the payload length the headers declare: the UDP length
	// minus the 8-byte UDP header.
	Length int
	// Offset is where the UDP payload starts in the frame.
	Offset int
	// Fragment reports that the datagram is the first fragment of a
	// fragmented IP packet: the rest of the payload is in other packets.
	Fragment bool
}

// UDP strips the link, IP and UDP headers from frame and returns the UDP
// datagram it carries. It fails with ErrTruncated when the frame ends inside
// a header, ErrNotUDP when it carries something else (ARP, TCP, ICMP, ...),
// ErrFragment for an IP fragment other than the first, ErrMalformed for
// inconsistent headers and ErrUnsupportedLink for other link types.
//
// A frame cut after the UDP header is not an error: the datagram's Payload
// is then shorter than its Length. Bytes after the declared UDP length
// (Ethernet padding, a frame check sequence) are not part of the payload.
func UDP(link Link, frame []byte) (Datagram, error) {
	var (
		ethertype uint16
		off       int
	)
	switch link {
	case LinkEthernet:
		et, n, err := etherHeader(frame)
		if err != nil {
			return Datagram{}, err
		}
		ethertype, off = et, n
	case LinkLinuxSLL:
		if len(frame) < sllLen {
			return Datagram{}, fmt.Errorf("%w: linux-sll header: %d of %d bytes", ErrTruncated, len(frame), sllLen)
		}
		ethertype, off = binary.BigEndian.Uint16(frame[14:]), sllLen
	case LinkLinuxSLL2:
		if len(frame) < sll2Len {
			return Datagram{}, fmt.Errorf("%w: linux-sll2 header: %d of %d bytes", ErrTruncated, len(frame), sll2Len)
		}
		ethertype, off = binary.BigEndian.Uint16(frame[0:]), sll2Len
	case LinkNull, LinkLoop:
		if len(frame) < nullLen {
			return Datagram{}, fmt.Errorf("%w: loopback header: %d of %d bytes", ErrTruncated, len(frame), nullLen)
		}
		// The address family is in the writer's byte order (LinkNull) and its
		// value differs between systems (AF_INET6 is 10, 24, 28 or 30), so
		// trust the IP version nibble that follows instead.
		ethertype, off = 0, nullLen
	case LinkRaw, LinkIPv4, LinkIPv6:
		ethertype, off = 0, 0
	default:
		return Datagram{}, fmt.Errorf("%w: %v", ErrUnsupportedLink, link)
	}
	ip := frame[off:]
	if ethertype == 0 {
		if len(ip) < 1 {
			return Datagram{}, fmt.Errorf("%w: IP header: 0 bytes", ErrTruncated)
		}
		switch ip[0] >> 4 {
		case 4:
			ethertype = etherIPv4
		case 6:
			ethertype = etherIPv6
		default:
			return Datagram{}, fmt.Errorf("%w: IP version %d", ErrNotUDP, ip[0]>>4)
		}
		if (link == LinkIPv4 && ethertype != etherIPv4) || (link == LinkIPv6 && ethertype != etherIPv6) {
			return Datagram{}, fmt.Errorf("%w: IP version %d on a %v link", ErrMalformed, ip[0]>>4, link)
		}
	}
	var (
		d   Datagram
		err error
	)
	switch ethertype {
	case etherIPv4:
		d, err = ipv4UDP(ip)
	case etherIPv6:
		d, err = ipv6UDP(ip)
	default:
		return Datagram{}, fmt.Errorf("%w: ethertype %#04x", ErrNotUDP, ethertype)
	}
	if err != nil {
		return Datagram{}, err
	}
	d.Offset += off
	return d, nil
}

// etherHeader returns the EtherType of an Ethernet frame after any VLAN tags,
// and the length of the header.
func etherHeader(frame []byte) (uint16, int, error) {
	if len(frame) < ethernetLen {
		return 0, 0, fmt.Errorf("%w: ethernet header: %d of %d bytes", ErrTruncated, len(frame), ethernetLen)
	}
	off := 12
	for tags := 0; ; tags++ {
		et := binary.BigEndian.Uint16(frame[off:])
		if et != etherVLAN && et != etherQinQ && et != etherQinQ2 {
			if et < 0x0600 {
				return 0, 0, fmt.Errorf("%w: 802.3 length field %d, not an EtherType", ErrNotUDP, et)
			}
			return et, off + 2, nil
		}
		if tags == MaxVLANTags {
			return 0, 0, fmt.Errorf("%w: more than %d VLAN tags", ErrMalformed, MaxVLANTags)
		}
		off += vlanTagLen
		if len(frame) < off+2 {
			return 0, 0, fmt.Errorf("%w: VLAN tag", ErrTruncated)
		}
	}
}

// ipv4UDP decodes an IPv4 packet carrying UDP.
func ipv4UDP(b []byte) (Datagram, error) {
	if len(b) < ipv4MinLen {
		return Datagram{}, fmt.Errorf("%w: IPv4 header: %d of %d bytes", ErrTruncated, len(b), ipv4MinLen)
	}
	if b[0]>>4 != 4 {
		return Datagram{}, fmt.Errorf("%w: IP version %d under an IPv4 EtherType", ErrMalformed, b[0]>>4)
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	if ihl < ipv4MinLen {
		return Datagram{}, fmt.Errorf("%w: IPv4 header length %d", ErrMalformed, ihl)
	}
	if total < ihl {
		return Datagram{}, fmt.Errorf("%w: IPv4 total length %d < header length %d", ErrMalformed, total, ihl)
	}
	if len(b) < ihl {
		return Datagram{}, fmt.Errorf("%w: IPv4 header with options: %d of %d bytes", ErrTruncated, len(b), ihl)
	}
	flags := binary.BigEndian.Uint16(b[6:])
	moreFragments, fragOff := flags&0x2000 != 0, flags&0x1fff
	if fragOff != 0 {
		return Datagram{}, fmt.Errorf("%w: IPv4 fragment offset %d", ErrFragment, int(fragOff)*8)
	}
	if b[9] != protoUDP {
		return Datagram{}, fmt.Errorf("%w: IP protocol %d", ErrNotUDP, b[9])
	}
	src := netip.AddrFrom4([4]byte(b[12:16]))
	dst := netip.AddrFrom4([4]byte(b[16:20]))
	d, err := udp(b[ihl:], total-ihl, src, dst, moreFragments)
	d.Offset += ihl
	return d, err
}

// ipv6UDP decodes an IPv6 packet carrying UDP, following the extension
// headers that may precede it.
func ipv6UDP(b []byte) (Datagram, error) {
	if len(b) < ipv6Len {
		return Datagram{}, fmt.Errorf("%w: IPv6 header: %d of %d bytes", ErrTruncated, len(b), ipv6Len)
	}
	if b[0]>>4 != 6 {
		return Datagram{}, fmt.Errorf("%w: IP version %d under an IPv6 EtherType", ErrMalformed, b[0]>>4)
	}
	// avail is what the IPv6 payload length says follows the fixed header.
	// Zero means a jumbogram (RFC 2675): then the UDP length is all we have.
	avail := int(binary.BigEndian.Uint16(b[4:]))
	jumbo := avail == 0
	next := b[6]
	src := netip.AddrFrom16([16]byte(b[8:24]))
	dst := netip.AddrFrom16([16]byte(b[24:40]))
	off := ipv6Len
	fragment := false
	for n := 0; ; n++ {
		switch next {
		case protoUDP:
			if jumbo {
				avail = -1
			}
			d, err := udp(b[off:], avail, src, dst, fragment)
			d.Offset += off
			return d, err
		case protoHopByHop, protoRouting, protoDstOpts, protoFragment, protoAH:
		default: // TCP, ICMPv6, ESP, no next header, ...
			return Datagram{}, fmt.Errorf("%w: IPv6 next header %d", ErrNotUDP, next)
		}
		if n == MaxIPv6ExtHeaders {
			return Datagram{}, fmt.Errorf("%w: more than %d IPv6 extension headers", ErrMalformed, MaxIPv6ExtHeaders)
		}
		if len(b) < off+8 {
			return Datagram{}, fmt.Errorf("%w: IPv6 extension header %d", ErrTruncated, next)
		}
		var hlen int
		switch next {
		case protoFragment:
			hlen = 8
			fo := binary.BigEndian.Uint16(b[off+2:])
			if fo>>3 != 0 {
				return Datagram{}, fmt.Errorf("%w: IPv6 fragment offset %d", ErrFragment, int(fo>>3)*8)
			}
			fragment = fo&1 != 0
		case protoAH:
			hlen = (int(b[off+1]) + 2) * 4
		default:
			hlen = (int(b[off+1]) + 1) * 8
		}
		if !jumbo {
			if avail < hlen {
				return Datagram{}, fmt.Errorf("%w: IPv6 payload length %d < extension headers", ErrMalformed, avail)
			}
			avail -= hlen
		}
		next = b[off]
		off += hlen
		if len(b) < off {
			return Datagram{}, fmt.Errorf("%w: IPv6 extension header: %d of %d bytes", ErrTruncated, len(b), off)
		}
	}
}

// udp decodes a UDP header. avail is the length the IP layer declares for
// the UDP header and payload, or -1 when it declares none.
func udp(b []byte, avail int, src, dst netip.Addr, fragment bool) (Datagram, error) {
	if len(b) < udpLen {
		return Datagram{}, fmt.Errorf("%w: UDP header: %d of %d bytes", ErrTruncated, len(b), udpLen)
	}
	ulen := int(binary.BigEndian.Uint16(b[4:]))
	if ulen < udpLen {
		return Datagram{}, fmt.Errorf("%w: UDP length %d", ErrMalformed, ulen)
	}
	// A first fragment carries less than the UDP length says; otherwise the
	// UDP datagram must fit in what the IP header declares.
	if avail >= 0 && ulen > avail && !fragment {
		return Datagram{}, fmt.Errorf("%w: UDP length %d > %d bytes declared by IP", ErrMalformed, ulen, avail)
	}
	d := Datagram{
		Src:      netip.AddrPortFrom(src, binary.BigEndian.Uint16(b[0:])),
		Dst:      netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[2:])),
		Length:   ulen - udpLen,
		Offset:   udpLen,
		Fragment: fragment,
	}
	pl := b[udpLen:]
	if fragment && avail >= udpLen && len(pl) > avail-udpLen {
		pl = pl[:avail-udpLen] // the fragment's own IP padding is not payload
	}
	if len(pl) > d.Length {
		pl = pl[:d.Length]
	}
	d.Payload = pl
	return d, nil
}

// guessLink tells whether b looks like a frame: an Ethernet frame carrying
// IPv4 or IPv6, or a bare IP packet. It is used for inputs that do not say
// (raw bytes and text dumps). An IPv4 header must carry a valid (or zero)
// header checksum, so game payloads are not mistaken for frames.
func guessLink(b []byte) (Link, bool) {
	if et, off, err := etherHeader(b); err == nil {
		switch {
		case et == etherIPv4 && plausibleIPv4(b[off:]):
			return LinkEthernet, true
		case et == etherIPv6 && plausibleIPv6(b[off:]):
			return LinkEthernet, true
		}
	}
	if plausibleIPv4(b) {
		return LinkIPv4, true
	}
	if plausibleIPv6(b) {
		return LinkIPv6, true
	}
	return LinkNone, false
}

func plausibleIPv4(b []byte) bool {
	if len(b) < ipv4MinLen || b[0]>>4 != 4 {
		return false
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < ipv4MinLen || len(b) < ihl || int(binary.BigEndian.Uint16(b[2:])) < ihl {
		return false
	}
	if binary.BigEndian.Uint16(b[10:]) == 0 {
		return true
	}
	return ipv4Checksum(b[:ihl]) == 0
}

func plausibleIPv6(b []byte) bool {
	if len(b) < ipv6Len || b[0]>>4 != 6 {
		return false
	}
	switch b[6] {
	case protoUDP, protoHopByHop, protoRouting, protoFragment, protoDstOpts, protoAH:
		return true
	}
	return false
}

// ipv4Checksum returns the one's complement sum of hdr, folded and
// complemented: zero for a header whose checksum field is right.
func ipv4Checksum(hdr []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(hdr); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(hdr[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}
