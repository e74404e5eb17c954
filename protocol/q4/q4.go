package q4

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Prefix starts every connectionless Doom 3 / Quake 4 packet: the 16-bit
// CONNECTIONLESS_MESSAGE_ID, -1, little-endian.
const Prefix = "\xff\xff"

// Limits. Each is the engine's own constant (Doom 3 GPL source) or, where
// noted, what the real Quake 4 master was seen to do.
const (
	// MaxClients is MAX_ASYNC_CLIENTS: client slots are 0..31, and a slot
	// byte of 32 ends the player list of an infoResponse.
	MaxClients = 32

	// MaxPacketSize is MAX_MESSAGE_SIZE, the engine's largest message.
	// Encoders refuse to build anything longer.
	MaxPacketSize = 16384

	// MaxStringLen is the longest string the engine keeps when reading
	// (MAX_STRING_CHARS 1024 less the NUL). Encoders refuse longer
	// strings; the decoder refuses them too, as an attacker bound (the
	// engine reads past the excess and truncates).
	MaxStringLen = 1023

	// MaxServersPerPacket is how many 6-byte entries the Quake 4 master
	// put in one servers packet (seed 000, Fig. 7: 231 entries, a 1396-byte
	// UDP payload).
	MaxServersPerPacket = 231
)

// Sentinel errors. Every error a parser returns wraps exactly one of them.
var (
	// ErrNotQ4 reports a packet that does not start with [Prefix], or
	// that starts with the Quake III prefix FF FF FF FF (the Doom 3
	// engine reads the third FF as an empty command word).
	ErrNotQ4 = errors.New("q4: not a Doom 3 / Quake 4 connectionless packet")
	// ErrUnknownCommand reports a well-formed command word this package
	// does not decode.
	ErrUnknownCommand = errors.New("q4: unknown command")
	// ErrTruncated reports a packet that ends before its last field does.
	ErrTruncated = errors.New("q4: truncated")
	// ErrMalformed reports bytes that break the format: a field value the
	// engine never sends, a string over [MaxStringLen], too many players.
	ErrMalformed = errors.New("q4: malformed")
	// ErrInvalid reports a message that an encoder refuses to write.
	ErrInvalid = errors.New("q4: invalid message")
)

// Message is a typed Doom 3 / Quake 4 connectionless packet.
type Message interface {
	// AppendBinary appends the whole packet, [Prefix] included, to b.
	AppendBinary(b []byte) ([]byte, error)
}

// Command words, as the engines write them. The engines compare them
// without regard to case (idStr::Icmp), and so does [Parse].
const (
	cmdGetInfo      = "getInfo"
	cmdInfoResponse = "infoResponse"
	cmdGetServers   = "getServers"
	cmdServers      = "servers"
	cmdHeartbeat    = "heartbeat"
	cmdGameAuth     = "gameAuth"
	cmdAuthKey      = "authKey"
)

// Parse decodes one packet, dispatching on its NUL-terminated command word.
// On a defect it returns an error wrapping [ErrNotQ4], [ErrUnknownCommand],
// [ErrTruncated] or [ErrMalformed]; a [Servers] list that breaks mid-entry is
// returned together with the error, holding the entries read before it.
func Parse(b []byte) (Message, error) {
	cmd, body, err := splitCommand(b)
	if err != nil {
		return nil, err
	}
	switch {
	case strings.EqualFold(cmd, cmdGetInfo):
		m, err := parseGetInfoBody(body)
		return okOrNil(&m, err)
	case strings.EqualFold(cmd, cmdInfoResponse):
		m, err := parseInfoResponseBody(body)
		return okOrNil(&m, err)
	case strings.EqualFold(cmd, cmdGetServers):
		m, err := parseGetServersBody(body)
		return okOrNil(&m, err)
	case strings.EqualFold(cmd, cmdServers):
		m, err := parseServersBody(body)
		return &m, err // partial list kept on error
	case strings.EqualFold(cmd, cmdHeartbeat):
		m := parseHeartbeatBody(body)
		return &m, nil
	case strings.EqualFold(cmd, cmdGameAuth):
		m, err := parseGameAuthBody(body)
		return okOrNil(&m, err)
	case strings.EqualFold(cmd, cmdAuthKey):
		m, err := parseAuthKeyBody(body)
		return okOrNil(&m, err)
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownCommand, clip(cmd))
}

