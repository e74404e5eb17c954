package probe

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/a2s"
)

// a2sResponder starts a Source server on loopback that asks for a
// challenge first, answers the players split in reverse order and the
// rules split in order; requests returns the requests it saw, in order.
func a2sResponder(t *testing.T) (addr netip.AddrPort, requests func() []string) {
	t.Helper()
	const challenge = 0x5EED1234
	var mu sync.Mutex // guards the request log, written by the responder
	var log []string
	addr = responder(t, func(b []byte) [][]byte {
		m, err := a2s.Parse(b)
		if err != nil {
			return nil
		}
		var out a2s.Message
		switch m := m.(type) {
		case a2s.InfoRequest:
			mu.Lock()
			log = append(log, "info")
			mu.Unlock()
			out = a2s.Challenge{Challenge: challenge}
			if m.HasChallenge && m.Challenge == challenge {
				out = a2s.Info{Protocol: 17, Name: "CSS box", Map: "de_dust2", Folder: "cstrike",
					Game: "Counter-Strike: Source", AppID: 240, Players: 2, MaxPlayers: 24,
					ServerType: a2s.ServerDedicated, Environment: a2s.EnvLinux, Version: "1.0.0.71"}
			}
		case a2s.PlayerRequest:
			mu.Lock()
			log = append(log, "player")
			mu.Unlock()
			out = a2s.Challenge{Challenge: challenge}
			if m.Challenge == challenge {
				reply, _ := a2s.Players{Players: []a2s.Player{{Name: "Alice", Score: 5, Duration: 61.5}, {Name: "Bob", Score: -1, Duration: 2}}}.AppendBinary(nil)
				// Split in two, sent in reverse order.
				pkts, err := a2s.Split(reply, 7, len(reply)/2+1)
				if err != nil || len(pkts) != 2 {
					t.Errorf("split: %v, %d packets", err, len(pkts))
					return nil
				}
				b1, _ := pkts[1].AppendBinary(nil)
				b0, _ := pkts[0].AppendBinary(nil)
				return [][]byte{b1, b0}
			}
		case a2s.RulesRequest:
			mu.Lock()
			log = append(log, "rules")
			mu.Unlock()
			out = a2s.Challenge{Challenge: challenge}
			if m.Challenge == challenge {
				// Larger than a packet: a split reply, in order.
				reply, _ := manyRules().AppendBinary(nil)
				pkts, err := a2s.Split(reply, 8, a2s.DefaultSplitSize)
				if err != nil || len(pkts) < 2 {
					t.Errorf("split: %v, %d packets", err, len(pkts))
					return nil
				}
				var out [][]byte
				for _, p := range pkts {
					b, _ := p.AppendBinary(nil)
					out = append(out, b)
				}
				return out
			}
		default:
			return nil
		}
		enc, err := out.AppendBinary(nil)
		if err != nil {
			t.Error(err)
		}
		return [][]byte{enc}
	})
	return addr, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(log)
	}
}

func TestQuery_A2SChallengeRoundTripsOverUDP(t *testing.T) {
	addr, requests := a2sResponder(t)
	r, c := queryOne(t, &Prober{}, Target{addr, A2S})
	if r.Err != nil {
		t.Fatalf("result %+v", r)
	}
	if r.Name != "CSS box" || r.Map != "de_dust2" || r.NumPlayers != 2 || r.MaxPlayers != 24 || r.GameType != "cstrike" || r.Protocol != "17" {
		t.Errorf("summary %+v", r)
	}
	want := []Player{{Name: "Alice", Score: 5, Time: 61500 * time.Millisecond}, {Name: "Bob", Score: -1, Time: 2 * time.Second}}
	if len(r.Players) != 2 || r.Players[0] != want[0] || r.Players[1] != want[1] {
		t.Errorf("players %+v, want %+v", r.Players, want)
	}
	// info without challenge, info with it, player and rules with it
	// straight away.
	if log := requests(); !slices.Equal(log, []string{"info", "info", "player", "rules"}) {
		t.Errorf("requests %v", log)
	}
	if want := manyRules(); len(r.Rules) != len(want.Rules) || r.Rules[0].Key != want.Rules[0].Name ||
		r.Rules[len(r.Rules)-1].Value != want.Rules[len(want.Rules)-1].Value {
		t.Errorf("%d rules, want %d: %v", len(r.Rules), len(want.Rules), r.Rules)
	}
	if c.Sent != 4 || c.Matched != c.Received || c.Received < 6 || c.Late+c.Unknown+c.Garbled != 0 {
		t.Errorf("counts %+v", c)
	}
}

