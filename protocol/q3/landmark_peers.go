package q3

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// The landmarks' RTTs to each other (scout's extension). A landmark master
// measures its RTT to the other landmark masters it knows (its fleet's
// instances, or the peers its operator names) with LandmarkPing. A client
// that wants them adds the word LandmarkPeersKeyword after
// LandmarksKeyword ("getserversExt Quake3Arena 68 empty full landmarks
// landmarkpeers"); a master that does not know the word ignores it. A
// scout landmark master then sends, after its landmark runs,
// LandmarkPeersResponse packets:
//
//	\xff\xff\xff\xffgetserversLandmarkPeersResponse\n
//	<landmark id>\n                 the landmark that measured
//	entries: <peer id>\n 2-byte RTT in LandmarkRTTUnit, 2-byte age in
//	         seconds (big-endian)
//
// Each packet stands alone (no end marker). The answering master's own
// row comes first (if it has measured any peer), then, in a fleet, the
// other instances' rows as they last published them. A client that did
// not ask with both words never gets one: an old client, which asks with
// LandmarksKeyword alone and takes every packet with the landmark
// extension's header for one of its runs, never sees this header.
const (
	// LandmarkPeersKeyword is the getserversExt word that asks for them
	// (with LandmarksKeyword).
	LandmarkPeersKeyword = "landmarkpeers"
	// LandmarkPeersResponseCommand names the reply packet.
	LandmarkPeersResponseCommand = "getserversLandmarkPeersResponse"
)

// LandmarkPeerEntry is one landmark's RTT to another, Age old.
type LandmarkPeerEntry struct {
	Peer string // the other landmark's id
	RTT  time.Duration
	Age  time.Duration
}

// LandmarkPeersResponse is one getserversLandmarkPeersResponse packet.
type LandmarkPeersResponse struct {
	Landmark string // the landmark that measured
	Entries  []LandmarkPeerEntry
}

var landmarkPeersHeader = Prefix + LandmarkPeersResponseCommand + "\n"

// EncodeLandmarkPeersResponses encodes landmark's RTTs to its peers in
// packets of at most maxBytes (0: DefaultMaxBytes); no entries, no
// packet. An id that is not valid (see LandmarksResponse) or an RTT
// outside (0, 65535 units] is refused.
func EncodeLandmarkPeersResponses(landmark string, entries []LandmarkPeerEntry, maxBytes int) ([][]byte, error) {
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	if !validLandmarkID(landmark) {
		return nil, fmt.Errorf("%w: landmark id %q", ErrInvalid, clip(landmark))
	}
	head := len(landmarkPeersHeader) + len(landmark) + 1
	if maxBytes < head+MaxLandmarkIDLen+1+4 {
		return nil, fmt.Errorf("%w: %d bytes cannot hold one entry", ErrInvalid, maxBytes)
	}
	var pkts [][]byte
	var cur []byte
	for _, e := range entries {
		if !validLandmarkID(e.Peer) || e.RTT <= 0 || e.RTT > 65535*LandmarkRTTUnit {
			return nil, fmt.Errorf("%w: landmark peer entry %q rtt %v", ErrInvalid, clip(e.Peer), e.RTT)
		}
		if cur != nil && len(cur)+len(e.Peer)+1+4 > maxBytes {
			pkts = append(pkts, cur)
			cur = nil
		}
		if cur == nil {
			cur = make([]byte, 0, maxBytes)
			cur = append(append(append(cur, landmarkPeersHeader...), landmark...), '\n')
		}
		cur = append(append(cur, e.Peer...), '\n')
		rtt := max(1, (e.RTT+LandmarkRTTUnit/2)/LandmarkRTTUnit)
		age := max(0, min(e.Age/time.Second, MaxLandmarkAge/time.Second))
		cur = binary.BigEndian.AppendUint16(cur, uint16(rtt))
		cur = binary.BigEndian.AppendUint16(cur, uint16(age))
	}
	if cur != nil {
		pkts = append(pkts, cur)
	}
	return pkts, nil
}

// ParseLandmarkPeersResponse parses one getserversLandmarkPeersResponse
// packet (with its 0xFFFFFFFF prefix). A packet of another command is
// ErrUnknownCommand; a bad id, a cut entry or an RTT of 0 is an error: the
// whole packet is refused.
func ParseLandmarkPeersResponse(pkt []byte) (LandmarkPeersResponse, error) {
	var r LandmarkPeersResponse
	if !bytes.HasPrefix(pkt, []byte(landmarkPeersHeader)) {
		return r, ErrUnknownCommand
	}
	rest := pkt[len(landmarkPeersHeader):]
	id, rest, err := landmarkIDLine(rest)
	if err != nil {
		return r, err
	}
	r.Landmark = id
	for len(rest) > 0 {
		var peer string
		if peer, rest, err = landmarkIDLine(rest); err != nil {
			return r, err
		}
		if len(rest) < 4 {
			return r, fmt.Errorf("%w: landmark peer entry", ErrTruncated)
		}
		rtt := binary.BigEndian.Uint16(rest)
		age := binary.BigEndian.Uint16(rest[2:])
		rest = rest[4:]
		if rtt == 0 {
			return r, fmt.Errorf("%w: landmark peer entry with RTT 0", ErrMalformed)
		}
		r.Entries = append(r.Entries, LandmarkPeerEntry{Peer: peer,
			RTT: time.Duration(rtt) * LandmarkRTTUnit, Age: time.Duration(age) * time.Second})
	}
	return r, nil
}

// landmarkIDLine reads a landmark id and its newline from the start of b.
func landmarkIDLine(b []byte) (string, []byte, error) {
	nl := bytes.IndexByte(b[:min(len(b), MaxLandmarkIDLen+1)], '\n')
	if nl < 0 {
		if len(b) <= MaxLandmarkIDLen {
			return "", nil, fmt.Errorf("%w: landmark id without its newline", ErrTruncated)
		}
		return "", nil, fmt.Errorf("%w: landmark id longer than %d bytes", ErrMalformed, MaxLandmarkIDLen)
	}
	id := string(b[:nl])
	if !validLandmarkID(id) {
		return "", nil, fmt.Errorf("%w: landmark id %q", ErrMalformed, clip(id))
	}
	return id, b[nl+1:], nil
}

// LandmarkPing returns the datagram of a landmark ping: a list query for
// protocol 0, which no game uses ("getservers 0 empty full landmarkping"),
// which every master (scout's, dpmaster) answers with the empty list, one
// getserversResponse of 29 bytes, smaller than the query's 40. Clients
// ping landmark masters with it for their own RTT to them, and landmark
// masters each other.
func LandmarkPing() []byte {
	b, err := GetServers{Protocol: 0, Empty: true, Full: true, Other: []string{landmarkPingWord}}.AppendBinary(nil)
	if err != nil {
		panic(err) // a constant message
	}
	return b
}

// landmarkPingWord pads a ping to at least its reply's size.
const landmarkPingWord = "landmarkping"

// IsLandmarkPong reports whether pkt is a ping's reply: a
// getserversResponse (the short form's) listing nothing, with its end
// marker. A run that asks with getserversExt cannot take it for its list.
func IsLandmarkPong(pkt []byte) bool {
	m, err := Parse(pkt)
	r, ok := m.(ServersResponse)
	return err == nil && ok && !r.Ext && len(r.Servers) == 0 && len(r.Dropped) == 0 && r.End != EndNone
}
