package a2s

import "fmt"

// infoPayload is the A2S_INFO request string.
const infoPayload = "Source Engine Query\x00"

// InfoRequest is A2S_INFO: FF FF FF FF 54 "Source Engine Query\0" [challenge].
type InfoRequest struct {
	// HasChallenge is set when the request carries a challenge, which
	// servers updated since December 2020 demand: they answer a bare
	// request with a [Challenge] and expect it appended on the retry.
	HasChallenge bool `json:"has_challenge"`
	// Challenge is the 4 bytes from the server's [Challenge], as a
	// little-endian uint32. Meaningful only with HasChallenge.
	Challenge uint32 `json:"challenge,omitempty"`
}

// ParseInfoRequest decodes an A2S_INFO request. Exactly 0 or 4 bytes may
// follow the payload string; anything else is [ErrMalformed] (a server
// should not answer such packets).
func ParseInfoRequest(b []byte) (InfoRequest, error) {
	body, err := checkHeader(b, TypeInfoRequest, "an A2S_INFO request")
	if err != nil {
		return InfoRequest{}, err
	}
	n := min(len(body), len(infoPayload))
	if string(body[:n]) != infoPayload[:n] {
		return InfoRequest{}, fmt.Errorf("%w: A2S_INFO payload %q", ErrMalformed, body)
	}
	if n < len(infoPayload) {
		return InfoRequest{}, fmt.Errorf("A2S_INFO payload: %w", ErrTruncated)
	}
	r := reader{b: body[len(infoPayload):]}
	switch len(r.b) {
	case 0:
		return InfoRequest{}, nil
	case 4:
		return InfoRequest{HasChallenge: true, Challenge: r.u32("challenge")}, nil
	case 1, 2, 3:
		return InfoRequest{}, fmt.Errorf("A2S_INFO challenge: %w", ErrTruncated)
	}
	return InfoRequest{}, fmt.Errorf("%w: %d bytes after the A2S_INFO payload", ErrMalformed, len(r.b))
}

// AppendBinary appends the request.
func (m InfoRequest) AppendBinary(b []byte) ([]byte, error) {
	if !m.HasChallenge && m.Challenge != 0 {
		return b, fmt.Errorf("%w: Challenge without HasChallenge", ErrBadField)
	}
	w := writer{b: b}
	w.header(TypeInfoRequest)
	w.b = append(w.b, infoPayload...)
	if m.HasChallenge {
		w.u32(m.Challenge)
	}
	return w.b, nil
}

// Challenge is S2C_CHALLENGE: FF FF FF FF 41 <challenge:4>, the reply to an
// A2S_INFO or A2S_PLAYER request without (or with a stale) challenge.
type Challenge struct {
	// Challenge is opaque; clients echo its 4 bytes, read here as a
	// little-endian uint32.
	Challenge uint32 `json:"challenge"`
}

// ParseChallenge decodes S2C_CHALLENGE. Lenient: bytes after the challenge
// are ignored.
func ParseChallenge(b []byte) (Challenge, error) {
	body, err := checkHeader(b, TypeChallenge, "S2C_CHALLENGE")
	if err != nil {
		return Challenge{}, err
	}
	r := reader{b: body}
	m := Challenge{Challenge: r.u32("challenge")}
	return m, r.err
}

// AppendBinary appends the reply.
func (m Challenge) AppendBinary(b []byte) ([]byte, error) {
	w := writer{b: b}
	w.header(TypeChallenge)
	w.u32(m.Challenge)
	return w.b, nil
}

// ServerType is the server type byte of an info reply.
type ServerType uint8

// Server types.
const (
	ServerDedicated ServerType = 'd'
	ServerListen    ServerType = 'l' // non-dedicated
	ServerProxy     ServerType = 'p' // SourceTV relay
)

// MarshalText gives the type as its one-character form.
func (t ServerType) MarshalText() ([]byte, error) { return []byte{byte(t)}, nil }

