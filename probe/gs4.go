package probe

import (
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/scout-discovery/scout/protocol/gs4"
	"github.com/scout-discovery/scout/protocol/infostring"
)

// GS4 queries Unreal Tournament 3 servers (GameSpy 4 query):
//
//	FE FD 09 <session id>                       ->  09 <session id> "<challenge>" 00
//	FE FD 00 <session id> <challenge> FF FF FF 01  ->  00 <session id> "splitnum" 00 ... (1+ packets)
//
// Each request's session id is its token (32 random bits); the server
// echoes it in every reply packet. A split reply is collected until every
// packet has come; the round-trip time counts to the first packet. A
// challenge of 0 is taken, as gamedig does, to mean the server wants
// none: the info request is sent without it.
var GS4 Dialect = gs4Dialect{}

// DefaultPortGS4 is UT3's query port.
const DefaultPortGS4 = 6500

const (
	gs4Challenge uint8 = iota
	gs4Info
)

type gs4Dialect struct{}

func (gs4Dialect) Name() string        { return "gs4" }
func (gs4Dialect) DefaultPort() uint16 { return DefaultPortGS4 }
func (gs4Dialect) begin() []step       { return []step{{kind: gs4Challenge}} }
func (gs4Dialect) tokenMask() uint64   { return 0xffffffff }
func (gs4Dialect) stepName(st *step) string {
	if st.kind == gs4Challenge {
		return "challenge"
	}
	return "info"
}

func (gs4Dialect) appendRequest(b []byte, st *step, tok uint64) ([]byte, error) {
	if st.kind == gs4Challenge {
		return gs4.ChallengeRequest{SessionID: uint32(tok)}.AppendBinary(b)
	}
	m := gs4.InfoRequest{SessionID: uint32(tok), Rules: true, Players: true, Teams: true, Split: true}
	if len(st.challenge) == 4 {
		m.HasChallenge = true
		m.Challenge = binary.BigEndian.Uint32(st.challenge)
	}
	return m.AppendBinary(b)
}

func (gs4Dialect) parse(b []byte) (reply, error) {
	m, err := gs4.Parse(b)
	if err != nil {
		return reply{}, err
	}
	switch m := m.(type) {
	case gs4.ChallengeReply:
		return reply{token: uint64(m.SessionID), hasToken: true, kind: gs4Challenge, msg: m}, nil
	case gs4.InfoPacket:
		return reply{token: uint64(m.SessionID), hasToken: true, kind: gs4Info, msg: m}, nil
	}
	return reply{}, errors.New("gs4: a request, not a reply")
}

func (gs4Dialect) handle(st *step, rep reply, res *Result) ([]step, bool, error) {
	switch m := rep.msg.(type) {
	case gs4.ChallengeReply:
		if st.kind != gs4Challenge {
			return nil, false, errors.New("gs4: challenge reply to an info request")
		}
		next := step{kind: gs4Info}
		if m.Challenge != 0 {
			next.challenge = binary.BigEndian.AppendUint32(nil, m.Challenge)
		}
		return []step{next}, true, nil
	case gs4.InfoPacket:
		if st.kind != gs4Info {
			return nil, false, errors.New("gs4: info reply to a challenge request")
		}
		// One Reassembler per session id: a retry's packets start over.
		asm, _ := st.state.(*gs4Reply)
		if asm == nil || asm.session != m.SessionID {
			asm = &gs4Reply{session: m.SessionID}
			st.state = asm
		}
		complete, err := asm.Add(m)
		if err != nil || !complete {
			return nil, false, err
		}
		info, err := asm.Info()
		if err != nil {
			return nil, false, err
		}
		fillGS4(info, res)
		return nil, true, nil
	}
	return nil, false, errors.New("gs4: unexpected message")
}

type gs4Reply struct {
	session uint32
	gs4.Reassembler
}

func fillGS4(info gs4.Info, res *Result) {
	for _, kv := range info.Rules {
		if _, dup := res.Info.Get(kv.Key); !dup {
			res.Info = append(res.Info, infostring.Pair{Key: kv.Key, Value: kv.Value})
		}
	}
	res.Name = first(res.Info, "hostname", "p1073741827")
	res.Map = first(res.Info, "p1073741825", "mapname")
	res.GameType = first(res.Info, "p1073741826", "gametype")
	res.NumPlayers, _ = strconv.Atoi(value(res.Info, "numplayers"))
	res.MaxPlayers, _ = strconv.Atoi(value(res.Info, "maxplayers"))
	names := info.PlayerNames()
	scores := info.Players.Column("score_")
	pings := info.Players.Column("ping_")
	teams := info.Players.Column("team_")
	res.Players = make([]Player, 0, len(names))
	for i, n := range names {
		p := Player{Name: n}
		p.Score, _ = strconv.Atoi(at(scores, i))
		p.Ping, _ = strconv.Atoi(at(pings, i))
		p.Team = at(teams, i)
		res.Players = append(res.Players, p)
	}
}

// value returns the value of key, "" when missing.
func value(in infostring.Info, key string) string {
	v, _ := in.Get(key)
	return v
}

// first returns the value of the first of keys present.
func first(in infostring.Info, keys ...string) string {
	for _, k := range keys {
		if v, ok := in.Get(k); ok {
			return v
		}
	}
	return ""
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}
