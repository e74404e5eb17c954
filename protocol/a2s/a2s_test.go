package a2s

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/xxd"
)

func ptr[T any](v T) *T { return &v }

// realVectors are packets from real programs or from Valve's documentation.
var realVectors = []struct {
	name, file string
	want       Message
}{
	{"qstat-2.17/a2s-info-request", "qstat_req_a2s_info.hex", InfoRequest{}},
	{"valve-wiki/s2c-challenge", "wiki_s2c_challenge.hex", Challenge{Challenge: 0x22D5A14B}},
	{"valve-wiki/a2s-info-css", "wiki_a2s_info_css.hex", Info{
		Protocol: 2, Name: "game2xs.com Counter-Strike Source #1", Map: "de_dust", Folder: "cstrike",
		Game: "Counter-Strike: Source", AppID: 240, Players: 5, MaxPlayers: 16, Bots: 4,
		ServerType: ServerDedicated, Environment: EnvLinux, Version: "1.0.0.22",
	}},
	{"valve-wiki/a2s-info-goldsrc-m", "wiki_a2s_info_goldsrc.hex", GoldSrcInfo{
		Address: "77.111.194.110:27015", Name: "FR - VeryGames.net - Deatmatch - only surf_ski - ngR",
		Map: "surf_ski", Folder: "cstrike", Game: "Counter-Strike", Players: 12, MaxPlayers: 18, Protocol: 47,
		ServerType: ServerDedicated, Environment: EnvLinux,
		Mod: &GoldSrcMod{Link: "www.counter-strike.net", Version: 1, Size: 184000000, OwnDLL: true},
		VAC: true,
	}},
	{"valve-wiki/a2s-player", "wiki_a2s_player.hex", Players{Players: []Player{
		{Index: 1, Name: "[D]---->T.N.W<----", Score: 14, Duration: 514.37036},
		{Index: 2, Name: "Killer !!!", Score: 5, Duration: 434.28445},
	}}},
	{"little-a2s/a2s-info-arma3", "littlea2s_a2s_info_arma3.hex", Info{
		Protocol: 17, Name: "Warriors Haven Invade & Annex | discord.gg/9uNHvhvJVB", Map: "Enoch", Folder: "Arma3",
		Game: "Warriors Haven Framework (Livonia)", AppID: 0, Players: 0, MaxPlayers: 40, Bots: 0,
		ServerType: ServerDedicated, Environment: EnvWindows, Version: "2.20.153368",
		HasExtra: true, Port: ptr[uint16](2306), SteamID: ptr[uint64](0x0140BA07A08C4805),
		Keywords: ptr("bt,r220,n152946,s7,i3,mf,lf,vt,dt,tcoop,g65545,hd1e806d5,f1,c-2147483648--2147483648,pw,e15,j0,k0,"),
		GameID:   ptr[uint64](107410),
	}},
}

func TestParse_RealVectors(t *testing.T) {
	for _, tc := range realVectors {
		t.Run(tc.name, func(t *testing.T) {
			b := xxd.ReadFile(t, "testdata/"+tc.file)
			got, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
			// Each of these is in canonical form: it re-encodes exactly.
			if enc := mustEncode(t, got); !bytes.Equal(enc, b) {
				t.Fatalf("re-encoded\n%s\nwant\n%s", xxd.Encode(enc), xxd.Encode(b))
			}
		})
	}
}