// UnmarshalText reads the one-character form.
func (t *ServerType) UnmarshalText(b []byte) error {
	if len(b) != 1 {
		return fmt.Errorf("%w: server type %q", ErrMalformed, b)
	}
	*t = ServerType(b[0])
	return nil
}

// Environment is the operating system byte of an info reply.
type Environment uint8

// Environments.
const (
	EnvLinux   Environment = 'l'
	EnvWindows Environment = 'w'
	EnvMac     Environment = 'm' // also sent as 'o'
	EnvMacOld  Environment = 'o'
)

// MarshalText gives the environment as its one-character form.
func (e Environment) MarshalText() ([]byte, error) { return []byte{byte(e)}, nil }

// UnmarshalText reads the one-character form.
func (e *Environment) UnmarshalText(b []byte) error {
	if len(b) != 1 {
		return fmt.Errorf("%w: environment %q", ErrMalformed, b)
	}
	*e = Environment(b[0])
	return nil
}

// AppIDTheShip is The Ship's app id; its info replies carry [Ship].
const AppIDTheShip = 2400

// Extra Data Flag bits.
const (
	edfGameID   = 0x01
	edfSteamID  = 0x10
	edfKeywords = 0x20
	edfSourceTV = 0x40
	edfPort     = 0x80
)

// Info is the Source A2S_INFO reply: FF FF FF FF 49 ...
type Info struct {
	Protocol uint8  `json:"protocol"`
	Name     string `json:"name"`
	Map      string `json:"map"`
	Folder   string `json:"folder"` // game directory, e.g. "cstrike"
	Game     string `json:"game"`   // description, e.g. "Counter-Strike: Source"
	// AppID is the 16-bit Steam app id; GameID's low 24 bits hold the full
	// one when the id does not fit.
	AppID       uint16      `json:"app_id"`
	Players     uint8       `json:"players"`
	MaxPlayers  uint8       `json:"max_players"`
	Bots        uint8       `json:"bots"`
	ServerType  ServerType  `json:"server_type"`
	Environment Environment `json:"environment"`
	// Private: a password is required.
	Private bool `json:"private"`
	// VAC: the server is VAC-secured.
	VAC bool `json:"vac"`
	// Ship is present exactly when AppID is 2400 (The Ship).
	Ship    *Ship  `json:"ship,omitempty"`
	Version string `json:"version"`
	// HasExtra is set when the Extra Data Flag byte is present; servers
	// before it existed end the reply after Version. The encoder writes the
	// byte when HasExtra or any field below is set.
	HasExtra bool `json:"has_extra"`
	// The optional fields; nil when absent.
	Port     *uint16   `json:"port,omitempty"`     // game port (EDF 0x80)
	SteamID  *uint64   `json:"steam_id,omitempty"` // server SteamID (EDF 0x10)
	SourceTV *SourceTV `json:"source_tv,omitempty"`
	Keywords *string   `json:"keywords,omitempty"` // tags, comma-separated (EDF 0x20)
	GameID   *uint64   `json:"game_id,omitempty"`  // 64-bit game id (EDF 0x01)
}

// Ship holds The Ship's extra info fields.
type Ship struct {
	Mode      uint8 `json:"mode"` // 0 Hunt, 1 Elimination, 2 Duel, 3 Deathmatch, 4 VIP Team, 5 Team Elimination
	Witnesses uint8 `json:"witnesses"`
	Duration  uint8 `json:"duration"` // seconds before a player is arrested
}

// SourceTV is the spectator relay advertised in an info reply (EDF 0x40).
type SourceTV struct {
	Port uint16 `json:"port"`
	Name string `json:"name"`
}

