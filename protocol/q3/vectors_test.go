package q3

import (
	"bytes"
	"errors"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/protocol/infostring"

	"github.com/scout-discovery/scout/internal/xxd"
)

// The info strings below were transcribed from the vectors by splitting
// the bytes on backslashes outside this package, so they check Parse
// rather than repeat it.

var oaInfo = infostring.Info{
	{Key: "voip", Value: "opus"},
	{Key: "g_needpass", Value: "0"},
	{Key: "pure", Value: "1"},
	{Key: "gametype", Value: "0"},
	{Key: "sv_maxclients", Value: "8"},
	{Key: "g_humanplayers", Value: "0"},
	{Key: "clients", Value: "3"},
	{Key: "mapname", Value: "oa_dm1"},
	{Key: "hostname", Value: "oa-peer-28960"},
	{Key: "protocol", Value: "71"},
	{Key: "gamename", Value: "Quake3Arena"},
	{Key: "challenge", Value: "16054539"},
}

var oaInfoChallenge16 = infostring.Info{
	{Key: "voip", Value: "opus"},
	{Key: "g_needpass", Value: "0"},
	{Key: "pure", Value: "1"},
	{Key: "gametype", Value: "0"},
	{Key: "sv_maxclients", Value: "8"},
	{Key: "g_humanplayers", Value: "0"},
	{Key: "clients", Value: "3"},
	{Key: "mapname", Value: "oa_dm1"},
	{Key: "hostname", Value: "oa-peer-28960"},
	{Key: "protocol", Value: "71"},
	{Key: "gamename", Value: "Quake3Arena"},
	{Key: "challenge", Value: "0123456789abcdef"},
}

var oaInfoNoChallenge = infostring.Info{
	{Key: "voip", Value: "opus"},
	{Key: "g_needpass", Value: "0"},
	{Key: "pure", Value: "1"},
	{Key: "gametype", Value: "0"},
	{Key: "sv_maxclients", Value: "8"},
	{Key: "g_humanplayers", Value: "0"},
	{Key: "clients", Value: "3"},
	{Key: "mapname", Value: "oa_dm1"},
	{Key: "hostname", Value: "oa-peer-28960"},
	{Key: "protocol", Value: "71"},
	{Key: "gamename", Value: "Quake3Arena"},
}

var oaInfoGamenameOpenArena = infostring.Info{
	{Key: "voip", Value: "opus"},
	{Key: "g_needpass", Value: "0"},
	{Key: "pure", Value: "1"},
	{Key: "gametype", Value: "0"},
	{Key: "sv_maxclients", Value: "8"},
	{Key: "g_humanplayers", Value: "0"},
	{Key: "clients", Value: "0"},
	{Key: "mapname", Value: "oa_dm1"},
	{Key: "hostname", Value: "oa-peer-28960"},
	{Key: "protocol", Value: "71"},
	{Key: "gamename", Value: "OpenArena"},
	{Key: "challenge", Value: "011a77ab"},
}

var oaInfoProtocol68 = infostring.Info{
	{Key: "voip", Value: "opus"},
	{Key: "g_needpass", Value: "0"},
	{Key: "pure", Value: "1"},
	{Key: "gametype", Value: "0"},
	{Key: "sv_maxclients", Value: "8"},
	{Key: "g_humanplayers", Value: "0"},
	{Key: "clients", Value: "0"},
	{Key: "mapname", Value: "oa_dm1"},
	{Key: "hostname", Value: "oa-peer-28964"},
	{Key: "protocol", Value: "68"},
	{Key: "gamename", Value: "Quake3Arena"},
	{Key: "challenge", Value: "p68"},
}

