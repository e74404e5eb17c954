package dissect

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/protocol/capture"
	"github.com/scout-discovery/scout/protocol/gs4"
	"github.com/scout-discovery/scout/protocol/q4"
)

// vectorCase is what one capture must decode to.
type vectorCase struct {
	family  Family
	message string
	// contains are strings the JSON of the decoded message must hold
	// (values, so that the test does not depend on field names).
	contains []string
	check    func(t *testing.T, r Result)
}

// vectors covers every file of testdata/vectors (TestDecode_EveryVector
// fails on a file missing from it).
var vectors = map[string]vectorCase{
	"gamedig_req_openarena_getstatus.hex":           {family: Q3, message: "getstatus"},
	"gamedig_req_wet_getstatus.hex":                 {family: Q3, message: "getstatus"},
	"gamedig_req_quake4_getInfo.hex":                {family: Q4, message: "getInfo", check: q4Challenge(0x474e6950)},
	"gamedig_req_ut3_challenge.hex":                 {family: GS4, message: "challengeRequest", check: gs4Session(1)},
	"openarena_challengeResponse.hex":               {family: Q3, message: "challengeResponse", contains: []string{"71"}},
	"openarena_heartbeat.hex":                       {family: Q3, message: "heartbeat", contains: []string{"QuakeArena-1"}},
	"openarena_heartbeat_darkplaces.hex":            {family: Q3, message: "heartbeat", contains: []string{"DarkPlaces"}},
	"openarena_shutdown_heartbeat_pair_2nd.hex":     {family: Q3, message: "heartbeat", contains: []string{"QuakeArena-1"}},
	"openarena_infoResponse.hex":                    {family: Q3, message: "infoResponse", contains: []string{"oa_dm1", "oa-peer-28960", "Quake3Arena", "16054539"}},
	"openarena_infoResponse_challenge16.hex":        {family: Q3, message: "infoResponse", contains: []string{"0123456789abcdef"}},
	"openarena_infoResponse_gamename_OpenArena.hex": {family: Q3, message: "infoResponse", contains: []string{"OpenArena"}},
	"openarena_infoResponse_nochallenge.hex":        {family: Q3, message: "infoResponse", contains: []string{"oa_dm1", "3"}},
	"openarena_infoResponse_protocol68.hex":         {family: Q3, message: "infoResponse", contains: []string{"68"}},
	"openarena_print_gamemismatch.hex":              {family: Q3, message: "print", contains: []string{"Game mismatch"}},
	"openarena_probe_request_getchallenge.hex":      {family: Q3, message: "getchallenge", contains: []string{"Quake3Arena"}},
	"openarena_probe_request_getinfo.hex":           {family: Q3, message: "getinfo"},
	"openarena_probe_request_getstatus.hex":         {family: Q3, message: "getstatus"},
	"openarena_statusResponse_0players.hex":         {family: Q3, message: "statusResponse", contains: []string{"OpenArena"}},
	"openarena_statusResponse_3bots.hex":            {family: Q3, message: "statusResponse", contains: []string{"Sarge", "Grism", "Kyonshi"}},
	"ours_q4_infoResponse_accepted_by_qstat_and_gamedig.hex": {family: Q4, message: "infoResponse", check: func(t *testing.T, r Result) {
		m := r.Msg.(*q4.InfoResponse)
		if m.Protocol != q4.Quake4 || len(m.Players) != 2 || m.Players[0].Name != "Alice" || m.Players[0].Ping != 42 || m.Players[1].Name != "Bob" || m.Players[1].Ping != 7 {
			t.Errorf("infoResponse = %+v, want protocol 2.85 and players Alice ping 42, Bob ping 7", m)
		}
	}},
	"ours_q4_master_servers_accepted_by_qstat.hex": {family: Q4, message: "servers", check: q4Servers("127.0.0.1:29061")},
	"probe_master_getserversResponse.hex":          {family: Q3, message: "getserversResponse", contains: []string{"127.0.0.1"}},
	"qstat_req_a2s_info.hex":                       {family: A2S, message: "A2S_INFO"},
	"qstat_req_dm3m_getServers.hex":                {family: Q4, message: "getServers", check: q4Dialect(q4.DialectDoom3)},
	"qstat_req_gs4_challenge.hex":                  {family: GS4, message: "challengeRequest", check: gs4Session(0x10203040)},
	"qstat_req_openarenam_getservers71.hex":        {family: Q3, message: "getservers", contains: []string{"71"}},
	"qstat_req_q3m71_getservers71.hex":             {family: Q3, message: "getservers", contains: []string{"71"}},
	"qstat_req_q3m_getservers68.hex":               {family: Q3, message: "getservers", contains: []string{"68"}},
	"qstat_req_q3s_getinfo.hex":                    {family: Q3, message: "getinfo"},
	"qstat_req_q3s_getstatus.hex":                  {family: Q3, message: "getstatus"},
	"qstat_req_q4m_getServers.hex":                 {family: Q4, message: "getServers", check: q4Dialect(q4.DialectQuake4)},
	"qstat_req_q4s_getInfo.hex":                    {family: Q4, message: "getInfo", check: q4Challenge(0)},
	"qstat_req_rwm_getservers60.hex":               {family: Q3, message: "getservers", contains: []string{"60"}},
	"qstat_req_rws_getinfo.hex":                    {family: Q3, message: "getinfo"},
	"qstat_req_stm_query.hex":                      {family: SteamMaster, message: "query", contains: []string{"0.0.0.0:0"}},
	"qstat_req_ut3s_challenge.hex":                 {family: GS4, message: "challengeRequest", check: gs4Session(0x10203040)},
	"qstat_req_woetm_getservers84.hex":             {family: Q3, message: "getservers", contains: []string{"84"}},
	"qstat_req_woets_getinfo.hex":                  {family: Q3, message: "getinfo"},
}