// TestQuery_A2SInfoAsksInfoAlone: the browser's dialect sends A2S_INFO
// (and again with the challenge) and nothing else.
func TestQuery_A2SInfoAsksInfoAlone(t *testing.T) {
	addr, requests := a2sResponder(t)
	r, c := queryOne(t, &Prober{}, Target{addr, A2SInfo})
	if r.Err != nil {
		t.Fatalf("result %+v", r)
	}
	if r.Name != "CSS box" || r.Map != "de_dust2" || r.NumPlayers != 2 || r.MaxPlayers != 24 {
		t.Errorf("summary %+v", r)
	}
	if len(r.Players) != 0 || len(r.Rules) != 0 {
		t.Errorf("players %v rules %v: info only asks neither", r.Players, r.Rules)
	}
	if log := requests(); !slices.Equal(log, []string{"info", "info"}) {
		t.Errorf("requests %v, want info twice (the challenge round trip)", log)
	}
	if c.Sent != 2 || c.Received != 2 {
		t.Errorf("counts %+v", c)
	}
}

// manyRules is a modded server's rules: more than one packet's worth.
func manyRules() a2s.Rules {
	var m a2s.Rules
	for i := range 150 {
		m.Rules = append(m.Rules, a2s.Rule{Name: fmt.Sprintf("sm_plugin_%03d_version", i), Value: "1.10.0"})
	}
	return m
}

// TestQuery_A2SRulesUnansweredKeepsInfoAndPlayers: a server that ignores
// A2S_RULES still gives its info and players; the rules request's timeout
// is the result's error.
func TestQuery_A2SRulesUnansweredKeepsInfoAndPlayers(t *testing.T) {
	addr := responder(t, func(b []byte) [][]byte {
		var out a2s.Message
		switch m, _ := a2s.Parse(b); m.(type) {
		case a2s.InfoRequest:
			out = a2s.Info{Name: "no rules", Map: "cs_office", Players: 1, MaxPlayers: 10,
				ServerType: a2s.ServerDedicated, Environment: a2s.EnvLinux}
		case a2s.PlayerRequest:
			out = a2s.Players{Players: []a2s.Player{{Name: "Alice"}}}
		default:
			return nil
		}
		enc, _ := out.AppendBinary(nil)
		return [][]byte{enc}
	})
	r, c := queryOne(t, &Prober{Timeout: 50 * time.Millisecond, Attempts: 2}, Target{addr, A2S})
	if !r.Answered() || r.Map != "cs_office" || len(r.Players) != 1 || r.Rules != nil ||
		!errors.Is(r.Err, ErrTimeout) || !strings.HasPrefix(r.Err.Error(), "A2S_RULES: ") {
		t.Fatalf("result %+v", r)
	}
	if c.Sent != 4 || c.Answered != 1 {
		t.Errorf("counts %+v; want info, player and the rules request twice", c)
	}
}

// TestQuery_A2SInfoPairs: a Source info reply and an obsolete GoldSrc one
// give the same pairs for the fields they share, in the same order; the
// Source reply adds its app id, version and extra data.
func TestQuery_A2SInfoPairs(t *testing.T) {
	kw, port := "secure,dust", uint16(27016)
	shared := "name=box map=de_dust folder=cstrike game=CS players=3 max_players=16 bots=1 protocol=48 server_type=d environment=l private=true vac=true"
	for _, tc := range []struct {
		name  string
		reply a2s.Message
		want  string
	}{
		{"source", a2s.Info{Protocol: 48, Name: "box", Map: "de_dust", Folder: "cstrike", Game: "CS", AppID: 240,
			Players: 3, MaxPlayers: 16, Bots: 1, ServerType: a2s.ServerDedicated, Environment: a2s.EnvLinux,
			Private: true, VAC: true, Version: "1.0", Keywords: &kw, Port: &port},
			shared + " app_id=240 version=1.0 keywords=secure,dust port=27016"},
		{"goldsrc", a2s.GoldSrcInfo{Address: "127.0.0.1:27015", Protocol: 48, Name: "box", Map: "de_dust", Folder: "cstrike",
			Game: "CS", Players: 3, MaxPlayers: 16, Bots: 1, ServerType: a2s.ServerDedicated, Environment: a2s.EnvLinux,
			Private: true, VAC: true}, shared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := tc.reply.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			addr := responder(t, func([]byte) [][]byte { return [][]byte{enc} })
			r, _ := queryOne(t, &Prober{}, Target{addr, A2SInfo})
			if r.Err != nil {
				t.Fatalf("result %+v", r)
			}
			var got []string
			for _, p := range r.Info {
				got = append(got, p.Key+"="+p.Value)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("info\n %s\nwant\n %s", g, tc.want)
			}
			if r.Name != "box" || r.Map != "de_dust" || r.GameType != "cstrike" || r.Protocol != "48" || r.NumPlayers != 3 || r.MaxPlayers != 16 {
				t.Errorf("summary %+v", r)
			}
		})
	}
}
