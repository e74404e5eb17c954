package q4

import (
	"encoding/binary"
	"fmt"
)

// GetInfo is a client's probe of a game server:
//
//	FF FF "getInfo" 00 | challenge int32 LE | trailer ...
//
// The server reads the first four bytes after the command word as the
// challenge (idBitMsg::ReadLong) and echoes them in its [InfoResponse];
// it ignores everything after them. The Doom 3 and Quake 4 clients send a
// random int, qstat four zero bytes, gamedig the nine bytes "PiNGPoNg\0"
// (the server reads "PiNG" = 0x474e6950 and drops "PoNg\0").
type GetInfo struct {
	// Challenge is the int the server echoes. Zero is a valid challenge
	// (qstat sends it).
	Challenge int32 `json:"challenge"`
	// Trailer holds the bytes after the challenge, which servers ignore;
	// kept so that a request re-encodes exactly. Nil when there are none.
	Trailer []byte `json:"trailer,omitempty"`
}

// ParseGetInfo decodes a getInfo packet. A packet shorter than the
// challenge is refused with [ErrTruncated]: the engine would read a missing
// challenge as -1, but every known client sends four bytes, and a server
// that answers malformed probes only serves amplification.
func ParseGetInfo(b []byte) (GetInfo, error) {
	rest, err := cutCommand(b, cmdGetInfo)
	if err != nil {
		return GetInfo{}, err
	}
	return parseGetInfoBody(rest)
}

func parseGetInfoBody(b []byte) (GetInfo, error) {
	r := reader{b: b}
	c, err := r.u32("getInfo challenge")
	if err != nil {
		return GetInfo{}, err
	}
	m := GetInfo{Challenge: int32(c)}
	if !r.done() {
		m.Trailer = append([]byte(nil), r.rest()...)
	}
	return m, nil
}

// AppendBinary appends the packet to b.
func (m *GetInfo) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	b = appendHeader(b, cmdGetInfo)
	b = binary.LittleEndian.AppendUint32(b, uint32(m.Challenge))
	b = append(b, m.Trailer...)
	return checkSize(b, start, "getInfo")
}

// String describes the request for logs.
func (m *GetInfo) String() string {
	return fmt.Sprintf("getInfo challenge=%#08x", uint32(m.Challenge))
}
