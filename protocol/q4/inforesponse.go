package q4

import (
	"encoding/binary"
	"fmt"

	"github.com/scout-discovery/scout/protocol/infostring"
)

// InfoResponse is a game server's answer to [GetInfo]:
//
//	FF FF "infoResponse" 00
//	challenge int32 LE | protocol uint32 LE
//	key 00 value 00 ... 00 00        server info, ended by an empty key and an empty deletion list
//	{ id u8 | ping u16 LE | rate u32 LE | name 00 [| clan 00] }*   one record per connected client
//	terminator u8 (32)
//	osmask u32 LE
//	trailer ...                      Quake 4 1.4.2 sends 5 more bytes; see Trailer
//
// The clan string is present in Quake 4 records only; which layout applies
// follows from Protocol (see [Dialect]).
type InfoResponse struct {
	// Challenge is the challenge of the [GetInfo] being answered.
	Challenge int32 `json:"challenge"`
	// Protocol is the server's ASYNC_PROTOCOL_VERSION; it also selects the
	// player record layout.
	Protocol Version `json:"protocol"`
	// Info is the server's serverinfo dictionary in wire order (si_name,
	// si_map, si_maxPlayers, fs_game, gamename, ...). Keys and values
	// may contain '\' here; they cannot contain NUL or be longer than
	// MaxStringLen bytes, and a key cannot be empty.
	Info infostring.Info `json:"info"`
	// Players are the connected clients, in slot order as servers send
	// them. At most MaxClients.
	Players []Player `json:"players"`
	// Terminator is the slot byte that ended the player list. The engine
	// writes MAX_ASYNC_CLIENTS (32) and stops reading at any value of 32 or
	// more; zero means 32 when encoding.
	Terminator uint8 `json:"terminator,omitempty"`
	// OSMask is the server's fileSystem->GetOSMask(): one bit per client
	// OS it has pure game code for (bit 0 win-x86, bit 1 mac, bit 2
	// linux-x86, in Doom 3). Fig. 8's Quake 4 server sent 7.
	OSMask uint32 `json:"os_mask"`
	// Trailer holds the bytes after OSMask, kept raw and re-encoded
	// exactly. Doom 3 sends none. Quake 4 1.4.2 sends five (Fig. 8:
	// 00 00 00 00 01) that neither qstat (which ignores extra bytes) nor
	// gamedig (which decodes only ETQW's ranked/timeleft/gamestate
	// trailer) documents. Nil when empty.
	Trailer []byte `json:"trailer,omitempty"`
}

// Player is one record of the player list.
type Player struct {
	// ID is the client slot, 0..MaxClients-1. Slots are not contiguous.
	ID uint8 `json:"id"`
	// Ping is the client's round-trip time to the server in
	// milliseconds; 0 for bots (gamedig counts ping-0 players as bots).
	Ping uint16 `json:"ping"`
	// Rate is the server's maximum outgoing rate to the client in bytes
	// per second (idMsgChannel::GetMaxOutgoingRate), e.g. 25000.
	Rate uint32 `json:"rate"`
	// Name is the client's ui_name, with any ^N colour codes as sent.
	Name string `json:"name"`
	// Clan is the clan tag, present in Quake 4 records only; it must be
	// empty for Doom 3.
	Clan string `json:"clan,omitempty"`
}

// dictEnd is the byte pair that ends the dictionary: an empty key, then the
// empty list of deleted keys that WriteDeltaDict writes with no base.
const dictEnd = "\x00\x00"

// ParseInfoResponse decodes an infoResponse packet.
func ParseInfoResponse(b []byte) (InfoResponse, error) {
	rest, err := cutCommand(b, cmdInfoResponse)
	if err != nil {
		return InfoResponse{}, err
	}
	return parseInfoResponseBody(rest)
}

