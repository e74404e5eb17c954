package q3

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/protocol/infostring"

	"github.com/scout-discovery/scout/internal/xxd"
)

// validPackets returns every captured vector and every golden.
func validPackets(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, tc := range vectorCases {
		out[tc.name] = xxd.ReadFile(t, "testdata/"+tc.file)
	}
	for _, tc := range goldenCases {
		b, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatal(err)
		}
		out["golden/"+tc.name] = b
	}
	return out
}

// TestParse_TruncatedPrefixes cuts every valid packet at every length.
// These are text packets, so a prefix may itself be a valid packet
// ("getservers 7" is a prefix of "getservers 71"). The rule: Parse either
// fails with an error wrapping ErrTruncated (and no other sentinel), or it
// succeeds with a message that encodes back to exactly that prefix.
func TestParse_TruncatedPrefixes(t *testing.T) {
	for name, b := range validPackets(t) {
		for i := 0; i < len(b); i++ {
			p := b[:i:i] // no capacity past the cut
			m, err := Parse(p)
			if err != nil {
				if s := sentinels(err); len(s) != 1 || s[0] != ErrTruncated {
					t.Errorf("%s[:%d] %q: error %v, want only ErrTruncated", name, i, p, err)
				}
				continue
			}
			out, err := m.AppendBinary(nil)
			if err != nil {
				t.Errorf("%s[:%d] %q parsed as %#v, which does not encode: %v", name, i, p, m, err)
				continue
			}
			if !bytes.Equal(out, p) {
				t.Errorf("%s[:%d] %q parsed as %#v, which encodes to %q", name, i, p, m, out)
			}
		}
	}
}

