package world

import (
	"net/netip"
	"strconv"
	"time"

	"github.com/scout-discovery/scout/protocol/a2s"
	"github.com/scout-discovery/scout/protocol/gs4"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

// Outcome is what an emulated server did with one datagram.
type Outcome uint8

const (
	// Answered: a reply was produced.
	Answered Outcome = iota
	// Challenged: a UT3 or Source challenge was sent instead of the
	// answer (the query came without a valid one).
	Challenged
	// RateLimited: the per-source or outbound limit dropped the query.
	RateLimited
	// Ignored: garbage, a message a server does not answer (a response,
	// a heartbeat), or an unknown command. Never answered: any reply could
	// be used to amplify.
	Ignored
	// BadChallenge: a UT3 info request with a missing or stale challenge,
	// dropped as UT3 does.
	BadChallenge
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"answered", "challenged", "rate_limited", "ignored", "bad_challenge"}

func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Reply sizes, from the games.
const (
	// A2SSplitSize is a Source server's split size (a2s.DefaultSplitSize).
	A2SSplitSize = a2s.DefaultSplitSize
	// GS4MaxPacket is the largest UT3 reply packet the emulator sends
	// before splitting; GameSpy servers keep under the 1400-byte MTU-safe
	// size.
	GS4MaxPacket = 1400
)

// responder answers one server's queries. It is a pure function of its
// arguments and the limiter state it is given: no I/O, no clock.
type responder struct {
	chal challenger
}

// respond decides the reply to pkt, received at now from from by server
// number idx, whose description is s and whose limiter is lim. It appends
// the reply datagrams (one, or several for a split reply) to out.
func (r responder) respond(now time.Time, idx int, s *Server, lim *limiter, from netip.AddrPort, pkt []byte, out [][]byte) ([][]byte, Outcome) {
	switch s.Game.family() {
	case familyQ3:
		return r.q3(now, idx, s, lim, from, pkt, out)
	case familyQ4:
		return r.q4(now, s, lim, from, pkt, out)
	case familyGS4:
		return r.gs4(now, idx, s, lim, from, pkt, out)
	case familyA2S:
		return r.a2s(now, idx, s, lim, from, pkt, out)
	}
	return out, Ignored
}

func appendMsg(out [][]byte, m interface{ AppendBinary([]byte) ([]byte, error) }) ([][]byte, Outcome) {
	b, err := m.AppendBinary(nil)
	if err != nil {
		return out, Ignored // a world the codecs refuse; Validate keeps this from happening
	}
	return append(out, b), Answered
}

// ---- Quake III family ----

func (r responder) q3(now time.Time, idx int, s *Server, lim *limiter, from netip.AddrPort, pkt []byte, out [][]byte) ([][]byte, Outcome) {
	msg, err := q3.Parse(pkt)
	if err != nil {
		return out, Ignored
	}
	switch m := msg.(type) {
	case q3.GetInfo:
		if !lim.allow(now, from.Addr()) {
			return out, RateLimited
		}
		if len(m.Challenge) > q3.MaxChallengeLen { // ioquake3's q3infoboom check
			return out, Ignored
		}
		return appendMsg(out, q3.InfoResponse{Info: q3Info(s, m.Challenge)})
	case q3.GetStatus:
		if !lim.allow(now, from.Addr()) {
			return out, RateLimited
		}
		if len(m.Challenge) > q3.MaxChallengeLen {
			return out, Ignored
		}
		return appendMsg(out, q3.StatusResponse{Info: q3ServerInfo(s, m.Challenge), Players: q3Players(s)})
	case q3.GetChallenge:
		if !lim.allow(now, from.Addr()) {
			return out, RateLimited
		}
		chal := strconv.FormatUint(uint64(r.chal.make(now, idx, from)), 10)
		if s.Game != OA {
			// Quake III 1.32, RtCW and ET answer the server challenge alone.
			return appendMsg(out, q3.ChallengeResponse{Challenge: chal})
		}
		// ioquake3 1.36: a missing or different game name is refused
		// with a print (com_legacyprotocol 0); otherwise the client's
		// challenge is echoed through atoi, then the protocol.
		if m.GameName != q3GameName(s) {
			return appendMsg(out, q3.Print{Text: "Game mismatch: This is a " + q3GameName(s) + " server\n"})
		}
		return appendMsg(out, q3.ChallengeResponse{Challenge: chal, ClientChallenge: strconv.Itoa(atoi(m.Challenge)), Protocol: s.protocol()})
	}
	return out, Ignored
}

// atoi is C's atoi: leading digits with an optional sign, 0 if none.
func atoi(s string) int {
	i, neg, n := 0, false, 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9' && n < 1e9; i++ {
		n = n*10 + int(s[i]-'0')
	}
	if neg {
		return -n
	}
	return n
}