func okOrNil(m Message, err error) (Message, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}

// splitCommand checks the prefix and cuts the command word off b.
func splitCommand(b []byte) (cmd string, body []byte, err error) {
	if len(b) < len(Prefix) {
		if bytes.HasPrefix([]byte(Prefix), b) {
			return "", nil, fmt.Errorf("%w: %d-byte packet", ErrTruncated, len(b))
		}
		return "", nil, ErrNotQ4
	}
	if string(b[:len(Prefix)]) != Prefix {
		return "", nil, ErrNotQ4
	}
	// The engine reads packets into MAX_MESSAGE_SIZE buffers; anything
	// longer is not one of its packets (and could not be re-encoded).
	if len(b) > MaxPacketSize {
		return "", nil, fmt.Errorf("%w: %d-byte packet, limit %d", ErrMalformed, len(b), MaxPacketSize)
	}
	if len(b) == len(Prefix) {
		return "", nil, fmt.Errorf("%w: no command word", ErrTruncated)
	}
	// FF FF FF FF is Quake III's out-of-band marker; the Doom 3 engine
	// reads the third FF as the end of an empty command word.
	if b[len(Prefix)] == 0xff {
		return "", nil, fmt.Errorf("%w: Quake III prefix FF FF FF FF", ErrNotQ4)
	}
	r := reader{b: b, off: len(Prefix)}
	cmd, err = r.str("command word")
	if err != nil {
		return "", nil, err
	}
	return cmd, b[r.off:], nil
}

// Version is an ASYNC_PROTOCOL_VERSION: a 32-bit word, major<<16 | minor,
// sent little-endian. Doom 3 1.3.1 is 1.41, Quake 4 1.4.2 is 2.85.
type Version struct {
	// Major is the high 16 bits: 1 for Doom 3, 2 for Quake 4.
	Major uint16 `json:"major"`
	// Minor is the low 16 bits: the patch level (41 for Doom 3 1.3.1,
	// 85 for Quake 4 1.4.2).
	Minor uint16 `json:"minor"`
}

// Protocol versions of the last patches.
var (
	// Doom3 is Doom 3 1.3.1 (ASYNC_PROTOCOL_MINOR 41 in AsyncNetwork.h).
	Doom3 = Version{Major: 1, Minor: 41}
	// Quake4 is Quake 4 1.4.2 (seed 000, Fig. 8).
	Quake4 = Version{Major: 2, Minor: 85}
)

// VersionOf splits a protocol word.
func VersionOf(v uint32) Version { return Version{Major: uint16(v >> 16), Minor: uint16(v)} }

// Uint32 returns the protocol word.
func (v Version) Uint32() uint32 { return uint32(v.Major)<<16 | uint32(v.Minor) }

// String returns "major.minor", as the engine prints it ("2.85").
func (v Version) String() string {
	return strconv.Itoa(int(v.Major)) + "." + strconv.Itoa(int(v.Minor))
}

// Dialect tells which record layout the version implies. See [Dialect].
func (v Version) Dialect() Dialect {
	if v.Major == Quake4.Major {
		return DialectQuake4
	}
	return DialectDoom3
}

// Dialect names the variant of a message layout.
//
// For an infoResponse the rule is the protocol major version: major 2 is
// Quake 4 (player records carry a clan string), anything else uses the
// Doom 3 layout, as qstat's -q4s/-dm3s and the Doom 3 engine do. The
// gamename ("Q4MP 1.4.2") and si_version ("Quake4  V1.4.2 ...") keys agree
// on real Quake 4 servers but are free text a server controls, so they
// are not consulted.
//
// For a getServers request the rule is the shape of the bytes after fs_game:
// exactly one byte left is the Doom 3 filter byte; otherwise the Quake 4
// player and clan strings come first.
type Dialect uint8

