package q4

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/infostring"
)

// Interop tests run real third-party programs against packets this package
// encodes. They skip when a program is missing, unless CI is set (CI
// installs them), where they fail.

func needProgram(t *testing.T, find func() (string, error)) string {
	t.Helper()
	path, err := find()
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("interop program missing under CI: %v", err)
	}
	t.Skipf("interop program missing, skipping: %v", err)
	return ""
}

// gamedigPath finds interop/node_modules/.bin/gamedig by walking up from
// the working directory to the module root (the directory with go.mod).
func gamedigPath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "interop", "node_modules", ".bin", "gamedig")
			if _, err := os.Stat(p); err != nil {
				return "", err
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// serveUDP answers every packet on a 127.0.0.1 socket with reply(pkt) until
// the test ends. The socket is bound before it returns, so a program
// started afterwards finds it ready.
func serveUDP(t *testing.T, reply func(pkt []byte) []byte) netip.AddrPort {
	t.Helper()
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { conn.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if r := reply(buf[:n]); r != nil {
				conn.WriteToUDPAddrPort(r, from)
			}
		}
	}()
	return conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\nstdout: %s\nstderr: %s", name, args, err, out, stderr.String())
	}
	return out
}

// interopInfo is the infoResponse served to qstat and gamedig.
func interopInfo() InfoResponse {
	return InfoResponse{
		Protocol: Quake4,
		Info: infostring.Info{
			{Key: "si_name", Value: "scout interop"},
			{Key: "si_map", Value: "mp/q4dm7"},
			{Key: "si_maxPlayers", Value: "16"},
			{Key: "si_gametype", Value: "Tourney"},
			{Key: "fs_game", Value: "q4mp"},
			{Key: "gamename", Value: "Q4MP 1.4.2"},
		},
		Players: []Player{
			{ID: 0, Ping: 42, Rate: 25000, Name: "Alice", Clan: "[A]"},
			{ID: 5, Ping: 117, Rate: 16000, Name: "Bob", Clan: ""},
		},
		OSMask:  7,
		Trailer: []byte{0, 0, 0, 0, 1}, // as the real 1.4.2 server sends
	}
}