// protocol returns the protocol the server announces.
func (s *Server) protocol() int {
	if s.Protocol != 0 {
		return s.Protocol
	}
	switch s.Game {
	case Q3A:
		return 68
	case ET:
		return 84
	case RTCW:
		return 60
	case OA:
		return 71
	case Q4:
		return int(q4.Version{Major: 2, Minor: 85}.Uint32())
	case CSS:
		return 17
	}
	return 0
}

func q3GameName(s *Server) string { return "Quake3Arena" } // com_gamename of Q3A and OpenArena on Debian

func (s *Server) humans() int {
	n := 0
	for _, p := range s.Players {
		if !p.Bot {
			n++
		}
	}
	return n
}

// q3Info builds the infoResponse info string. The engines build it with
// Info_SetValueForKey, which puts each new key in front, so the wire order
// is the reverse of the calls in SVC_Info: the challenge, set first, comes
// last (testdata/openarena_infoResponse.hex); a bare getinfo gets no
// challenge key at all.
func q3Info(s *Server, challenge string) infostring.Info {
	var calls []infostring.Pair
	set := func(k, v string) { calls = append(calls, infostring.Pair{Key: k, Value: v}) }
	if challenge != "" {
		set("challenge", challenge)
	}
	if s.Game == OA {
		set("gamename", q3GameName(s))
	}
	set("protocol", strconv.Itoa(s.protocol()))
	set("hostname", s.Hostname)
	if s.Game == ET {
		set("serverload", "0")
	}
	set("mapname", s.Map)
	set("clients", strconv.Itoa(len(s.Players)))
	if s.Game == OA {
		set("g_humanplayers", strconv.Itoa(s.humans()))
	}
	set("sv_maxclients", strconv.Itoa(s.MaxClients))
	set("gametype", s.GameType)
	set("pure", "1")
	switch s.Game {
	case ET:
		set("friendlyFire", "1")
		set("maxlives", "0")
		set("needpass", "0")
		set("gamename", "et")
		set("g_antilag", "1")
	case OA:
		set("g_needpass", "0")
	}
	info := make(infostring.Info, len(calls))
	for i, p := range calls {
		info[len(calls)-1-i] = p
	}
	return info
}

// q3ServerInfo builds the statusResponse serverinfo: the CVAR_SERVERINFO
// cvars, then the challenge set last and so first on the wire
// (testdata/openarena_statusResponse_3bots.hex).
func q3ServerInfo(s *Server, challenge string) infostring.Info {
	var info infostring.Info
	add := func(k, v string) { info = append(info, infostring.Pair{Key: k, Value: v}) }
	if challenge != "" {
		add("challenge", challenge)
	}
	version, game := "Q3 1.32b linux-i386 Nov 14 2002", "baseq3"
	switch s.Game {
	case ET:
		version, game = "ET 2.60b linux-i386 May  8 2006", "etmain"
	case RTCW:
		version, game = "Wolf 1.41b-MP linux-i386 Jun 29 2004", "main"
	case OA:
		version, game = "ioq3 1.36_GIT_scout-world linux-x86_64", "baseoa"
		add("com_gamename", q3GameName(s))
	}
	add("version", version)
	add("protocol", strconv.Itoa(s.protocol()))
	add("sv_hostname", s.Hostname)
	add("g_gametype", s.GameType)
	add("mapname", s.Map)
	add("sv_maxclients", strconv.Itoa(s.MaxClients))
	add("gamename", game)
	add("g_needpass", "0")
	return info
}

