package q4

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/scout-discovery/scout/protocol/infostring"
)

// goldens are hand-written packets for every encoder, each parsed back.
var goldens = []struct {
	name string
	msg  Message
	hex  string
}{
	{"getInfo", &GetInfo{Challenge: 0x01020304},
		`ffff 676574496e666f00  04030201`},
	{"getInfo-negative-challenge", &GetInfo{Challenge: -1},
		`ffff 676574496e666f00  ffffffff`},
	{"infoResponse-doom3", &InfoResponse{
		Challenge: 7, Protocol: Doom3,
		Info:       infostring.Info{{Key: "si_name", Value: `a\b`}, {Key: "si_map", Value: "mp/d3dm1"}},
		Players:    []Player{{ID: 3, Ping: 50, Rate: 16000, Name: "^1Marine"}},
		Terminator: 32, OSMask: 5,
	}, `ffff 696e666f526573706f6e736500  07000000  29000100
	    73695f6e616d6500 615c6200  73695f6d617000 6d702f643364 6d3100  0000
	    03 3200 803e0000 5e314d6172696e6500
	    20 05000000`},
	{"infoResponse-quake4-trailer", &InfoResponse{
		Challenge: -2, Protocol: Quake4,
		Info:       infostring.Info{{Key: "gamename", Value: "Q4MP 1.4.2"}},
		Players:    []Player{{ID: 0, Ping: 1, Rate: 2, Name: "x", Clan: "y"}, {ID: 31, Name: "", Clan: ""}},
		Terminator: 32, OSMask: 7, Trailer: []byte{0, 0, 0, 0, 1},
	}, `ffff 696e666f526573706f6e736500  feffffff  55000200
	    67616d656e616d6500 51344d5020312e342e3200  0000
	    00 0100 02000000 7800 7900
	    1f 0000 00000000 00 00
	    20 07000000 0000000001`},
	{"getServers-doom3-filters", &GetServers{
		Protocol: Doom3, Game: "d3xp", Dialect: DialectDoom3,
		Filter: Filter{Password: 2, Players: 1, GameType: 3},
	}, `ffff 67657453657276657273 00  29000100  6433787000  36`},
	{"getServers-quake4-thirdparty", &GetServers{
		Protocol: Quake4, ThirdParty: true, Game: "q4mp", Dialect: DialectQuake4,
		Player: "Bob", Clan: "[A]", Filter: Filter{Password: 1},
	}, `ffff 67657453657276657273 00  55000280  71346d7000 426f6200 5b415d00  01`},
	{"servers", &Servers{Servers: []netip.AddrPort{
		netip.MustParseAddrPort("85.236.101.43:28014"),
		netip.MustParseAddrPort("10.0.0.1:27666"),
	}}, `ffff 7365727665727300  55ec652b 6e6d  0a000001 126c`},
	{"servers-empty", &Servers{}, `ffff 7365727665727300`},
	{"heartbeat", &Heartbeat{}, `ffff 6865617274626561 7400`},
	{"gameAuth", &GameAuth{Protocol: Doom3, HasCDKey: true, CDKey: "ABCD-EFGH"},
		`ffff 67616d654175746800  29000100  01 414243442d4546474800  00 00`},
	{"gameAuth-xp", &GameAuth{Protocol: Quake4, HasCDKey: true, CDKey: "K", HasXPKey: true, XPKey: "X"},
		`ffff 67616d654175746800  55000200  01 4b00  01 5800`},
	{"authKey-guid", &AuthKey{Kind: AuthGUID, GUID: "ABC"},
		`ffff 617574684b657900 01 41424300`},
	{"authKey-invalid", &AuthKey{Kind: AuthBadKey, Reason: AuthBadInvalid, CDKeyValid: false, XPKeyValid: true},
		`ffff 617574684b657900 00 00 00 01`},
	{"authKey-banned", &AuthKey{Kind: AuthBadKey, Reason: AuthBadBanned, KeyIndex: 1},
		`ffff 617574684b657900 00 01 01`},
	{"authKey-inuse", &AuthKey{Kind: AuthBadKey, Reason: AuthBadInUse},
		`ffff 617574684b657900 00 02 00`},
	{"authKey-message", &AuthKey{Kind: AuthBadKey, Reason: AuthBadMessage, Message: "go away"},
		`ffff 617574684b657900 00 03 676f206177617900`},
}