// goldenMessages are scout's encodings kept as hex goldens.
func goldenMessages() map[string]Message {
	return map[string]Message{
		"ours_info_request_challenge.hex": InfoRequest{HasChallenge: true, Challenge: 0x22D5A14B},
		"ours_player_request.hex":         PlayerRequest{Challenge: NoChallenge},
		"ours_info_ship.hex": Info{Protocol: 7, Name: "Ship", Map: "batavier", Folder: "ship", Game: "The Ship",
			AppID: AppIDTheShip, Players: 3, MaxPlayers: 16, ServerType: ServerDedicated, Environment: EnvWindows,
			Ship: &Ship{Mode: 1, Witnesses: 2, Duration: 3}, Version: "1.0.0.4"},
		"ours_info_full_edf.hex":    sampleInfo(),
		"ours_players.hex":          samplePlayers(),
		"ours_rules_request.hex":    RulesRequest{Challenge: 0x22D5A14B},
		"ours_rules.hex":            sampleRules(),
		"ours_rules_empty.hex":      Rules{},
		"ours_split_packet_0.hex":   SplitPacket{ID: 0x01020304, Total: 2, Number: 0, Size: DefaultSplitSize, Payload: []byte("\xff\xff\xff\xffD\x01")},
		"ours_split_compressed.hex": SplitPacket{ID: 0x81020304, Total: 2, Number: 0, Size: DefaultSplitSize, DecompressedSize: 100, CRC32: 0xDEADBEEF, Payload: []byte("BZh")},
	}
}

// sampleInfo is the info reply the interop test serves: every EDF field.
func sampleInfo() Info {
	return Info{
		Protocol: 17, Name: "Scout Source Test", Map: "de_dust2", Folder: "cstrike", Game: "Counter-Strike: Source",
		AppID: 240, Players: 2, MaxPlayers: 24, Bots: 0, ServerType: ServerDedicated, Environment: EnvLinux,
		Private: false, VAC: true, Version: "9540945", HasExtra: true,
		Port: ptr[uint16](27015), SteamID: ptr[uint64](90071996842377216),
		SourceTV: &SourceTV{Port: 27020, Name: "Scout TV"}, Keywords: ptr("alltalk,increased_maxplayers"),
		GameID: ptr[uint64](240),
	}
}

func samplePlayers() Players {
	return Players{Players: []Player{
		{Name: "Alice", Score: 12, Duration: 754.5},
		{Name: "Bob", Score: -1, Duration: 61.25},
	}}
}

// sampleRules is a rules reply with an empty value and a value with
// spaces, as Source servers send them.
func sampleRules() Rules {
	return Rules{Rules: []Rule{
		{Name: "mp_friendlyfire", Value: "0"}, {Name: "mp_timelimit", Value: "30"},
		{Name: "sv_password", Value: ""}, {Name: "sv_tags", Value: "alltalk, increased_maxplayers"},
	}}
}

func TestGoldens(t *testing.T) {
	for name, m := range goldenMessages() {
		t.Run(name, func(t *testing.T) {
			b := mustEncode(t, m)
			xxd.Golden(t, "testdata/"+name, b, os.Getenv("A2S_UPDATE") != "")
			got, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("parsed back %#v, want %#v", got, m)
			}
		})
	}
}

// TestTruncatedPrefixes cuts every vector and golden in testdata, and
// every golden message, at every length.
func TestTruncatedPrefixes(t *testing.T) {
	inputs := map[string][]byte{}
	for name, m := range goldenMessages() {
		inputs[name] = mustEncode(t, m)
	}
	for _, v := range xxd.ReadGlob(t, "testdata/*.hex") {
		inputs[v.Name] = v.Bytes
	}
	for name, b := range inputs {
		for n := 0; n < len(b); n++ {
			p := b[:n]
			m, err := Parse(p)
			if err == nil {
				// Only a prefix that is itself a whole, different packet may
				// parse: an info reply cut before its optional Extra Data
				// Flag, an info request cut before its optional challenge,
				// a split packet cut inside its payload.
				if enc := mustEncode(t, m); !bytes.Equal(enc, p) {
					t.Errorf("%s[:%d] parsed as %#v, which encodes to % x", name, n, m, enc)
				}
				continue
			}
			if n == 0 {
				if !errors.Is(err, ErrNotA2S) {
					t.Errorf("%s[:0]: %v", name, err)
				}
				continue
			}
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("%s[:%d]: %v, want ErrTruncated", name, n, err)
			}
		}
	}
}

