package discover

import (
	"github.com/scout-discovery/scout/protocol/gametext"
	"github.com/scout-discovery/scout/protocol/infostring"
)

// ServerJSON is one {"type":"server"} line of `scout servers --json`: the
// command writes it, and programs that run the command (discobench) read
// it back with the same type.
type ServerJSON struct {
	Type    string `json:"type"` // "server"
	Address string `json:"address"`
	Game    string `json:"game"`
	// Name is the server's name in Unicode as its game draws it
	// (gametext: Quake III's font, Latin-1, UTF-8), colour codes kept;
	// NamePlain without them; NameRaw the exact bytes it sent, in
	// base64 (RFC 4648, standard alphabet): JSON strings are UTF-8, the
	// games' names are not.
	Name       string          `json:"name"`
	NamePlain  string          `json:"name_plain"`
	NameRaw    []byte          `json:"name_raw"`
	Map        string          `json:"map"`
	GameType   string          `json:"gametype"`
	Protocol   string          `json:"protocol"`
	NumPlayers int             `json:"numplayers"`
	MaxPlayers int             `json:"maxplayers"`
	Info       infostring.Info `json:"info"`
	// StatusInfo: the statusResponse's values of the keys its
	// infoResponse gave another (probe.Result.StatusInfo).
	StatusInfo infostring.Info `json:"status_info,omitempty"`
	Players    *[]PlayerJSON   `json:"players,omitempty"` // absent: no player list was asked for or sent
	RTTms      float64         `json:"rtt_ms"`
	Attempts   int             `json:"attempts"`
	Masters    []string        `json:"masters"`
	Error      string          `json:"error,omitempty"`
}

// PlayerJSON is one player of a ServerJSON's "players".
type PlayerJSON struct {
	Name      string  `json:"name"`       // as ServerJSON.Name
	NamePlain string  `json:"name_plain"` // as ServerJSON.NamePlain
	NameRaw   []byte  `json:"name_raw"`   // as ServerJSON.NameRaw
	Score     int     `json:"score"`
	Ping      int     `json:"ping"`
	Team      string  `json:"team,omitempty"`
	TimeS     float64 `json:"time_s,omitempty"`
}

// JSON returns s as its line of `scout servers --json`. Info and Masters
// are empty, never null.
func (s Server) JSON() ServerJSON {
	cs := gametext.For(s.Game)
	j := ServerJSON{Type: "server", Address: s.Addr.String(), Game: s.Game, Name: cs.Decode(s.Name),
		NamePlain: cs.Plain(s.Name), NameRaw: []byte(s.Name), StatusInfo: s.StatusInfo, Map: s.Map, GameType: s.GameType, Protocol: s.Protocol,
		NumPlayers: s.NumPlayers, MaxPlayers: s.MaxPlayers, Info: s.Info,
		RTTms: float64(s.RTT.Nanoseconds()) / 1e6, Attempts: s.Attempts, Masters: s.Masters}
	if j.Info == nil {
		j.Info = infostring.Info{}
	}
	if j.Masters == nil {
		j.Masters = []string{}
	}
	if s.Players != nil {
		ps := make([]PlayerJSON, len(s.Players))
		for i, p := range s.Players {
			ps[i] = PlayerJSON{Name: cs.Decode(p.Name), NamePlain: cs.Plain(p.Name), NameRaw: []byte(p.Name), Score: p.Score, Ping: p.Ping,
				Team: p.Team, TimeS: p.Time.Seconds()}
		}
		j.Players = &ps
	}
	if s.Err != nil {
		j.Error = s.Err.Error()
	}
	return j
}