const (
	// DialectDoom3 is the Doom 3 layout (the zero value).
	DialectDoom3 Dialect = iota
	// DialectQuake4 is the Quake 4 layout.
	DialectQuake4
)

func (d Dialect) String() string {
	switch d {
	case DialectDoom3:
		return "doom3"
	case DialectQuake4:
		return "quake4"
	}
	return "Dialect(" + strconv.Itoa(int(d)) + ")"
}

// MarshalText writes "doom3" or "quake4".
func (d Dialect) MarshalText() ([]byte, error) {
	if d > DialectQuake4 {
		return nil, fmt.Errorf("%w: dialect %d", ErrInvalid, d)
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads "doom3" or "quake4".
func (d *Dialect) UnmarshalText(b []byte) error {
	switch string(b) {
	case "doom3":
		*d = DialectDoom3
	case "quake4":
		*d = DialectQuake4
	default:
		return fmt.Errorf("%w: dialect %q", ErrInvalid, b)
	}
	return nil
}

// reader walks a packet. Every method checks the length first and wraps
// ErrTruncated with the name of the field that did not fit.
type reader struct {
	b   []byte
	off int
}

func (r *reader) rest() []byte { return r.b[r.off:] }
func (r *reader) done() bool   { return r.off >= len(r.b) }

func (r *reader) need(n int, what string) error {
	if len(r.b)-r.off < n {
		return fmt.Errorf("%w: %s needs %d bytes, %d left", ErrTruncated, what, n, len(r.b)-r.off)
	}
	return nil
}

func (r *reader) u8(what string) (uint8, error) {
	if err := r.need(1, what); err != nil {
		return 0, err
	}
	v := r.b[r.off]
	r.off++
	return v, nil
}

func (r *reader) u16(what string) (uint16, error) {
	if err := r.need(2, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v, nil
}

func (r *reader) u32(what string) (uint32, error) {
	if err := r.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v, nil
}

// str reads a NUL-terminated string. Deliberately lenient: any byte but
// NUL belongs to the string, 0xFF included (the engine's ReadString would
// also stop at 0xFF, qstat and gamedig do not; real servers write 7-bit
// strings, so the difference never shows on their packets).
func (r *reader) str(what string) (string, error) {
	i := bytes.IndexByte(r.b[r.off:], 0)
	if i < 0 {
		return "", fmt.Errorf("%w: %s has no NUL terminator", ErrTruncated, what)
	}
	if i > MaxStringLen {
		return "", fmt.Errorf("%w: %s is %d bytes, limit %d", ErrMalformed, what, i, MaxStringLen)
	}
	s := string(r.b[r.off : r.off+i])
	r.off += i + 1
	return s, nil
}

// appendStr appends s and its NUL, refusing what the reader could not give
// back: an inner NUL or more than MaxStringLen bytes.
func appendStr(b []byte, s, what string) ([]byte, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return b, fmt.Errorf("%w: NUL inside %s %q", ErrInvalid, what, clip(s))
	}
	if len(s) > MaxStringLen {
		return b, fmt.Errorf("%w: %s is %d bytes, limit %d", ErrInvalid, what, len(s), MaxStringLen)
	}
	b = append(b, s...)
	return append(b, 0), nil
}

// appendHeader appends the prefix and the command word.
func appendHeader(b []byte, cmd string) []byte {
	b = append(b, Prefix...)
	b = append(b, cmd...)
	return append(b, 0)
}

// checkSize refuses a packet that grew past MaxPacketSize.
func checkSize(b []byte, start int, what string) ([]byte, error) {
	if n := len(b) - start; n > MaxPacketSize {
		return b[:start], fmt.Errorf("%w: %s is %d bytes, limit %d", ErrInvalid, what, n, MaxPacketSize)
	}
	return b, nil
}

// cutCommand checks the prefix and command word of b for the typed parsers.
func cutCommand(b []byte, want string) ([]byte, error) {
	cmd, rest, err := splitCommand(b)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(cmd, want) {
		return nil, fmt.Errorf("%w: command %q, want %q", ErrUnknownCommand, clip(cmd), want)
	}
	return rest, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