func q3Players(s *Server) []q3.Player {
	ps := make([]q3.Player, len(s.Players))
	for i, p := range s.Players {
		ps[i] = q3.Player{Score: p.Score, Ping: p.ping(), Name: p.Name}
	}
	return ps
}

// ping is the ping a server reports: 0 for bots.
func (p Player) ping() int {
	if p.Bot {
		return 0
	}
	return p.Ping
}

// ---- Quake 4 ----

// q4Trailer is what Quake 4 1.4.2 sends after the OS mask (seed 000,
// Fig. 8).
var q4Trailer = []byte{0, 0, 0, 0, 1}

func (r responder) q4(now time.Time, s *Server, lim *limiter, from netip.AddrPort, pkt []byte, out [][]byte) ([][]byte, Outcome) {
	msg, err := q4.Parse(pkt)
	if err != nil {
		return out, Ignored
	}
	m, ok := msg.(*q4.GetInfo)
	if !ok {
		return out, Ignored
	}
	if !lim.allow(now, from.Addr()) {
		return out, RateLimited
	}
	resp := q4.InfoResponse{
		Challenge: m.Challenge,
		Protocol:  q4.VersionOf(uint32(s.protocol())),
		Info: infostring.Info{
			{Key: "net_serverDedicated", Value: "1"},
			{Key: "si_name", Value: s.Hostname},
			{Key: "si_map", Value: s.Map},
			{Key: "si_maxPlayers", Value: strconv.Itoa(s.MaxClients)},
			{Key: "si_gameType", Value: s.GameType},
			{Key: "si_usePass", Value: "0"},
			{Key: "si_pure", Value: "1"},
			{Key: "fs_game", Value: ""},
			{Key: "si_version", Value: "Quake4 V1.4.2 linux-x86 scout-world"},
		},
		OSMask:  7,
		Trailer: q4Trailer,
	}
	for i, p := range s.Players {
		if i >= q4.MaxClients {
			break
		}
		resp.Players = append(resp.Players, q4.Player{ID: uint8(i), Ping: uint16(p.ping()), Rate: 25000, Name: p.Name})
	}
	return appendMsg(out, &resp)
}

// ---- UT3 (GameSpy 4) ----

func (r responder) gs4(now time.Time, idx int, s *Server, lim *limiter, from netip.AddrPort, pkt []byte, out [][]byte) ([][]byte, Outcome) {
	msg, err := gs4.Parse(pkt)
	if err != nil {
		return out, Ignored
	}
	switch m := msg.(type) {
	case gs4.ChallengeRequest:
		if !lim.allow(now, from.Addr()) {
			return out, RateLimited
		}
		out, o := appendMsg(out, gs4.ChallengeReply{SessionID: m.SessionID, Challenge: r.chal.make(now, idx, from)})
		if o == Answered {
			o = Challenged
		}
		return out, o
	case gs4.InfoRequest:
		if !m.HasChallenge || !r.chal.valid(now, idx, from, m.Challenge) {
			return out, BadChallenge
		}
		if !lim.allow(now, from.Addr()) {
			return out, RateLimited
		}
		info := ut3Info(s, m)
		if !m.Split {
			// A client that cannot take a split reply gets the part that
			// fits one packet: the server key/values.
			info.Players, info.Teams = gs4.Table{}, gs4.Table{}
		}
		packets, err := info.Split(GS4MaxPacket)
		if err != nil {
			return out, Ignored
		}
		packets[len(packets)-1].Last = true
		for _, p := range packets {
			b, err := p.AppendBinary(nil)
			if err != nil {
				return out, Ignored
			}
			out = append(out, b)
		}
		return out, Answered
	}
	return out, Ignored
}