var oaStatus3Bots = infostring.Info{
	{Key: "challenge", Value: "51cbb02a"},
	{Key: "com_protocol", Value: "71"},
	{Key: "sv_hostname", Value: "oa-peer-28960"},
	{Key: "version", Value: "ioq3 1.36+u20221123.70d07d9+dfsg-1/Debian linux-x86_64 Jan  8 2023"},
	{Key: "com_gamename", Value: "Quake3Arena"},
	{Key: "dmflags", Value: "0"},
	{Key: "fraglimit", Value: "20"},
	{Key: "timelimit", Value: "0"},
	{Key: "g_gametype", Value: "0"},
	{Key: "mapname", Value: "oa_dm1"},
	{Key: "sv_privateClients", Value: "0"},
	{Key: "sv_maxclients", Value: "8"},
	{Key: "sv_minRate", Value: "0"},
	{Key: "sv_maxRate", Value: "0"},
	{Key: "sv_dlRate", Value: "100"},
	{Key: "sv_minPing", Value: "0"},
	{Key: "sv_maxPing", Value: "0"},
	{Key: "sv_floodProtect", Value: "1"},
	{Key: "sv_allowDownload", Value: "0"},
	{Key: "bot_minplayers", Value: "0"},
	{Key: "gamename", Value: "baseoa"},
	{Key: "g_maxGameClients", Value: "0"},
	{Key: "videoflags", Value: "7"},
	{Key: "elimflags", Value: "0"},
	{Key: "voteflags", Value: "767"},
	{Key: "capturelimit", Value: "8"},
	{Key: "g_doWarmup", Value: "0"},
	{Key: "g_needpass", Value: "0"},
	{Key: "g_allowVote", Value: "1"},
	{Key: "g_voteGametypes", Value: "/0/1/3/4/5/6/7/8/9/10/11/12/"},
	{Key: "g_voteMaxTimelimit", Value: "1000"},
	{Key: "g_voteMinTimelimit", Value: "0"},
	{Key: "g_voteMaxFraglimit", Value: "0"},
	{Key: "g_voteMinFraglimit", Value: "0"},
	{Key: "g_obeliskRespawnDelay", Value: "10"},
	{Key: "g_enableDust", Value: "0"},
	{Key: "g_enableBreath", Value: "0"},
	{Key: "g_delagHitscan", Value: "0"},
	{Key: "elimination_roundtime", Value: "120"},
	{Key: "g_rockets", Value: "0"},
	{Key: "g_instantgib", Value: "0"},
	{Key: "g_lms_mode", Value: "0"},
	{Key: "g_altExcellent", Value: "0"},
	{Key: "g_timestamp", Value: "2026-11-22 01:56:40"},
}

var oaStatus0Players = infostring.Info{
	{Key: "challenge", Value: "726d6e91"},
	{Key: "com_protocol", Value: "71"},
	{Key: "sv_hostname", Value: "oa-peer-28960"},
	{Key: "com_gamename", Value: "OpenArena"},
	{Key: "version", Value: "ioq3 1.36+u20221123.70d07d9+dfsg-1/Debian linux-x86_64 Jan  8 2023"},
	{Key: "dmflags", Value: "0"},
	{Key: "fraglimit", Value: "20"},
	{Key: "timelimit", Value: "0"},
	{Key: "g_gametype", Value: "0"},
	{Key: "mapname", Value: "oa_dm1"},
	{Key: "sv_privateClients", Value: "0"},
	{Key: "sv_maxclients", Value: "8"},
	{Key: "sv_minRate", Value: "0"},
	{Key: "sv_maxRate", Value: "0"},
	{Key: "sv_dlRate", Value: "100"},
	{Key: "sv_minPing", Value: "0"},
	{Key: "sv_maxPing", Value: "0"},
	{Key: "sv_floodProtect", Value: "1"},
	{Key: "sv_allowDownload", Value: "0"},
	{Key: "bot_minplayers", Value: "0"},
	{Key: "gamename", Value: "baseoa"},
	{Key: "g_maxGameClients", Value: "0"},
	{Key: "videoflags", Value: "7"},
	{Key: "elimflags", Value: "0"},
	{Key: "voteflags", Value: "767"},
	{Key: "capturelimit", Value: "8"},
	{Key: "g_doWarmup", Value: "0"},
	{Key: "g_needpass", Value: "0"},
	{Key: "g_allowVote", Value: "1"},
	{Key: "g_voteGametypes", Value: "/0/1/3/4/5/6/7/8/9/10/11/12/"},
	{Key: "g_voteMaxTimelimit", Value: "1000"},
	{Key: "g_voteMinTimelimit", Value: "0"},
	{Key: "g_voteMaxFraglimit", Value: "0"},
	{Key: "g_voteMinFraglimit", Value: "0"},
	{Key: "g_obeliskRespawnDelay", Value: "10"},
	{Key: "g_enableDust", Value: "0"},
	{Key: "g_enableBreath", Value: "0"},
	{Key: "g_delagHitscan", Value: "0"},
	{Key: "elimination_roundtime", Value: "120"},
	{Key: "g_rockets", Value: "0"},
	{Key: "g_instantgib", Value: "0"},
	{Key: "g_lms_mode", Value: "0"},
	{Key: "g_altExcellent", Value: "0"},
	{Key: "g_timestamp", Value: "2026-11-22 01:57:41"},
}

