package gs4

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
)

// ChallengeRequest asks a server for a challenge: FE FD 09 <session id>.
type ChallengeRequest struct {
	// SessionID is the client's token (big-endian on the wire); the server
	// echoes it in every reply. qstat uses 0x10203040, gamedig 1.
	SessionID uint32 `json:"session_id"`
}

// ParseChallengeRequest decodes FE FD 09 <session id>.
//
// Lenient: bytes after the session id are ignored and not kept. gamedig
// 5.3.3 sends four zero bytes there (its generic challenge slot, filled
// with 0 when it has no challenge yet); UT3 and qstat send none.
func ParseChallengeRequest(b []byte) (ChallengeRequest, error) {
	if len(b) < 3 || b[0] != requestMagic[0] || b[1] != requestMagic[1] || b[2] != TypeChallenge {
		if len(b) < 3 && bytes.HasPrefix([]byte{requestMagic[0], requestMagic[1], TypeChallenge}, b) {
			return ChallengeRequest{}, fmt.Errorf("challenge request header: %w", ErrTruncated)
		}
		return ChallengeRequest{}, fmt.Errorf("%w: not a challenge request", ErrNotGS4)
	}
	if len(b) < 7 {
		return ChallengeRequest{}, fmt.Errorf("challenge request session id: %w", ErrTruncated)
	}
	return ChallengeRequest{SessionID: binary.BigEndian.Uint32(b[3:7])}, nil
}

// AppendBinary appends the 7-byte form UT3 and qstat send.
func (m ChallengeRequest) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, requestMagic[0], requestMagic[1], TypeChallenge)
	return appendUint32(b, m.SessionID), nil
}

// ChallengeReply is the server's answer to a [ChallengeRequest]:
// 09 <session id> <decimal text, NUL-terminated and NUL-padded>.
type ChallengeReply struct {
	// SessionID echoes the request's session id.
	SessionID uint32 `json:"session_id"`
	// Challenge is the value the client puts, big-endian, into its
	// [InfoRequest]. A negative text wraps modulo 2^32 ("-1" is
	// 0xFFFFFFFF), as the UnrealAdminWiki describes. Zero is valid on the
	// wire, but gamedig treats it as "this server wants no challenge" and
	// qstat as "no challenge received yet", so servers should avoid it.
	Challenge uint32 `json:"challenge"`
	// Text is the challenge exactly as sent, e.g. "-1287574694". When
	// encoding, empty means "format Challenge as a signed 32-bit decimal",
	// which is what UT3 servers send.
	Text string `json:"text"`
}

// maxChallengeText is the longest challenge text accepted: the longest
// int32 ("-2147483648") and the longest uint32 ("4294967295") are 11 and
// 10 characters.
const maxChallengeText = ChallengeFieldSize - 1

// ParseChallengeReply decodes 09 <session id> <text>\0 [padding].
//
// Lenient: anything after the text's NUL terminator (UT3 pads the field
// with NULs to 12 bytes) is ignored. The text may be any decimal from
// -2147483648 to 4294967295 (a server printing the challenge unsigned is
// accepted too).
func ParseChallengeReply(b []byte) (ChallengeReply, error) {
	if len(b) == 0 || b[0] != TypeChallenge {
		return ChallengeReply{}, fmt.Errorf("%w: not a challenge reply", ErrNotGS4)
	}
	if len(b) < 5 {
		return ChallengeReply{}, fmt.Errorf("challenge reply session id: %w", ErrTruncated)
	}
	m := ChallengeReply{SessionID: binary.BigEndian.Uint32(b[1:5])}
	text, _, err := readCString(b[5:], "challenge text")
	if err != nil {
		return ChallengeReply{}, err
	}
	v, err := parseChallengeText(text)
	if err != nil {
		return ChallengeReply{}, err
	}
	m.Challenge, m.Text = v, text
	return m, nil
}

func parseChallengeText(s string) (uint32, error) {
	if len(s) == 0 || len(s) > maxChallengeText {
		return 0, fmt.Errorf("%w: text %q has length %d, want 1 to %d", ErrBadChallenge, s, len(s), maxChallengeText)
	}
	digits := s
	if s[0] == '-' {
		digits = s[1:]
	}
	if len(digits) == 0 {
		return 0, fmt.Errorf("%w: text %q has no digits", ErrBadChallenge, s)
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, fmt.Errorf("%w: text %q is not decimal", ErrBadChallenge, s)
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < -1<<31 || n > 1<<32-1 {
		return 0, fmt.Errorf("%w: %q is outside -2147483648..4294967295", ErrBadChallenge, s)
	}
	return uint32(n), nil // negative values wrap modulo 2^32
}

// AppendBinary appends the reply with its text NUL-padded to
// [ChallengeFieldSize] bytes, as UT3 sends it. A non-empty Text must denote
// Challenge.
func (m ChallengeReply) AppendBinary(b []byte) ([]byte, error) {
	text := m.Text
	if text == "" {
		text = strconv.FormatInt(int64(int32(m.Challenge)), 10)
	} else if v, err := parseChallengeText(text); err != nil {
		return b, err
	} else if v != m.Challenge {
		return b, fmt.Errorf("%w: text %q is %d, not Challenge %d", ErrBadField, text, v, m.Challenge)
	}
	b = append(b, TypeChallenge)
	b = appendUint32(b, m.SessionID)
	b = append(b, text...)
	for n := len(text); n < ChallengeFieldSize; n++ {
		b = append(b, 0)
	}
	return b, nil
}
