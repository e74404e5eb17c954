package gs4

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// interopPacketSize makes sampleInfo split into two packets: the server
// key/values, then the player and team tables.
const interopPacketSize = 256

// interopChallenge is negative as text, to exercise the wrap.
const interopChallenge = 0xB3412B5A // "-1287574694"

// needTool returns the path of a third-party program, skipping the test
// when it is missing, or failing it when CI is set.
func needTool(t *testing.T, path string) string {
	t.Helper()
	p, err := exec.LookPath(path)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("interop peer %s missing in CI: %v", path, err)
		}
		t.Skipf("interop peer %s not installed (%v); CI installs it with .ci/run", path, err)
	}
	return p
}

// moduleRoot walks up from the package directory to the directory with go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the package directory")
		}
		dir = parent
	}
}

// fakeUT3 is a scripted UT3 server on 127.0.0.1: it answers a challenge
// request with interopChallenge and an info request carrying it with
// sampleInfo split into two packets. It records what it saw.
type fakeUT3 struct {
	conn *net.UDPConn
	wg   sync.WaitGroup

	mu       sync.Mutex // guards the fields below
	requests []Message
	badChal  int
}

func startFakeUT3(t *testing.T) *fakeUT3 {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeUT3{conn: conn}
	s.wg.Add(1)
	go s.serve(t)
	t.Cleanup(func() { conn.Close(); s.wg.Wait() })
	return s
}

func (s *fakeUT3) port() int { return s.conn.LocalAddr().(*net.UDPAddr).Port }

func (s *fakeUT3) serve(t *testing.T) {
	defer s.wg.Done()
	buf := make([]byte, 2048)
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return // closed
		}
		m, err := Parse(buf[:n])
		if err != nil {
			t.Errorf("fake UT3: undecodable request % x: %v", buf[:n], err)
			continue
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
				continue
			}
			info := sampleInfo()
			info.SessionID = m.SessionID
			ps, err := info.Split(interopPacketSize)
			if err != nil {
				t.Errorf("fake UT3: %v", err)
				continue
			}
			for _, p := range ps {
				replies = append(replies, p)
			}
		}
		for _, r := range replies {
			b, err := r.AppendBinary(nil)
			if err != nil {
				t.Errorf("fake UT3: %v", err)
				continue
			}
			if _, err := s.conn.WriteToUDPAddrPort(b, from); err != nil {
				t.Errorf("fake UT3: %v", err)
			}
		}
	}
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

func runPeer(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
	return out
}

func TestInterop_Gamedig(t *testing.T) {
	bin := needTool(t, filepath.Join(moduleRoot(t), "interop", "node_modules", ".bin", "gamedig"))
	srv := startFakeUT3(t)
	out := runPeer(t, bin, "--type", "unrealtournament3", "--host", "127.0.0.1",
		"--port", strconv.Itoa(srv.port()), "--givenPortOnly", "--maxRetries", "1")
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
	if err := json.Unmarshal(out, &got); err != nil || got.Error != "" {
		t.Fatalf("gamedig output %s: %v %s", out, err, got.Error)
	}
	var names []string
	for _, p := range got.Players {
		names = append(names, p.Name)
	}
	want := sampleExpected(t)
	if got.Name != want.name || got.Map != want.mapName || got.NumPlayers != want.players ||
		got.MaxPlayers != want.maxPlayer || !reflect.DeepEqual(names, want.playerNames) {
		t.Fatalf("gamedig decoded %+v (names %q), we encoded %+v\n%s", got, names, want, out)
	}
	srv.checkRequests(t)
}

func TestInterop_Qstat(t *testing.T) {
	bin := needTool(t, "quakestat")
	srv := startFakeUT3(t)
	out := runPeer(t, bin, "-json", "-ut3s", "127.0.0.1:"+strconv.Itoa(srv.port()), "-R", "-P")
	var got []struct {
		Status     string `json:"status"`
		Name       string `json:"name"`
		Map        string `json:"map"`
		NumPlayers int    `json:"numplayers"`
		MaxPlayers int    `json:"maxplayers"`
		Players    []struct {
			Name string `json:"name"`
		} `json:"players"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != 1 {
		t.Fatalf("qstat output %s: %v", out, err)
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
		t.Fatalf("qstat decoded %+v (names %q), we encoded %+v\n%s", g, names, want, out)
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
