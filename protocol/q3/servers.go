package q3

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// End is the marker that closes a server list packet.
type End uint8

const (
	// EndNone: the packet ends after its last entry. dpmaster 2.0 and
	// later send every packet but the last of a reply this way.
	EndNone End = iota
	// EndEOT: `\EOT\0\0\0`, protocol 48 and later (Q3Master notes, seed
	// 001; dpmaster). As a 7-byte entry it would read 69.79.84.0:0, which
	// is why port 0 never names a server.
	EndEOT
	// EndNUL: `\` then one 0x00 byte, protocols 43 and 45 (Quake III
	// before 1.27), after the Q3Master notes. The decoder also accepts the
	// 0x00 without its backslash.
	EndNUL
	// EndEOTBare: `\EOT` without the three NULs, at the very end of the
	// packet. Seed 000 describes id Software's master as ending with the
	// text `\EOT` and gives 112 servers as 810 bytes of payload, which is
	// 4+18+112*7+4: this form. Quake III's and ioquake3's clients both stop
	// at it.
	EndEOTBare

	numEnds = iota // the count of End values
)

// EndGrace is how long a client keeps a master's list open after the end
// marker of every form of its request arrived. id's master and dpmaster
// before 2.0 end every packet with the marker, dpmaster 2.x only the last,
// and nothing in the packet tells which: a master sends a list's packets
// back to back, so the list is complete once no packet followed the
// marker within EndGrace.
const EndGrace = 100 * time.Millisecond

func endNames() [numEnds]string {
	return [numEnds]string{EndNone: "none", EndEOT: "eot", EndNUL: "nul", EndEOTBare: "eot_bare"}
}

// String returns "none", "eot", "nul" or "eot_bare".
func (e End) String() string {
	if names := endNames(); int(e) < len(names) {
		return names[e]
	}
	return "End(" + strconv.Itoa(int(e)) + ")"
}

// MarshalText writes the name returned by String.
func (e End) MarshalText() ([]byte, error) {
	if e >= numEnds {
		return nil, fmt.Errorf("%w: end marker %d", ErrInvalid, e)
	}
	return []byte(e.String()), nil
}

// UnmarshalText reads a name written by MarshalText.
func (e *End) UnmarshalText(b []byte) error {
	for i, n := range endNames() {
		if string(b) == n {
			*e = End(i)
			return nil
		}
	}
	return fmt.Errorf("q3: unknown end marker %q", b)
}

// Entry and marker sizes on the wire.
const (
	ipv4EntryLen = 1 + 4 + 2  // '\' address port
	ipv6EntryLen = 1 + 16 + 2 // '/' address port
	eotMarker    = "\\EOT\x00\x00\x00"
	eotBare      = "\\EOT"
	nulMarker    = "\\\x00"
)

// ServersResponse is one packet of a master's server list:
//
//	FF FF FF FF "getserversResponse"    { '\' a4 p2 } [end]
//	FF FF FF FF "getserversExtResponse" { '\' a4 p2 | '/' a16 p2 } [end]
//
// a4/a16 are the address and p2 the port, big-endian; end is `\EOT\0\0\0`
// or `\` 0x00 (see [End]). There is no sequence number: a client collects
// every packet that arrives in a time window (seed 001), or until one
// carries EOT (dpmaster 2.0 and later put it on the last packet only).
//
// ioquake3's client counts an entry only when a '\' or '/' follows it, so
// a packet with EndNone loses its last server there; dpmaster sends its
// non-final packets that way all the same.
type ServersResponse struct {
	// Ext selects getserversExtResponse, the only form that may carry
	// IPv6 entries.
	Ext bool `json:"ext"`
	// Servers are the listed game servers, in wire order. Addresses are
	// as sent: an IPv4-mapped address in a '/' entry stays an IPv6
	// address (Unmap before keying). A decoded entry never has port 0 or
	// an unspecified address: those are in Dropped.
	Servers []netip.AddrPort `json:"servers"`
	// Dropped are the entries a decoded packet carried that name no
	// server (port 0 or the unspecified address), in wire order. They are
	// well framed, so the entries after them still count (ioquake3's
	// client keeps reading past them too); AppendBinary ignores Dropped.
	Dropped []netip.AddrPort `json:"dropped,omitempty"`
	// End is the closing marker.
	End End `json:"end"`
}

func (r ServersResponse) word() string {
	if r.Ext {
		return cmdGetServersExtResponse
	}
	return cmdGetServersResponse
}