// ParseInfo decodes a Source A2S_INFO reply.
//
// Lenient: Extra Data Flag bits with no known field (0x02, 0x04, 0x08) are
// ignored, and so are bytes after the last field.
func ParseInfo(b []byte) (Info, error) {
	body, err := checkHeader(b, TypeInfo, "an A2S_INFO reply")
	if err != nil {
		return Info{}, err
	}
	r := reader{b: body}
	var m Info
	m.Protocol = r.u8("protocol")
	m.Name = r.str("name")
	m.Map = r.str("map")
	m.Folder = r.str("folder")
	m.Game = r.str("game")
	m.AppID = r.u16("app id")
	m.Players = r.u8("players")
	m.MaxPlayers = r.u8("max players")
	m.Bots = r.u8("bots")
	m.ServerType = ServerType(r.u8("server type"))
	m.Environment = Environment(r.u8("environment"))
	m.Private = boolByte(r.u8("visibility"))
	m.VAC = boolByte(r.u8("vac"))
	if m.AppID == AppIDTheShip {
		m.Ship = &Ship{Mode: r.u8("ship mode"), Witnesses: r.u8("ship witnesses"), Duration: r.u8("ship duration")}
	}
	m.Version = r.str("version")
	if r.err != nil {
		return Info{}, r.err
	}
	if len(r.b) == 0 {
		return m, nil
	}
	m.HasExtra = true
	edf := r.u8("extra data flag")
	if edf&edfPort != 0 {
		v := r.u16("port")
		m.Port = &v
	}
	if edf&edfSteamID != 0 {
		v := r.u64("steam id")
		m.SteamID = &v
	}
	if edf&edfSourceTV != 0 {
		tv := SourceTV{Port: r.u16("sourcetv port")}
		tv.Name = r.str("sourcetv name")
		m.SourceTV = &tv
	}
	if edf&edfKeywords != 0 {
		v := r.str("keywords")
		m.Keywords = &v
	}
	if edf&edfGameID != 0 {
		v := r.u64("game id")
		m.GameID = &v
	}
	if r.err != nil {
		return Info{}, r.err
	}
	return m, nil
}

// AppendBinary appends the reply. Ship must be set exactly when AppID is
// 2400.
func (m Info) AppendBinary(b []byte) ([]byte, error) {
	if (m.AppID == AppIDTheShip) != (m.Ship != nil) {
		return b, fmt.Errorf("%w: Ship must be set exactly when AppID is %d", ErrBadField, AppIDTheShip)
	}
	w := writer{b: b}
	w.header(TypeInfo)
	w.u8(m.Protocol)
	w.str(m.Name, "name")
	w.str(m.Map, "map")
	w.str(m.Folder, "folder")
	w.str(m.Game, "game")
	w.u16(m.AppID)
	w.u8(m.Players)
	w.u8(m.MaxPlayers)
	w.u8(m.Bots)
	w.u8(uint8(m.ServerType))
	w.u8(uint8(m.Environment))
	w.u8(byteBool(m.Private))
	w.u8(byteBool(m.VAC))
	if m.Ship != nil {
		w.u8(m.Ship.Mode)
		w.u8(m.Ship.Witnesses)
		w.u8(m.Ship.Duration)
	}
	w.str(m.Version, "version")
	var edf uint8
	if m.Port != nil {
		edf |= edfPort
	}
	if m.SteamID != nil {
		edf |= edfSteamID
	}
	if m.SourceTV != nil {
		edf |= edfSourceTV
	}
	if m.Keywords != nil {
		edf |= edfKeywords
	}
	if m.GameID != nil {
		edf |= edfGameID
	}
	if edf != 0 || m.HasExtra {
		w.u8(edf)
	}
	if m.Port != nil {
		w.u16(*m.Port)
	}
	if m.SteamID != nil {
		w.u64(*m.SteamID)
	}
	if m.SourceTV != nil {
		w.u16(m.SourceTV.Port)
		w.str(m.SourceTV.Name, "sourcetv name")
	}
	if m.Keywords != nil {
		w.str(*m.Keywords, "keywords")
	}
	if m.GameID != nil {
		w.u64(*m.GameID)
	}
	return w.b, w.err
}