// serveInfo answers getInfo with interopInfo, echoing the challenge, and
// ignores anything else (a server never answers garbage).
func serveInfo(t *testing.T) (netip.AddrPort, InfoResponse) {
	want := interopInfo()
	addr := serveUDP(t, func(pkt []byte) []byte {
		req, err := ParseGetInfo(pkt)
		if err != nil {
			return nil
		}
		m := interopInfo()
		m.Challenge = req.Challenge
		b, err := m.AppendBinary(nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		return b
	})
	// Our own decoder's view is what the peers must agree with.
	b, err := want.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := ParseInfoResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	return addr, decoded
}

type peerView struct {
	Name, Map  string
	MaxPlayers int
	Players    []string // "name ping", sorted
}

func ourView(t *testing.T, m InfoResponse) peerView {
	var v peerView
	v.Name, _ = m.Info.Get("si_name")
	v.Map, _ = m.Info.Get("si_map")
	n, err := m.Info.Int("si_maxPlayers")
	if err != nil {
		t.Fatal(err)
	}
	v.MaxPlayers = n
	for _, p := range m.Players {
		v.Players = append(v.Players, p.Name+" "+strconv.Itoa(int(p.Ping)))
	}
	sort.Strings(v.Players)
	return v
}

func TestInterop_QstatReadsOurInfoResponse(t *testing.T) {
	qstat := needProgram(t, func() (string, error) { return exec.LookPath("quakestat") })
	addr, decoded := serveInfo(t)
	out := run(t, qstat, "-json", "-q4s", addr.String(), "-R", "-P")
	var got []struct {
		Status     string `json:"status"`
		Name       string `json:"name"`
		Map        string `json:"map"`
		MaxPlayers int    `json:"maxplayers"`
		NumPlayers int    `json:"numplayers"`
		Players    []struct {
			Name string `json:"name"`
			Ping int    `json:"ping"`
		} `json:"players"`
		Rules map[string]string `json:"rules"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("qstat JSON: %v\n%s", err, out)
	}
	if len(got) != 1 || got[0].Status != "online" {
		t.Fatalf("qstat: %s", out)
	}
	v := peerView{Name: got[0].Name, Map: got[0].Map, MaxPlayers: got[0].MaxPlayers}
	for _, p := range got[0].Players {
		v.Players = append(v.Players, p.Name+" "+strconv.Itoa(p.Ping))
	}
	sort.Strings(v.Players)
	want := ourView(t, decoded)
	if !equalView(v, want) || got[0].NumPlayers != len(decoded.Players) {
		t.Fatalf("qstat sees %+v (%d players), we decode %+v\n%s", v, got[0].NumPlayers, want, out)
	}
	if got[0].Rules["osmask"] != "0x7" || got[0].Rules["protocol"] != "2.85" {
		t.Fatalf("qstat rules osmask %q protocol %q", got[0].Rules["osmask"], got[0].Rules["protocol"])
	}
}

func TestInterop_GamedigReadsOurInfoResponse(t *testing.T) {
	gamedig := needProgram(t, gamedigPath)
	needProgram(t, func() (string, error) { return exec.LookPath("node") })
	addr, decoded := serveInfo(t)
	out := run(t, gamedig, "--type", "quake4", "--host", addr.Addr().String(), "--port", strconv.Itoa(int(addr.Port())))
	var got struct {
		Name       string `json:"name"`
		Map        string `json:"map"`
		MaxPlayers int    `json:"maxplayers"`
		Players    []struct {
			Name string         `json:"name"`
			Ping int            `json:"ping"`
			Raw  map[string]any `json:"raw"`
		} `json:"players"`
		Bots []json.RawMessage `json:"bots"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("gamedig JSON: %v\n%s", err, out)
	}
	v := peerView{Name: got.Name, Map: got.Map, MaxPlayers: got.MaxPlayers}
	for _, p := range got.Players {
		ping := p.Ping
		if rp, ok := p.Raw["ping"].(float64); ok && ping == 0 {
			ping = int(rp)
		}
		v.Players = append(v.Players, p.Name+" "+strconv.Itoa(ping))
	}
	sort.Strings(v.Players)
	want := ourView(t, decoded)
	// gamedig strips "maps/" from si_map; ours has no such prefix.
	if !equalView(v, want) || len(got.Bots) != 0 {
		t.Fatalf("gamedig sees %+v (%d bots), we decode %+v\n%s", v, len(got.Bots), want, out)
	}
}

func TestInterop_QstatReadsOurServers(t *testing.T) {
	qstat := needProgram(t, func() (string, error) { return exec.LookPath("quakestat") })
	list := []netip.AddrPort{
		netip.MustParseAddrPort("127.0.0.2:28004"),
		netip.MustParseAddrPort("10.1.2.3:28014"), // port > 255 in both bytes: catches byte order
		netip.MustParseAddrPort("192.0.2.77:65535"),
	}
	pkts, err := EncodeServers(list, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkts) != 1 {
		t.Fatalf("%d packets", len(pkts))
	}
	addr := serveUDP(t, func(pkt []byte) []byte {
		if _, err := ParseGetServers(pkt); err != nil {
			return nil
		}
		return pkts[0]
	})
	outfile := filepath.Join(t.TempDir(), "list")
	run(t, qstat, "-q4m,outfile", addr.String()+","+outfile)
	f, err := os.Open(outfile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []netip.AddrPort
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		typ, a, ok := strings.Cut(sc.Text(), " ")
		if !ok || typ != "q4s" {
			t.Fatalf("qstat list line %q", sc.Text())
		}
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ap)
	}
	want, err := ParseServers(pkts[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want.Servers) {
		t.Fatalf("qstat lists %v, we decode %v", got, want.Servers)
	}
	for i := range got {
		if got[i] != want.Servers[i] {
			t.Fatalf("qstat lists %v, we decode %v", got, want.Servers)
		}
	}
}

func equalView(a, b peerView) bool {
	return a.Name == b.Name && a.Map == b.Map && a.MaxPlayers == b.MaxPlayers &&
		strings.Join(a.Players, "|") == strings.Join(b.Players, "|")
}
