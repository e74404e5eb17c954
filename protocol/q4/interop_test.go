package q4

import (
	"bufio"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/protocol/infostring"
)

// Interop tests run real third-party programs against packets this package
// encodes, through internal/peer: they skip when a program is missing,
// unless CI is set (CI installs them), where they fail.

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
	addr := peer.ServeUDP(t, func(pkt []byte) [][]byte {
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
		return [][]byte{b}
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
	addr, decoded := serveInfo(t)
	got := peer.RunQuakestat(t, "-q4s", addr.String(), "-R", "-P")
	if len(got) != 1 || got[0].Status != "online" {
		t.Fatalf("qstat: %+v", got)
	}
	v := peerView{Name: got[0].Name, Map: got[0].Map, MaxPlayers: got[0].MaxPlayers}
	for _, p := range got[0].Players {
		v.Players = append(v.Players, p.Name+" "+strconv.Itoa(p.Ping))
	}
	sort.Strings(v.Players)
	want := ourView(t, decoded)
	if !equalView(v, want) || got[0].NumPlayers != len(decoded.Players) {
		t.Fatalf("qstat sees %+v (%d players), we decode %+v", v, got[0].NumPlayers, want)
	}
	if got[0].Rules["osmask"] != "0x7" || got[0].Rules["protocol"] != "2.85" {
		t.Fatalf("qstat rules osmask %q protocol %q", got[0].Rules["osmask"], got[0].Rules["protocol"])
	}
}

func TestInterop_GamedigReadsOurInfoResponse(t *testing.T) {
	addr, decoded := serveInfo(t)
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
	peer.QueryGamedig(t, &got, "quake4", addr)
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
		t.Fatalf("gamedig sees %+v (%d bots), we decode %+v", v, len(got.Bots), want)
	}
}

func TestInterop_QstatReadsOurServers(t *testing.T) {
	qstat := peer.NeedQuakestat(t)
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
	addr := peer.ServeUDP(t, func(pkt []byte) [][]byte {
		if _, err := ParseGetServers(pkt); err != nil {
			return nil
		}
		return pkts[:1]
	})
	outfile := filepath.Join(t.TempDir(), "list")
	peer.Run(t, qstat, "-q4m,outfile", addr.String()+","+outfile)
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
