package q3

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/protocol/infostring"
)

// goldenCase is a message, the exact bytes it must encode to, and what
// those bytes decode to (the message with its TermDefault resolved).
type goldenCase struct {
	name string
	msg  Message
	hex  string
	back Message
}

var goldenCases = []goldenCase{
	{"heartbeat-default-lf", Heartbeat{Tag: TagQuakeArena},
		"ffffffff" + "6865617274626561742051756" + "16b6541" + "72656e612d310a",
		Heartbeat{Tag: TagQuakeArena, Terminator: TermLF}},
	{"heartbeat-etflatline", Heartbeat{Tag: TagETFlatline, Terminator: TermLF},
		"ffffffff" + hex.EncodeToString([]byte("heartbeat ETFlatline-1\n")),
		Heartbeat{Tag: TagETFlatline, Terminator: TermLF}},
	{"getservers-q3", GetServers{Protocol: 68, Empty: true, Full: true},
		"ffffffff" + hex.EncodeToString([]byte("getservers 68 empty full")),
		GetServers{Protocol: 68, Empty: true, Full: true, Terminator: TermNone}},
	{"getservers-dp-gametype", GetServers{GameName: "Nexuiz", Protocol: 3, GameType: "4", Full: true, Terminator: TermLF},
		"ffffffff" + hex.EncodeToString([]byte("getservers Nexuiz 3 ctf full\n")),
		GetServers{GameName: "Nexuiz", Protocol: 3, GameType: "4", Full: true, Terminator: TermLF}},
	{"getserversExt-all-options", GetServers{Ext: true, GameName: "Xonotic", Protocol: 3, GameType: "dm", Empty: true, Full: true, IPv4: true, IPv6: true, Other: []string{"x=1"}},
		"ffffffff" + hex.EncodeToString([]byte("getserversExt Xonotic 3 gametype=dm empty full ipv4 ipv6 x=1")),
		GetServers{Ext: true, GameName: "Xonotic", Protocol: 3, GameType: "dm", Empty: true, Full: true, IPv4: true, IPv6: true, Other: []string{"x=1"}, Terminator: TermNone}},
	{"getserversResponse-eot", ServersResponse{Servers: []netip.AddrPort{
		netip.MustParseAddrPort("1.2.3.4:27960"), netip.MustParseAddrPort("192.0.2.1:27961")}, End: EndEOT},
		"ffffffff" + hex.EncodeToString([]byte("getserversResponse")) +
			"5c" + "01020304" + "6d38" + "5c" + "c0000201" + "6d39" + "5c454f54000000",
		nil},
	{"getserversResponse-nul-protocol45", ServersResponse{Servers: []netip.AddrPort{netip.MustParseAddrPort("1.2.3.4:27960")}, End: EndNUL},
		"ffffffff" + hex.EncodeToString([]byte("getserversResponse")) + "5c010203046d38" + "5c00",
		nil},
	{"getserversResponse-eot-bare-id", ServersResponse{Servers: []netip.AddrPort{netip.MustParseAddrPort("1.2.3.4:27960")}, End: EndEOTBare},
		"ffffffff" + hex.EncodeToString([]byte("getserversResponse")) + "5c010203046d38" + "5c454f54",
		nil},
	{"getserversResponse-empty-none", ServersResponse{},
		"ffffffff" + hex.EncodeToString([]byte("getserversResponse")),
		nil},
	{"getserversExtResponse-mixed", ServersResponse{Ext: true, Servers: []netip.AddrPort{
		netip.MustParseAddrPort("[2001:db8::1]:27960"), netip.MustParseAddrPort("1.2.3.4:27961")}, End: EndEOT},
		"ffffffff" + hex.EncodeToString([]byte("getserversExtResponse")) +
			"2f" + "20010db8000000000000000000000001" + "6d38" + "5c010203046d39" + "5c454f54000000",
		nil},
	{"getinfo-challenge", GetInfo{Challenge: "xxx"},
		"ffffffff" + hex.EncodeToString([]byte("getinfo xxx")),
		GetInfo{Challenge: "xxx", Terminator: TermNone}},
	{"getinfo-bare-lf", GetInfo{Terminator: TermLF},
		"ffffffff" + hex.EncodeToString([]byte("getinfo\n")), nil},
	{"getstatus-nul", GetStatus{Terminator: TermNUL},
		"ffffffff" + hex.EncodeToString([]byte("getstatus\x00")), nil},
	{"infoResponse", InfoResponse{Info: infostring.Info{{Key: "protocol", Value: "68"}, {Key: "challenge", Value: "xxx"}}},
		"ffffffff" + hex.EncodeToString([]byte(`infoResponse`+"\n"+`\protocol\68\challenge\xxx`)),
		InfoResponse{Info: infostring.Info{{Key: "protocol", Value: "68"}, {Key: "challenge", Value: "xxx"}}, Terminator: TermNone}},
	{"statusResponse", StatusResponse{Info: infostring.Info{{Key: "sv_hostname", Value: "x y"}}, Players: []Player{
		{Score: -1, Ping: 999, Name: "^1A B"}, {Score: 5, Ping: 0, Extra: []int{3}, Name: ""}}},
		"ffffffff" + hex.EncodeToString([]byte("statusResponse\n\\sv_hostname\\x y\n-1 999 \"^1A B\"\n5 0 3 \"\"\n")),
		nil},
	{"statusResponse-no-players", StatusResponse{Info: infostring.Info{{Key: "a", Value: ""}}},
		"ffffffff" + hex.EncodeToString([]byte("statusResponse\n\\a\\\n")), nil},
	{"getchallenge-ioq3", GetChallenge{Challenge: "-5", GameName: "Quake3Arena"},
		"ffffffff" + hex.EncodeToString([]byte("getchallenge -5 Quake3Arena")),
		GetChallenge{Challenge: "-5", GameName: "Quake3Arena", Terminator: TermNone}},
	{"challengeResponse-ioq3", ChallengeResponse{Challenge: "1", ClientChallenge: "2", Protocol: 71},
		"ffffffff" + hex.EncodeToString([]byte("challengeResponse 1 2 71")),
		ChallengeResponse{Challenge: "1", ClientChallenge: "2", Protocol: 71, Terminator: TermNone}},
	{"challengeResponse-q3", ChallengeResponse{Challenge: "1"},
		"ffffffff" + hex.EncodeToString([]byte("challengeResponse 1")),
		ChallengeResponse{Challenge: "1", Terminator: TermNone}},
	{"dp-challenge", DPChallenge{Challenge: "abc"},
		"ffffffff" + hex.EncodeToString([]byte("challenge abc")),
		DPChallenge{Challenge: "abc", Terminator: TermNone}},
	{"dp-challenge-trailer", DPChallenge{Challenge: "abc", Trailer: "d0pk\\x"},
		"ffffffff" + hex.EncodeToString([]byte("challenge abc\x00d0pk\\x")),
		DPChallenge{Challenge: "abc", Trailer: "d0pk\\x", Terminator: TermNUL}},
	{"print", Print{Text: "hello\n"},
		"ffffffff" + hex.EncodeToString([]byte("print\nhello\n")), nil},
	{"getmotd", GetMOTD{Info: infostring.Info{{Key: "challenge", Value: "1"}, {Key: "version", Value: "ET 2.60"}}},
		"ffffffff" + hex.EncodeToString([]byte("getmotd \"\\challenge\\1\\version\\ET 2.60\"\n")),
		GetMOTD{Info: infostring.Info{{Key: "challenge", Value: "1"}, {Key: "version", Value: "ET 2.60"}}, Terminator: TermLF}},
	{"motd", MOTD{Info: infostring.Info{{Key: "challenge", Value: "1"}, {Key: "motd", Value: "hi"}}},
		"ffffffff" + hex.EncodeToString([]byte("motd \"\\challenge\\1\\motd\\hi\"")),
		MOTD{Info: infostring.Info{{Key: "challenge", Value: "1"}, {Key: "motd", Value: "hi"}}, Terminator: TermNone}},
	{"register", Register{Server: netip.MustParseAddrPort("192.0.2.7:27960")},
		"ffffffff" + hex.EncodeToString([]byte("register")) + "c00002076d38", nil},
}

