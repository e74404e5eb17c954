package q4

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func infoHead(proto string) string {
	return "\xff\xffinfoResponse\x00" + "\x00\x00\x00\x00" + proto + "si_name\x00x\x00\x00\x00"
}

const (
	d3proto = "\x29\x00\x01\x00"
	q4proto = "\x55\x00\x02\x00"
)

func TestHostile(t *testing.T) {
	many := infoHead(d3proto)
	for i := 0; i < MaxClients+1; i++ {
		many += "\x01\x00\x00\x00\x00\x00\x00p\x00" // slot 1 every time
	}
	many += "\x20\x00\x00\x00\x00"
	for _, tt := range []struct {
		name string
		pkt  string
		want error
	}{
		{"empty", "", ErrTruncated},
		{"one-ff", "\xff", ErrTruncated},
		{"prefix-only", "\xff\xff", ErrTruncated},
		{"quake3-prefix", "\xff\xff\xff\xffgetinfo xxx\n", ErrNotQ4},
		{"quake3-getservers", "\xff\xff\xff\xffgetservers 68 empty full", ErrNotQ4},
		{"no-prefix", "getInfo\x00\x00\x00\x00\x00", ErrNotQ4},
		{"single-ff-then-text", "\xffgetInfo\x00", ErrNotQ4},
		{"unknown-command", "\xff\xffconnect\x00", ErrUnknownCommand},
		{"command-without-nul", "\xff\xffgetInfo", ErrTruncated},
		{"overlong-command", "\xff\xff" + strings.Repeat("a", MaxStringLen+1) + "\x00", ErrMalformed},
		{"packet-over-max-size", "\xff\xffheartbeat\x00" + strings.Repeat("x", MaxPacketSize), ErrMalformed},
		{"getInfo-short-challenge", "\xff\xffgetInfo\x00\x01\x02", ErrTruncated},
		{"info-missing-dict-end", "\xff\xffinfoResponse\x00\x00\x00\x00\x00" + d3proto + "si_name\x00x\x00", ErrTruncated},
		{"info-key-without-value", "\xff\xffinfoResponse\x00\x00\x00\x00\x00" + d3proto + "si_name\x00", ErrTruncated},
		{"info-overlong-key", "\xff\xffinfoResponse\x00\x00\x00\x00\x00" + d3proto + strings.Repeat("k", MaxStringLen+1) + "\x00v\x00\x00\x00\x20\x00\x00\x00\x00", ErrMalformed},
		{"info-overlong-value", "\xff\xffinfoResponse\x00\x00\x00\x00\x00" + d3proto + "k\x00" + strings.Repeat("v", MaxStringLen+1) + "\x00\x00\x00\x20\x00\x00\x00\x00", ErrMalformed},
		{"info-deletion-list", "\xff\xffinfoResponse\x00\x00\x00\x00\x00" + d3proto + "\x00si_name\x00\x00\x20\x00\x00\x00\x00", ErrMalformed},
		{"info-missing-player-terminator", infoHead(d3proto), ErrTruncated},
		{"info-player-record-past-end", infoHead(d3proto) + "\x00\x10\x00\x01", ErrTruncated},
		{"info-player-name-unterminated", infoHead(d3proto) + "\x00\x10\x00\x01\x00\x00\x00Bob", ErrTruncated},
		{"info-q4-player-clan-missing", infoHead(q4proto) + "\x00\x10\x00\x01\x00\x00\x00Bob\x00", ErrTruncated},
		{"info-more-players-than-slots", many, ErrMalformed},
		{"info-osmask-short", infoHead(d3proto) + "\x20\x01\x00", ErrTruncated},
		{"servers-seventh-byte", "\xff\xffservers\x00\x01\x02\x03\x04\x05\x06\x07", ErrTruncated},
		{"getServers-game-unterminated", "\xff\xffgetServers\x00\x55\x00\x02\x80q4mp", ErrTruncated},
		{"getServers-no-filter", "\xff\xffgetServers\x00\x55\x00\x02\x80\x00", ErrTruncated},
		{"gameAuth-flag-2", "\xff\xffgameAuth\x00\x29\x00\x01\x00\x02K\x00\x00\x00", ErrMalformed},
		{"authKey-kind-7", "\xff\xffauthKey\x00\x07", ErrMalformed},
		{"authKey-reason-9", "\xff\xffauthKey\x00\x00\x09", ErrMalformed},
		{"authKey-key-index-2", "\xff\xffauthKey\x00\x00\x01\x02", ErrMalformed},
		{"authKey-guid-unterminated", "\xff\xffauthKey\x00\x01ABC", ErrTruncated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.pkt))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Parse: %v (%#v), want %v", err, m, tt.want)
			}
		})
	}
}