// checkServer reports whether ap can be listed: a valid address without a
// zone, not unspecified, a port other than 0, and IPv6 only in Ext.
func checkServer(ap netip.AddrPort, ext bool) error {
	a := ap.Addr()
	switch {
	case !a.IsValid():
		return fmt.Errorf("%w: invalid server address", ErrInvalid)
	case a.Zone() != "":
		return fmt.Errorf("%w: server %v has a zone", ErrInvalid, ap)
	case a.IsUnspecified():
		return fmt.Errorf("%w: server %v has an unspecified address", ErrInvalid, ap)
	case ap.Port() == 0:
		return fmt.Errorf("%w: server %v has port 0", ErrInvalid, ap)
	case a.Is6() && !ext:
		return fmt.Errorf("%w: IPv6 server %v needs getserversExtResponse", ErrInvalid, ap)
	}
	return nil
}

func entryLen(ap netip.AddrPort) int {
	if ap.Addr().Is4() {
		return ipv4EntryLen
	}
	return ipv6EntryLen
}

func appendEntry(b []byte, ap netip.AddrPort) []byte {
	a := ap.Addr()
	if a.Is4() {
		b = append(b, '\\')
		a4 := a.As4()
		b = append(b, a4[:]...)
	} else {
		b = append(b, '/')
		a16 := a.As16()
		b = append(b, a16[:]...)
	}
	return binary.BigEndian.AppendUint16(b, ap.Port())
}

func appendEnd(b []byte, e End) ([]byte, error) {
	switch e {
	case EndNone:
		return b, nil
	case EndEOT:
		return append(b, eotMarker...), nil
	case EndNUL:
		return append(b, nulMarker...), nil
	case EndEOTBare:
		return append(b, eotBare...), nil
	}
	return b, fmt.Errorf("%w: end marker %d", ErrInvalid, e)
}

// AppendBinary appends the packet. It refuses (wrapping [ErrInvalid]) an
// invalid, zoned or unspecified address, port 0, and IPv6 outside Ext. It
// does not limit the packet size: [EncodeServersResponses] does.
func (r ServersResponse) AppendBinary(b []byte) ([]byte, error) {
	for _, s := range r.Servers {
		if err := checkServer(s, r.Ext); err != nil {
			return b, err
		}
	}
	if r.End >= numEnds {
		return b, fmt.Errorf("%w: end marker %d", ErrInvalid, r.End)
	}
	out := appendHeader(b, r.word())
	for _, s := range r.Servers {
		out = appendEntry(out, s)
	}
	return appendEnd(out, r.End)
}

// parseServersResponse reads the entries. It keeps every entry read before
// a defect and returns them with the error.
func parseServersResponse(body []byte, ext bool) (Message, error) {
	r := ServersResponse{Ext: ext}
	name := r.word()
	p := body
	for len(p) > 0 {
		n := len(r.Servers)
		switch p[0] {
		case '\\':
			rest := p[1:]
			if string(rest) == "\x00" {
				r.End = EndNUL
				return r, nil
			}
			if string(p) == eotBare {
				r.End = EndEOTBare
				return r, nil
			}
			if len(rest) >= len(eotMarker)-1 && string(p[:len(eotMarker)]) == eotMarker {
				r.End = EndEOT
				if extra := len(p) - len(eotMarker); extra > 0 {
					return r, fmt.Errorf("%s: %w: %d bytes after EOT", name, ErrMalformed, extra)
				}
				return r, nil
			}
			if len(p) < ipv4EntryLen {
				// A cut entry, or a cut EOT: both look the same.
				return r, fmt.Errorf("%s: %w: entry %d has %d of %d bytes", name, ErrTruncated, n, len(p), ipv4EntryLen)
			}
			r.add(netip.AddrPortFrom(netip.AddrFrom4([4]byte(p[1:5])), binary.BigEndian.Uint16(p[5:7])))
			p = p[ipv4EntryLen:]
		case '/':
			if !ext {
				return r, fmt.Errorf("%s: %w: IPv6 entry ('/') at entry %d; only getserversExtResponse carries them", name, ErrMalformed, n)
			}
			if len(p) < ipv6EntryLen {
				return r, fmt.Errorf("%s: %w: IPv6 entry %d has %d of %d bytes", name, ErrTruncated, n, len(p), ipv6EntryLen)
			}
			r.add(netip.AddrPortFrom(netip.AddrFrom16([16]byte(p[1:17])), binary.BigEndian.Uint16(p[17:19])))
			p = p[ipv6EntryLen:]
		case 0:
			if len(p) == 1 {
				// Lenient: a bare 0x00 after the last entry, read as the
				// protocol 43/45 end marker without its backslash.
				r.End = EndNUL
				return r, nil
			}
			return r, fmt.Errorf("%s: %w: byte 0x00 at entry %d", name, ErrMalformed, n)
		default:
			return r, fmt.Errorf("%s: %w: byte %#02x where entry %d should start", name, ErrMalformed, p[0], n)
		}
	}
	return r, nil
}

