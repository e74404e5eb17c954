package probe

import (
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/a2s"
)

func TestQuery_A2SChallengeRoundTripsOverUDP(t *testing.T) {
	const challenge = 0x5EED1234
	var mu sync.Mutex // guards the request log, written by the responder
	var log []string
	addr := responder(t, func(b []byte) [][]byte {
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
		default:
			return nil
		}
		enc, err := out.AppendBinary(nil)
		if err != nil {
			t.Error(err)
		}
		return [][]byte{enc}
	})
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
	mu.Lock()
	defer mu.Unlock()
	// info without challenge, info with it, player with it straight away.
	if len(log) != 3 || log[0] != "info" || log[1] != "info" || log[2] != "player" {
		t.Errorf("requests %v", log)
	}
	if c.Sent != 3 || c.Matched != 4 || c.Late+c.Unknown+c.Garbled != 0 {
		t.Errorf("counts %+v", c)
	}
}