func q4Challenge(c int32) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		if m := r.Msg.(*q4.GetInfo); m.Challenge != c {
			t.Errorf("challenge = %#x, want %#x", m.Challenge, c)
		}
	}
}

func q4Dialect(d q4.Dialect) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		if m := r.Msg.(*q4.GetServers); m.Dialect != d {
			t.Errorf("dialect = %v, want %v", m.Dialect, d)
		}
	}
}

func q4Servers(want ...string) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		var got []string
		for _, s := range r.Msg.(*q4.Servers).Servers {
			got = append(got, s.String())
		}
		if !slices.Equal(got, want) {
			t.Errorf("servers = %v, want %v", got, want)
		}
	}
}

func gs4Session(id uint32) func(*testing.T, Result) {
	return func(t *testing.T, r Result) {
		if m := r.Msg.(gs4.ChallengeRequest); m.SessionID != id {
			t.Errorf("session id = %#x, want %#x", m.SessionID, id)
		}
	}
}

// readPackets reads a test file with the capture package.
func readPackets(t testing.TB, path string) []capture.Packet {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pkts, _, err := capture.Parse(b, capture.Auto)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(pkts) != 1 {
		t.Fatalf("%s: %d packets, want 1", path, len(pkts))
	}
	return pkts
}

// decodePacket decodes a capture packet the way scout decode does.
func decodePacket(p capture.Packet, h Hint) Result {
	h.Src, h.Dst = p.Src, p.Dst
	if p.Complete() {
		return Decode(p.Payload, h)
	}
	var ps []Piece
	for _, pc := range p.Pieces() {
		ps = append(ps, Piece{Offset: pc.Offset, Data: pc.Data})
	}
	return DecodePieces(ps, p.Length, h)
}

// checkResult checks r against c and returns the JSON of its message.
func checkResult(t *testing.T, r Result, c vectorCase) string {
	t.Helper()
	if r.Family != c.family || r.Message != c.message {
		t.Fatalf("decoded as %s %q (err %v), want %s %q", r.Family, r.Message, r.Err, c.family, c.message)
	}
	if r.Msg == nil {
		t.Fatalf("no message: %v", r.Err)
	}
	js, err := json.Marshal(r.Msg)
	if err != nil {
		t.Fatalf("message does not marshal to JSON: %v", err)
	}
	for _, s := range c.contains {
		if !strings.Contains(string(js), s) {
			t.Errorf("JSON %s lacks %q", js, s)
		}
	}
	if c.check != nil {
		c.check(t, r)
	}
	return string(js)
}

func TestDecode_EveryVector(t *testing.T) {
	files, err := filepath.Glob("testdata/vectors/*.hex")
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			c, ok := vectors[name]
			if !ok {
				t.Fatalf("no expectation for %s: add it to the vectors table", name)
			}
			p := readPackets(t, f)[0]
			if !p.Complete() || p.Link != capture.LinkNone {
				t.Fatalf("capture read %s as link %v, %d of %d bytes", name, p.Link, len(p.Payload), p.Length)
			}
			r := Decode(p.Payload, Hint{})
			checkResult(t, r, c)
			if r.Err != nil {
				t.Errorf("err = %v, want a clean decode", r.Err)
			}
		})
	}
	for name := range vectors {
		if _, err := os.Stat(filepath.Join("testdata/vectors", name)); err != nil {
			t.Errorf("table names %s, which is not in testdata/vectors", name)
		}
	}
}