func TestParsePlayers_KeepsWhatParsed(t *testing.T) {
	b := xxd.ReadFile(t, "testdata/wiki_a2s_player.hex")
	m, err := ParsePlayers(b[:len(b)-3])
	if !errors.Is(err, ErrTruncated) || len(m.Players) != 1 || m.Players[0].Name != "[D]---->T.N.W<----" {
		t.Fatalf("got %#v, %v", m, err)
	}
}

func TestParseRules_KeepsWhatParsed(t *testing.T) {
	b := mustEncode(t, sampleRules())
	m, err := ParseRules(b[:len(b)-3]) // inside the last value
	want := sampleRules().Rules[:3]
	if !errors.Is(err, ErrTruncated) || !reflect.DeepEqual(m.Rules, want) {
		t.Fatalf("got %#v, %v; want the first 3 rules and ErrTruncated", m, err)
	}
	// A count that promises more than the packet holds: the rules present
	// are kept, the error says how many of how many.
	b[5], b[6] = 0xff, 0xff
	m, err = ParseRules(b)
	if !errors.Is(err, ErrTruncated) || !reflect.DeepEqual(m, sampleRules()) ||
		!strings.Contains(err.Error(), "after 4 of 65535 rules") {
		t.Fatalf("got %#v, %v", m, err)
	}
}

// TestRules_SplitReply: a rules reply larger than the split size (a
// modded server's few hundred variables) crosses the reassembly whole.
func TestRules_SplitReply(t *testing.T) {
	var big Rules
	for i := range 300 {
		big.Rules = append(big.Rules, Rule{Name: "sm_var_" + strconv.Itoa(i), Value: strings.Repeat("v", i%17)})
	}
	whole := mustEncode(t, big)
	parts, err := Split(whole, 0x0BADCAFE, DefaultSplitSize)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 3 {
		t.Fatalf("%d-byte reply in %d packets; want at least 3", len(whole), len(parts))
	}
	var asm Reassembler
	var joined []byte
	for i := len(parts) - 1; i >= 0; i-- { // out of order
		p, err := Parse(mustEncode(t, parts[i]))
		if err != nil {
			t.Fatal(err)
		}
		if joined, err = asm.Add(p.(SplitPacket)); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Parse(joined)
	if err != nil || !reflect.DeepEqual(m, big) {
		t.Fatalf("reassembled %d rules, %v", len(m.(Rules).Rules), err)
	}
	// One packet alone is not a rules reply.
	if _, err := ParseRules(parts[0].Payload); !errors.Is(err, ErrTruncated) {
		t.Fatalf("first packet's payload alone: %v, want ErrTruncated", err)
	}
}

func TestHostile(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want error
	}{
		{"player count larger than payload", "\xff\xff\xff\xffD\xff\x00A\x00\x01\x00\x00\x00\x00\x00\x80\x3f", ErrTruncated},
		{"rule count larger than payload", "\xff\xff\xff\xffE\xff\xffsv_gravity\x00800\x00", ErrTruncated},
		{"rule count 1, no rule", "\xff\xff\xff\xffE\x01\x00", ErrTruncated},
		{"rule name without NUL", "\xff\xff\xff\xffE\x01\x00sv_gravity", ErrTruncated},
		{"rule value without NUL", "\xff\xff\xff\xffE\x01\x00sv_gravity\x00800", ErrTruncated},
		{"rules count cut in half", "\xff\xff\xff\xffE\x01", ErrTruncated},
		{"rules request cut", "\xff\xff\xff\xffV\xff\xff", ErrTruncated},
		{"info request wrong payload", "\xff\xff\xff\xffTSource Engine Quark\x00", ErrMalformed},
		{"info request trailing garbage", "\xff\xff\xff\xffTSource Engine Query\x00\x01\x02\x03\x04\x05", ErrMalformed},
		{"info string unterminated", "\xff\xff\xff\xffI\x11name", ErrTruncated},
		{"edf says port, none follows", "\xff\xff\xff\xffI\x11n\x00m\x00f\x00g\x00\xf0\x00\x01\x02\x00dl\x00\x01v\x00\x80", ErrTruncated},
		{"split number beyond total", "\xfe\xff\xff\xff\x01\x00\x00\x00\x02\x02\xe0\x04x", ErrSplit},
		{"split total zero", "\xfe\xff\xff\xff\x01\x00\x00\x00\x00\x00\xe0\x04x", ErrSplit},
		{"quake 3 getinfo", "\xff\xff\xff\xffgetinfo\n", ErrNotA2S},
		{"steam master reply", "\xff\xff\xff\xfff\n\x00\x00\x00\x00\x00\x00", ErrNotA2S},
		{"enemy territory motd", "\xff\xff\xff\xffmotd \"challenge\\1\"", ErrNotA2S},
		{"gamespy header", "\xfe\xfd\x09\x10\x20\x30\x40", ErrNotA2S},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.in)); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestEncode_Refuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Message
	}{
		{"NUL in name", Info{Name: "a\x00b"}},
		{"ship without app id 2400", Info{Ship: &Ship{}}},
		{"app id 2400 without ship", Info{AppID: AppIDTheShip}},
		{"challenge without HasChallenge", InfoRequest{Challenge: 1}},
		{"too many players", Players{Players: make([]Player, 256)}},
		{"too many rules", Rules{Rules: make([]Rule, MaxRules+1)}},
		{"NUL in rule name", Rules{Rules: []Rule{{Name: "a\x00b", Value: "1"}}}},
		{"NUL in rule value", Rules{Rules: []Rule{{Name: "a", Value: "1\x002"}}}},
		{"split number beyond total", SplitPacket{Total: 1, Number: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.m.AppendBinary(nil); !errors.Is(err, ErrBadField) {
				t.Fatalf("got %v, want ErrBadField", err)
			}
		})
	}
}

