package dissect

// Agreement with qstat and gamedig: the bytes scout decode reads are served
// from a real UDP socket on 127.0.0.1 to quakestat and gamedig, and what
// they report must agree with what Decode reports for the same bytes. The
// q4 and gs4 packages prove their encoders against the same programs; these
// tests are about the dissector's output.

import (
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/protocol/gs4"
	"github.com/scout-discovery/scout/protocol/q4"
)

// peerView is what qstat and gamedig say about a server, in their JSON.
type peerView struct {
	Name       string       `json:"name"`
	Map        string       `json:"map"`
	MaxPlayers int          `json:"maxplayers"`
	Players    []peerPlayer `json:"players"`
	Ping       int          `json:"ping"`
	Address    string       `json:"address"`
	Error      string       `json:"error"`
	Status     string       `json:"status"`
}

type peerPlayer struct {
	Name string `json:"name"`
	Ping int    `json:"ping"` // qstat
	Raw  struct {
		Ping any `json:"ping"` // gamedig: a number (quake4) or a string (UT3)
	} `json:"raw"`
}

// askQstat runs quakestat -json -P with the type option typ ("-q4s") on
// addr, which must be its only server.
func askQstat(t *testing.T, typ string, addr netip.AddrPort) peerView {
	t.Helper()
	list := peer.RunQuakestat(t, "-P", typ, addr.String())
	if len(list) != 1 {
		t.Fatalf("qstat reported %d servers: %+v", len(list), list)
	}
	s := list[0]
	v := peerView{Name: s.Name, Map: s.Map, MaxPlayers: s.MaxPlayers, Ping: s.Ping, Address: s.Address, Status: s.Status}
	for _, p := range s.Players {
		v.Players = append(v.Players, peerPlayer{Name: p.Name, Ping: p.Ping})
	}
	return v
}

// askGamedig runs gamedig for game type typ on addr.
func askGamedig(t *testing.T, typ string, addr netip.AddrPort) peerView {
	t.Helper()
	var v peerView
	peer.QueryGamedig(t, &v, typ, addr)
	if v.Error != "" {
		t.Fatalf("gamedig: %s", v.Error)
	}
	return v
}

// player is a name and ping, as both sides report them.
type player struct {
	Name string
	Ping int
}

func (v peerView) players() []player {
	var ps []player
	for _, p := range v.Players {
		ping := p.Ping
		switch r := p.Raw.Ping.(type) {
		case float64:
			ping = int(r)
		case string:
			ping, _ = strconv.Atoi(r)
		}
		ps = append(ps, player{p.Name, ping})
	}
	return ps
}

// serverView is the same facts taken from a decoded Result.
type serverView struct {
	name, mapName string
	maxPlayers    int
	players       []player
}

func q4View(t *testing.T, r Result) serverView {
	t.Helper()
	m, ok := r.Msg.(*q4.InfoResponse)
	if !ok || r.Err != nil {
		t.Fatalf("Decode = %s %q %T, %v; want a q4 infoResponse", r.Family, r.Message, r.Msg, r.Err)
	}
	name, _ := m.Info.Get("si_name")
	mapName, _ := m.Info.Get("si_map")
	maxp, _ := m.Info.Get("si_maxPlayers")
	v := serverView{name: name, mapName: mapName}
	v.maxPlayers, _ = strconv.Atoi(maxp)
	for _, p := range m.Players {
		v.players = append(v.players, player{p.Name, int(p.Ping)})
	}
	return v
}

func (v serverView) check(t *testing.T, program string, got peerView) {
	t.Helper()
	// qstat reports map names as sent; gamedig too. Compare the facts.
	// qstat lists players in reverse order: compare them as sets.
	gp, vp := got.players(), slices.Clone(v.players)
	byName := func(a, b player) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(gp, byName)
	slices.SortFunc(vp, byName)
	if got.Name != v.name || got.Map != v.mapName || got.MaxPlayers != v.maxPlayers || !slices.Equal(gp, vp) {
		t.Errorf("%s reports name %q map %q max %d players %v;\nscout decode reports name %q map %q max %d players %v",
			program, got.Name, got.Map, got.MaxPlayers, got.players(), v.name, v.mapName, v.maxPlayers, v.players)
	}
}

func readVector(t *testing.T, name string) []byte {
	t.Helper()
	return readPackets(t, filepath.Join("testdata/vectors", name))[0].Payload
}

// q4Server answers every getInfo with the infoResponse vector, its
// challenge replaced by the request's (gamedig checks it), and records the
// bytes it sent.
func q4Server(t *testing.T, resp []byte, mu *sync.Mutex, sent *[]byte) netip.AddrPort {
	const challengeAt = len("\xff\xffinfoResponse\x00")
	return peer.ServeUDP(t, func(req []byte) [][]byte {
		r := Decode(req, Hint{})
		if r.Family != Q4 || r.Message != "getInfo" {
			return nil
		}
		b := slices.Clone(resp)
		binary.LittleEndian.PutUint32(b[challengeAt:], uint32(r.Msg.(*q4.GetInfo).Challenge))
		mu.Lock()
		*sent = b
		mu.Unlock()
		return [][]byte{b}
	})
}

func TestInterop_Q4InfoResponse(t *testing.T) {
	resp := readVector(t, "ours_q4_infoResponse_accepted_by_qstat_and_gamedig.hex")
	for _, program := range []string{"qstat", "gamedig"} {
		t.Run(program, func(t *testing.T) {
			var (
				mu   sync.Mutex
				sent []byte
				got  peerView
			)
			addr := q4Server(t, resp, &mu, &sent)
			switch program {
			case "qstat":
				got = askQstat(t, "-q4s", addr)
			case "gamedig":
				got = askGamedig(t, "quake4", addr)
			}
			mu.Lock()
			b := sent
			mu.Unlock()
			if b == nil {
				t.Fatalf("%s never sent a getInfo", program)
			}
			q4View(t, Decode(b, Hint{})).check(t, program, got)
		})
	}
}

