package q4

import (
	"encoding/binary"
	"fmt"
)

// GameAuth is a client's CD-key check sent to the master
// (idAsyncClient::SendAuthCheck); seed 000 IV.A saw the Quake 4 client
// send one before getServers, carrying its key in clear text:
//
//	FF FF "gameAuth" 00 | protocol u32 LE | hasCDKey u8 | cdkey 00 | hasXPKey u8 | xpkey 00
//
// The master answers with [AuthKey]. Doom 3's XP key is the Resurrection
// of Evil expansion key. The Quake 4 packet itself is not published; this
// is the Doom 3 layout, and any bytes after it are kept in Trailer.
type GameAuth struct {
	// Protocol is the client's protocol version.
	Protocol Version `json:"protocol"`
	// HasCDKey reports whether the client sent a CD key (flag byte 1).
	HasCDKey bool `json:"has_cd_key"`
	// CDKey is the CD key as typed, in clear text; empty when HasCDKey
	// is false.
	CDKey string `json:"cd_key"`
	// HasXPKey reports whether the client sent an expansion key.
	HasXPKey bool `json:"has_xp_key"`
	// XPKey is the expansion key; empty when HasXPKey is false.
	XPKey string `json:"xp_key"`
	// Trailer holds any bytes after XPKey, kept raw. Nil when empty.
	Trailer []byte `json:"trailer,omitempty"`
}

// ParseGameAuth decodes a gameAuth packet. A flag byte other than 0 or 1,
// or a key after a 0 flag, is ErrMalformed.
func ParseGameAuth(b []byte) (GameAuth, error) {
	rest, err := cutCommand(b, cmdGameAuth)
	if err != nil {
		return GameAuth{}, err
	}
	return parseGameAuthBody(rest)
}

func parseGameAuthBody(b []byte) (GameAuth, error) {
	var m GameAuth
	r := reader{b: b}
	p, err := r.u32("protocol")
	if err != nil {
		return GameAuth{}, err
	}
	m.Protocol = VersionOf(p)
	if m.HasCDKey, err = r.flag("CD key flag"); err != nil {
		return GameAuth{}, err
	}
	if m.CDKey, err = r.str("CD key"); err != nil {
		return GameAuth{}, err
	}
	if m.HasXPKey, err = r.flag("XP key flag"); err != nil {
		return GameAuth{}, err
	}
	if m.XPKey, err = r.str("XP key"); err != nil {
		return GameAuth{}, err
	}
	// The engine writes "" when the flag is 0; a key there is not its
	// packet, and would not survive re-encoding.
	if (!m.HasCDKey && m.CDKey != "") || (!m.HasXPKey && m.XPKey != "") {
		return GameAuth{}, fmt.Errorf("%w: key sent with its flag clear", ErrMalformed)
	}
	if !r.done() {
		m.Trailer = append([]byte(nil), r.rest()...)
	}
	return m, nil
}

// flag reads a byte that must be 0 or 1.
func (r *reader) flag(what string) (bool, error) {
	v, err := r.u8(what)
	if err != nil {
		return false, err
	}
	if v > 1 {
		return false, fmt.Errorf("%w: %s is %d, want 0 or 1", ErrMalformed, what, v)
	}
	return v == 1, nil
}

func appendFlag(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendBinary appends the packet to b. A key without its Has flag is
// refused.
func (m *GameAuth) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	if (!m.HasCDKey && m.CDKey != "") || (!m.HasXPKey && m.XPKey != "") {
		return b, fmt.Errorf("%w: key given without its flag", ErrInvalid)
	}
	b = appendHeader(b, cmdGameAuth)
	b = binary.LittleEndian.AppendUint32(b, m.Protocol.Uint32())
	var err error
	b = appendFlag(b, m.HasCDKey)
	if b, err = appendStr(b, m.CDKey, "CD key"); err != nil {
		return b[:start], err
	}
	b = appendFlag(b, m.HasXPKey)
	if b, err = appendStr(b, m.XPKey, "XP key"); err != nil {
		return b[:start], err
	}
	b = append(b, m.Trailer...)
	return checkSize(b, start, "gameAuth")
}

// AuthKeyKind is the first byte of an authKey (authKeyMsg_t).
type AuthKeyKind uint8

const (
	// AuthBadKey refuses the keys; Reason says why.
	AuthBadKey AuthKeyKind = 0 // AUTHKEY_BADKEY
	// AuthGUID accepts the keys and hands the client its GUID.
	AuthGUID AuthKeyKind = 1 // AUTHKEY_GUID
)

// AuthBadKeyReason is the second byte of a refusing authKey
// (authBadKeyStatus_t).
type AuthBadKeyReason uint8

const (
	// AuthBadInvalid: one or both keys are invalid; CDKeyValid and
	// XPKeyValid say which.
	AuthBadInvalid AuthBadKeyReason = 0 // AUTHKEY_BAD_INVALID
	// AuthBadBanned: the key KeyIndex names is banned.
	AuthBadBanned AuthBadKeyReason = 1 // AUTHKEY_BAD_BANNED
	// AuthBadInUse: the key KeyIndex names is in use.
	AuthBadInUse AuthBadKeyReason = 2 // AUTHKEY_BAD_INUSE
	// AuthBadMessage: Message explains the refusal.
	AuthBadMessage AuthBadKeyReason = 3 // AUTHKEY_BAD_MSG
)