func parseInfoResponseBody(b []byte) (InfoResponse, error) {
	var m InfoResponse
	r := reader{b: b}
	c, err := r.u32("challenge")
	if err != nil {
		return InfoResponse{}, err
	}
	m.Challenge = int32(c)
	p, err := r.u32("protocol")
	if err != nil {
		return InfoResponse{}, err
	}
	m.Protocol = VersionOf(p)
	if m.Info, err = readDict(&r); err != nil {
		return InfoResponse{}, err
	}
	quake4 := m.Protocol.Dialect() == DialectQuake4
	for {
		id, err := r.u8("player slot")
		if err != nil {
			return InfoResponse{}, err
		}
		// Deliberately lenient, as the engine's loop is: any slot of 32 or
		// more ends the list (qstat and gamedig insist on exactly 32).
		if id >= MaxClients {
			m.Terminator = id
			break
		}
		// The engine stores players in MAX_ASYNC_CLIENTS-sized arrays
		// without a bound check; more records than slots is garbage.
		if len(m.Players) == MaxClients {
			return InfoResponse{}, fmt.Errorf("%w: more than %d player records", ErrMalformed, MaxClients)
		}
		pl := Player{ID: id}
		if pl.Ping, err = r.u16("player ping"); err != nil {
			return InfoResponse{}, err
		}
		if pl.Rate, err = r.u32("player rate"); err != nil {
			return InfoResponse{}, err
		}
		if pl.Name, err = r.str("player name"); err != nil {
			return InfoResponse{}, err
		}
		if quake4 {
			if pl.Clan, err = r.str("player clan"); err != nil {
				return InfoResponse{}, err
			}
		}
		m.Players = append(m.Players, pl)
	}
	if m.OSMask, err = r.u32("osmask"); err != nil {
		return InfoResponse{}, err
	}
	if !r.done() {
		m.Trailer = append([]byte(nil), r.rest()...)
	}
	return m, nil
}

// readDict reads key 00 value 00 pairs up to the empty key, then the
// (always empty) deletion list.
func readDict(r *reader) (infostring.Info, error) {
	var info infostring.Info
	for {
		key, err := r.str("info key")
		if err != nil {
			return nil, err
		}
		if key == "" {
			break
		}
		value, err := r.str("value of " + clip(key))
		if err != nil {
			return nil, err
		}
		info = append(info, infostring.Pair{Key: key, Value: value})
	}
	// The engine (ReadDeltaDict) now reads the keys deleted from a base
	// dictionary; with no base there are none, and qstat and gamedig read
	// this byte as the "empty value" of the empty key. A non-empty string
	// here means the two readings differ, so refuse it.
	del, err := r.str("info deletion list")
	if err != nil {
		return nil, err
	}
	if del != "" {
		return nil, fmt.Errorf("%w: info dictionary ends with deleted key %q", ErrMalformed, clip(del))
	}
	return info, nil
}

// AppendBinary appends the packet to b. It refuses an empty key, a NUL in
// any string, a string over MaxStringLen, a player slot of MaxClients or
// more, a Terminator under MaxClients (other than zero), a clan tag under
// a Doom 3 protocol, more than MaxClients players and a packet over
// MaxPacketSize.
func (m *InfoResponse) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	if len(m.Players) > MaxClients {
		return b, fmt.Errorf("%w: %d players, limit %d", ErrInvalid, len(m.Players), MaxClients)
	}
	term := m.Terminator
	if term == 0 {
		term = MaxClients
	}
	if term < MaxClients {
		return b, fmt.Errorf("%w: terminator %d is a player slot", ErrInvalid, term)
	}
	b = appendHeader(b, cmdInfoResponse)
	b = binary.LittleEndian.AppendUint32(b, uint32(m.Challenge))
	b = binary.LittleEndian.AppendUint32(b, m.Protocol.Uint32())
	var err error
	for _, p := range m.Info {
		if p.Key == "" {
			return b[:start], fmt.Errorf("%w: empty info key", ErrInvalid)
		}
		if b, err = appendStr(b, p.Key, "info key"); err != nil {
			return b[:start], err
		}
		if b, err = appendStr(b, p.Value, "value of "+clip(p.Key)); err != nil {
			return b[:start], err
		}
	}
	b = append(b, dictEnd...)
	quake4 := m.Protocol.Dialect() == DialectQuake4
	for _, p := range m.Players {
		if p.ID >= MaxClients {
			return b[:start], fmt.Errorf("%w: player slot %d, limit %d", ErrInvalid, p.ID, MaxClients-1)
		}
		if !quake4 && p.Clan != "" {
			return b[:start], fmt.Errorf("%w: clan tag %q under Doom 3 protocol %s", ErrInvalid, clip(p.Clan), m.Protocol)
		}
		b = append(b, p.ID)
		b = binary.LittleEndian.AppendUint16(b, p.Ping)
		b = binary.LittleEndian.AppendUint32(b, p.Rate)
		if b, err = appendStr(b, p.Name, "player name"); err != nil {
			return b[:start], err
		}
		if quake4 {
			if b, err = appendStr(b, p.Clan, "player clan"); err != nil {
				return b[:start], err
			}
		}
	}
	b = append(b, term)
	b = binary.LittleEndian.AppendUint32(b, m.OSMask)
	b = append(b, m.Trailer...)
	return checkSize(b, start, "infoResponse")
}