var seedFig3Info = infostring.Info{
	{Key: "game", Value: "cpma"},
	{Key: "punkbuster", Value: "0"},
	{Key: "pure", Value: "1"},
	{Key: "gametype", Value: "1"},
	{Key: "sv_maxclients", Value: "8"},
	{Key: "clients", Value: "2"},
	{Key: "mapname", Value: "pro-q3dm6"},
	{Key: "hostname", Value: "Welcome DUEL Server"},
	{Key: "protocol", Value: "68"},
	{Key: "challenge", Value: "xxx"},
}

// vectorCase is one real packet and what it must decode to.
type vectorCase struct {
	name string // named after the program that sent it
	file string
	want Message
}

var vectorCases = []vectorCase{
	{"openarena-0.8.8/heartbeat", "openarena_heartbeat.hex",
		Heartbeat{Tag: TagQuakeArena, Terminator: TermLF}},
	{"openarena-0.8.8/heartbeat-darkplaces", "openarena_heartbeat_darkplaces.hex",
		Heartbeat{Tag: TagDarkPlaces, Terminator: TermLF}},
	{"openarena-0.8.8/shutdown-heartbeat-2nd", "openarena_shutdown_heartbeat_pair_2nd.hex",
		Heartbeat{Tag: TagQuakeArena, Terminator: TermLF}},
	{"openarena-0.8.8/infoResponse", "openarena_infoResponse.hex",
		InfoResponse{Info: oaInfo, Terminator: TermNone}},
	{"openarena-0.8.8/infoResponse-challenge16", "openarena_infoResponse_challenge16.hex",
		InfoResponse{Info: oaInfoChallenge16, Terminator: TermNone}},
	{"openarena-0.8.8/infoResponse-nochallenge", "openarena_infoResponse_nochallenge.hex",
		InfoResponse{Info: oaInfoNoChallenge, Terminator: TermNone}},
	{"openarena-0.8.8/infoResponse-gamename-OpenArena", "openarena_infoResponse_gamename_OpenArena.hex",
		InfoResponse{Info: oaInfoGamenameOpenArena, Terminator: TermNone}},
	{"openarena-0.8.8/infoResponse-protocol68", "openarena_infoResponse_protocol68.hex",
		InfoResponse{Info: oaInfoProtocol68, Terminator: TermNone}},
	{"openarena-0.8.8/statusResponse-3bots", "openarena_statusResponse_3bots.hex",
		StatusResponse{Info: oaStatus3Bots, Players: []Player{
			{Score: 0, Ping: 0, Name: "Sarge"},
			{Score: 0, Ping: 0, Name: "Grism"},
			{Score: 0, Ping: 0, Name: "Kyonshi"},
		}}},
	{"openarena-0.8.8/statusResponse-0players", "openarena_statusResponse_0players.hex",
		StatusResponse{Info: oaStatus0Players}},
	{"openarena-0.8.8/challengeResponse", "openarena_challengeResponse.hex",
		ChallengeResponse{Challenge: "1626205626", ClientChallenge: "477913120", Protocol: 71, Terminator: TermNone}},
	{"openarena-0.8.8/print-gamemismatch", "openarena_print_gamemismatch.hex",
		Print{Text: "Game mismatch: This is a Quake3Arena server\n"}},
	{"scout-probe/getinfo", "openarena_probe_request_getinfo.hex",
		GetInfo{Challenge: "16054539", Terminator: TermNone}},
	{"scout-probe/getstatus", "openarena_probe_request_getstatus.hex",
		GetStatus{Challenge: "51cbb02a", Terminator: TermNone}},
	{"scout-probe/getchallenge", "openarena_probe_request_getchallenge.hex",
		GetChallenge{Challenge: "477913120", GameName: "Quake3Arena", Terminator: TermNone}},
	{"scout-probe-master/getserversResponse", "probe_master_getserversResponse.hex",
		ServersResponse{Servers: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:28960")}, End: EndEOT}},
	{"qstat-2.17/q3m-getservers", "qstat_req_q3m_getservers68.hex",
		GetServers{Protocol: 68, Empty: true, Full: true, Terminator: TermLF}},
	{"qstat-2.17/q3m71-getservers", "qstat_req_q3m71_getservers71.hex",
		GetServers{Protocol: 71, Empty: true, Full: true, Terminator: TermLF}},
	{"qstat-2.17/rwm-getservers", "qstat_req_rwm_getservers60.hex",
		GetServers{Protocol: 60, Empty: true, Full: true, Terminator: TermLF}},
	{"qstat-2.17/woetm-getservers", "qstat_req_woetm_getservers84.hex",
		GetServers{Protocol: 84, Empty: true, Full: true, Terminator: TermNone}},
	{"qstat-2.17/openarenam-getservers", "qstat_req_openarenam_getservers71.hex",
		GetServers{Protocol: 71, Empty: true, Full: true, Terminator: TermNone}},
	{"qstat-2.17/q3s-getinfo", "qstat_req_q3s_getinfo.hex", GetInfo{Terminator: TermLF}},
	{"qstat-2.17/q3s-getstatus", "qstat_req_q3s_getstatus.hex", GetStatus{Terminator: TermLF}},
	{"qstat-2.17/rws-getinfo", "qstat_req_rws_getinfo.hex", GetInfo{Terminator: TermLF}},
	{"qstat-2.17/woets-getinfo", "qstat_req_woets_getinfo.hex", GetInfo{Terminator: TermLF}},
	{"gamedig-5.3.3/openarena-getstatus", "gamedig_req_openarena_getstatus.hex", GetStatus{Terminator: TermNUL}},
	{"gamedig-5.3.3/wet-getstatus", "gamedig_req_wet_getstatus.hex", GetStatus{Terminator: TermNUL}},
	{"seed-000/fig3-q3a-infoResponse", "seed000_fig3_q3a_infoResponse.hex",
		InfoResponse{Info: seedFig3Info, Terminator: TermNone}},
	{"seed-000/fig4-q3a-heartbeat", "seed000_fig4_q3a_heartbeat.hex",
		Heartbeat{Tag: TagQuakeArena, Terminator: TermLF}},
	{"seed-000/fig5-et-heartbeat", "seed000_fig5_et_heartbeat.hex",
		Heartbeat{Tag: TagEnemyTerritory, Terminator: TermLF}},
}

// TestParse_Vectors decodes every captured packet, checks every field,
// and encodes it back to the same bytes.
func TestParse_Vectors(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range vectorCases {
		t.Run(tc.name, func(t *testing.T) {
			b := xxd.ReadFile(t, "testdata/"+tc.file)
			seen[tc.file] = true
			got, err := Parse(b)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse =\n%#v\nwant\n%#v", got, tc.want)
			}
			out, err := got.AppendBinary(nil)
			if err != nil {
				t.Fatalf("AppendBinary: %v", err)
			}
			if !bytes.Equal(out, b) {
				t.Fatalf("AppendBinary =\n%q\nwant the captured bytes\n%q", out, b)
			}
		})
	}
	// Every vector in testdata has a case.
	files, err := filepath.Glob("testdata/*.hex")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s has no case in vectorCases", f)
		}
	}
}