func ut3Info(s *Server, req gs4.InfoRequest) gs4.Info {
	info := gs4.Info{SessionID: req.SessionID}
	bots := len(s.Players) - s.humans()
	if req.Rules {
		info.Rules = []gs4.KeyValue{
			{Key: "hostname", Value: s.Hostname},
			{Key: "hostport", Value: "7777"},
			{Key: "numplayers", Value: strconv.Itoa(len(s.Players))},
			{Key: "maxplayers", Value: strconv.Itoa(s.MaxClients)},
			{Key: "gamemode", Value: "openplaying"},
			{Key: "p1073741825", Value: s.Map},
			{Key: "p1073741826", Value: s.GameType},
			{Key: "p268435703", Value: strconv.Itoa(bots)},
			{Key: "p268435704", Value: "20"},
			{Key: "p268435705", Value: "20"},
			{Key: "s7", Value: "0"},
		}
	}
	if req.Players && len(s.Players) > 0 {
		t := gs4.Table{Fields: []string{"player_", "score_", "ping_", "team_", "deaths_"}}
		for i, p := range s.Players {
			t.Rows = append(t.Rows, []string{p.Name, strconv.Itoa(p.Score), strconv.Itoa(p.ping()), strconv.Itoa(i % 2), "0"})
		}
		info.Players = t
	}
	if req.Teams {
		info.Teams = gs4.Table{Fields: []string{"team_t", "score_t"}, Rows: [][]string{{"Red", "0"}, {"Blue", "0"}}}
	}
	return info
}

// ---- Source (A2S) ----

func (r responder) a2s(now time.Time, idx int, s *Server, lim *limiter, from netip.AddrPort, pkt []byte, out [][]byte) ([][]byte, Outcome) {
	var chal uint32
	var hasChal bool
	msg, err := a2s.Parse(pkt)
	if err != nil {
		return out, Ignored
	}
	switch m := msg.(type) {
	case a2s.RulesRequest:
		chal, hasChal = m.Challenge, m.Challenge != a2s.NoChallenge
	case a2s.InfoRequest:
		chal, hasChal = m.Challenge, m.HasChallenge
	case a2s.PlayerRequest:
		chal, hasChal = m.Challenge, m.Challenge != a2s.NoChallenge
	default:
		return out, Ignored
	}
	if !lim.allow(now, from.Addr()) {
		return out, RateLimited
	}
	if !hasChal || !r.chal.valid(now, idx, from, chal) {
		// Servers updated since December 2020 answer a query without
		// (or with a stale) challenge with S2C_CHALLENGE.
		out, o := appendMsg(out, a2s.Challenge{Challenge: r.chal.make(now, idx, from)})
		if o == Answered {
			o = Challenged
		}
		return out, o
	}
	var reply []byte
	switch msg.(type) {
	case a2s.InfoRequest:
		port := s.Public.Port()
		info := a2s.Info{
			Protocol: 17, Name: s.Hostname, Map: s.Map, Folder: "cstrike", Game: "Counter-Strike: Source",
			AppID: 240, Players: uint8(len(s.Players)), MaxPlayers: uint8(s.MaxClients),
			Bots: uint8(len(s.Players) - s.humans()), ServerType: a2s.ServerDedicated,
			Environment: a2s.EnvLinux, Version: "1.0.0.34", HasExtra: true, Port: &port,
		}
		if s.GameType != "" {
			kw := s.GameType
			info.Keywords = &kw
		}
		reply, err = info.AppendBinary(nil)
	case a2s.RulesRequest:
		reply, err = a2s.Rules{Rules: []a2s.Rule{
			{Name: "mp_friendlyfire", Value: "0"}, {Name: "mp_timelimit", Value: "30"},
			{Name: "mp_fraglimit", Value: "0"}, {Name: "sv_gravity", Value: "800"},
		}}.AppendBinary(nil)
	case a2s.PlayerRequest:
		var ps a2s.Players
		for _, p := range s.Players {
			ps.Players = append(ps.Players, a2s.Player{Name: p.Name, Score: int32(p.Score), Duration: 600})
		}
		reply, err = ps.AppendBinary(nil)
	}
	if err != nil {
		return out, Ignored
	}
	if len(reply) <= A2SSplitSize {
		return append(out, reply), Answered
	}
	parts, err := a2s.Split(reply, uint32(idx)&0x7FFFFFFF, A2SSplitSize)
	if err != nil {
		return out, Ignored
	}
	for _, p := range parts {
		b, err := p.AppendBinary(nil)
		if err != nil {
			return out, Ignored
		}
		out = append(out, b)
	}
	return out, Answered
}