func TestInterop_Q4Servers_Qstat(t *testing.T) {
	bin := peer.NeedQuakestat(t)
	resp := readVector(t, "ours_q4_master_servers_accepted_by_qstat.hex")
	r := Decode(resp, Hint{})
	m, ok := r.Msg.(*q4.Servers)
	if !ok || r.Err != nil {
		t.Fatalf("Decode = %s %q, %v", r.Family, r.Message, r.Err)
	}
	addr := peer.ServeUDP(t, func(req []byte) [][]byte {
		if r := Decode(req, Hint{}); r.Family == Q4 && r.Message == "getServers" {
			return [][]byte{resp}
		}
		return nil
	})
	// qstat's outfile option writes the master's list, "q4s ADDR" a line,
	// without probing the servers.
	list := filepath.Join(t.TempDir(), "list")
	peer.Run(t, bin, "-q4m,outfile", addr.String()+","+list)
	out, err := os.ReadFile(list)
	if err != nil {
		t.Fatal(err)
	}
	var qaddrs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		typ, addr, _ := strings.Cut(l, " ")
		if typ != "q4s" {
			t.Errorf("qstat list line %q, want q4s ADDR", l)
		}
		qaddrs = append(qaddrs, addr)
	}
	var daddrs []string
	for _, a := range m.Servers {
		daddrs = append(daddrs, a.String())
	}
	if !slices.Equal(qaddrs, daddrs) {
		t.Errorf("qstat lists %v, scout decode %v", qaddrs, daddrs)
	}
}

// ut3Info is the reply the UT3 tests serve.
func ut3Info() gs4.Info {
	return gs4.Info{
		Rules: []gs4.KeyValue{
			{Key: "hostname", Value: "Dissect UT3"},
			{Key: "hostport", Value: "7777"},
			{Key: "numplayers", Value: "2"},
			{Key: "maxplayers", Value: "12"},
			{Key: "gamemode", Value: "openplaying"},
			{Key: "mapname", Value: "DM-Sentinel"},
			{Key: "p1073741825", Value: "DM-Sentinel"},
		},
		Players: gs4.Table{
			Fields: []string{"player_", "score_", "ping_", "team_", "deaths_"},
			Rows:   [][]string{{"Carol", "3", "31", "0", "1"}, {"Dave", "9", "77", "1", "2"}},
		},
	}
}

// ut3Server answers the challenge round trip and then the info request with
// ut3Info in one packet, which it stores in *sent.
func ut3Server(t *testing.T, mu *sync.Mutex, sent *[]byte) netip.AddrPort {
	const challenge = 0x0BADF00D
	return peer.ServeUDP(t, func(req []byte) [][]byte {
		var m gs4.Message
		switch r := Decode(req, Hint{}); r.Msg.(type) {
		case gs4.ChallengeRequest:
			m = gs4.ChallengeReply{SessionID: r.Msg.(gs4.ChallengeRequest).SessionID, Challenge: challenge}
		case gs4.InfoRequest:
			info := ut3Info()
			info.SessionID = r.Msg.(gs4.InfoRequest).SessionID
			ps, err := info.Split(1400)
			if err != nil || len(ps) != 1 {
				t.Errorf("split: %d packets, %v", len(ps), err)
				return nil
			}
			m = ps[0]
		default:
			return nil
		}
		b, err := m.AppendBinary(nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		if _, ok := m.(gs4.InfoPacket); ok {
			mu.Lock()
			*sent = b
			mu.Unlock()
		}
		return [][]byte{b}
	})
}

// ut3View decodes the served reply with Decode, as scout decode would.
func ut3View(t *testing.T, b []byte) serverView {
	t.Helper()
	r := Decode(b, Hint{Src: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), GS4QueryPort)})
	p, ok := r.Msg.(gs4.InfoPacket)
	if !ok || r.Err != nil || r.Message != "infoReply" {
		t.Fatalf("Decode = %s %q %T, %v", r.Family, r.Message, r.Msg, r.Err)
	}
	info, err := gs4.Assemble([]gs4.InfoPacket{p})
	if err != nil {
		t.Fatal(err)
	}
	name, _ := info.Rule("hostname")
	mapName, _ := info.Rule("p1073741825")
	maxp, _ := info.Rule("maxplayers")
	v := serverView{name: name, mapName: mapName}
	v.maxPlayers, _ = strconv.Atoi(maxp)
	pings := info.Players.Column("ping_")
	for i, n := range info.PlayerNames() {
		ping, _ := strconv.Atoi(pings[i])
		v.players = append(v.players, player{n, ping})
	}
	return v
}

func TestInterop_UT3_QstatAndGamedig(t *testing.T) {
	for _, program := range []string{"qstat", "gamedig"} {
		t.Run(program, func(t *testing.T) {
			var (
				mu   sync.Mutex
				sent []byte
			)
			var got peerView
			switch program {
			case "qstat":
				got = askQstat(t, "-ut3s", ut3Server(t, &mu, &sent))
			case "gamedig":
				got = askGamedig(t, "unrealtournament3", ut3Server(t, &mu, &sent))
			}
			mu.Lock()
			b := sent
			mu.Unlock()
			if b == nil {
				t.Fatalf("%s never asked for the info reply; it reported %+v", program, got)
			}
			ut3View(t, b).check(t, program, got)
		})
	}
}