// TestParse_VectorFacts pins the facts about the real packets that the
// rest of scout relies on.
func TestParse_VectorFacts(t *testing.T) {
	m, _ := Parse(xxd.ReadFile(t, "testdata/openarena_infoResponse.hex"))
	info := m.(InfoResponse).Info
	if last := info[len(info)-1]; last.Key != "challenge" {
		t.Errorf("OpenArena infoResponse: last key %q, want challenge", last.Key)
	}
	m, _ = Parse(xxd.ReadFile(t, "testdata/openarena_infoResponse_nochallenge.hex"))
	if _, ok := m.(InfoResponse).Info.Get("challenge"); ok {
		t.Error("reply to a bare getinfo has a challenge key")
	}
	m, _ = Parse(xxd.ReadFile(t, "testdata/openarena_statusResponse_3bots.hex"))
	if c, _ := m.(StatusResponse).Info.Get("challenge"); c != "51cbb02a" {
		t.Errorf("statusResponse challenge %q, want the one the probe sent (51cbb02a)", c)
	}
	if !bytes.Equal(xxd.ReadFile(t, "testdata/openarena_heartbeat.hex"), xxd.ReadFile(t, "testdata/openarena_shutdown_heartbeat_pair_2nd.hex")) {
		t.Error("ioquake3's shutdown heartbeat differs from its regular one")
	}
}

