package q4

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/scout-discovery/scout/protocol/infostring"

	"github.com/scout-discovery/scout/internal/xxd"
)

func TestVector_GetInfo(t *testing.T) {
	for _, tt := range []struct {
		file string
		want GetInfo
	}{
		// qstat 2.17 -q4s: four zero bytes.
		{"qstat_req_q4s_getInfo.hex", GetInfo{Challenge: 0}},
		// gamedig 5.3.3 quake4: "PiNGPoNg\0"; the server reads "PiNG".
		{"gamedig_req_quake4_getInfo.hex", GetInfo{Challenge: 0x474e6950, Trailer: []byte("PoNg\x00")}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			parsesBack(t, xxd.ReadFile(t, "testdata/"+tt.file), ParseGetInfo, tt.want)
		})
	}
}

func TestVector_OursInfoResponseAcceptedByQstatAndGamedig(t *testing.T) {
	b := xxd.ReadFile(t, "testdata/ours_q4_infoResponse_accepted_by_qstat_and_gamedig.hex")
	if len(b) != 159 {
		t.Fatalf("vector is %d bytes, INDEX.md says 159", len(b))
	}
	want := InfoResponse{
		Challenge: 0,
		Protocol:  Version{2, 85},
		Info: infostring.Info{
			{Key: "si_name", Value: "fake-q4"},
			{Key: "si_map", Value: "game/mp/q4dm1"},
			{Key: "si_maxplayers", Value: "8"},
			{Key: "fs_game", Value: ""},
			{Key: "si_gametype", Value: "DM"},
			{Key: "si_version", Value: "Quake4 fake"},
		},
		Players: []Player{
			{ID: 0, Ping: 42, Rate: 25000, Name: "Alice", Clan: "[A]"},
			{ID: 1, Ping: 7, Rate: 25000, Name: "Bob", Clan: ""},
		},
		Terminator: 32,
		OSMask:     1,
	}
	got := parsesBack(t, b, ParseInfoResponse, want)
	if got.Protocol.String() != "2.85" || got.Protocol.Dialect() != DialectQuake4 {
		t.Fatalf("protocol %v dialect %v", got.Protocol, got.Protocol.Dialect())
	}
}

func TestVector_Seed000Fig8InfoResponse(t *testing.T) {
	head := xxd.ReadFile(t, "testdata/seed000_fig8_q4_infoResponse_head.hex")
	tail := xxd.ReadFile(t, "testdata/seed000_fig8_q4_infoResponse_tail.hex")
	if len(head) != 134 || len(tail) != 55 {
		t.Fatalf("pieces are %d and %d bytes, want 134 and 55", len(head), len(tail))
	}
	// The frame is 919 bytes: 42 of headers and an 877-byte payload, whose
	// last 55 bytes are the tail piece.
	if off := 0x360 - 0x2a; off+len(tail) != 919-42 {
		t.Fatalf("tail ends at payload offset %d, want 877", off+len(tail))
	}

	// The head alone ends inside the dictionary.
	if _, err := ParseInfoResponse(head); !errors.Is(err, ErrTruncated) {
		t.Fatalf("head alone: %v, want ErrTruncated", err)
	}

	want := InfoResponse{
		Challenge: 1,
		Protocol:  Version{2, 85},
		Info: infostring.Info{
			// head
			{Key: "net_serverDedicated", Value: "1"},
			{Key: "fs_game_base", Value: ""},
			{Key: "fs_game", Value: "q4mp"},
			{Key: "sv_punkbuster", Value: "1"},
			{Key: "si_version", Value: "Quake4  V1.4.2 win-x86 Jun 15 2007"}, // two spaces
			// [elided]
			// tail
			{Key: "si_numPrivatePlayers", Value: "0"},
			{Key: "gamename", Value: "Q4MP 1.4.2"},
		},
		Players:    nil, // the terminator follows the dictionary at once
		Terminator: 32,
		OSMask:     7,
		Trailer:    []byte{0, 0, 0, 0, 1},
	}
	parsesBack(t, fig8Spliced(t), ParseInfoResponse, want)
}

func TestVector_Seed000Fig6GetServers(t *testing.T) {
	b := xxd.ReadFile(t, "testdata/seed000_fig6_q4_getServers.hex")
	if len(b) != 63-42 {
		t.Fatalf("payload %d bytes, want 21 (63-byte frame)", len(b))
	}
	parsesBack(t, b, ParseGetServers, GetServers{Protocol: Version{2, 85}, ThirdParty: true, Dialect: DialectQuake4})
}