func TestGoldens(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			want := mustHex(t, g.hex)
			got := encode(t, g.msg)
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded\n% x\nwant\n% x", got, want)
			}
			// Appending keeps what was there.
			pre := []byte("xyz")
			got2, err := g.msg.AppendBinary(pre)
			if err != nil || !bytes.Equal(got2[:3], pre) || !bytes.Equal(got2[3:], want) {
				t.Fatalf("AppendBinary onto a prefix: % x, %v", got2, err)
			}
			back, err := Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, g.msg) {
				t.Fatalf("parsed back\n%#v\nwant\n%#v", back, g.msg)
			}
		})
	}
}

func TestInfoResponse_ZeroTerminatorMeans32(t *testing.T) {
	m := InfoResponse{Protocol: Quake4}
	b := encode(t, &m)
	if b[len(b)-5] != MaxClients {
		t.Fatalf("terminator %d, want %d", b[len(b)-5], MaxClients)
	}
}

func TestVersion(t *testing.T) {
	for _, tt := range []struct {
		v    Version
		word uint32
		s    string
		d    Dialect
	}{
		{Quake4, 0x00020055, "2.85", DialectQuake4},
		{Doom3, 0x00010029, "1.41", DialectDoom3},
		{Version{3, 1}, 0x00030001, "3.1", DialectDoom3}, // Prey: Doom 3 records
	} {
		if tt.v.Uint32() != tt.word || VersionOf(tt.word) != tt.v || tt.v.String() != tt.s || tt.v.Dialect() != tt.d {
			t.Errorf("%+v: word %#x string %q dialect %v", tt.v, tt.v.Uint32(), tt.v.String(), tt.v.Dialect())
		}
	}
}

func TestEncodeServers_Split(t *testing.T) {
	list := make([]netip.AddrPort, 500)
	for i := range list {
		list[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), uint16(27650+i))
	}
	for _, tt := range []struct {
		per, bytes int
		sizes      []int
	}{
		{0, 0, []int{231, 231, 38}},
		{100, 0, []int{100, 100, 100, 100, 100}},
		{0, 10 + 6*200 + 5, []int{200, 200, 100}},
		{1000, 1 << 20, []int{500}}, // capped at MaxPacketSize: 2729 per packet
	} {
		pkts, err := EncodeServers(list, tt.per, tt.bytes)
		if err != nil {
			t.Fatal(err)
		}
		var all []netip.AddrPort
		var sizes []int
		for _, p := range pkts {
			s, err := ParseServers(p)
			if err != nil {
				t.Fatal(err)
			}
			if max := tt.bytes; max > 0 && len(p) > max {
				t.Fatalf("packet %d bytes over %d", len(p), max)
			}
			sizes = append(sizes, len(s.Servers))
			all = append(all, s.Servers...)
		}
		if !reflect.DeepEqual(sizes, tt.sizes) || !reflect.DeepEqual(all, list) {
			t.Errorf("per %d bytes %d: sizes %v, want %v (order kept: %v)", tt.per, tt.bytes, sizes, tt.sizes, reflect.DeepEqual(all, list))
		}
	}
	pkts, err := EncodeServers(nil, 0, 0)
	if err != nil || len(pkts) != 1 || string(pkts[0]) != "\xff\xffservers\x00" {
		t.Fatalf("empty list: %q, %v", pkts, err)
	}
	if _, err := EncodeServers(list, 0, 15); !errors.Is(err, ErrInvalid) {
		t.Fatalf("15-byte packets: %v, want ErrInvalid", err)
	}
	if _, err := EncodeServers([]netip.AddrPort{netip.MustParseAddrPort("[2001:db8::1]:1")}, 0, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("IPv6 entry: %v, want ErrInvalid", err)
	}
	// IPv4-mapped IPv6 is unmapped.
	pkts, err = EncodeServers([]netip.AddrPort{netip.MustParseAddrPort("[::ffff:1.2.3.4]:5")}, 0, 0)
	if err != nil || !bytes.Equal(pkts[0][ServersHeaderLen:], []byte{1, 2, 3, 4, 5, 0}) {
		t.Fatalf("mapped entry: % x, %v", pkts, err)
	}
}