// TestParse_Hostile feeds named hostile inputs and checks the error each
// must produce and, where the decoder keeps what it read, the partial
// message.
func TestParse_Hostile(t *testing.T) {
	ap := netip.MustParseAddrPort
	entry := func(s string) string {
		a := ap(s)
		a4 := a.Addr().As4()
		return "\\" + string(a4[:]) + string([]byte{byte(a.Port() >> 8), byte(a.Port())})
	}
	for _, tc := range []struct {
		name    string
		in      string
		err     error
		partial Message // nil: no message returned
	}{
		{"not-q3/empty-ffff-missing", "getinfo", ErrNotQ3, nil},
		{"not-q3/q4-prefix", "\xff\xffgetInfo\x00", ErrNotQ3, nil},
		{"unknown-command", Prefix + "rcon secret status", ErrUnknownCommand, nil},
		{"no-command-word", Prefix + "\\\x01", ErrMalformed, nil},
		{"info/overlong-value", Prefix + "infoResponse\n\\k\\" + strings.Repeat("v", MaxInfoLen), ErrMalformed, InfoResponse{Terminator: TermNone}},
		{"info/overlong-key", Prefix + "statusResponse\n\\" + strings.Repeat("k", MaxInfoLen+1) + "\\v\n", ErrMalformed, StatusResponse{}},
		{"info/empty-key", Prefix + "infoResponse\n\\a\\1\\\\2", ErrMalformed,
			InfoResponse{Info: infostring.Info{{Key: "a", Value: "1"}}, Terminator: TermNone}},
		{"info/nul-inside", Prefix + "infoResponse\n\\a\\1\x00\\b\\2", ErrMalformed, InfoResponse{Terminator: TermNone}},
		{"info/key-without-value-in-status", Prefix + "statusResponse\n\\a\\1\\b\n", ErrMalformed,
			StatusResponse{Info: infostring.Info{{Key: "a", Value: "1"}}}},
		{"servers/last-entry-cut", Prefix + "getserversResponse" + entry("1.2.3.4:27960") + "\\\x05\x06\x07", ErrTruncated,
			ServersResponse{Servers: []netip.AddrPort{ap("1.2.3.4:27960")}}},
		{"servers/ipv6-entry-in-plain-response", Prefix + "getserversResponse" + entry("1.2.3.4:27960") + "/" + strings.Repeat("\x20", 16) + "\x6d\x38", ErrMalformed,
			ServersResponse{Servers: []netip.AddrPort{ap("1.2.3.4:27960")}}},
		{"servers/ipv6-entry-cut", Prefix + "getserversExtResponse/" + strings.Repeat("\x20", 10), ErrTruncated,
			ServersResponse{Ext: true}},
		{"servers/wrong-separator", Prefix + "getserversResponse" + entry("1.2.3.4:27960") + "|\x01\x02\x03\x04\x6d\x38", ErrMalformed,
			ServersResponse{Servers: []netip.AddrPort{ap("1.2.3.4:27960")}}},
		{"servers/bytes-after-eot", Prefix + "getserversResponse" + entry("1.2.3.4:27960") + "\\EOT\x00\x00\x00" + entry("5.6.7.8:1"), ErrMalformed,
			ServersResponse{Servers: []netip.AddrPort{ap("1.2.3.4:27960")}, End: EndEOT}},
		{"servers/eot-cut", Prefix + "getserversResponse\\EOT\x00", ErrTruncated, ServersResponse{}},
		{"servers/nul-mid-packet", Prefix + "getserversResponse\x00" + entry("1.2.3.4:1"), ErrMalformed, ServersResponse{}},
		{"status/last-line-without-newline", Prefix + "statusResponse\n\\a\\1\n1 2 \"a\"\n3 4 \"b\"", ErrTruncated,
			StatusResponse{Info: infostring.Info{{Key: "a", Value: "1"}}, Players: []Player{{Score: 1, Ping: 2, Name: "a"}}}},
		{"getservers/non-numeric-protocol", Prefix + "getservers Quake3Arena abc empty", ErrMalformed, nil},
		{"getservers/non-numeric-protocol-lf", Prefix + "getserversExt Quake3Arena 6x\n", ErrMalformed, nil},
		{"getservers/protocol-out-of-range", Prefix + "getservers 99999999999", ErrMalformed, nil},
		{"getservers/missing-protocol", Prefix + "getservers Quake3Arena\n", ErrMalformed, nil},
		{"getservers/empty-gametype", Prefix + "getservers 68 gametype= full", ErrMalformed, nil},
		{"getservers/garbage-after-newline", Prefix + "getservers 68\nempty", ErrMalformed, nil},
		{"challengeResponse/non-numeric-protocol", Prefix + "challengeResponse 1 2 abc", ErrMalformed, nil},
		{"challengeResponse/four-words", Prefix + "challengeResponse 1 2 3 4", ErrMalformed, nil},
		{"challengeResponse/none", Prefix + "challengeResponse\n", ErrMalformed, nil},
		{"heartbeat/two-tags", Prefix + "heartbeat QuakeArena-1 extra\n", ErrMalformed, nil},
		{"heartbeat/no-tag", Prefix + "heartbeat\n", ErrMalformed, nil},
		{"getinfo/two-challenges", Prefix + "getinfo a b", ErrMalformed, nil},
		{"print/no-newline", Prefix + "print hello", ErrMalformed, nil},
		{"print/nul", Prefix + "print\nhel\x00lo", ErrMalformed, nil},
		{"motd/unquoted", Prefix + "motd \\motd\\hi", ErrMalformed, nil},
		{"motd/after-quote", Prefix + "motd \"\\motd\\hi\" x", ErrMalformed, nil},
		{"motd/unclosed", Prefix + "motd \"\\motd\\hi", ErrTruncated, MOTD{Info: infostring.Info{{Key: "motd", Value: "hi"}}, Terminator: TermNone}},
		{"register/unspecified", Prefix + "register\x00\x00\x00\x00\x6d\x38", ErrMalformed, nil},
		{"register/too-long", Prefix + "register\x01\x02\x03\x04\x6d\x38\x00", ErrMalformed, nil},
		{"dp-challenge/empty-before-nul", Prefix + "challenge \x00xx", ErrMalformed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.in))
			if s := sentinels(err); len(s) != 1 || s[0] != tc.err {
				t.Fatalf("Parse error %v, want only %v", err, tc.err)
			}
			if !reflect.DeepEqual(m, tc.partial) {
				t.Fatalf("Parse message\n%#v\nwant\n%#v", m, tc.partial)
			}
			if m != nil {
				// What was kept is itself a clean message.
				checkRoundTrip(t, m)
			}
		})
	}
	// The unknown-command error names the word.
	_, err := Parse([]byte(Prefix + "rcon secret status"))
	if !strings.Contains(err.Error(), `"rcon"`) {
		t.Errorf("unknown-command error %q does not name the word", err)
	}
}