func TestVector_QstatGetServers(t *testing.T) {
	for _, tt := range []struct {
		file string
		n    int
		want GetServers
	}{
		// qstat 2.17 -q4m: version 0, "", "", "", filter 0.
		{"qstat_req_q4m_getServers.hex", 21, GetServers{Dialect: DialectQuake4}},
		// qstat 2.17 -dm3m: version 0, "", filter 0.
		{"qstat_req_dm3m_getServers.hex", 19, GetServers{Dialect: DialectDoom3}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			b := xxd.ReadFile(t, "testdata/"+tt.file)
			if len(b) != tt.n {
				t.Fatalf("%d bytes, want %d", len(b), tt.n)
			}
			parsesBack(t, b, ParseGetServers, tt.want)
		})
	}
}

func TestVector_OursServersAcceptedByQstat(t *testing.T) {
	b := xxd.ReadFile(t, "testdata/ours_q4_master_servers_accepted_by_qstat.hex")
	got, err := ParseServers(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:29061")} // 85 71 LE
	if !reflect.DeepEqual(got.Servers, want) {
		t.Fatalf("got %v, want %v", got.Servers, want)
	}
	if re := encode(t, &got); !bytes.Equal(re, b) {
		t.Fatalf("re-encoded % x, want % x", re, b)
	}
}

func TestVector_Seed000Fig7Servers(t *testing.T) {
	head := xxd.ReadFile(t, "testdata/seed000_fig7_q4_servers_head.hex")
	tail := xxd.ReadFile(t, "testdata/seed000_fig7_q4_servers_tail.hex")
	const payload = 1438 - 42 // frame minus Ethernet, IP and UDP headers
	if payload != 10+231*6 || MaxServersPacketLen != payload {
		t.Fatalf("payload %d is not 10 + 231*6", payload)
	}

	// Head: the header and the first 7 whole entries, then 2 bytes of the
	// 8th; the parser keeps the 7 and says why it stopped.
	got, err := ParseServers(head)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("head: err %v, want ErrTruncated", err)
	}
	wantHead := []string{
		"85.236.101.43:28014", "85.236.101.43:28004", "213.251.173.32:28104",
		"213.251.173.32:28005", "194.116.82.5:28004", "85.236.100.60:28204",
		"69.28.220.3:28004",
	}
	if len(got.Servers) != len(wantHead) {
		t.Fatalf("head: %d entries, want %d", len(got.Servers), len(wantHead))
	}
	for i, w := range wantHead {
		if got.Servers[i] != netip.MustParseAddrPort(w) {
			t.Errorf("head entry %d: %v, want %s", i, got.Servers[i], w)
		}
	}

	// Tail: it starts at payload offset 1334; entries are aligned by
	// (offset - header) mod 6, so the first 4 bytes of the piece's entry
	// are elided and its last 2 (the port) are printed.
	const tailOff = 0x560 - 0x2a
	skip := (ServerEntryLen - (tailOff-ServersHeaderLen)%ServerEntryLen) % ServerEntryLen
	if skip != 2 || tailOff+len(tail) != payload {
		t.Fatalf("tail alignment: skip %d, end %d", skip, tailOff+len(tail))
	}
	if port := uint16(tail[0]) | uint16(tail[1])<<8; port != 28104 {
		t.Errorf("port of entry 220: %d, want 28104", port)
	}
	// The aligned rest of the tail is entries 221..230: a valid list body.
	rest := append([]byte("\xff\xffservers\x00"), tail[skip:]...)
	gotTail, err := ParseServers(rest)
	if err != nil {
		t.Fatal(err)
	}
	wantTail := []string{
		"195.122.135.72:28004", "85.21.37.19:28106", "8.9.3.155:28004",
		"213.114.182.199:28004", "195.13.62.30:27100", "195.13.62.18:30100",
		"195.13.62.18:28104", "72.5.249.46:28004", "195.13.62.58:27400",
		"195.13.62.58:29000",
	}
	if first := (tailOff + skip - ServersHeaderLen) / ServerEntryLen; first != 221 || first+len(wantTail) != MaxServersPerPacket {
		t.Fatalf("tail entries %d..%d, want 221..230", first, first+len(wantTail)-1)
	}
	for i, w := range wantTail {
		if gotTail.Servers[i] != netip.MustParseAddrPort(w) {
			t.Errorf("tail entry %d: %v, want %s", 221+i, gotTail.Servers[i], w)
		}
	}

	// A full list of 231 encodes to one 1396-byte packet, as in Fig. 7,
	// and its first and last entries are the figure's bytes.
	list := make([]netip.AddrPort, MaxServersPerPacket)
	for i := range list {
		list[i] = got.Servers[0]
	}
	copy(list, got.Servers)
	copy(list[221:], gotTail.Servers)
	pkts, err := EncodeServers(list, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkts) != 1 || len(pkts[0]) != payload {
		t.Fatalf("%d packets, first %d bytes; want 1 of %d", len(pkts), len(pkts[0]), payload)
	}
	if !bytes.Equal(pkts[0][:len(head)-2], head[:len(head)-2]) || !bytes.Equal(pkts[0][tailOff+skip:], tail[skip:]) {
		t.Fatal("encoded packet differs from the figure's printed bytes")
	}
}
