package a2s

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Sentinel errors; every parser error wraps one of them.
var (
	// ErrNotA2S reports a packet whose header is no A2S packet: neither the
	// FF FF FF FF single-packet header followed by a known type byte, nor
	// the FE FF FF FF split header. Quake III, Steam master replies and
	// others share the FF FF FF FF prefix, so a dispatcher should try the
	// next protocol.
	ErrNotA2S = errors.New("a2s: not an A2S packet")
	// ErrTruncated reports a packet that ends inside a field.
	ErrTruncated = errors.New("a2s: truncated packet")
	// ErrMalformed reports a field with a value the format does not allow,
	// or bytes after the end of a message.
	ErrMalformed = errors.New("a2s: malformed packet")
	// ErrBadField reports a value the encoder refuses (a NUL inside a
	// string, an out-of-range number).
	ErrBadField = errors.New("a2s: field cannot be encoded")
	// ErrCompressed reports a bzip2-compressed split reply, which scout does
	// not decompress.
	ErrCompressed = errors.New("a2s: compressed split replies are not supported")
	// ErrSplit reports split packets that do not form one reply: a packet
	// number at or beyond the total, totals or ids that disagree, two
	// different packets with one number, or too many packets.
	ErrSplit = errors.New("a2s: inconsistent split packets")
	// ErrIncomplete reports a split reply still missing packets.
	ErrIncomplete = errors.New("a2s: split reply incomplete")
)

// Packet headers (int32 -1 and -2, little-endian).
const (
	headerSingle uint32 = 0xFFFFFFFF
	headerSplit  uint32 = 0xFFFFFFFE
)

// Type bytes, following the FF FF FF FF header.
const (
	TypeInfoRequest   = 0x54 // 'T' A2S_INFO
	TypeInfo          = 0x49 // 'I' A2S_INFO reply (Source)
	TypeGoldSrcInfo   = 0x6D // 'm' obsolete GoldSrc A2S_INFO reply
	TypeChallenge     = 0x41 // 'A' S2C_CHALLENGE
	TypePlayerRequest = 0x55 // 'U' A2S_PLAYER
	TypePlayers       = 0x44 // 'D' A2S_PLAYER reply
	TypeRulesRequest  = 0x56 // 'V' A2S_RULES
	TypeRules         = 0x45 // 'E' A2S_RULES reply
)

// Message is one A2S packet.
type Message interface {
	AppendBinary(b []byte) ([]byte, error)
}

// Parse decodes one datagram, dispatching on its header and type byte.
// The result is one of [InfoRequest], [Challenge], [Info], [GoldSrcInfo],
// [PlayerRequest], [Players], [RulesRequest], [Rules] or [SplitPacket].
// Headers that belong to no A2S packet give an error wrapping [ErrNotA2S].
// On any error the Message is nil; [ParsePlayers] and [ParseRules] return
// what parsed of a truncated reply too.
func Parse(b []byte) (Message, error) {
	if len(b) < 4 {
		// What came of the header is one of the two: a cut packet.
		if len(b) > 0 && (bytes.HasPrefix([]byte{0xFF, 0xFF, 0xFF, 0xFF}, b) || bytes.HasPrefix([]byte{0xFE, 0xFF, 0xFF, 0xFF}, b)) {
			return nil, fmt.Errorf("header: %w", ErrTruncated)
		}
		return nil, fmt.Errorf("%w: %d-byte packet", ErrNotA2S, len(b))
	}
	switch binary.LittleEndian.Uint32(b) {
	case headerSplit:
		return message(ParseSplitPacket(b))
	case headerSingle:
	default:
		return nil, fmt.Errorf("%w: header % x", ErrNotA2S, b[:4])
	}
	if len(b) < 5 {
		return nil, fmt.Errorf("type byte: %w", ErrTruncated)
	}
	switch b[4] {
	case TypeInfoRequest:
		return message(ParseInfoRequest(b))
	case TypeInfo:
		return message(ParseInfo(b))
	case TypeGoldSrcInfo:
		// ET's motd reply ("\xff\xff\xff\xffmotd ...") starts with 'm' too.
		if len(b) >= 8 && string(b[4:8]) == "motd" {
			return nil, fmt.Errorf("%w: Enemy Territory motd", ErrNotA2S)
		}
		return message(ParseGoldSrcInfo(b))
	case TypeChallenge:
		return message(ParseChallenge(b))
	case TypePlayerRequest:
		return message(ParsePlayerRequest(b))
	case TypePlayers:
		return message(ParsePlayers(b))
	case TypeRulesRequest:
		return message(ParseRulesRequest(b))
	case TypeRules:
		return message(ParseRules(b))
	}
	return nil, fmt.Errorf("%w: type byte %#02x", ErrNotA2S, b[4])
}

// checkHeader checks the FF FF FF FF <typ> header and returns the body.
func checkHeader(b []byte, typ byte, what string) ([]byte, error) {
	// A packet cut inside a right header is truncated, not foreign.
	if !bytes.HasPrefix([]byte{0xFF, 0xFF, 0xFF, 0xFF, typ}, b[:min(len(b), 5)]) {
		return nil, fmt.Errorf("%w: not %s", ErrNotA2S, what)
	}
	if len(b) < 5 {
		return nil, fmt.Errorf("%s header: %w", what, ErrTruncated)
	}
	return b[5:], nil
}

// reader consumes a little-endian body, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %w", what, ErrTruncated)
	}
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.fail(what)
		r.b = nil
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8(what string) uint8 {
	if v := r.take(1, what); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u16(what string) uint16 {
	if v := r.take(2, what); v != nil {
		return binary.LittleEndian.Uint16(v)
	}
	return 0
}

func (r *reader) u32(what string) uint32 {
	if v := r.take(4, what); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (r *reader) u64(what string) uint64 {
	if v := r.take(8, what); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (r *reader) str(what string) string {
	if r.err != nil {
		return ""
	}
	for i, c := range r.b {
		if c == 0 {
			s := string(r.b[:i])
			r.b = r.b[i+1:]
			return s
		}
	}
	r.fail(what + " (no NUL terminator)")
	r.b = nil
	return ""
}

// writer appends fields, remembering the first error.
type writer struct {
	b   []byte
	err error
}

func (w *writer) u8(v uint8)   { w.b = append(w.b, v) }
func (w *writer) u16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }
func (w *writer) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *writer) f32(v float32) {
	w.u32(math.Float32bits(v))
}

func (w *writer) str(s, what string) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 && w.err == nil {
			w.err = fmt.Errorf("%w: %s contains NUL", ErrBadField, what)
		}
	}
	w.b = append(w.b, s...)
	w.b = append(w.b, 0)
}

func (w *writer) header(typ byte) {
	w.u32(headerSingle)
	w.u8(typ)
}

// boolByte decodes a 0/1 flag. Lenient: any non-zero byte is true.
func boolByte(v uint8) bool { return v != 0 }

func byteBool(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

// message converts a parser's result for Parse, so that a failed parse
// yields a nil Message rather than a zero value.
func message[M Message](m M, err error) (Message, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}