// TestParse_LenientChallenge: the decoder takes challenges that ioquake3
// would refuse, and the encoder refuses to send them.
func TestParse_LenientChallenge(t *testing.T) {
	long := strings.Repeat("9", MaxChallengeLen+1)
	for _, c := range []string{`a\b`, long, "a;b", `"q"`} {
		m, err := Parse([]byte(Prefix + "getinfo " + c))
		if err != nil {
			t.Fatalf("Parse(getinfo %q): %v", c, err)
		}
		if got := m.(GetInfo).Challenge; got != c {
			t.Fatalf("challenge %q, want %q", got, c)
		}
		if _, err := m.AppendBinary(nil); !errors.Is(err, ErrInvalid) {
			t.Fatalf("AppendBinary(getinfo %q) = %v, want ErrInvalid", c, err)
		}
	}
}

// TestParse_GetServersDpmasterForms: the request forms dpmaster reads and
// this package must read the same way. A first word with a sign is the
// protocol (strtol); a trailing space without a terminator gives the whole
// request along with ErrTruncated (it may have been cut before a word).
func TestParse_GetServersDpmasterForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want GetServers
		err  error
	}{
		{"getservers -1", GetServers{Protocol: -1, Terminator: TermNone}, nil},
		{"getservers +68 empty", GetServers{Protocol: 68, Empty: true, Terminator: TermNone}, nil},
		{"getserversExt Quake3Arena -5 full\n", GetServers{Ext: true, GameName: "Quake3Arena", Protocol: -5, Full: true, Terminator: TermLF}, nil},
		{"getservers -2147483648", GetServers{Protocol: -1 << 31, Terminator: TermNone}, nil},
		{"getservers 20 ", GetServers{Protocol: 20, Terminator: TermNone}, ErrTruncated},
		{"getservers 84 empty  ", GetServers{Protocol: 84, Empty: true, Terminator: TermNone}, ErrTruncated},
		{"getservers 20 \n", GetServers{Protocol: 20, Terminator: TermLF}, nil},
		{"getservers -x 68", GetServers{GameName: "-x", Protocol: 68, Terminator: TermNone}, nil},
	} {
		m, err := Parse([]byte(Prefix + tc.in))
		if s := sentinels(err); (tc.err == nil && err != nil) || (tc.err != nil && (len(s) != 1 || s[0] != tc.err)) {
			t.Errorf("Parse(%q) error %v, want %v", tc.in, err, tc.err)
		}
		if !reflect.DeepEqual(m, tc.want) {
			t.Errorf("Parse(%q) = %#v, want %#v", tc.in, m, tc.want)
		}
	}
	// "-" alone is no number: a game name, as strtol leaves it.
	for _, in := range []string{"getservers -2147483649", "getservers --1"} {
		if m, err := Parse([]byte(Prefix + in)); err == nil {
			t.Errorf("Parse(%q) = %#v, want an error", in, m)
		}
	}
}

// TestParse_ServersResponseDropsOnlyTheBadEntry: an entry with port 0 or
// the unspecified address is well framed; it is dropped (kept in
// Dropped), and the entries after it are read as if it were not there.
func TestParse_ServersResponseDropsOnlyTheBadEntry(t *testing.T) {
	ap := netip.MustParseAddrPort
	entry := func(s string) string {
		a := ap(s)
		a4 := a.Addr().As4()
		return "\\" + string(a4[:]) + string([]byte{byte(a.Port() >> 8), byte(a.Port())})
	}
	in := Prefix + "getserversResponse" + entry("1.2.3.4:27960") + "\\\x05\x06\x07\x08\x00\x00" +
		"\\\x00\x00\x00\x00\x6d\x38" + entry("5.6.7.8:1") + "\\EOT\x00\x00\x00"
	m, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := ServersResponse{Servers: []netip.AddrPort{ap("1.2.3.4:27960"), ap("5.6.7.8:1")},
		Dropped: []netip.AddrPort{ap("5.6.7.8:0"), ap("0.0.0.0:27960")}, End: EndEOT}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("Parse = %+v\nwant %+v", m, want)
	}
}