func TestReassembler(t *testing.T) {
	reply := mustEncode(t, samplePlayers())
	parts, err := Split(reply, 7, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	var r Reassembler
	if _, err := r.Missing(); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("Missing on empty: %v", err)
	}
	// Reverse order with a duplicate; the wire form round-trips too.
	for i := len(parts) - 1; i >= 0; i-- {
		p, err := ParseSplitPacket(mustEncode(t, parts[i]))
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Add(p)
		if err != nil {
			t.Fatal(err)
		}
		if i == len(parts)-1 {
			if _, err := r.Add(p); err != nil {
				t.Fatalf("duplicate: %v", err)
			}
			if miss, _ := r.Missing(); len(miss) != len(parts)-1 {
				t.Fatalf("missing %v", miss)
			}
		}
		if (got != nil) != (i == 0) {
			t.Fatalf("after packet %d: reply %x", i, got)
		}
		if i == 0 {
			m, err := Parse(got)
			if err != nil || !reflect.DeepEqual(m, samplePlayers()) {
				t.Fatalf("reassembled %#v, %v", m, err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		p    SplitPacket
		want error
	}{
		{"other id", SplitPacket{ID: 8, Total: uint8(len(parts))}, ErrSplit},
		{"other total", SplitPacket{ID: 7, Total: 9}, ErrSplit},
		{"conflicting duplicate", SplitPacket{ID: 7, Total: uint8(len(parts)), Payload: []byte("x")}, ErrSplit},
		{"compressed", SplitPacket{ID: 0x80000007, Total: 2}, ErrCompressed},
		{"too many packets", SplitPacket{ID: 7, Total: MaxSplitPackets + 1}, ErrSplit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.Add(tc.p); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, m := range goldenMessages() {
		b, err := m.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, Parse) })
}
