package q4

import (
	"encoding/binary"
	"fmt"
)

// GetServers is a client's request to the master for the server list:
//
//	Doom 3:  FF FF "getServers" 00 | protocol u32 LE | fs_game 00 | filter u8
//	Quake 4: FF FF "getServers" 00 | protocol u32 LE | fs_game 00 | player 00 | clan 00 | filter u8
//
// The Doom 3 layout is idAsyncClient::GetNETServers; the Quake 4 one is
// qstat's (-q4m) and matches the length of the real Quake 4 1.4.2 request
// in seed 000, Fig. 6:
//
//	ff ff 67 65 74 53 65 72 76 65 72 73 00  55 00 02 80  00  00  00  00
//	      g  e  t  S  e  r  v  e  r  s      2.85|bit 31  ""  ""  ""  filter 0
//
// The 0x80 is bit 31 of the protocol word, which qstat calls the "third
// party flag" and sets for Quake 4 only; the real Quake 4 client set it
// too. It plausibly marks a licensee (non-id) game on id's shared master;
// no public source says more.
type GetServers struct {
	// Protocol is the client's protocol version, bit 31 removed.
	// qstat sends 0.0 unless told otherwise.
	Protocol Version `json:"protocol"`
	// ThirdParty is bit 31 of the protocol word (see above). Encoding
	// refuses a Protocol.Major with bit 15 set: set ThirdParty instead.
	ThirdParty bool `json:"third_party"`
	// Game is the client's fs_game: the mod it wants servers for; empty
	// for the base game.
	Game string `json:"game"`
	// Dialect is the request layout: DialectQuake4 carries Player and
	// Clan. Decoded from the length of what follows Game: exactly one
	// byte left means Doom 3.
	Dialect Dialect `json:"dialect"`
	// Player is a player name to look for (Quake 4 only; qstat's
	// "player" option). Empty means no filter.
	Player string `json:"player,omitempty"`
	// Clan is a clan tag to look for (Quake 4 only). Empty means no
	// filter.
	Clan string `json:"clan,omitempty"`
	// Filter is the filter byte.
	Filter Filter `json:"filter"`
	// Trailer holds any bytes after the filter byte, kept raw. Nil when
	// there are none (the usual case).
	Trailer []byte `json:"trailer,omitempty"`
}

// thirdPartyFlag is bit 31 of a getServers protocol word.
const thirdPartyFlag = 1 << 31

// Filter is the getServers filter byte: three 2-bit fields written by
// idBitMsg::WriteBits from the least significant bit up. The values are
// the Doom 3 browser's gui_filter_* settings, as qstat names them; zero
// in every field means no filtering.
type Filter struct {
	// Password is bits 0-1: 0 any, 1 only servers with a password,
	// 2 only servers without.
	Password uint8 `json:"password"`
	// Players is bits 2-3: 0 any, 1 not full, 2 not full and not empty.
	Players uint8 `json:"players"`
	// GameType is bits 4-5: 0 any, 1 deathmatch, 2 tourney, 3 team
	// deathmatch.
	GameType uint8 `json:"game_type"`
	// Reserved is bits 6-7, unused by the engines; kept so that the byte
	// re-encodes exactly.
	Reserved uint8 `json:"reserved,omitempty"`
}

// FilterOf splits a filter byte.
func FilterOf(b byte) Filter {
	return Filter{Password: b & 3, Players: b >> 2 & 3, GameType: b >> 4 & 3, Reserved: b >> 6}
}

// Byte packs the filter; it fails when a field does not fit in two bits.
func (f Filter) Byte() (byte, error) {
	if f.Password > 3 || f.Players > 3 || f.GameType > 3 || f.Reserved > 3 {
		return 0, fmt.Errorf("%w: filter field over 2 bits: %+v", ErrInvalid, f)
	}
	return f.Password | f.Players<<2 | f.GameType<<4 | f.Reserved<<6, nil
}

// ParseGetServers decodes a getServers packet.
func ParseGetServers(b []byte) (GetServers, error) {
	rest, err := cutCommand(b, cmdGetServers)
	if err != nil {
		return GetServers{}, err
	}
	return parseGetServersBody(rest)
}

func parseGetServersBody(b []byte) (GetServers, error) {
	var m GetServers
	r := reader{b: b}
	p, err := r.u32("protocol")
	if err != nil {
		return GetServers{}, err
	}
	m.ThirdParty = p&thirdPartyFlag != 0
	m.Protocol = VersionOf(p &^ thirdPartyFlag)
	if m.Game, err = r.str("fs_game"); err != nil {
		return GetServers{}, err
	}
	if len(r.rest()) != 1 {
		m.Dialect = DialectQuake4
		if m.Player, err = r.str("player filter"); err != nil {
			return GetServers{}, err
		}
		if m.Clan, err = r.str("clan filter"); err != nil {
			return GetServers{}, err
		}
	}
	f, err := r.u8("filter byte")
	if err != nil {
		return GetServers{}, err
	}
	m.Filter = FilterOf(f)
	if !r.done() {
		m.Trailer = append([]byte(nil), r.rest()...)
	}
	return m, nil
}

// AppendBinary appends the packet to b.
func (m *GetServers) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	if m.Protocol.Major&0x8000 != 0 {
		return b, fmt.Errorf("%w: protocol %s has bit 31 set; use ThirdParty", ErrInvalid, m.Protocol)
	}
	f, err := m.Filter.Byte()
	if err != nil {
		return b, err
	}
	switch m.Dialect {
	case DialectDoom3:
		if m.Player != "" || m.Clan != "" {
			return b, fmt.Errorf("%w: player or clan filter in a Doom 3 request", ErrInvalid)
		}
		// A Doom 3 request with a trailer would decode as Quake 4.
		if len(m.Trailer) > 0 {
			return b, fmt.Errorf("%w: trailer after a Doom 3 filter byte", ErrInvalid)
		}
	case DialectQuake4:
	default:
		return b, fmt.Errorf("%w: dialect %d", ErrInvalid, m.Dialect)
	}
	v := m.Protocol.Uint32()
	if m.ThirdParty {
		v |= thirdPartyFlag
	}
	b = appendHeader(b, cmdGetServers)
	b = binary.LittleEndian.AppendUint32(b, v)
	if b, err = appendStr(b, m.Game, "fs_game"); err != nil {
		return b[:start], err
	}
	if m.Dialect == DialectQuake4 {
		if b, err = appendStr(b, m.Player, "player filter"); err != nil {
			return b[:start], err
		}
		if b, err = appendStr(b, m.Clan, "clan filter"); err != nil {
			return b[:start], err
		}
	}
	b = append(b, f)
	b = append(b, m.Trailer...)
	return checkSize(b, start, "getServers")
}
