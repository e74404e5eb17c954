package a2s

import (
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
)

const interopChallenge = 0x22D5A14B

// fakeSource is a scripted Source server on 127.0.0.1: it demands a
// challenge for A2S_INFO and A2S_PLAYER, then answers with sampleInfo and
// samplePlayers, the latter split into two packets.
type fakeSource struct {
	addr netip.AddrPort

	mu                  sync.Mutex // guards the fields below
	infoOK, playersOK   bool
	rulesOK             bool // an A2S_RULES with the challenge was answered
	challenges, garbage int
}

func startFakeSource(t *testing.T) *fakeSource {
	t.Helper()
	s := &fakeSource{}
	s.addr = peer.ServeUDP(t, func(req []byte) [][]byte { return s.reply(t, req) })
	return s
}

func (s *fakeSource) reply(t *testing.T, req []byte) [][]byte {
	m, _ := Parse(req)
	var replies []Message
	s.mu.Lock()
	switch m := m.(type) {
	case InfoRequest:
		if m.HasChallenge && m.Challenge == interopChallenge {
			s.infoOK = true
			replies = append(replies, sampleInfo())
		} else {
			s.challenges++
			replies = append(replies, Challenge{Challenge: interopChallenge})
		}
	case PlayerRequest:
		if m.Challenge == interopChallenge {
			s.playersOK = true
			whole, err := samplePlayers().AppendBinary(nil)
			if err != nil {
				t.Error(err)
				break
			}
			parts, err := Split(whole, 0x1234, (len(whole)+1)/2)
			if err != nil || len(parts) != 2 {
				t.Errorf("split: %d parts, %v", len(parts), err)
				break
			}
			for _, p := range parts {
				replies = append(replies, p)
			}
		} else {
			s.challenges++
			replies = append(replies, Challenge{Challenge: interopChallenge})
		}
	case RulesRequest:
		if m.Challenge == interopChallenge {
			s.rulesOK = true
			replies = append(replies, sampleRules())
		} else {
			s.challenges++
			replies = append(replies, Challenge{Challenge: interopChallenge})
		}
	default:
		s.garbage++ // never answered
	}
	s.mu.Unlock()
	var out [][]byte
	for _, r := range replies {
		b, err := r.AppendBinary(nil)
		if err != nil {
			t.Error(err)
			continue
		}
		out = append(out, b)
	}
	return out
}

func (s *fakeSource) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.infoOK || !s.playersOK || s.challenges == 0 {
		t.Fatalf("server saw info with challenge %v, players with challenge %v, %d challenge round trips",
			s.infoOK, s.playersOK, s.challenges)
	}
}

func wantNames() []string {
	var names []string
	for _, p := range samplePlayers().Players {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

func TestInterop_Gamedig(t *testing.T) {
	srv := startFakeSource(t)
	var got struct {
		Name       string `json:"name"`
		Map        string `json:"map"`
		NumPlayers int    `json:"numplayers"`
		MaxPlayers int    `json:"maxplayers"`
		Version    string `json:"version"`
		Connect    string `json:"connect"` // host:gamePort, the EDF port
		Password   bool   `json:"password"`
		Players    []struct {
			Name string `json:"name"`
			Raw  struct {
				Score int     `json:"score"`
				Time  float64 `json:"time"`
			} `json:"raw"`
		} `json:"players"`
		Raw struct {
			Protocol     int      `json:"protocol"`
			Folder       string   `json:"folder"`
			Game         string   `json:"game"`
			AppID        int      `json:"appId"`
			NumBots      int      `json:"numbots"`
			ListenType   string   `json:"listentype"`
			Environment  string   `json:"environment"`
			Secure       int      `json:"secure"`
			SteamID      string   `json:"steamid"`
			SourceTVPort int      `json:"sourcetvport"`
			SourceTVName string   `json:"sourcetvname"`
			Tags         []string `json:"tags"`
		} `json:"raw"`
		Error string `json:"error"`
	}
	peer.QueryGamedig(t, &got, "css", srv.addr)
	if got.Error != "" {
		t.Fatalf("gamedig: %s", got.Error)
	}
	want := sampleInfo()
	var names []string
	scores := map[string]int{}
	for _, p := range got.Players {
		names = append(names, p.Name)
		scores[p.Name] = p.Raw.Score
	}
	slices.Sort(names)
	r := got.Raw
	if got.Name != want.Name || got.Map != want.Map || got.NumPlayers != int(want.Players) ||
		got.MaxPlayers != int(want.MaxPlayers) || got.Version != want.Version || got.Connect != "127.0.0.1:"+strconv.Itoa(int(*want.Port)) ||
		got.Password != want.Private || r.Protocol != int(want.Protocol) || r.Folder != want.Folder ||
		r.Game != want.Game || r.AppID != int(want.AppID) || r.NumBots != int(want.Bots) ||
		r.ListenType != string(rune(want.ServerType)) || r.Environment != string(rune(want.Environment)) ||
		r.Secure != 1 || r.SteamID != strconv.FormatUint(*want.SteamID, 10) ||
		r.SourceTVPort != int(want.SourceTV.Port) || r.SourceTVName != want.SourceTV.Name ||
		!reflect.DeepEqual(names, wantNames()) || scores["Bob"] != -1 || scores["Alice"] != 12 {
		t.Fatalf("gamedig decoded %+v\nwe encoded %+v", got, want)
	}
	srv.check(t)
}

// TestInterop_QstatRules: qstat 2.17 asks for A2S_RULES (-R) and decodes
// sampleRules as scout encodes it.
func TestInterop_QstatRules(t *testing.T) {
	srv := startFakeSource(t)
	got := peer.RunQuakestat(t, "-a2s", srv.addr.String(), "-R")
	if len(got) != 1 || got[0].Status != "online" {
		t.Fatalf("qstat reported %+v", got)
	}
	for _, r := range sampleRules().Rules {
		if v, ok := got[0].Rules[r.Name]; !ok || v != r.Value {
			t.Errorf("qstat rule %q = %q (present %v), want %q; qstat's rules: %v", r.Name, v, ok, r.Value, got[0].Rules)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if !srv.rulesOK {
		t.Errorf("qstat's A2S_RULES never carried the challenge")
	}
}

func TestInterop_Qstat(t *testing.T) {
	srv := startFakeSource(t)
	got := peer.RunQuakestat(t, "-a2s", srv.addr.String(), "-P")
	if len(got) != 1 {
		t.Fatalf("qstat reported %d servers: %+v", len(got), got)
	}
	g, want := got[0], sampleInfo()
	var names []string
	scores := map[string]int{}
	for _, p := range g.Players {
		names = append(names, p.Name)
		scores[p.Name] = p.Score
	}
	slices.Sort(names)
	if g.Status != "online" || g.Name != want.Name || g.Map != want.Map || g.NumPlayers != int(want.Players) ||
		g.MaxPlayers != int(want.MaxPlayers) || !reflect.DeepEqual(names, wantNames()) ||
		scores["Bob"] != -1 || scores["Alice"] != 12 {
		t.Fatalf("qstat decoded %+v\nwe encoded %+v", g, want)
	}
	srv.check(t)
}
