package gs4

import (
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
)

// interopPacketSize makes sampleInfo split into two packets: the server
// key/values, then the player and team tables.
const interopPacketSize = 256

// interopChallenge is negative as text, to exercise the wrap.
const interopChallenge = 0xB3412B5A // "-1287574694"

// fakeUT3 is a scripted UT3 server on 127.0.0.1: it answers a challenge
// request with interopChallenge and an info request carrying it with
// sampleInfo split into two packets. It records what it saw.
type fakeUT3 struct {
	addr netip.AddrPort

	mu       sync.Mutex // guards the fields below
	requests []Message
	badChal  int
}

func startFakeUT3(t *testing.T) *fakeUT3 {
	t.Helper()
	s := &fakeUT3{}
	s.addr = peer.ServeUDP(t, func(req []byte) [][]byte { return s.reply(t, req) })
	return s
}

func (s *fakeUT3) reply(t *testing.T, req []byte) [][]byte {
	m, err := Parse(req)
	if err != nil {
		t.Errorf("fake UT3: undecodable request % x: %v", req, err)
		return nil
	}
	s.mu.Lock()
	s.requests = append(s.requests, m)
	s.mu.Unlock()
	var replies []Message
	switch m := m.(type) {
	case ChallengeRequest:
		replies = append(replies, ChallengeReply{SessionID: m.SessionID, Challenge: interopChallenge})
	case InfoRequest:
		if !m.HasChallenge || m.Challenge != interopChallenge {
			s.mu.Lock()
			s.badChal++
			s.mu.Unlock()
			return nil
		}
		info := sampleInfo()
		info.SessionID = m.SessionID
		ps, err := info.Split(interopPacketSize)
		if err != nil {
			t.Errorf("fake UT3: %v", err)
			return nil
		}
		for _, p := range ps {
			replies = append(replies, p)
		}
	}
	var out [][]byte
	for _, r := range replies {
		b, err := r.AppendBinary(nil)
		if err != nil {
			t.Errorf("fake UT3: %v", err)
			continue
		}
		out = append(out, b)
	}
	return out
}

// expected is what every decoder must report for sampleInfo.
type expected struct {
	name, mapName      string
	players, maxPlayer int
	playerNames        []string
}

func sampleExpected(t *testing.T) expected {
	info := sampleInfo()
	name, _ := info.Rule("hostname")
	mapName, _ := info.Rule("p1073741825")
	maxp, _ := info.Rule("maxplayers")
	numPlayers, _ := info.Rule("numplayers")
	mp, err1 := strconv.Atoi(maxp)
	np, err2 := strconv.Atoi(numPlayers)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return expected{name, mapName, np, mp, info.PlayerNames()}
}

func TestInterop_Gamedig(t *testing.T) {
	srv := startFakeUT3(t)
	var got struct {
		Name       string `json:"name"`
		Map        string `json:"map"`
		NumPlayers int    `json:"numplayers"`
		MaxPlayers int    `json:"maxplayers"`
		Players    []struct {
			Name string `json:"name"`
		} `json:"players"`
		Error string `json:"error"`
	}
	peer.QueryGamedig(t, &got, "unrealtournament3", srv.addr)
	if got.Error != "" {
		t.Fatalf("gamedig: %s", got.Error)
	}
	var names []string
	for _, p := range got.Players {
		names = append(names, p.Name)
	}
	want := sampleExpected(t)
	if got.Name != want.name || got.Map != want.mapName || got.NumPlayers != want.players ||
		got.MaxPlayers != want.maxPlayer || !reflect.DeepEqual(names, want.playerNames) {
		t.Fatalf("gamedig decoded %+v (names %q), we encoded %+v", got, names, want)
	}
	srv.checkRequests(t)
}

func TestInterop_Qstat(t *testing.T) {
	srv := startFakeUT3(t)
	got := peer.RunQuakestat(t, "-ut3s", srv.addr.String(), "-R", "-P")
	if len(got) != 1 {
		t.Fatalf("qstat reported %d servers: %+v", len(got), got)
	}
	g := got[0]
	var names []string
	for _, p := range g.Players {
		names = append(names, p.Name)
	}
	// qstat lists players newest first; compare as sets.
	slices.Sort(names)
	want := sampleExpected(t)
	slices.Sort(want.playerNames)
	if g.Status != "online" || g.Name != want.name || g.Map != want.mapName || g.NumPlayers != want.players ||
		g.MaxPlayers != want.maxPlayer || !reflect.DeepEqual(names, want.playerNames) {
		t.Fatalf("qstat decoded %+v (names %q), we encoded %+v", g, names, want)
	}
	srv.checkRequests(t)
}

// checkRequests asserts the peer went through the challenge round trip.
func (s *fakeUT3) checkRequests(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var chal, info bool
	for _, m := range s.requests {
		switch m := m.(type) {
		case ChallengeRequest:
			chal = true
		case InfoRequest:
			info = info || (m.HasChallenge && m.Challenge == interopChallenge && m.Rules && m.Players && m.Teams)
		}
	}
	if !chal || !info || s.badChal > 0 {
		t.Fatalf("requests %#v: challenge %v, info with challenge %v, bad challenges %d", s.requests, chal, info, s.badChal)
	}
}
