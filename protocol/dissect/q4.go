package dissect

import (
	"bytes"
	"errors"

	"github.com/scout-discovery/scout/protocol/q4"
)

// decodeQ4 decodes a Doom 3 / Quake 4 connectionless packet.
func decodeQ4(b []byte) Result {
	r := Result{Family: Q4, Message: q4Command(b)}
	m, err := q4.Parse(b)
	r.Err = err
	if errors.Is(err, q4.ErrNotQ4) {
		r.Message = ""
	}
	switch m := m.(type) {
	case nil:
		return r
	case *q4.GetInfo:
		r.Message, r.Msg = "getInfo", m
	case *q4.InfoResponse:
		r.Message, r.Msg = "infoResponse", m
	case *q4.GetServers:
		r.Message, r.Msg = "getServers", m
	case *q4.Servers:
		r.Message, r.Msg = "servers", m
	case *q4.Heartbeat:
		r.Message, r.Msg = "heartbeat", m
	case *q4.GameAuth:
		r.Message, r.Msg = "gameAuth", m
	case *q4.AuthKey:
		r.Message, r.Msg = "authKey", m
	default:
		r.Msg = m
	}
	return r
}

// q4Command returns the command word of a Quake 4 packet as sent, for
// packets that fail to parse ("" when there is none). It is bounded by
// maxCommandWord.
func q4Command(b []byte) string {
	if !hasPrefix(b, 0xFF, 0xFF) {
		return ""
	}
	return commandWord(b[2:], 0)
}

// maxCommandWord bounds the command word a failed packet is named by.
const maxCommandWord = 32

// commandWord returns the printable word at the start of b, ended by stop,
// a NUL, whitespace or the end of b; "" when it is longer than
// maxCommandWord or holds other bytes.
func commandWord(b []byte, stop byte) string {
	if i := bytes.IndexByte(b, stop); i >= 0 {
		b = b[:i]
	}
	for i, c := range b {
		if c == 0 || c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			b = b[:i]
			break
		}
		if c < 0x21 || c > 0x7e {
			return ""
		}
	}
	if len(b) > maxCommandWord {
		return ""
	}
	return string(b)
}