// add appends a decoded entry to Servers, or to Dropped when it names no
// server: port 0 or the unspecified address, which no master lists (a
// misread marker, garbage, or a hostile master). Lenient on purpose: the
// entry is well framed, so the packet's other entries are not lost with
// it.
func (r *ServersResponse) add(ap netip.AddrPort) {
	if checkEntry(ap) != nil {
		r.Dropped = append(r.Dropped, ap)
		return
	}
	r.Servers = append(r.Servers, ap)
}

// checkEntry refuses an address that names no server: port 0 or the
// unspecified address.
func checkEntry(ap netip.AddrPort) error {
	if ap.Port() == 0 {
		return fmt.Errorf("%w: %v has port 0", ErrMalformed, ap)
	}
	if ap.Addr().IsUnspecified() {
		return fmt.Errorf("%w: %v has an unspecified address", ErrMalformed, ap)
	}
	return nil
}

// SplitOptions shapes the packets of [EncodeServersResponses].
type SplitOptions struct {
	// Ext selects getserversExtResponse (needed for IPv6 servers).
	Ext bool
	// End is the marker for the last packet, normally EndEOT.
	End End
	// EndOnEvery puts End on every packet, as dpmaster did before 2.0
	// and as id's master did (seed 000 shows `\EOT` on each packet).
	// False puts it on the last packet only, as dpmaster 2.0 and later
	// do, so a client can tell the list is complete.
	EndOnEvery bool
	// MaxEntries caps the servers per packet; 0 means no cap other than
	// MaxBytes. id's master used [IDMasterEntriesPerPacket].
	MaxEntries int
	// MaxBytes caps each datagram's UDP payload in bytes, prefix and
	// markers included; 0 means [DefaultMaxBytes].
	MaxBytes int
}

// EncodeServersResponses splits servers into as few packets as the limits
// allow, in order. An empty list still gives one packet (carrying End), so
// the client learns the list is empty. Every packet keeps room for the
// end marker, so the last one always has it.
func EncodeServersResponses(servers []netip.AddrPort, opt SplitOptions) ([][]byte, error) {
	maxBytes := opt.MaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	if opt.MaxEntries < 0 || maxBytes < 0 {
		return nil, fmt.Errorf("%w: negative limit", ErrInvalid)
	}
	endLen := 0
	switch opt.End {
	case EndNone:
	case EndEOT:
		endLen = len(eotMarker)
	case EndNUL:
		endLen = len(nulMarker)
	case EndEOTBare:
		endLen = len(eotBare)
	default:
		return nil, fmt.Errorf("%w: end marker %d", ErrInvalid, opt.End)
	}
	header := len(Prefix) + len(ServersResponse{Ext: opt.Ext}.word())
	entryMax := ipv4EntryLen
	for _, s := range servers {
		if err := checkServer(s, opt.Ext); err != nil {
			return nil, err
		}
		entryMax = max(entryMax, entryLen(s))
	}
	// Every packet must hold at least one entry and the end marker, so
	// that the split always makes progress.
	if need := header + entryMax + endLen; maxBytes < need {
		return nil, fmt.Errorf("%w: MaxBytes %d below the %d a packet needs", ErrInvalid, maxBytes, need)
	}

	var packets [][]byte
	var cur []byte
	count := 0
	start := func() {
		cur = appendHeader(make([]byte, 0, maxBytes), ServersResponse{Ext: opt.Ext}.word())
		count = 0
	}
	flush := func(last bool) {
		if last || opt.EndOnEvery {
			cur, _ = appendEnd(cur, opt.End) // opt.End checked above
		}
		packets = append(packets, cur)
	}
	start()
	for _, s := range servers {
		// Room for this entry plus the marker this packet may need.
		full := opt.MaxEntries > 0 && count == opt.MaxEntries
		if full || len(cur)+entryLen(s)+endLen > maxBytes {
			flush(false)
			start()
		}
		cur = appendEntry(cur, s)
		count++
	}
	flush(true)
	return packets, nil
}
