package q3

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// Landmark extension (scout's). A client that wants the
// master's round trips to the servers it lists adds the word
// LandmarksKeyword to getserversExt ("getserversExt Quake3Arena 68 empty
// full landmarks"). A master that does not know the word ignores it, as
// scout's master ignores every word it does not know (GetServers.Other),
// and answers the list alone. A scout master that is a landmark answers
// the list and then LandmarksResponse packets:
//
//	\xff\xff\xff\xffgetserversLandmarksResponse\n
//	<landmark id>\n
//	entries: '\' 4-byte IPv4, or '/' 16-byte IPv6; 2-byte port;
//	         2-byte RTT in LandmarkRTTUnit; 2-byte age in seconds
//	         (all big-endian)
//
// Each packet stands alone (no end marker): a client takes what comes
// within its wait for the list; a lost packet leaves its servers
// unmeasured by that landmark. A client that did not ask never gets one.
//
// The answering master's own run comes first, under its own id: a client
// takes the first id as the master's (the landmark its own RTT to the
// master belongs to). A fleet instance then sends the runs of the other
// landmarks it holds, each under that landmark's id. A master that has
// measured none of the listed servers still sends its own run first, as
// one packet with its id and no entries, so that a peer's id never comes
// first.
const (
	// LandmarksKeyword is the getserversExt word that asks for them.
	LandmarksKeyword = "landmarks"
	// LandmarksResponseCommand names the reply packet.
	LandmarksResponseCommand = "getserversLandmarksResponse"
	// MaxLandmarkIDLen bounds a landmark's id.
	MaxLandmarkIDLen = 64
	// LandmarkRTTUnit is the resolution of an RTT on the wire; the
	// largest is 65535 units (6.5535 s).
	LandmarkRTTUnit = 100 * time.Microsecond
	// MaxLandmarkAge is the largest age on the wire (65535 s); an older
	// measurement is sent as this.
	MaxLandmarkAge = 65535 * time.Second
)

// LandmarkEntry is one landmark's RTT to one server, Age old.
type LandmarkEntry struct {
	Addr netip.AddrPort
	RTT  time.Duration
	Age  time.Duration
}

// LandmarksResponse is one getserversLandmarksResponse packet.
type LandmarksResponse struct {
	Landmark string // 1..MaxLandmarkIDLen bytes of [A-Za-z0-9._:\-\[\]]
	Entries  []LandmarkEntry
}

var landmarksHeader = Prefix + LandmarksResponseCommand + "\n"