func TestCommand(t *testing.T) {
	for _, tc := range vectorCases {
		b := xxd.ReadFile(t, "testdata/"+tc.file)
		word, ok := Command(b)
		want := strings.TrimPrefix(string(b), Prefix)
		if !ok || !strings.HasPrefix(want, word) || word == "" {
			t.Errorf("%s: Command = %q, %v", tc.name, word, ok)
		}
	}
	for _, tc := range []struct {
		in   string
		word string
		ok   bool
	}{
		{Prefix + "getserversResponse\\\x7f\x00\x00\x01\x71\x20", "getserversResponse", true},
		{Prefix + "getserversExtResponse/", "getserversExtResponse", true},
		{Prefix + "GETSTATUS\n", "getstatus", true},
		{Prefix + "register\x01\x02\x03\x04\x00\x50", "register", true},
		{Prefix + "registerabcd\x00\x50", "register", true}, // the address may start with letters
		{Prefix + "rcon secret status", "", false},
		{Prefix, "", false},
		{"getinfo", "", false},
		{"", "", false},
	} {
		word, ok := Command([]byte(tc.in))
		if word != tc.word || ok != tc.ok {
			t.Errorf("Command(%q) = %q, %v; want %q, %v", tc.in, word, ok, tc.word, tc.ok)
		}
	}
}

