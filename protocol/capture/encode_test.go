package capture

import (
	"encoding/binary"
	"net/netip"
	"time"
)

// A small encoder for the tests: frames, pcap files and pcapng files.

// udpIPv4 builds an IPv4 packet with a right header checksum carrying a UDP
// datagram. opts are IPv4 options (a multiple of 4 bytes).
func udpIPv4(src, dst netip.AddrPort, payload, opts []byte) []byte {
	ihl := 20 + len(opts)
	b := make([]byte, ihl+8+len(payload))
	b[0] = 0x40 | byte(ihl/4)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8], b[9] = 64, protoUDP
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	copy(b[20:], opts)
	binary.BigEndian.PutUint16(b[10:], ipv4Checksum(b[:ihl]))
	putUDP(b[ihl:], src, dst, payload)
	return b
}

func putUDP(b []byte, src, dst netip.AddrPort, payload []byte) {
	binary.BigEndian.PutUint16(b[0:], src.Port())
	binary.BigEndian.PutUint16(b[2:], dst.Port())
	binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
	copy(b[8:], payload)
}

// extHdr is an IPv6 extension header of type typ; hdr[0], its next-header
// field, is filled in by udpIPv6.
type extHdr struct {
	typ byte
	hdr []byte
}

// udpIPv6 builds an IPv6 packet carrying UDP after the given extension
// headers.
func udpIPv6(src, dst netip.AddrPort, payload []byte, ext ...extHdr) []byte {
	b := make([]byte, 40)
	b[0] = 0x60
	s, d := src.Addr().As16(), dst.Addr().As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	next := 6
	for _, e := range ext {
		b[next] = e.typ
		next = len(b)
		b = append(b, e.hdr...)
	}
	b[next] = protoUDP
	u := make([]byte, 8+len(payload))
	putUDP(u, src, dst, payload)
	b = append(b, u...)
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
	return b
}

// ether wraps an IP packet in an Ethernet header with the given VLAN tags.
func ether(ethertype uint16, ip []byte, vlans ...uint16) []byte {
	b := make([]byte, 12, 14+4*len(vlans)+len(ip))
	for i := range 12 {
		b[i] = byte(i + 1)
	}
	for _, v := range vlans {
		b = binary.BigEndian.AppendUint16(b, etherVLAN)
		b = binary.BigEndian.AppendUint16(b, v)
	}
	b = binary.BigEndian.AppendUint16(b, ethertype)
	return append(b, ip...)
}

type record struct {
	t     time.Time
	frame []byte
	orig  int // original length; len(frame) when zero
}

// pcapFile builds a pcap file.
func pcapFile(bo order, nano bool, link Link, recs ...record) []byte {
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	b := bo.AppendUint32(nil, magic)
	b = bo.AppendUint16(b, 2)
	b = bo.AppendUint16(b, 4)
	b = bo.AppendUint32(b, 0)
	b = bo.AppendUint32(b, 0)
	b = bo.AppendUint32(b, MaxRecord)
	b = bo.AppendUint32(b, uint32(link))
	for _, r := range recs {
		frac := uint32(r.t.Nanosecond() / 1000)
		if nano {
			frac = uint32(r.t.Nanosecond())
		}
		orig := r.orig
		if orig == 0 {
			orig = len(r.frame)
		}
		b = bo.AppendUint32(b, uint32(r.t.Unix()))
		b = bo.AppendUint32(b, frac)
		b = bo.AppendUint32(b, uint32(len(r.frame)))
		b = bo.AppendUint32(b, uint32(orig))
		b = append(b, r.frame...)
	}
	return b
}

// ngBlock builds one pcapng block, padding the body to 4 bytes.
func ngBlock(bo order, typ uint32, body []byte) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	total := uint32(12 + len(body))
	b := bo.AppendUint32(nil, typ)
	b = bo.AppendUint32(b, total)
	b = append(b, body...)
	return bo.AppendUint32(b, total)
}

func ngSHB(bo order) []byte {
	body := bo.AppendUint32(nil, byteOrderMagic)
	body = bo.AppendUint16(body, 1)
	body = bo.AppendUint16(body, 0)
	body = bo.AppendUint64(body, ^uint64(0)) // section length unknown
	return ngBlock(bo, blockSHB, body)
}

// ngIDB builds an interface description block; resol < 0 leaves out
// if_tsresol.
func ngIDB(bo order, link Link, resol int, offset int64) []byte {
	body := bo.AppendUint16(nil, uint16(link))
	body = bo.AppendUint16(body, 0)
	body = bo.AppendUint32(body, MaxRecord)
	body = bo.AppendUint16(body, 2) // if_name, to be skipped
	body = bo.AppendUint16(body, 3)
	body = append(body, 'l', 'o', '0', 0)
	if resol >= 0 {
		body = bo.AppendUint16(body, optTSResol)
		body = bo.AppendUint16(body, 1)
		body = append(body, byte(resol), 0, 0, 0)
	}
	if offset != 0 {
		body = bo.AppendUint16(body, optTSOffset)
		body = bo.AppendUint16(body, 8)
		body = bo.AppendUint64(body, uint64(offset))
	}
	body = bo.AppendUint32(body, 0) // opt_endofopt
	return ngBlock(bo, blockIDB, body)
}

func ngEPB(bo order, ifid uint32, ts uint64, frame []byte, orig int) []byte {
	body := bo.AppendUint32(nil, ifid)
	body = bo.AppendUint32(body, uint32(ts>>32))
	body = bo.AppendUint32(body, uint32(ts))
	body = bo.AppendUint32(body, uint32(len(frame)))
	body = bo.AppendUint32(body, uint32(orig))
	return ngBlock(bo, blockEPB, append(body, frame...))
}

func ngOPB(bo order, ifid uint16, ts uint64, frame []byte) []byte {
	body := bo.AppendUint16(nil, ifid)
	body = bo.AppendUint16(body, 0)
	body = bo.AppendUint32(body, uint32(ts>>32))
	body = bo.AppendUint32(body, uint32(ts))
	body = bo.AppendUint32(body, uint32(len(frame)))
	body = bo.AppendUint32(body, uint32(len(frame)))
	return ngBlock(bo, blockOPB, append(body, frame...))
}

func ngSPB(bo order, frame []byte) []byte {
	body := bo.AppendUint32(nil, uint32(len(frame)))
	return ngBlock(bo, blockSPB, append(body, frame...))
}

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// order is a byte order that can also append.
type order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}
