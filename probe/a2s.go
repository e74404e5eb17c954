package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/scout-discovery/scout/protocol/a2s"
	"github.com/scout-discovery/scout/protocol/infostring"
)

// A2S queries Valve Source (and GoldSrc) servers:
//
//	A2S_INFO    FF FF FF FF 54 "Source Engine Query" 00 [<challenge>]  ->  49 <info> | 41 <challenge>
//	A2S_PLAYER  FF FF FF FF 55 <challenge>                              ->  44 <players> | 41 <challenge>
//	A2S_RULES   FF FF FF FF 56 <challenge>                              ->  45 <rules> | 41 <challenge>
//
// Servers updated since December 2020 answer a request without a challenge
// with S2C_CHALLENGE (41); the request is sent again with it, and the same
// challenge is offered with A2S_PLAYER, then A2S_RULES (whose reply goes to
// Result.Rules). Replies split over several packets (FE FF FF FF) are
// joined. A server that does not answer A2S_RULES costs the rules
// request's attempts and leaves its timeout in Result.Err, its info and
// players kept.
//
// A2S replies echo nothing the client chose, so the two requests go one
// after the other and a reply is matched to the one open request at its
// source address by its type. After a retry the round-trip time counts
// from the latest send (see the package doc).
var A2S Dialect = a2sDialect{}

// A2SInfo asks A2S_INFO alone (with its S2C_CHALLENGE round trip), as a
// server browser's list does: one request per server, where A2S also asks
// for the players and the rules. Discovery uses it unless the full status
// is wanted.
var A2SInfo Dialect = a2sDialect{infoOnly: true}

// DefaultPortA2S is the Source engine's server port.
const DefaultPortA2S = 27015

const (
	a2sInfo uint8 = iota
	a2sPlayer
	a2sRules
)

type a2sDialect struct {
	infoOnly bool // stop after A2S_INFO
}

func (d a2sDialect) Name() string {
	if d.infoOnly {
		return "a2s-info"
	}
	return "a2s"
}
func (a2sDialect) DefaultPort() uint16 { return DefaultPortA2S }
func (a2sDialect) begin() []step       { return []step{{kind: a2sInfo}} }
func (a2sDialect) tokenMask() uint64   { return ^uint64(0) } // unused on the wire
func (a2sDialect) stepName(st *step) string {
	switch st.kind {
	case a2sInfo:
		return "A2S_INFO"
	case a2sPlayer:
		return "A2S_PLAYER"
	}
	return "A2S_RULES"
}

func (a2sDialect) appendRequest(b []byte, st *step, _ uint64) ([]byte, error) {
	has := len(st.challenge) == 4
	var chal uint32
	if has {
		chal = binary.LittleEndian.Uint32(st.challenge)
	}
	if st.kind == a2sInfo {
		return a2s.InfoRequest{HasChallenge: has, Challenge: chal}.AppendBinary(b)
	}
	if !has {
		chal = a2s.NoChallenge
	}
	if st.kind == a2sRules {
		return a2s.RulesRequest{Challenge: chal}.AppendBinary(b)
	}
	return a2s.PlayerRequest{Challenge: chal}.AppendBinary(b)
}

func (a2sDialect) parse(b []byte) (reply, error) {
	m, err := a2s.Parse(b)
	if err != nil {
		return reply{}, err
	}
	switch m.(type) {
	case a2s.Info, a2s.GoldSrcInfo:
		return reply{kind: a2sInfo, msg: m}, nil
	case a2s.Players:
		return reply{kind: a2sPlayer, msg: m}, nil
	case a2s.Rules:
		return reply{kind: a2sRules, msg: m}, nil
	case a2s.Challenge, a2s.SplitPacket:
		return reply{kind: anyKind, msg: m}, nil
	}
	return reply{}, fmt.Errorf("a2s: %T is not a reply", m)
}