// GoldSrcInfo is the obsolete GoldSrc info reply: FF FF FF FF 6D ("m").
// Current GoldSrc servers answer A2S_INFO with [Info] instead.
type GoldSrcInfo struct {
	Address     string      `json:"address"` // "ip:port" as the server sees itself
	Name        string      `json:"name"`
	Map         string      `json:"map"`
	Folder      string      `json:"folder"`
	Game        string      `json:"game"`
	Players     uint8       `json:"players"`
	MaxPlayers  uint8       `json:"max_players"`
	Protocol    uint8       `json:"protocol"`
	ServerType  ServerType  `json:"server_type"` // upper-case on old servers: 'D', 'L', 'P'
	Environment Environment `json:"environment"` // 'L' or 'W' on old servers
	Private     bool        `json:"private"`
	// Mod is present when the game is a Half-Life mod.
	Mod  *GoldSrcMod `json:"mod,omitempty"`
	VAC  bool        `json:"vac"`
	Bots uint8       `json:"bots"`
}

// GoldSrcMod describes the mod of a [GoldSrcInfo].
type GoldSrcMod struct {
	Link         string `json:"link"`
	DownloadLink string `json:"download_link"`
	Version      uint32 `json:"version"`
	Size         uint32 `json:"size"` // bytes
	// MultiplayerOnly: byte 1 ("multiplayer only mod"); false: single and
	// multiplayer.
	MultiplayerOnly bool `json:"multiplayer_only"`
	// OwnDLL: the mod uses its own DLL instead of Half-Life's.
	OwnDLL bool `json:"own_dll"`
}

// ParseGoldSrcInfo decodes the obsolete GoldSrc "m" reply. Lenient: bytes
// after the bots byte are ignored.
func ParseGoldSrcInfo(b []byte) (GoldSrcInfo, error) {
	body, err := checkHeader(b, TypeGoldSrcInfo, "a GoldSrc info reply")
	if err != nil {
		return GoldSrcInfo{}, err
	}
	r := reader{b: body}
	var m GoldSrcInfo
	m.Address = r.str("address")
	m.Name = r.str("name")
	m.Map = r.str("map")
	m.Folder = r.str("folder")
	m.Game = r.str("game")
	m.Players = r.u8("players")
	m.MaxPlayers = r.u8("max players")
	m.Protocol = r.u8("protocol")
	m.ServerType = ServerType(r.u8("server type"))
	m.Environment = Environment(r.u8("environment"))
	m.Private = boolByte(r.u8("visibility"))
	if boolByte(r.u8("mod")) {
		mod := GoldSrcMod{Link: r.str("mod link"), DownloadLink: r.str("mod download link")}
		r.u8("mod NUL byte") // always 0; lenient: not checked
		mod.Version = r.u32("mod version")
		mod.Size = r.u32("mod size")
		mod.MultiplayerOnly = boolByte(r.u8("mod type"))
		mod.OwnDLL = boolByte(r.u8("mod dll"))
		m.Mod = &mod
	}
	m.VAC = boolByte(r.u8("vac"))
	m.Bots = r.u8("bots")
	if r.err != nil {
		return GoldSrcInfo{}, r.err
	}
	return m, nil
}

// AppendBinary appends the reply.
func (m GoldSrcInfo) AppendBinary(b []byte) ([]byte, error) {
	w := writer{b: b}
	w.header(TypeGoldSrcInfo)
	w.str(m.Address, "address")
	w.str(m.Name, "name")
	w.str(m.Map, "map")
	w.str(m.Folder, "folder")
	w.str(m.Game, "game")
	w.u8(m.Players)
	w.u8(m.MaxPlayers)
	w.u8(m.Protocol)
	w.u8(uint8(m.ServerType))
	w.u8(uint8(m.Environment))
	w.u8(byteBool(m.Private))
	w.u8(byteBool(m.Mod != nil))
	if m.Mod != nil {
		w.str(m.Mod.Link, "mod link")
		w.str(m.Mod.DownloadLink, "mod download link")
		w.u8(0)
		w.u32(m.Mod.Version)
		w.u32(m.Mod.Size)
		w.u8(byteBool(m.Mod.MultiplayerOnly))
		w.u8(byteBool(m.Mod.OwnDLL))
	}
	w.u8(byteBool(m.VAC))
	w.u8(m.Bots)
	return w.b, w.err
}
