package gs4

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// InfoRequest asks for the full status:
//
//	FE FD 00 <session id> [<challenge>] <server keys> <player keys> <team keys> [<option>]
//
// The key bytes are FF ("all") or 00 ("none"); the UT3 client, qstat and
// gamedig all send FF FF FF 01.
type InfoRequest struct {
	// SessionID is the client's token; the server echoes it. The
	// UnrealAdminWiki says UT3 uses a different one than for the challenge.
	SessionID uint32 `json:"session_id"`
	// HasChallenge is false for the challengeless form older GameSpy 3
	// servers accept (gamedig sends it when a server answered challenge 0).
	HasChallenge bool `json:"has_challenge"`
	// Challenge is [ChallengeReply.Challenge], big-endian on the wire.
	// Meaningful only when HasChallenge is set.
	Challenge uint32 `json:"challenge,omitempty"`
	// Rules, Players and Teams ask for the server key/values, the player
	// table and the team table (FF on the wire; false is 00).
	Rules   bool `json:"rules"`
	Players bool `json:"players"`
	Teams   bool `json:"teams"`
	// Split is the trailing option byte 01 that GameSpy 4 clients (UT3,
	// qstat, gamedig) send: the client accepts a reply split over several
	// packets, each starting "splitnum\0". False: the byte is absent.
	Split bool `json:"split"`
}

// Key-request bytes of an [InfoRequest].
const (
	keysAll  = 0xFF
	keysNone = 0x00
	optSplit = 0x01
)

// ParseInfoRequest decodes an info request. The form is told by length:
// 3 or 4 bytes after the session id are the challengeless form, 7 or 8 the
// form with a challenge. Anything longer, or key bytes other than 00/FF, is
// a key-list request ([ErrKeyList]).
func ParseInfoRequest(b []byte) (InfoRequest, error) {
	if !bytes.HasPrefix([]byte{requestMagic[0], requestMagic[1], TypeInfo}, b[:min(len(b), 3)]) {
		return InfoRequest{}, fmt.Errorf("%w: not an info request", ErrNotGS4)
	}
	if len(b) < 7 {
		return InfoRequest{}, fmt.Errorf("info request header: %w", ErrTruncated)
	}
	m := InfoRequest{SessionID: binary.BigEndian.Uint32(b[3:7])}
	rest := b[7:]
	switch len(rest) {
	case 0, 1, 2, 5, 6:
		return InfoRequest{}, fmt.Errorf("info request key bytes: %w", ErrTruncated)
	case 3, 4:
		if err := m.parseKeys(rest); err != nil {
			// A challenge request cut after its challenge looks like this
			// too; if the bytes are no valid key request, say truncated.
			return InfoRequest{}, fmt.Errorf("info request: %d bytes after the session id are neither keys nor a whole challenge: %w", len(rest), ErrTruncated)
		}
		return m, nil
	case 7, 8:
		m.HasChallenge = true
		m.Challenge = binary.BigEndian.Uint32(rest[:4])
		if err := m.parseKeys(rest[4:]); err != nil {
			return InfoRequest{}, err
		}
		return m, nil
	}
	return InfoRequest{}, fmt.Errorf("%w: %d bytes after the session id", ErrKeyList, len(rest))
}

// parseKeys decodes the three key bytes and the optional option byte.
func (m *InfoRequest) parseKeys(k []byte) error {
	flags := [3]*bool{&m.Rules, &m.Players, &m.Teams}
	for i, f := range flags {
		switch k[i] {
		case keysAll:
			*f = true
		case keysNone:
		default:
			return fmt.Errorf("%w: key byte %d is %#02x", ErrKeyList, i, k[i])
		}
	}
	if len(k) == 4 {
		if k[3] != optSplit {
			return fmt.Errorf("%w: option byte %#02x, want 01", ErrKeyList, k[3])
		}
		m.Split = true
	}
	return nil
}

// AppendBinary appends the request.
func (m InfoRequest) AppendBinary(b []byte) ([]byte, error) {
	if !m.HasChallenge && m.Challenge != 0 {
		return b, fmt.Errorf("%w: Challenge set without HasChallenge", ErrBadField)
	}
	b = append(b, requestMagic[0], requestMagic[1], TypeInfo)
	b = appendUint32(b, m.SessionID)
	if m.HasChallenge {
		b = appendUint32(b, m.Challenge)
	}
	for _, f := range [3]bool{m.Rules, m.Players, m.Teams} {
		if f {
			b = append(b, keysAll)
		} else {
			b = append(b, keysNone)
		}
	}
	if m.Split {
		b = append(b, optSplit)
	}
	return b, nil
}

