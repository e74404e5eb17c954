package gs4

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by a parser wraps exactly one of
// them, so callers can test with errors.Is.
var (
	// ErrNotGS4 reports that the packet does not start with a header this
	// package knows: neither a request (FE FD 00 / FE FD 09) nor a reply
	// (09 ... / 00 <session> "splitnum\0"). A dispatcher should try the next
	// protocol.
	ErrNotGS4 = errors.New("gs4: not a GameSpy 4 packet")
	// ErrTruncated reports that the packet ends inside a field.
	ErrTruncated = errors.New("gs4: truncated packet")
	// ErrBadChallenge reports a challenge text that is not a decimal number
	// in the range a 32-bit challenge can take.
	ErrBadChallenge = errors.New("gs4: bad challenge")
	// ErrKeyList reports an info request that lists explicit key numbers
	// instead of asking for everything (FF) or nothing (00), such as qstat's
	// short status query; scout neither sends nor answers those.
	ErrKeyList = errors.New("gs4: explicit key-list requests are not supported")
	// ErrBadSection reports a section id other than 0 (server), 1 (players)
	// or 2 (teams), or a malformed section body.
	ErrBadSection = errors.New("gs4: bad section")
	// ErrBadField reports a value the encoder refuses: a NUL inside a string,
	// an empty key or field name, an empty table value (the wire format uses
	// the empty string as the column terminator), or an out-of-range number.
	ErrBadField = errors.New("gs4: field cannot be encoded")
	// ErrIncomplete reports a split reply with packets missing; see
	// [MissingError] for which.
	ErrIncomplete = errors.New("gs4: split reply incomplete")
	// ErrTooManyPackets reports a split reply that claims more packets than
	// [MaxPackets], or a packet number at or beyond it.
	ErrTooManyPackets = errors.New("gs4: too many packets in split reply")
	// ErrTooManyRows reports a player or team table that would exceed
	// [MaxRows] rows.
	ErrTooManyRows = errors.New("gs4: too many table rows")
	// ErrMismatch reports packets of one split reply that disagree: another
	// session id, two different packets with the same number, or two packets
	// both marked last.
	ErrMismatch = errors.New("gs4: packets of a split reply disagree")
)

// Packet type bytes (the third byte of a request, the first of a reply).
const (
	TypeInfo      = 0x00 // info (full status) request and reply
	TypeChallenge = 0x09 // challenge request and reply
)

// Limits.
const (
	// MaxPackets bounds the packets of one split reply. The wire allows 128
	// (a 7-bit packet number); a UT3 reply with 64 players fits in a few,
	// so 16 leaves room while bounding what a hostile server can make a
	// client hold.
	MaxPackets = 16
	// MaxRows bounds the rows of an assembled player or team table. Row
	// positions come from the wire (an offset byte plus a value count), so
	// they are bounded before any row is allocated. UT3 servers hold at most
	// 64 players.
	MaxRows = 256
	// ChallengeFieldSize is the size of the challenge text field a UT3
	// server sends: the decimal number, NUL-terminated and padded with NULs
	// to 12 bytes (the longest int32, "-2147483648", is 11 characters).
	ChallengeFieldSize = 12
)

// requestMagic starts every client request.
var requestMagic = [2]byte{0xFE, 0xFD}

// splitnum is the marker that starts the body of a GameSpy 4 info reply.
const splitnum = "splitnum\x00"

// Message is one GameSpy 4 packet.
type Message interface {
	// AppendBinary appends the wire form of the message to b.
	AppendBinary(b []byte) ([]byte, error)
}

// Parse decodes one packet, dispatching on its header. It returns an error
// wrapping [ErrNotGS4] when the header belongs to no GameSpy 4 packet.
//
// The returned Message is one of [ChallengeRequest], [ChallengeReply],
// [InfoRequest] or [InfoPacket].
func Parse(b []byte) (Message, error) {
	if bytes.HasPrefix(requestMagic[:], b[:min(len(b), 2)]) && len(b) > 0 {
		if len(b) < 3 {
			return nil, fmt.Errorf("request type: %w", ErrTruncated)
		}
		switch b[2] {
		case TypeChallenge:
			return message(ParseChallengeRequest(b))
		case TypeInfo:
			return message(ParseInfoRequest(b))
		}
		return nil, fmt.Errorf("%w: request type %#02x", ErrNotGS4, b[2])
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty packet", ErrNotGS4)
	}
	switch b[0] {
	case TypeChallenge:
		return message(ParseChallengeReply(b))
	case TypeInfo:
		return message(ParseInfoPacket(b))
	}
	return nil, fmt.Errorf("%w: first byte %#02x", ErrNotGS4, b[0])
}

// readCString returns the bytes of b up to the first NUL and the rest after
// it. A missing NUL is ErrTruncated.
func readCString(b []byte, what string) (s string, rest []byte, err error) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), b[i+1:], nil
		}
	}
	return "", nil, fmt.Errorf("%s: no NUL terminator: %w", what, ErrTruncated)
}

// appendCString appends s and its NUL terminator, refusing embedded NULs.
func appendCString(b []byte, s, what string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return b, fmt.Errorf("%w: %s contains NUL", ErrBadField, what)
		}
	}
	b = append(b, s...)
	return append(b, 0), nil
}

func appendUint32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

// message converts a parser's result for Parse, so that a failed parse
// yields a nil Message rather than a zero value.
func message[M Message](m M, err error) (Message, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}
