// Package dissect tells which protocol family a UDP payload speaks and
// decodes it with that family's package: [q3] for the Quake III family
// (Q3A, Enemy Territory, RtCW, OpenArena/ioquake3, DarkPlaces), [q4] for
// Quake 4 / Doom 3, [gs4] for Unreal Tournament 3's GameSpy 4 query, [a2s]
// for Valve Source queries and [steammaster] for the Steam master server.
// It is the engine of `scout decode`.
//
// Dispatch is on the leading bytes, in this order:
//
//	FF FF FF FF <command word>   q3 (connectionless packet)
//	FF FF FF FF 66 0A            steammaster reply (when q3 knows no such command)
//	FF FF FF FF <T I A U D m>    a2s (when q3 knows no such command)
//	FE FF FF FF                  a2s split packet
//	FF FF <not FF FF>            q4 (Doom 3 style out-of-band packet)
//	FE FD                        gs4 request
//	09 / 00 <session id>         gs4 reply: taken only when it parses fully,
//	                             or when the [Hint] names gs4 or its port
//	31 ('1')                     steammaster query
//
// A packet only partly present in a capture (a dump with elided lines, a
// frame cut by the snap length) is decoded by [DecodePieces]: the head as
// far as it goes, the bytes after the last gap realigned on the format's
// units (an address entry, an info key), and the missing ranges named.
//
// Decode never panics and never reads or writes the network; it keeps no
// state between calls.
package dissect

import (
	"errors"
	"fmt"
	"net/netip"
)

// Family is a protocol family, named after the package that decodes it.
type Family string

// The families dissect knows.
const (
	Unknown     Family = ""
	Q3          Family = "q3"          // package q3: FF FF FF FF + command word
	Q4          Family = "q4"          // package q4: FF FF + command, NUL-delimited
	GS4         Family = "gs4"         // package gs4: UT3's GameSpy 4 query
	A2S         Family = "a2s"         // package a2s: Valve Source server queries
	SteamMaster Family = "steammaster" // package steammaster: Valve's master server query
)

// Families lists the known families in dispatch order.
var Families = [...]Family{Q3, Q4, GS4, A2S, SteamMaster}

// ParseFamily returns the family named s ("q3", "q4", ...); "" and "auto"
// give Unknown.
func ParseFamily(s string) (Family, error) {
	switch s {
	case "", "auto":
		return Unknown, nil
	}
	for _, f := range Families {
		if string(f) == s {
			return f, nil
		}
	}
	return Unknown, fmt.Errorf("dissect: unknown protocol family %q (want one of q3, q4, gs4, a2s, steammaster)", s)
}

// Errors. Each is wrapped with context; the protocol package's own error
// (q3.ErrTruncated, gs4.ErrNotGS4, ...) stays in the chain too.
var (
	// ErrEmpty reports an empty payload.
	ErrEmpty = errors.New("dissect: empty payload")
	// ErrUnknown reports a payload no family claims.
	ErrUnknown = errors.New("dissect: unknown protocol")
	// ErrIncomplete reports a payload with bytes missing from the capture;
	// [Result.Missing] says which.
	ErrIncomplete = errors.New("dissect: bytes missing from the capture")
)

// GS4QueryPort is the UDP port UT3 servers answer GameSpy 4 queries on by
// default. A reply from (or a request to) it is taken as gs4 even when it
// does not parse, so the error names what is wrong with it.
const GS4QueryPort = 6500

// Hint is what the caller knows about a payload besides its bytes. The zero
// Hint means "guess from the bytes".
type Hint struct {
	// Family, when set, decodes the payload as this family only
	// (`scout decode --proto`).
	Family Family
	// Src and Dst are the datagram's addresses when known (from a capture);
	// their ports settle payloads that are ambiguous by content.
	Src, Dst netip.AddrPort
}

// gs4Port reports whether either side of the datagram is the GameSpy 4
// query port.
func (h Hint) gs4Port() bool {
	return h.Src.Port() == GS4QueryPort || h.Dst.Port() == GS4QueryPort
}

