package a2s

import (
	"context"
	"encoding/json"
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

const interopChallenge = 0x22D5A14B

// needTool returns a third-party program's path, skipping the test when
// it is missing, or failing it when CI is set.
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

// fakeSource is a scripted Source server on 127.0.0.1: it demands a
// challenge for A2S_INFO and A2S_PLAYER, then answers with sampleInfo and
// samplePlayers, the latter split into two packets.
type fakeSource struct {
	conn *net.UDPConn
	wg   sync.WaitGroup

	mu                  sync.Mutex // guards the fields below
	infoOK, playersOK   bool
	challenges, garbage int
}

func startFakeSource(t *testing.T) *fakeSource {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSource{conn: conn}
	s.wg.Add(1)
	go s.serve(t)
	t.Cleanup(func() { conn.Close(); s.wg.Wait() })
	return s
}

func (s *fakeSource) port() int { return s.conn.LocalAddr().(*net.UDPAddr).Port }

func (s *fakeSource) serve(t *testing.T) {
	defer s.wg.Done()
	buf := make([]byte, 2048)
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		m, err := Parse(buf[:n])
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
		default:
			s.garbage++ // a2s_rules etc.: never answered
			_ = err
		}
		s.mu.Unlock()
		for _, r := range replies {
			b, err := r.AppendBinary(nil)
			if err != nil {
				t.Error(err)
				continue
			}
			if _, err := s.conn.WriteToUDPAddrPort(b, from); err != nil {
				t.Error(err)
			}
		}
	}
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

func wantNames() []string {
	var names []string
	for _, p := range samplePlayers().Players {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

func TestInterop_Gamedig(t *testing.T) {
	bin := needTool(t, filepath.Join(moduleRoot(t), "interop", "node_modules", ".bin", "gamedig"))
	srv := startFakeSource(t)
	out := runPeer(t, bin, "--type", "css", "--host", "127.0.0.1", "--port", strconv.Itoa(srv.port()),
		"--givenPortOnly", "--maxRetries", "1")
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
	if err := json.Unmarshal(out, &got); err != nil || got.Error != "" {
		t.Fatalf("gamedig output %s: %v", out, err)
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

func TestInterop_Qstat(t *testing.T) {
	bin := needTool(t, "quakestat")
	srv := startFakeSource(t)
	out := runPeer(t, bin, "-json", "-a2s", "127.0.0.1:"+strconv.Itoa(srv.port()), "-P")
	var got []struct {
		Status     string `json:"status"`
		Name       string `json:"name"`
		Map        string `json:"map"`
		NumPlayers int    `json:"numplayers"`
		MaxPlayers int    `json:"maxplayers"`
		Players    []struct {
			Name  string `json:"name"`
			Score int    `json:"score"`
		} `json:"players"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != 1 {
		t.Fatalf("qstat output %s: %v", out, err)
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
		t.Fatalf("qstat decoded %+v\nwe encoded %+v\n%s", g, want, out)
	}
	srv.check(t)
}