// TestAppendBinary_Goldens checks every encoder against exact bytes and
// parses them back.
func TestAppendBinary_Goldens(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := hex.DecodeString(tc.hex)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.msg.AppendBinary([]byte("keep"))
			if err != nil {
				t.Fatalf("AppendBinary: %v", err)
			}
			if !bytes.HasPrefix(got, []byte("keep")) {
				t.Fatalf("AppendBinary lost the bytes it appends to")
			}
			if got = got[4:]; !bytes.Equal(got, want) {
				t.Fatalf("AppendBinary =\n%s\nwant\n%s", hex.Dump(got), hex.Dump(want))
			}
			back, err := Parse(want)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			wantBack := tc.back
			if wantBack == nil {
				wantBack = tc.msg
			}
			if !reflect.DeepEqual(back, wantBack) {
				t.Fatalf("Parse =\n%#v\nwant\n%#v", back, wantBack)
			}
		})
	}
}

// TestAppendBinary_Refusals: strict when encoding. Each refusal wraps
// ErrInvalid and leaves b as it was.
func TestAppendBinary_Refusals(t *testing.T) {
	long := strings.Repeat("a", MaxChallengeLen+1)
	for _, tc := range []struct {
		name string
		msg  Message
	}{
		{"heartbeat-empty-tag", Heartbeat{}},
		{"heartbeat-tag-with-space", Heartbeat{Tag: "Quake Arena"}},
		{"heartbeat-bad-terminator", Heartbeat{Tag: "x", Terminator: 9}},
		{"getservers-numeric-gamename", GetServers{GameName: "68", Protocol: 68}},
		{"getservers-signed-gamename", GetServers{GameName: "-1", Protocol: 68}},
		{"getservers-protocol-beyond-int32", GetServers{Protocol: 1 << 31}},
		{"getservers-option-in-other", GetServers{Protocol: 68, Other: []string{"empty"}}},
		{"getservers-gametype-in-other", GetServers{Protocol: 68, Other: []string{"gametype=1"}}},
		{"getservers-gametype-space", GetServers{Protocol: 68, GameType: "a b"}},
		{"servers-port-0", ServersResponse{Servers: []netip.AddrPort{netip.MustParseAddrPort("1.2.3.4:0")}}},
		{"servers-unspecified", ServersResponse{Servers: []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:27960")}}},
		{"servers-invalid-addr", ServersResponse{Servers: []netip.AddrPort{{}}}},
		{"servers-ipv6-not-ext", ServersResponse{Servers: []netip.AddrPort{netip.MustParseAddrPort("[2001:db8::1]:1")}}},
		{"servers-zone", ServersResponse{Ext: true, Servers: []netip.AddrPort{netip.MustParseAddrPort("[fe80::1%eth0]:1")}}},
		{"servers-bad-end", ServersResponse{End: 9}},
		{"getinfo-overlong-challenge", GetInfo{Challenge: long}},
		{"getinfo-backslash-challenge", GetInfo{Challenge: `a\b`}},
		{"getstatus-quote-challenge", GetStatus{Challenge: `a"b`}},
		{"getstatus-percent-challenge", GetStatus{Challenge: "a%b"}},
		{"getstatus-slash-challenge", GetStatus{Challenge: "a//b"}},
		{"getstatus-space-challenge", GetStatus{Challenge: "a b"}},
		{"infoResponse-backslash-value", InfoResponse{Info: infostring.Info{{Key: "k", Value: `a\b`}}}},
		{"infoResponse-overlong", InfoResponse{Info: infostring.Info{{Key: "k", Value: strings.Repeat("v", MaxInfoLen)}}}},
		{"statusResponse-bad-line-that-reads", StatusResponse{BadLines: []string{`1 2 "a"`}}},
		{"statusResponse-bad-line-with-newline", StatusResponse{BadLines: []string{"x\ny"}}},
		{"statusResponse-newline-in-name", StatusResponse{Players: []Player{{Name: "a\nb"}}}},
		{"getchallenge-gamename-without-challenge", GetChallenge{GameName: "Quake3Arena"}},
		{"challengeResponse-empty", ChallengeResponse{}},
		{"challengeResponse-protocol-without-client", ChallengeResponse{Challenge: "1", Protocol: 71}},
		{"challengeResponse-negative-protocol", ChallengeResponse{Challenge: "1", ClientChallenge: "2", Protocol: -71}},
		{"dp-challenge-trailer-without-nul", DPChallenge{Challenge: "a", Trailer: "x", Terminator: TermLF}},
		{"print-nul", Print{Text: "a\x00b"}},
		{"motd-quote", MOTD{Info: infostring.Info{{Key: "motd", Value: `say "hi"`}}}},
		{"register-ipv6", Register{Server: netip.MustParseAddrPort("[2001:db8::1]:1")}},
		{"register-port-0", Register{Server: netip.MustParseAddrPort("1.2.3.4:0")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte("keep")
			out, err := tc.msg.AppendBinary(b)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("AppendBinary error %v, want ErrInvalid", err)
			}
			if string(out) != "keep" {
				t.Fatalf("AppendBinary returned %q on error, want b unchanged", out)
			}
		})
	}
}

func TestValidateChallenge(t *testing.T) {
	ok := []string{"x", "xxx", "16054539", "A_ch4Lleng3", strings.Repeat("z", MaxChallengeLen)}
	for _, c := range ok {
		if err := ValidateChallenge(c); err != nil {
			t.Errorf("ValidateChallenge(%q) = %v", c, err)
		}
	}
	bad := []string{"", strings.Repeat("z", MaxChallengeLen+1), `a\b`, "a/b", "a;b", `a"b`, "a%b", "a b", "a\x7f", "a\xe9"}
	for _, c := range bad {
		if err := ValidateChallenge(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidateChallenge(%q) = %v, want ErrInvalid", c, err)
		}
	}
}

func TestHeartbeat_Flatline(t *testing.T) {
	for tag, want := range map[string]bool{
		TagQuakeArena: false, TagWolfenstein: false, TagEnemyTerritory: false, TagDarkPlaces: false,
		TagWolfFlatline: true, TagETFlatline: true, "flatline": true, "Flatline-2": true, "QuakeArena-Flatline": false,
	} {
		if got := (Heartbeat{Tag: tag}).Flatline(); got != want {
			t.Errorf("Heartbeat{%q}.Flatline() = %v, want %v", tag, got, want)
		}
	}
}

// TestJSON checks the snake_case field names scout decode prints and that
// the enums print as words.
func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		msg  any
		want string
	}{
		{ServersResponse{Servers: []netip.AddrPort{netip.MustParseAddrPort("1.2.3.4:5")}, End: EndEOT},
			`{"ext":false,"servers":["1.2.3.4:5"],"end":"eot"}`},
		{GetServers{GameName: "et", Protocol: 84, Empty: true, GameType: "4", Terminator: TermLF},
			`{"ext":false,"game_name":"et","protocol":84,"empty":true,"game_type":"4","terminator":"lf"}`},
		{StatusResponse{Info: infostring.Info{{Key: "b", Value: "1"}, {Key: "a", Value: "2"}}, Players: []Player{{Score: 1, Ping: 2, Extra: []int{3}, Name: "n"}}},
			`{"info":{"b":"1","a":"2"},"players":[{"score":1,"ping":2,"extra":[3],"name":"n"}]}`},
		{ChallengeResponse{Challenge: "1", ClientChallenge: "2", Protocol: 71},
			`{"challenge":"1","client_challenge":"2","protocol":71}`},
		{Register{Server: netip.MustParseAddrPort("1.2.3.4:5")}, `{"server":"1.2.3.4:5"}`},
	} {
		b, err := json.Marshal(tc.msg)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("json %T =\n%s\nwant\n%s", tc.msg, b, tc.want)
		}
	}
	var e End
	if err := e.UnmarshalText([]byte("eot_bare")); err != nil || e != EndEOTBare {
		t.Errorf("End.UnmarshalText(eot_bare) = %v, %v", e, err)
	}
	var term Terminator
	if err := term.UnmarshalText([]byte("nul")); err != nil || term != TermNUL {
		t.Errorf("Terminator.UnmarshalText(nul) = %v, %v", term, err)
	}
	if err := term.UnmarshalText([]byte("crlf")); err == nil {
		t.Error("Terminator.UnmarshalText(crlf) succeeded")
	}
}