func validLandmarkID(s string) bool {
	if len(s) == 0 || len(s) > MaxLandmarkIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

func landmarkEntryLen(a netip.AddrPort) int {
	if a.Addr().Is4() {
		return 1 + 4 + 6
	}
	return 1 + 16 + 6
}

func appendLandmarkEntry(b []byte, e LandmarkEntry) []byte {
	ip := e.Addr.Addr()
	if ip.Is4() {
		v := ip.As4()
		b = append(append(b, '\\'), v[:]...)
	} else {
		v := ip.As16()
		b = append(append(b, '/'), v[:]...)
	}
	// Rounded to the nearest unit, but never to 0, which the parser
	// refuses: an RTT under half a unit (loopback) goes as one unit.
	rtt := max(1, (e.RTT+LandmarkRTTUnit/2)/LandmarkRTTUnit)
	age := e.Age / time.Second
	b = binary.BigEndian.AppendUint16(b, e.Addr.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(rtt))
	return binary.BigEndian.AppendUint16(b, uint16(max(0, min(age, MaxLandmarkAge/time.Second))))
}

// EncodeLandmarksResponses encodes landmark's entries in packets of at
// most maxBytes (0: DefaultMaxBytes). Entries with an address that is not
// valid, an RTT outside (0, 65535 units] or a zone are refused; an empty
// list encodes as one packet with the id alone (a master's own run when it
// has measured none of the listed servers).
func EncodeLandmarksResponses(landmark string, entries []LandmarkEntry, maxBytes int) ([][]byte, error) {
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	if !validLandmarkID(landmark) {
		return nil, fmt.Errorf("%w: landmark id %q", ErrInvalid, clip(landmark))
	}
	head := len(landmarksHeader) + len(landmark) + 1
	if maxBytes < head+1+16+6 {
		return nil, fmt.Errorf("%w: %d bytes cannot hold one entry", ErrInvalid, maxBytes)
	}
	var pkts [][]byte
	var cur []byte
	for _, e := range entries {
		if !e.Addr.IsValid() || e.Addr.Addr().Zone() != "" || e.RTT <= 0 || e.RTT > 65535*LandmarkRTTUnit {
			return nil, fmt.Errorf("%w: landmark entry %v rtt %v", ErrInvalid, e.Addr, e.RTT)
		}
		e.Addr = netip.AddrPortFrom(e.Addr.Addr().Unmap(), e.Addr.Port())
		if cur != nil && len(cur)+landmarkEntryLen(e.Addr) > maxBytes {
			pkts = append(pkts, cur)
			cur = nil
		}
		if cur == nil {
			cur = make([]byte, 0, maxBytes)
			cur = append(append(append(cur, landmarksHeader...), landmark...), '\n')
		}
		cur = appendLandmarkEntry(cur, e)
	}
	if cur == nil {
		cur = append(append(make([]byte, 0, head), landmarksHeader...), landmark...)
		cur = append(cur, '\n')
	}
	return append(pkts, cur), nil
}

// ParseLandmarksResponse parses one getserversLandmarksResponse packet
// (with its 0xFFFFFFFF prefix). A packet of another command is
// ErrUnknownCommand; a bad id, a cut or unknown entry is an error: the
// whole packet is refused.
func ParseLandmarksResponse(pkt []byte) (LandmarksResponse, error) {
	var r LandmarksResponse
	if !bytes.HasPrefix(pkt, []byte(landmarksHeader)) {
		return r, ErrUnknownCommand
	}
	rest := pkt[len(landmarksHeader):]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return r, fmt.Errorf("%w: landmark id without its newline", ErrTruncated)
	}
	if id := string(rest[:nl]); validLandmarkID(id) {
		r.Landmark = id
	} else {
		return r, fmt.Errorf("%w: landmark id %q", ErrMalformed, clip(id))
	}
	rest = rest[nl+1:]
	for len(rest) > 0 {
		var ip netip.Addr
		switch rest[0] {
		case '\\':
			if len(rest) < 1+4+6 {
				return r, fmt.Errorf("%w: IPv4 landmark entry", ErrTruncated)
			}
			ip = netip.AddrFrom4([4]byte(rest[1:5]))
			rest = rest[5:]
		case '/':
			if len(rest) < 1+16+6 {
				return r, fmt.Errorf("%w: IPv6 landmark entry", ErrTruncated)
			}
			ip = netip.AddrFrom16([16]byte(rest[1:17]))
			if ip.Is4In6() {
				return r, fmt.Errorf("%w: IPv4-mapped address in an IPv6 landmark entry", ErrMalformed)
			}
			rest = rest[17:]
		default:
			return r, fmt.Errorf("%w: landmark entry starts with %#x", ErrMalformed, rest[0])
		}
		port := binary.BigEndian.Uint16(rest)
		rtt := binary.BigEndian.Uint16(rest[2:])
		age := binary.BigEndian.Uint16(rest[4:])
		rest = rest[6:]
		if rtt == 0 {
			return r, fmt.Errorf("%w: landmark entry with RTT 0", ErrMalformed)
		}
		r.Entries = append(r.Entries, LandmarkEntry{Addr: netip.AddrPortFrom(ip, port),
			RTT: time.Duration(rtt) * LandmarkRTTUnit, Age: time.Duration(age) * time.Second})
	}
	return r, nil
}
