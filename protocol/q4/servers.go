package q4

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Servers is one packet of the master's answer to [GetServers]:
//
//	FF FF "servers" 00 | { IPv4 4 bytes | port u16 LITTLE-endian }*
//
// No count and no end marker: the entries run to the end of the UDP
// payload, and a long list comes as several packets (seed 000 IV.A). The
// port is little-endian, unlike Quake III's getserversResponse: Fig. 7's
// first entry 55 ec 65 2b 6e 6d is 85.236.101.43:28014.
type Servers struct {
	// Servers are the listed game servers in wire order. Every address is
	// IPv4; the zero-port and 0.0.0.0 entries a broken master could send
	// are kept as they came.
	Servers []netip.AddrPort `json:"servers"`
}

// Sizes of a servers packet.
const (
	// ServersHeaderLen is the length of FF FF "servers" 00.
	ServersHeaderLen = len(Prefix) + len(cmdServers) + 1
	// ServerEntryLen is the length of one entry.
	ServerEntryLen = 6
	// MaxServersPacketLen is the UDP payload of a full packet from the
	// real Quake 4 master: 10 + 231*6 = 1396 bytes (Fig. 7).
	MaxServersPacketLen = ServersHeaderLen + MaxServersPerPacket*ServerEntryLen
)

// ParseServers decodes a servers packet. Deliberately lenient, as the
// engine is: a list that ends in a partial entry keeps the whole entries
// before it and is returned together with an error wrapping ErrTruncated
// (qstat drops such a packet entirely; the Doom 3 client reads the missing
// bytes as -1).
func ParseServers(b []byte) (Servers, error) {
	rest, err := cutCommand(b, cmdServers)
	if err != nil {
		return Servers{}, err
	}
	return parseServersBody(rest)
}

func parseServersBody(b []byte) (Servers, error) {
	var m Servers
	// The count comes from the bytes present, never from a field.
	if n := len(b) / ServerEntryLen; n > 0 {
		m.Servers = make([]netip.AddrPort, 0, n)
	}
	for len(b) >= ServerEntryLen {
		ip := netip.AddrFrom4([4]byte(b[:4]))
		m.Servers = append(m.Servers, netip.AddrPortFrom(ip, binary.LittleEndian.Uint16(b[4:6])))
		b = b[ServerEntryLen:]
	}
	if len(b) > 0 {
		return m, fmt.Errorf("%w: %d stray bytes after %d servers entries", ErrTruncated, len(b), len(m.Servers))
	}
	return m, nil
}

// AppendBinary appends the packet to b. Every address must be IPv4 (an
// IPv4-mapped IPv6 address is unmapped); the packet may not exceed
// MaxPacketSize. Use [EncodeServers] to split a long list.
func (m *Servers) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	b = appendHeader(b, cmdServers)
	for _, s := range m.Servers {
		var err error
		if b, err = appendEntry(b, s); err != nil {
			return b[:start], err
		}
	}
	return checkSize(b, start, "servers")
}

func appendEntry(b []byte, s netip.AddrPort) ([]byte, error) {
	ip := s.Addr().Unmap()
	if !ip.Is4() {
		return b, fmt.Errorf("%w: servers entry %v is not IPv4", ErrInvalid, s)
	}
	a := ip.As4()
	b = append(b, a[:]...)
	return binary.LittleEndian.AppendUint16(b, s.Port()), nil
}

// EncodeServers splits list into servers packets of at most maxPerPacket
// entries and maxBytes bytes each (UDP payload). maxPerPacket <= 0 means
// MaxServersPerPacket; maxBytes <= 0 means MaxServersPacketLen. An empty
// list gives one packet with no entries, so a client hears an answer. It
// fails when maxBytes cannot hold one entry or an address is not IPv4.
func EncodeServers(list []netip.AddrPort, maxPerPacket, maxBytes int) ([][]byte, error) {
	if maxPerPacket <= 0 {
		maxPerPacket = MaxServersPerPacket
	}
	if maxBytes <= 0 {
		maxBytes = MaxServersPacketLen
	}
	if maxBytes > MaxPacketSize {
		maxBytes = MaxPacketSize
	}
	if maxBytes < ServersHeaderLen+ServerEntryLen {
		return nil, fmt.Errorf("%w: %d bytes cannot hold a servers entry", ErrInvalid, maxBytes)
	}
	per := min(maxPerPacket, (maxBytes-ServersHeaderLen)/ServerEntryLen)
	var out [][]byte
	for {
		n := min(per, len(list))
		pkt := make([]byte, 0, ServersHeaderLen+n*ServerEntryLen)
		pkt = appendHeader(pkt, cmdServers)
		for _, s := range list[:n] {
			var err error
			if pkt, err = appendEntry(pkt, s); err != nil {
				return nil, err
			}
		}
		out = append(out, pkt)
		list = list[n:]
		if len(list) == 0 {
			return out, nil
		}
	}
}