func TestHostile_ServersSeventhByteKeepsEntry(t *testing.T) {
	m, err := ParseServers([]byte("\xff\xffservers\x00\x01\x02\x03\x04\x05\x06\x07"))
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("err %v", err)
	}
	if len(m.Servers) != 1 || m.Servers[0] != netip.MustParseAddrPort("1.2.3.4:1541") {
		t.Fatalf("kept %v, want [1.2.3.4:1541]", m.Servers)
	}
	// Parse returns the partial list too.
	pm, err := Parse([]byte("\xff\xffservers\x00\x01\x02\x03\x04\x05\x06\x07"))
	if s, ok := pm.(*Servers); !ok || len(s.Servers) != 1 || !errors.Is(err, ErrTruncated) {
		t.Fatalf("Parse: %#v, %v", pm, err)
	}
}

// The engine stops the player list at any slot of 32 or more; so do we,
// and the value is kept so the packet re-encodes exactly.
func TestLenient_TerminatorOver32(t *testing.T) {
	pkt := infoHead(d3proto) + "\xff\x01\x00\x00\x00"
	m, err := ParseInfoResponse([]byte(pkt))
	if err != nil {
		t.Fatal(err)
	}
	if m.Terminator != 0xff || m.OSMask != 1 {
		t.Fatalf("terminator %d osmask %d", m.Terminator, m.OSMask)
	}
	if re := encode(t, &m); string(re) != pkt {
		t.Fatalf("re-encoded %q", re)
	}
}

// The engines compare command words without regard to case.
func TestLenient_CommandCase(t *testing.T) {
	m, err := Parse([]byte("\xff\xffGETINFO\x00\x01\x00\x00\x00"))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := m.(*GetInfo); !ok || g.Challenge != 1 {
		t.Fatalf("%#v", m)
	}
}

func TestEncoderRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		msg  Message
	}{
		{"nul-in-name", &InfoResponse{Protocol: Quake4, Players: []Player{{Name: "a\x00b"}}}},
		{"nul-in-value", &InfoResponse{Protocol: Quake4, Info: infostringPairs{{"k", "a\x00"}}.info()}},
		{"empty-key", &InfoResponse{Protocol: Quake4, Info: infostringPairs{{"", "v"}}.info()}},
		{"overlong-value", &InfoResponse{Protocol: Quake4, Info: infostringPairs{{"k", strings.Repeat("v", MaxStringLen+1)}}.info()}},
		{"slot-32", &InfoResponse{Protocol: Quake4, Players: []Player{{ID: 32}}}},
		{"terminator-is-slot", &InfoResponse{Protocol: Quake4, Terminator: 5}},
		{"clan-under-doom3", &InfoResponse{Protocol: Doom3, Players: []Player{{Clan: "x"}}}},
		{"33-players", &InfoResponse{Protocol: Quake4, Players: make([]Player, 33)}},
		{"too-big", &InfoResponse{Protocol: Quake4, Trailer: make([]byte, MaxPacketSize)}},
		{"servers-ipv6", &Servers{Servers: []netip.AddrPort{netip.MustParseAddrPort("[::1]:1")}}},
		{"servers-zero-addr", &Servers{Servers: []netip.AddrPort{{}}}},
		{"filter-overflow", &GetServers{Filter: Filter{GameType: 4}}},
		{"protocol-bit31-in-major", &GetServers{Protocol: Version{0x8002, 85}, Dialect: DialectQuake4}},
		{"doom3-getServers-with-clan", &GetServers{Clan: "x"}},
		{"doom3-getServers-with-trailer", &GetServers{Trailer: []byte{1}}},
		{"getServers-bad-dialect", &GetServers{Dialect: 9}},
		{"gameAuth-key-without-flag", &GameAuth{CDKey: "K"}},
		{"authKey-kind-2", &AuthKey{Kind: 2}},
		{"authKey-guid-with-message", &AuthKey{Kind: AuthGUID, Message: "x"}},
		{"authKey-index-2", &AuthKey{Kind: AuthBadKey, Reason: AuthBadBanned, KeyIndex: 2}},
		{"authKey-reason-4", &AuthKey{Kind: AuthBadKey, Reason: 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.msg.AppendBinary([]byte("keep"))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
			if string(b) != "keep" {
				t.Fatalf("left %q in the buffer, want the original", b)
			}
		})
	}
}