// TestParse_TextSamples decodes packets given as text in the sources
// (not captured bytes): the seed's ET motd exchange and dpmaster's
// documented requests.
func TestParse_TextSamples(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Message
	}{
		{"seed-000/et-getmotd",
			Prefix + "getmotd \"\\challenge\\29862\\renderer\\GeForce 7900 GS/PCI/SSE2\\version\\ET 2.60 win-x86 Mar 10 2005\"\n",
			GetMOTD{Info: infostring.Info{
				{Key: "challenge", Value: "29862"},
				{Key: "renderer", Value: "GeForce 7900 GS/PCI/SSE2"},
				{Key: "version", Value: "ET 2.60 win-x86 Mar 10 2005"},
			}, Terminator: TermLF}},
		{"seed-000/et-motd-trailing-backslash",
			Prefix + "motd \"challenge\\29862\\motd\\Welcome to Enemy Territory player 1025240255!!!!\\\"",
			MOTD{Info: infostring.Info{
				{Key: "challenge", Value: "29862"},
				{Key: "motd", Value: "Welcome to Enemy Territory player 1025240255!!!!"},
			}, Terminator: TermNone}},
		{"dpmaster-doc/getservers-q3a-ffa",
			Prefix + "getservers 67 ffa empty full",
			GetServers{Protocol: 67, GameType: "0", Empty: true, Full: true, Terminator: TermNone}},
		{"dpmaster-doc/getservers-et",
			Prefix + "getservers 84",
			GetServers{Protocol: 84, Terminator: TermNone}},
		{"dpmaster-doc/getservers-nexuiz",
			Prefix + "getservers Nexuiz 3",
			GetServers{GameName: "Nexuiz", Protocol: 3, Terminator: TermNone}},
		{"dpmaster-doc/getservers-qfusion-full",
			Prefix + "getservers qfusion 39 full",
			GetServers{GameName: "qfusion", Protocol: 39, Full: true, Terminator: TermNone}},
		{"dpmaster-doc/getserversExt-q3a",
			Prefix + "getserversExt Quake3Arena 68 ipv4 empty ipv6",
			GetServers{Ext: true, GameName: "Quake3Arena", Protocol: 68, Empty: true, IPv4: true, IPv6: true, Terminator: TermNone}},
		{"dpmaster-source/getserversExt-ioquake3-anonymous",
			Prefix + "getserversExt 68 empty ipv6",
			GetServers{Ext: true, Protocol: 68, Empty: true, IPv6: true, Terminator: TermNone}},
		{"dpmaster-doc/getservers-gametype-string",
			Prefix + "getservers Xonotic 3 gametype=dm somefuture",
			GetServers{GameName: "Xonotic", Protocol: 3, GameType: "dm", Other: []string{"somefuture"}, Terminator: TermNone}},
		{"dpmaster-doc/getinfo",
			Prefix + "getinfo A_ch4Lleng3",
			GetInfo{Challenge: "A_ch4Lleng3", Terminator: TermNone}},
		{"dpmaster-doc/infoResponse",
			Prefix + "infoResponse\n\\gamename\\BattleArt3\\clients\\1\\sv_maxclients\\4\\protocol\\5\\challenge\\the password",
			InfoResponse{Info: infostring.Info{
				{Key: "gamename", Value: "BattleArt3"}, {Key: "clients", Value: "1"},
				{Key: "sv_maxclients", Value: "4"}, {Key: "protocol", Value: "5"},
				{Key: "challenge", Value: "the password"},
			}, Terminator: TermNone}},
		{"quake3-1.32/challengeResponse-old",
			Prefix + "challengeResponse -1234567",
			ChallengeResponse{Challenge: "-1234567", Terminator: TermNone}},
		{"darkplaces/challenge-with-crypto-trailer",
			Prefix + "challenge xKq3Zp\x00d0pk\\1\\2",
			DPChallenge{Challenge: "xKq3Zp", Terminator: TermNUL, Trailer: "d0pk\\1\\2"}},
		{"darkplaces/statusResponse-team-column",
			Prefix + "statusResponse\n\\gamename\\Xonotic\n12 48 1 \"^1red guy\"\n-3 120 2 \"blue  guy\"\n",
			StatusResponse{Info: infostring.Info{{Key: "gamename", Value: "Xonotic"}}, Players: []Player{
				{Score: 12, Ping: 48, Extra: []int{1}, Name: "^1red guy"},
				{Score: -3, Ping: 120, Extra: []int{2}, Name: "blue  guy"},
			}}},
		{"lenient/command-case-and-spaces",
			Prefix + "GetServers   68  empty\n",
			GetServers{Protocol: 68, Empty: true, Terminator: TermLF}},
		{"lenient/bare-nul-end-marker",
			Prefix + "getserversResponse\\\x01\x02\x03\x04\x6d\x38\x00",
			ServersResponse{Servers: []netip.AddrPort{netip.MustParseAddrPort("1.2.3.4:27960")}, End: EndNUL}},
		{"lenient/infoResponse-no-leading-backslash",
			Prefix + "infoResponse\nhostname\\x\n",
			InfoResponse{Info: infostring.Info{{Key: "hostname", Value: "x"}}, Terminator: TermLF}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse =\n%#v\nwant\n%#v", got, tc.want)
			}
			checkRoundTrip(t, got)
		})
	}
}

// checkRoundTrip encodes m and decodes it again: the result must equal m.
func checkRoundTrip(t testing.TB, m Message) {
	t.Helper()
	out, err := m.AppendBinary(nil)
	if err != nil {
		t.Fatalf("AppendBinary(%#v): %v", m, err)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatalf("Parse(AppendBinary) %q: %v", out, err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip\n%#v\nbecame\n%#v\nvia %q", m, back, out)
	}
}

// errorsIsOne reports whether err wraps exactly one of the package's
// sentinels.
func sentinels(err error) []error {
	var out []error
	for _, s := range []error{ErrNotQ3, ErrUnknownCommand, ErrTruncated, ErrMalformed, ErrInvalid} {
		if errors.Is(err, s) {
			out = append(out, s)
		}
	}
	return out
}