// SectionKind identifies a section of an info reply.
type SectionKind uint8

// Section kinds, the byte that starts each section.
const (
	SectionServer  SectionKind = 0 // key/value pairs
	SectionPlayers SectionKind = 1 // player table, fields ending in "_"
	SectionTeams   SectionKind = 2 // team table, fields ending in "_t"
)

func (k SectionKind) String() string {
	switch k {
	case SectionServer:
		return "server"
	case SectionPlayers:
		return "players"
	case SectionTeams:
		return "teams"
	}
	return fmt.Sprintf("section(%d)", uint8(k))
}

// KeyValue is one server key/value pair, in wire order.
type KeyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Column is one field of a player or team table as one packet carries it:
// values for rows Offset, Offset+1, ...
type Column struct {
	// Field is the field name as sent, e.g. "player_", "score_", "team_t".
	Field string `json:"field"`
	// Offset is the row of the first value (0 unless a server continues a
	// column in a later packet).
	Offset uint8 `json:"offset"`
	// Values are the column's values, none empty (on the wire the empty
	// string ends the column).
	Values []string `json:"values"`
}

// Section is one section of an info reply packet.
type Section struct {
	Kind SectionKind `json:"kind"`
	// Rules holds the pairs of a SectionServer section.
	Rules []KeyValue `json:"rules,omitempty"`
	// Columns holds the fields of a SectionPlayers or SectionTeams section.
	Columns []Column `json:"columns,omitempty"`
}

// InfoPacket is one datagram of an info reply:
//
//	00 <session id> "splitnum\0" <number | 0x80 if last> <sections>
//
// A whole reply is one or more of these; [Assemble] joins them.
type InfoPacket struct {
	SessionID uint32 `json:"session_id"`
	// Number is the packet's position in the reply, 0 to 127.
	Number uint8 `json:"number"`
	// Last marks the final packet (the high bit of the number byte).
	Last bool `json:"last"`
	// Sections in wire order. Every section in a packet is complete: scout
	// splits replies only between sections or between whole table rows
	// (using Column.Offset), which is what gamedig (it reads server keys
	// from packet 0 only) and qstat both parse.
	Sections []Section `json:"sections"`
}

// ParseInfoPacket decodes one info reply datagram.
//
// Each section must end with its terminator (an empty key, or an empty
// field name) and each column with its empty value; a packet that ends
// inside a section is [ErrTruncated].
func ParseInfoPacket(b []byte) (InfoPacket, error) {
	if len(b) == 0 || b[0] != TypeInfo {
		return InfoPacket{}, fmt.Errorf("%w: not an info reply", ErrNotGS4)
	}
	if len(b) < 5 {
		return InfoPacket{}, fmt.Errorf("info reply session id: %w", ErrTruncated)
	}
	m := InfoPacket{SessionID: binary.BigEndian.Uint32(b[1:5])}
	rest := b[5:]
	n := min(len(rest), len(splitnum))
	if string(rest[:n]) != splitnum[:n] {
		// GameSpy 3 replies without "splitnum" are a different format.
		return InfoPacket{}, fmt.Errorf("%w: info reply without splitnum marker", ErrNotGS4)
	}
	if len(rest) < len(splitnum)+1 {
		return InfoPacket{}, fmt.Errorf("info reply splitnum: %w", ErrTruncated)
	}
	rest = rest[len(splitnum):]
	m.Number, m.Last = rest[0]&0x7F, rest[0]&0x80 != 0
	rest = rest[1:]
	for len(rest) > 0 {
		var s Section
		var err error
		s, rest, err = parseSection(rest)
		if err != nil {
			return InfoPacket{}, fmt.Errorf("packet %d section %d: %w", m.Number, len(m.Sections), err)
		}
		m.Sections = append(m.Sections, s)
	}
	return m, nil
}