// AuthKey is the master's answer to [GameAuth]
// (idAsyncClient::ProcessAuthKeyMessage):
//
//	FF FF "authKey" 00 | kind u8
//	  kind 1 (GUID):    guid 00
//	  kind 0 (bad key): reason u8
//	    reason 0 (invalid): cdkeyValid u8 | xpkeyValid u8   (1 = valid)
//	    reason 1 (banned):  keyIndex u8                     (0 CD key, 1 XP key)
//	    reason 2 (in use):  keyIndex u8
//	    reason 3 (message): message 00
//
// The client ignores it unless it is waiting for one. On a GUID it sets
// com_guid; on a refusal it clears the keys the master named.
type AuthKey struct {
	// Kind says whether the keys were accepted.
	Kind AuthKeyKind `json:"kind"`
	// GUID is the client's GUID (Kind AuthGUID); the Doom 3 server keeps
	// 11 characters of it.
	GUID string `json:"guid,omitempty"`
	// Reason says why the keys were refused (Kind AuthBadKey).
	Reason AuthBadKeyReason `json:"reason,omitempty"`
	// CDKeyValid and XPKeyValid say which keys are good (Reason
	// AuthBadInvalid).
	CDKeyValid bool `json:"cd_key_valid,omitempty"`
	XPKeyValid bool `json:"xp_key_valid,omitempty"`
	// KeyIndex names the refused key, 0 the CD key, 1 the XP key (Reason
	// AuthBadBanned or AuthBadInUse).
	KeyIndex uint8 `json:"key_index,omitempty"`
	// Message is the master's explanation (Reason AuthBadMessage).
	Message string `json:"message,omitempty"`
	// Trailer holds any bytes after the fields, kept raw. Nil when empty.
	Trailer []byte `json:"trailer,omitempty"`
}

// ParseAuthKey decodes an authKey packet. A kind, reason, validity flag or
// key index outside the values above is ErrMalformed.
func ParseAuthKey(b []byte) (AuthKey, error) {
	rest, err := cutCommand(b, cmdAuthKey)
	if err != nil {
		return AuthKey{}, err
	}
	return parseAuthKeyBody(rest)
}

func parseAuthKeyBody(b []byte) (AuthKey, error) {
	var m AuthKey
	r := reader{b: b}
	k, err := r.u8("authKey kind")
	if err != nil {
		return AuthKey{}, err
	}
	m.Kind = AuthKeyKind(k)
	switch m.Kind {
	case AuthGUID:
		if m.GUID, err = r.str("GUID"); err != nil {
			return AuthKey{}, err
		}
	case AuthBadKey:
		reason, err := r.u8("bad key reason")
		if err != nil {
			return AuthKey{}, err
		}
		m.Reason = AuthBadKeyReason(reason)
		switch m.Reason {
		case AuthBadInvalid:
			if m.CDKeyValid, err = r.flag("CD key validity"); err != nil {
				return AuthKey{}, err
			}
			if m.XPKeyValid, err = r.flag("XP key validity"); err != nil {
				return AuthKey{}, err
			}
		case AuthBadBanned, AuthBadInUse:
			idx, err := r.flag("key index")
			if err != nil {
				return AuthKey{}, err
			}
			if idx {
				m.KeyIndex = 1
			}
		case AuthBadMessage:
			if m.Message, err = r.str("message"); err != nil {
				return AuthKey{}, err
			}
		default:
			return AuthKey{}, fmt.Errorf("%w: bad key reason %d", ErrMalformed, reason)
		}
	default:
		return AuthKey{}, fmt.Errorf("%w: authKey kind %d", ErrMalformed, k)
	}
	if !r.done() {
		m.Trailer = append([]byte(nil), r.rest()...)
	}
	return m, nil
}

// AppendBinary appends the packet to b. It refuses unknown kinds and
// reasons, a KeyIndex over 1, and fields set that the kind and reason do
// not carry (they would be lost on the wire).
func (m *AuthKey) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	bad := func(format string, a ...any) ([]byte, error) {
		return b[:start], fmt.Errorf("%w: authKey: "+format, append([]any{ErrInvalid}, a...)...)
	}
	b = appendHeader(b, cmdAuthKey)
	b = append(b, byte(m.Kind))
	var err error
	switch m.Kind {
	case AuthGUID:
		if m.Reason != 0 || m.CDKeyValid || m.XPKeyValid || m.KeyIndex != 0 || m.Message != "" {
			return bad("refusal fields in a GUID reply")
		}
		if b, err = appendStr(b, m.GUID, "GUID"); err != nil {
			return b[:start], err
		}
	case AuthBadKey:
		if m.GUID != "" {
			return bad("GUID in a refusal")
		}
		b = append(b, byte(m.Reason))
		switch m.Reason {
		case AuthBadInvalid:
			if m.KeyIndex != 0 || m.Message != "" {
				return bad("key index or message with reason invalid")
			}
			b = appendFlag(b, m.CDKeyValid)
			b = appendFlag(b, m.XPKeyValid)
		case AuthBadBanned, AuthBadInUse:
			if m.KeyIndex > 1 {
				return bad("key index %d, want 0 or 1", m.KeyIndex)
			}
			if m.CDKeyValid || m.XPKeyValid || m.Message != "" {
				return bad("validity or message with reason %d", m.Reason)
			}
			b = append(b, m.KeyIndex)
		case AuthBadMessage:
			if m.CDKeyValid || m.XPKeyValid || m.KeyIndex != 0 {
				return bad("validity or key index with a message")
			}
			if b, err = appendStr(b, m.Message, "message"); err != nil {
				return b[:start], err
			}
		default:
			return bad("reason %d", m.Reason)
		}
	default:
		return bad("kind %d", m.Kind)
	}
	b = append(b, m.Trailer...)
	return checkSize(b, start, "authKey")
}
