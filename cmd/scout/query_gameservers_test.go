package main

import (
	"net/netip"
	"sync"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/protocol/a2s"
	"github.com/scout-discovery/scout/protocol/gs4"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

// q3Server answers getinfo and getstatus on 127.0.0.1 like a small
// ioquake3 server, until the test ends.
func q3Server(t *testing.T) netip.AddrPort {
	t.Helper()
	info := infostring.Info{{Key: "hostname", Value: "^1Red^7 \x1b[2Jbox"}, {Key: "mapname", Value: "q3dm17"},
		{Key: "clients", Value: "2"}, {Key: "sv_maxclients", Value: "12"}, {Key: "gametype", Value: "4"},
		{Key: "protocol", Value: "68"}}
	return peer.ServeUDP(t, func(req []byte) [][]byte {
		m, err := q3.Parse(req)
		if err != nil {
			return nil
		}
		var reply q3.Message
		in := append(infostring.Info(nil), info...)
		switch m := m.(type) {
		case q3.GetInfo:
			in.Set("challenge", m.Challenge)
			reply = &q3.InfoResponse{Info: in}
		case q3.GetStatus:
			in.Set("challenge", m.Challenge)
			reply = &q3.StatusResponse{Info: in, Players: []q3.Player{{Score: 7, Ping: 33, Name: "^2Alice"}, {Score: -1, Ping: 0, Name: "Bot"}}}
		default:
			return nil
		}
		b, err := reply.AppendBinary(nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		return [][]byte{b}
	})
}

// q4Server answers getInfo like a Quake 4 1.4.2 server with two players,
// leaving the first drop requests unanswered, until the test ends.
func q4Server(t *testing.T, drop int) netip.AddrPort {
	t.Helper()
	seen := 0 // only the ServeUDP goroutine touches it
	return peer.ServeUDP(t, func(req []byte) [][]byte {
		m, err := q4.ParseGetInfo(req)
		if err != nil {
			t.Errorf("q4 server: %v", err)
			return nil
		}
		if seen++; seen <= drop {
			return nil
		}
		r := q4.InfoResponse{Challenge: m.Challenge, Protocol: q4.Quake4,
			Info: infostring.Info{{Key: "si_name", Value: "^4Strogg^7 Base"}, {Key: "si_map", Value: "q4dm1"},
				{Key: "si_gameType", Value: "DM"}, {Key: "si_maxPlayers", Value: "8"}, {Key: "fs_game", Value: ""}},
			Players: []q4.Player{{ID: 0, Ping: 45, Rate: 25000, Name: "^1Kane", Clan: "MC"}, {ID: 3, Ping: 0, Rate: 25000, Name: "Bot"}},
			OSMask:  7}
		b, err := r.AppendBinary(nil)
		if err != nil {
			t.Errorf("q4 server: %v", err)
			return nil
		}
		return [][]byte{b}
	})
}

// ut3Challenge is the challenge ut3Server hands out: negative, as UT3's
// often are (the UnrealAdminWiki's example).
const ut3Challenge = -1287574694

// ut3ChallengeWire is ut3Challenge as a uint32, as the info request carries it.
const ut3ChallengeWire uint32 = 1<<32 + ut3Challenge

// ut3Server answers GameSpy 4 queries like a UT3 server: a challenge, then
// an info reply split over several packets, sent last first. An info
// request without the challenge goes unanswered, as UT3 ignores it.
func ut3Server(t *testing.T) netip.AddrPort {
	t.Helper()
	return peer.ServeUDP(t, func(req []byte) [][]byte {
		m, err := gs4.Parse(req)
		if err != nil {
			t.Errorf("ut3 server: %v", err)
			return nil
		}
		var out [][]byte
		switch m := m.(type) {
		case gs4.ChallengeRequest:
			b, err := gs4.ChallengeReply{SessionID: m.SessionID, Challenge: ut3ChallengeWire}.AppendBinary(nil)
			if err != nil {
				t.Errorf("ut3 server: %v", err)
				return nil
			}
			out = append(out, b)
		case gs4.InfoRequest:
			if !m.HasChallenge || m.Challenge != ut3ChallengeWire {
				return nil
			}
			info := gs4.Info{SessionID: m.SessionID,
				Rules: []gs4.KeyValue{{Key: "hostname", Value: "Scout UT3 Box"}, {Key: "hostport", Value: "7777"},
					{Key: "p1073741825", Value: "DM-Deck"}, {Key: "p1073741826", Value: "UTGame.UTDeathmatch"},
					{Key: "numplayers", Value: "3"}, {Key: "maxplayers", Value: "16"}, {Key: "s32779", Value: "2"}},
				Players: gs4.Table{Fields: []string{"player_", "score_", "ping_", "team_"},
					Rows: [][]string{{"Reaper", "25", "48", "0"}, {"Malcolm", "17", "61", "1"}, {"Lauren", "3", "95", "0"}}},
				Teams: gs4.Table{Fields: []string{"team_t", "score_t"}, Rows: [][]string{{"Red", "28"}, {"Blue", "17"}}}}
			pkts, err := info.Split(160)
			if err != nil || len(pkts) < 2 {
				t.Errorf("ut3 server: %d packets, %v; want a split reply", len(pkts), err)
				return nil
			}
			for i := len(pkts) - 1; i >= 0; i-- {
				b, err := pkts[i].AppendBinary(nil)
				if err != nil {
					t.Errorf("ut3 server: %v", err)
					return nil
				}
				out = append(out, b)
			}
		}
		return out
	})
}

// sourceChallenge is the S2C_CHALLENGE sourceServer demands.
const sourceChallenge = 0x5eed1234

// sourceRules are what sourceServer answers A2S_RULES with; a value holds
// a terminal escape, which the table must not pass on.
var sourceRules = a2s.Rules{Rules: []a2s.Rule{{Name: "mp_timelimit", Value: "25"},
	{Name: "sv_tags", Value: "alltalk\x1b[2J"}, {Name: "sv_password", Value: ""}}}

// sourceServer answers A2S like a Source server updated since December
// 2020: A2S_INFO, A2S_PLAYER and A2S_RULES without its challenge get
// S2C_CHALLENGE.
// It records the requests it saw ("info", "info+chal", "player+chal",
// ...).
func sourceServer(t *testing.T) (netip.AddrPort, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string // guarded by mu
	addr := peer.ServeUDP(t, func(req []byte) [][]byte {
		m, err := a2s.Parse(req)
		if err != nil {
			t.Errorf("source server: %v", err)
			return nil
		}
		var reply a2s.Message = a2s.Challenge{Challenge: sourceChallenge}
		what := ""
		switch m := m.(type) {
		case a2s.InfoRequest:
			what = "info"
			if m.HasChallenge && m.Challenge == sourceChallenge {
				what += "+chal"
				reply = a2s.Info{Protocol: 17, Name: "Scout Source", Map: "de_dust2", Folder: "cstrike",
					Game: "Counter-Strike: Source", AppID: 240, Players: 2, MaxPlayers: 24,
					ServerType: a2s.ServerDedicated, Environment: a2s.EnvLinux, VAC: true, Version: "1.0.0.0"}
			}
		case a2s.PlayerRequest:
			what = "player"
			if m.Challenge == sourceChallenge {
				what += "+chal"
				reply = a2s.Players{Players: []a2s.Player{{Name: "Alice", Score: 12, Duration: 61.5}, {Name: "Bob", Score: -2, Duration: 3}}}
			}
		case a2s.RulesRequest:
			what = "rules"
			if m.Challenge == sourceChallenge {
				what += "+chal"
				reply = sourceRules
			}
		default:
			t.Errorf("source server: %T is not a request", m)
			return nil
		}
		mu.Lock()
		seen = append(seen, what)
		mu.Unlock()
		b, err := reply.AppendBinary(nil)
		if err != nil {
			t.Errorf("source server: %v", err)
			return nil
		}
		return [][]byte{b}
	})
	return addr, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}