func (d a2sDialect) handle(st *step, rep reply, res *Result) ([]step, bool, error) {
	switch m := rep.msg.(type) {
	case a2s.SplitPacket:
		asm, _ := st.state.(*a2s.Reassembler)
		if asm == nil {
			asm = new(a2s.Reassembler)
			st.state = asm
		}
		whole, err := asm.Add(m)
		if err != nil || whole == nil {
			return nil, false, err
		}
		st.state = nil
		inner, err := d.parse(whole)
		if err != nil {
			return nil, false, err
		}
		if _, split := inner.msg.(a2s.SplitPacket); split {
			return nil, false, errors.New("a2s: split reply inside a split reply")
		}
		return d.handle(st, inner, res)
	case a2s.Challenge:
		if st.rounds >= maxChallengeRounds {
			return nil, false, fmt.Errorf("a2s: still a challenge after %d round trips", st.rounds)
		}
		next := step{kind: st.kind, rounds: st.rounds + 1,
			challenge: binary.LittleEndian.AppendUint32(nil, m.Challenge)}
		return []step{next}, true, nil
	case a2s.Info:
		return d.info(st, res, m, true)
	case a2s.GoldSrcInfo:
		// The fields a Source reply shares: GoldSrc's has no app id,
		// version or extra data.
		return d.info(st, res, a2s.Info{Protocol: m.Protocol, Name: m.Name, Map: m.Map, Folder: m.Folder, Game: m.Game,
			Players: m.Players, MaxPlayers: m.MaxPlayers, Bots: m.Bots, ServerType: m.ServerType,
			Environment: m.Environment, Private: m.Private, VAC: m.VAC}, false)
	case a2s.Players:
		if st.kind != a2sPlayer {
			return nil, false, errors.New("a2s: player reply to A2S_INFO")
		}
		res.Players = make([]Player, 0, len(m.Players))
		for _, p := range m.Players {
			res.Players = append(res.Players, Player{Name: p.Name, Score: int(p.Score),
				Time: time.Duration(float64(p.Duration) * float64(time.Second))})
		}
		return []step{{kind: a2sRules, challenge: st.challenge}}, true, nil
	case a2s.Rules:
		if st.kind != a2sRules {
			return nil, false, errors.New("a2s: rules reply to another request")
		}
		res.Rules = make(infostring.Info, 0, len(m.Rules))
		for _, r := range m.Rules {
			res.Rules = append(res.Rules, infostring.Pair{Key: r.Name, Value: r.Value})
		}
		return nil, true, nil
	}
	return nil, false, fmt.Errorf("a2s: unexpected %T", rep.msg)
}

// afterInfo is the step that follows A2S_INFO's reply: A2S_PLAYER, or none
// for the info-only dialect.
func (d a2sDialect) afterInfo(st *step) []step {
	if d.infoOnly {
		return nil
	}
	return []step{{kind: a2sPlayer, challenge: st.challenge}}
}

// info takes an info reply into res: m, with source telling whether it
// came as Source's reply, whose app id and version are kept too.
func (d a2sDialect) info(st *step, res *Result, m a2s.Info, source bool) ([]step, bool, error) {
	if st.kind != a2sInfo {
		return nil, false, errors.New("a2s: info reply to A2S_PLAYER")
	}
	res.Name, res.Map, res.GameType = m.Name, m.Map, m.Folder
	res.Protocol = strconv.Itoa(int(m.Protocol))
	res.NumPlayers, res.MaxPlayers = int(m.Players), int(m.MaxPlayers)
	res.Info = append(res.Info, infostring.Info{
		{Key: "name", Value: m.Name}, {Key: "map", Value: m.Map},
		{Key: "folder", Value: m.Folder}, {Key: "game", Value: m.Game},
		{Key: "players", Value: strconv.Itoa(int(m.Players))},
		{Key: "max_players", Value: strconv.Itoa(int(m.MaxPlayers))},
		{Key: "bots", Value: strconv.Itoa(int(m.Bots))},
		{Key: "protocol", Value: strconv.Itoa(int(m.Protocol))},
		{Key: "server_type", Value: string(rune(m.ServerType))},
		{Key: "environment", Value: string(rune(m.Environment))},
		{Key: "private", Value: strconv.FormatBool(m.Private)},
		{Key: "vac", Value: strconv.FormatBool(m.VAC)},
	}...)
	if source {
		res.Info = append(res.Info, infostring.Pair{Key: "app_id", Value: strconv.Itoa(int(m.AppID))},
			infostring.Pair{Key: "version", Value: m.Version})
	}
	if m.Keywords != nil {
		res.Info = append(res.Info, infostring.Pair{Key: "keywords", Value: *m.Keywords})
	}
	if m.Port != nil {
		res.Info = append(res.Info, infostring.Pair{Key: "port", Value: strconv.Itoa(int(*m.Port))})
	}
	return d.afterInfo(st), true, nil
}
