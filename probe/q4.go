package probe

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/scout-discovery/scout/protocol/q4"
)

// Q4 queries Doom 3 and Quake 4 servers: one getInfo whose int32
// challenge (32 random bits) the infoResponse echoes. The reply carries
// the serverinfo and the player list (slot, ping, rate, name and, for
// Quake 4, clan; no scores).
var Q4 Dialect = q4Dialect{}

// DefaultPortQ4 is Quake 4's server port (Doom 3 uses 27666).
const DefaultPortQ4 = 28004

type q4Dialect struct{}

func (q4Dialect) Name() string          { return "q4" }
func (q4Dialect) DefaultPort() uint16   { return DefaultPortQ4 }
func (q4Dialect) begin() []step         { return []step{{}} }
func (q4Dialect) tokenMask() uint64     { return 0xffffffff }
func (q4Dialect) stepName(*step) string { return "getInfo" }

func (q4Dialect) appendRequest(b []byte, _ *step, tok uint64) ([]byte, error) {
	m := q4.GetInfo{Challenge: int32(uint32(tok))}
	return m.AppendBinary(b)
}

func (q4Dialect) parse(b []byte) (reply, error) {
	m, err := q4.ParseInfoResponse(b)
	if err != nil {
		return reply{}, err
	}
	return reply{token: uint64(uint32(m.Challenge)), hasToken: true, msg: m}, nil
}

func (q4Dialect) handle(_ *step, rep reply, res *Result) ([]step, bool, error) {
	m, ok := rep.msg.(q4.InfoResponse)
	if !ok {
		return nil, false, errors.New("q4: not an infoResponse")
	}
	res.Info = append(res.Info, m.Info...)
	res.Name, _ = m.Info.Get("si_name")
	res.Map, _ = m.Info.Get("si_map")
	res.GameType, _ = m.Info.Get("si_gameType")
	res.Protocol = m.Protocol.String()
	res.MaxPlayers, _ = strconv.Atoi(value(m.Info, "si_maxPlayers"))
	res.NumPlayers = len(m.Players)
	res.Players = make([]Player, 0, len(m.Players))
	for _, p := range m.Players {
		name := p.Name
		if p.Clan != "" {
			name = fmt.Sprintf("[%s]%s", p.Clan, p.Name)
		}
		res.Players = append(res.Players, Player{Name: name, Ping: int(p.Ping)})
	}
	return nil, true, nil
}