// parseSection decodes one section starting at its kind byte.
func parseSection(b []byte) (Section, []byte, error) {
	s := Section{Kind: SectionKind(b[0])}
	b = b[1:]
	switch s.Kind {
	case SectionServer:
		for {
			key, rest, err := readCString(b, "key")
			if err != nil {
				return s, nil, err
			}
			if key == "" {
				return s, rest, nil
			}
			if err := checkName(key, "key"); err != nil {
				return s, nil, fmt.Errorf("%w: %w", ErrBadSection, err)
			}
			val, rest, err := readCString(rest, "value of "+key)
			if err != nil {
				return s, nil, err
			}
			s.Rules = append(s.Rules, KeyValue{key, val})
			b = rest
		}
	case SectionPlayers, SectionTeams:
		for {
			field, rest, err := readCString(b, "field name")
			if err != nil {
				return s, nil, err
			}
			if field == "" {
				return s, rest, nil
			}
			if err := checkName(field, "field name"); err != nil {
				return s, nil, fmt.Errorf("%w: %w", ErrBadSection, err)
			}
			if len(rest) == 0 {
				return s, nil, fmt.Errorf("offset of field %q: %w", field, ErrTruncated)
			}
			c := Column{Field: field, Offset: rest[0]}
			rest = rest[1:]
			for {
				if len(rest) == 0 {
					return s, nil, fmt.Errorf("field %q: %w", field, ErrTruncated)
				}
				var v string
				v, rest, err = readCString(rest, "value of "+field)
				if err != nil {
					return s, nil, err
				}
				if v == "" {
					break
				}
				c.Values = append(c.Values, v)
			}
			s.Columns = append(s.Columns, c)
			b = rest
		}
	}
	return s, nil, fmt.Errorf("%w: kind %#02x", ErrBadSection, uint8(s.Kind))
}

// AppendBinary appends the packet. It refuses what the wire cannot carry:
// Number above 127, NULs in strings, empty keys or field names, empty
// table values, and names whose first byte is 0x01 or 0x02 (gamedig
// would take them for section ids).
func (m InfoPacket) AppendBinary(b []byte) ([]byte, error) {
	if m.Number > 0x7F {
		return b, fmt.Errorf("%w: packet number %d > 127", ErrBadField, m.Number)
	}
	b = append(b, TypeInfo)
	b = appendUint32(b, m.SessionID)
	b = append(b, splitnum...)
	num := m.Number
	if m.Last {
		num |= 0x80
	}
	b = append(b, num)
	var err error
	for _, s := range m.Sections {
		if b, err = s.appendBinary(b); err != nil {
			return b, err
		}
	}
	return b, nil
}

func (s Section) appendBinary(b []byte) ([]byte, error) {
	b = append(b, byte(s.Kind))
	var err error
	switch s.Kind {
	case SectionServer:
		if len(s.Columns) > 0 {
			return b, fmt.Errorf("%w: server section with columns", ErrBadField)
		}
		for _, kv := range s.Rules {
			if err := checkName(kv.Key, "key"); err != nil {
				return b, err
			}
			if b, err = appendCString(b, kv.Key, "key"); err != nil {
				return b, err
			}
			if b, err = appendCString(b, kv.Value, "value of "+kv.Key); err != nil {
				return b, err
			}
		}
	case SectionPlayers, SectionTeams:
		if len(s.Rules) > 0 {
			return b, fmt.Errorf("%w: %v section with key/values", ErrBadField, s.Kind)
		}
		for _, c := range s.Columns {
			if err := checkName(c.Field, "field name"); err != nil {
				return b, err
			}
			if b, err = appendCString(b, c.Field, "field name"); err != nil {
				return b, err
			}
			b = append(b, c.Offset)
			for _, v := range c.Values {
				if v == "" {
					return b, fmt.Errorf("%w: empty value in column %q", ErrBadField, c.Field)
				}
				if b, err = appendCString(b, v, "value of "+c.Field); err != nil {
					return b, err
				}
			}
			b = append(b, 0) // end of column
		}
	default:
		return b, fmt.Errorf("%w: kind %#02x", ErrBadSection, uint8(s.Kind))
	}
	return append(b, 0), nil // end of section
}

func checkName(s, what string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s", ErrBadField, what)
	}
	if s[0] <= 0x02 {
		return fmt.Errorf("%w: %s %q starts with byte %#02x", ErrBadField, what, s, s[0])
	}
	return nil
}