func TestDecode_SeedFigures(t *testing.T) {
	tests := []struct {
		fig      int
		src, dst string
		c        vectorCase
		complete bool
	}{
		{3, "68.88.65.185:1336", "10.1.1.2:27960", vectorCase{family: Q3, message: "infoResponse", contains: []string{"pro-q3dm6", "cpma", "Welcome DUEL Server", "xxx"}}, true},
		{4, "192.147.236.5:27960", "192.246.40.56:27950", vectorCase{family: Q3, message: "heartbeat", contains: []string{"QuakeArena-1"}}, true},
		{5, "136.186.229.32:27961", "192.246.40.60:27950", vectorCase{family: Q3, message: "heartbeat", contains: []string{"EnemyTerritory-1"}}, true},
		{6, "10.1.1.2:1590", "192.246.40.28:27650", vectorCase{family: Q4, message: "getServers", check: func(t *testing.T, r Result) {
			m := r.Msg.(*q4.GetServers)
			if m.Protocol != q4.Quake4 || !m.ThirdParty || m.Dialect != q4.DialectQuake4 {
				t.Errorf("getServers = %+v, want protocol 2.85, third party, Quake 4 layout", m)
			}
		}}, true},
		{7, "192.246.40.28:27650", "10.1.1.2:1590", vectorCase{family: Q4, message: "servers", check: checkFig7}, false},
		{8, "69.65.15.4:28004", "10.1.1.2:1590", vectorCase{family: Q4, message: "infoResponse", check: checkFig8}, false},
	}
	for _, tt := range tests {
		t.Run("fig"+string(rune('0'+tt.fig)), func(t *testing.T) {
			p := readPackets(t, filepath.Join("testdata", "seed000_fig"+string(rune('0'+tt.fig))+".txt"))[0]
			if p.Src != netip.MustParseAddrPort(tt.src) || p.Dst != netip.MustParseAddrPort(tt.dst) {
				t.Errorf("addresses %v -> %v, want %s -> %s", p.Src, p.Dst, tt.src, tt.dst)
			}
			r := decodePacket(p, Hint{})
			checkResult(t, r, tt.c)
			if tt.complete && r.Err != nil {
				t.Errorf("err = %v, want a clean decode", r.Err)
			}
			if !tt.complete && (!errors.Is(r.Err, ErrIncomplete) || len(r.Missing) == 0) {
				t.Errorf("err = %v, missing %v: want ErrIncomplete and the missing range", r.Err, r.Missing)
			}
		})
	}
}

// checkFig7 checks the elided Quake 4 servers reply of Fig. 7: a 1396-byte
// payload of 231 entries, of which the dump prints 7 whole entries at the
// head and 10 at the tail.
func checkFig7(t *testing.T, r Result) {
	if r.Length != 1396 {
		t.Errorf("length = %d, want 1396", r.Length)
	}
	// Payload offsets: the head is frame bytes 0x2a-0x5f, the tail
	// 0x560-0x59d.
	if want := []Range{{0x60 - 0x2a, 0x560 - 0x2a}}; !slices.Equal(r.Missing, want) {
		t.Errorf("missing = %v, want %v", r.Missing, want)
	}
	m := r.Msg.(*q4.Servers)
	if len(m.Servers) != 17 {
		t.Fatalf("%d servers, want 7 from the head and 10 from the tail", len(m.Servers))
	}
	for i, want := range map[int]string{0: "85.236.101.43:28014", 1: "85.236.101.43:28004", 6: "69.28.220.3:28004", 16: "195.13.62.58:29000"} {
		if got := m.Servers[i].String(); !strings.HasPrefix(got, strings.TrimSuffix(want, "*")) {
			t.Errorf("server %d = %s, want %s", i, got, want)
		}
	}
	// The head's 7 whole entries end at payload offset 10+7*6 = 52; the
	// tail's 10 start at 10+221*6 = 1336.
	if r.Lost == nil || r.Tail == nil || r.Tail.Offset != r.Lost.End {
		t.Fatalf("lost %v, tail %+v: want both", r.Lost, r.Tail)
	}
	if want := (Range{52, 1336}); *r.Lost != want {
		t.Errorf("lost = %v, want %v", *r.Lost, want)
	}
}

// checkFig8 checks the elided Quake 4 infoResponse of Fig. 8.
func checkFig8(t *testing.T, r Result) {
	if r.Length != 919-42 {
		t.Errorf("length = %d, want %d", r.Length, 919-42)
	}
	m := r.Msg.(*q4.InfoResponse)
	if m.Protocol != q4.Quake4 || m.Challenge != 1 {
		t.Errorf("challenge %d protocol %v, want 1 and 2.85", m.Challenge, m.Protocol)
	}
	for k, want := range map[string]string{
		"net_serverDedicated": "1", "fs_game": "q4mp", "si_version": "Quake4  V1.4.2 win-x86 Jun 15 2007",
		"gamename": "Q4MP 1.4.2",
	} {
		if v, ok := m.Info.Get(k); !ok || v != want {
			t.Errorf("info %s = %q, %v; want %q", k, v, ok, want)
		}
	}
	if len(m.Players) != 0 || m.OSMask != 7 {
		t.Errorf("players %v, osmask %d; want none and 7", m.Players, m.OSMask)
	}
}