// Result is what a payload decodes to.
//
//   - decoded: Msg set, Err nil;
//   - partial: Msg set, Err the defect that stopped the decoder (a server
//     list cut mid-entry keeps the entries before the cut);
//   - failed: Msg nil, Err the reason; Family and Message are still set
//     when the leading bytes told them.
type Result struct {
	Family Family
	// Message is the message's name as its protocol spells it:
	// "infoResponse", "getservers", "servers", "challengeReply", ...
	Message string
	// Msg is the typed message from the family's package (q3.InfoResponse,
	// gs4.InfoPacket, ...), which marshals to JSON with every field. Nil
	// when nothing decoded.
	Msg any
	// Err is why the payload did not decode, or the defect of a partial
	// decode. The family package's sentinel is in its chain.
	Err error

	// Length is the payload's length; for a capture with bytes missing,
	// the length its headers declare.
	Length int
	// Missing lists the byte ranges of the payload absent from the
	// capture, in order; nil for a complete payload.
	Missing []Range
	// Tail is what the bytes after the last gap decode to, for a payload
	// with bytes missing; nil when there is nothing after a gap or it
	// could not be realigned.
	Tail *Tail
	// Lost is set when Msg joins the head's whole units (address entries,
	// info keys) to the tail's: the payload range whose units it lacks,
	// the gap widened to the units it cut. Nil when Msg is the head alone.
	Lost *Range
}

// OK reports whether the payload decoded completely: a message, no error,
// no missing bytes.
func (r Result) OK() bool { return r.Msg != nil && r.Err == nil && len(r.Missing) == 0 }

// Range is a half-open range [Start, End) of byte offsets in a payload.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Piece is a run of bytes present in a capture, at Offset in the payload.
type Piece struct {
	Offset int
	Data   []byte
}

// Decode tells which family payload speaks and decodes it. It never panics;
// what it cannot decode it explains in Result.Err.
func Decode(payload []byte, h Hint) Result {
	r := decode(payload, h)
	r.Length = len(payload)
	return r
}

func decode(b []byte, h Hint) Result {
	if h.Family != Unknown {
		return decodeAs(h.Family, b)
	}
	if len(b) == 0 {
		return Result{Err: ErrEmpty}
	}
	switch {
	case hasPrefix(b, 0xFF, 0xFF, 0xFF, 0xFF):
		r := decodeQ3(b)
		if r.Msg != nil || !q3Disowns(r.Err) {
			return r
		}
		if len(b) >= 6 && b[4] == 0x66 && b[5] == 0x0A {
			return decodeSteamMaster(b)
		}
		if len(b) >= 5 && isA2SType(b[4]) {
			return decodeA2S(b)
		}
		return Result{Err: fmt.Errorf("%w: FF FF FF FF packet with no known command: %w", ErrUnknown, r.Err)}
	case hasPrefix(b, 0xFE, 0xFF, 0xFF, 0xFF):
		return decodeA2S(b)
	case hasPrefix(b, 0xFF, 0xFF):
		return decodeQ4(b)
	case hasPrefix(b, 0xFE, 0xFD):
		return decodeGS4(b)
	case b[0] == 0x31:
		return decodeSteamMaster(b)
	case b[0] == 0x09 || b[0] == 0x00:
		// A GameSpy 4 reply has no magic of its own: its first byte is the
		// packet type and the next four the client's session id. Take it
		// when it parses fully or the ports say gs4; otherwise say what
		// it would have been.
		r := decodeGS4(b)
		if r.Err == nil || h.gs4Port() {
			return r
		}
		return Result{Err: fmt.Errorf("%w: starts like a GameSpy 4 reply (%#02x) but is none: %w (use --proto gs4 to decode it as one)", ErrUnknown, b[0], r.Err)}
	}
	return Result{Err: fmt.Errorf("%w: leading bytes % x", ErrUnknown, b[:min(len(b), 4)])}
}

// decodeAs decodes b as family f.
func decodeAs(f Family, b []byte) Result {
	if len(b) == 0 {
		return Result{Family: f, Err: ErrEmpty}
	}
	switch f {
	case Q3:
		return decodeQ3(b)
	case Q4:
		return decodeQ4(b)
	case GS4:
		return decodeGS4(b)
	case A2S:
		return decodeA2S(b)
	case SteamMaster:
		return decodeSteamMaster(b)
	}
	return Result{Family: f, Err: fmt.Errorf("%w: %q", ErrUnknown, string(f))}
}

// isA2SType reports whether c is the type byte of a Source query packet
// after FF FF FF FF that package a2s decodes: requests T (info), U
// (players), replies I (info), m (GoldSrc info), A (challenge), D
// (players).
func isA2SType(c byte) bool {
	switch c {
	case 'T', 'U', 'I', 'm', 'A', 'D':
		return true
	}
	return false
}

func hasPrefix(b []byte, p ...byte) bool {
	if len(b) < len(p) {
		return false
	}
	for i, c := range p {
		if b[i] != c {
			return false
		}
	}
	return true
}
