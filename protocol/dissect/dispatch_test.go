package dissect

import (
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/protocol/gs4"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

func TestDecode_A2SVectors(t *testing.T) {
	for file, want := range map[string]vectorCase{
		"wiki_a2s_info_css.hex":  {family: A2S, message: "S2A_INFO_SRC", contains: []string{"game2xs.com", "de_dust"}},
		"wiki_s2c_challenge.hex": {family: A2S, message: "S2C_CHALLENGE"},
		"wiki_a2s_player.hex":    {family: A2S, message: "S2A_PLAYER", contains: []string{"Killer !!!"}},
	} {
		t.Run(file, func(t *testing.T) {
			p := readPackets(t, filepath.Join("testdata/a2s", file))[0]
			r := Decode(p.Payload, Hint{})
			checkResult(t, r, want)
			if r.Err != nil {
				t.Errorf("err = %v", r.Err)
			}
		})
	}
}

// TestDecode_Dispatch checks the leading-byte rules of the package doc.
func TestDecode_Dispatch(t *testing.T) {
	ut3 := netip.MustParseAddrPort("127.0.0.1:6500")
	tests := []struct {
		name    string
		b       string
		hint    Hint
		family  Family
		message string
		msg     bool  // a message (possibly partial) is expected
		err     error // nil: no error expected
	}{
		{"empty", "", Hint{}, Unknown, "", false, ErrEmpty},
		{"q3 unknown command", "\xff\xff\xff\xffzzz top", Hint{}, Unknown, "", false, q3.ErrUnknownCommand},
		{"q3 prefix only", "\xff\xff\xff\xff", Hint{}, Q3, "", false, q3.ErrTruncated},
		{"q3 servers cut mid-entry", "\xff\xff\xff\xffgetserversResponse\\\x7f\x00\x00\x01\x6d\x38\\\x7f\x00", Hint{}, Q3, "getserversResponse", true, q3.ErrTruncated},
		{"q4 servers cut mid-entry", "\xff\xffservers\x00\x7f\x00\x00\x01\x38\x6d\x7f", Hint{}, Q4, "servers", true, q4.ErrTruncated},
		{"q4 unknown command", "\xff\xffnope\x00", Hint{}, Q4, "nope", false, q4.ErrUnknownCommand},
		{"a2s split", "\xfe\xff\xff\xff\x01\x00\x00\x00\x02\x00\xe0\x04\xff\xff\xff\xffI", Hint{}, A2S, "split", true, nil},
		{"a2s info request", "\xff\xff\xff\xffTSource Engine Query\x00", Hint{}, A2S, "A2S_INFO", true, nil},
		{"gs4 reply parses", "\x09\x00\x00\x00\x01-42\x00", Hint{}, GS4, "challengeReply", true, nil},
		{"gs4-like garbage", "\x00\x01\x02\x03\x04garbage", Hint{}, Unknown, "", false, gs4.ErrNotGS4},
		{"gs4 reply cut, port says gs4", "\x09\x00\x00\x00\x01-42", Hint{Src: ut3}, GS4, "challengeReply", false, gs4.ErrTruncated},
		{"gs4 reply cut, no hint", "\x09\x00\x00\x00\x01-42", Hint{}, Unknown, "", false, gs4.ErrTruncated},
		{"gs4 forced", "\x09\x00\x00\x00\x01-42", Hint{Family: GS4}, GS4, "challengeReply", false, gs4.ErrTruncated},
		{"q3 forced on q4 bytes", "\xff\xffgetInfo\x00\x00\x00\x00\x00", Hint{Family: Q3}, Q3, "", false, q3.ErrNotQ3},
		{"steammaster reply", "\xff\xff\xff\xff\x66\x0a\x7f\x00\x00\x01\x69\x87\x00\x00\x00\x00\x00\x00", Hint{}, SteamMaster, "reply", true, nil},
		{"steammaster query", "1\xff0.0.0.0:0\x00\\appid\\240\x00", Hint{}, SteamMaster, "query", true, nil},
		{"gs4 request", "\xfe\xfd\x09\x10\x20\x30\x40", Hint{}, GS4, "challengeRequest", true, nil},
		{"unknown lead", "\x42\x42", Hint{}, Unknown, "", false, ErrUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Decode([]byte(tt.b), tt.hint)
			if r.Family != tt.family || r.Message != tt.message || (r.Msg != nil) != tt.msg {
				t.Errorf("got %s %q msg=%v (err %v), want %s %q msg=%v", r.Family, r.Message, r.Msg != nil, r.Err, tt.family, tt.message, tt.msg)
			}
			if tt.err == nil && r.Err != nil || tt.err != nil && !errors.Is(r.Err, tt.err) {
				t.Errorf("err = %v, want %v", r.Err, tt.err)
			}
			if r.Length != len(tt.b) {
				t.Errorf("length = %d, want %d", r.Length, len(tt.b))
			}
		})
	}
}

func TestDecodePieces_RefusesBadLayouts(t *testing.T) {
	for name, ps := range map[string][]Piece{
		"past the end": {{Offset: 0, Data: []byte("\xff\xff")}, {Offset: 9, Data: []byte("xx")}},
		"negative":     {{Offset: -1, Data: []byte("x")}},
		"overlap":      {{Offset: 0, Data: []byte("\xff\xffserv")}, {Offset: 3, Data: []byte("xx")}},
		"too many":     make([]Piece, MaxPieces+1),
	} {
		r := DecodePieces(ps, 10, Hint{})
		if r.Err == nil || r.Msg != nil {
			t.Errorf("%s: %+v, want an error", name, r)
		}
	}
}

func TestDecodePieces_CompleteIsDecode(t *testing.T) {
	b := []byte("\xff\xffservers\x00\x7f\x00\x00\x01\x38\x6d")
	r := DecodePieces([]Piece{{0, b[:5]}, {5, b[5:]}}, len(b), Hint{})
	if !r.OK() || r.Missing != nil || r.Tail != nil {
		t.Errorf("%+v, want a clean decode", r)
	}
}

func TestDecodePieces_NoHead(t *testing.T) {
	r := DecodePieces([]Piece{{Offset: 4, Data: []byte("abc")}}, 10, Hint{})
	if r.Msg != nil || !errors.Is(r.Err, ErrIncomplete) || len(r.Missing) != 2 {
		t.Errorf("%+v, want ErrIncomplete and two missing ranges", r)
	}
}

// TestDecodePieces_EveryCut elides every range of a Quake 4 servers
// packet and a Quake III infoResponse: no panic; the head's family and
// message survive; the joined message never holds more units than the
// whole packet.
func TestDecodePieces_EveryCut(t *testing.T) {
	for _, f := range []string{"testdata/seed000_fig3.txt", "testdata/vectors/ours_q4_infoResponse_accepted_by_qstat_and_gamedig.hex", "testdata/vectors/probe_master_getserversResponse.hex"} {
		p := readPackets(t, f)[0]
		b := p.Payload
		whole := Decode(b, Hint{})
		for start := 1; start < len(b); start += 3 {
			for end := start + 1; end < len(b); end += 5 {
				r := DecodePieces([]Piece{{0, b[:start]}, {end, b[end:]}}, len(b), Hint{})
				if !errors.Is(r.Err, ErrIncomplete) {
					t.Fatalf("%s cut [%d,%d): err %v, want ErrIncomplete", f, start, end, r.Err)
				}
				if r.Family != Unknown && r.Family != whole.Family {
					t.Fatalf("%s cut [%d,%d): family %s, want %s", f, start, end, r.Family, whole.Family)
				}
				if r.Lost != nil && (r.Lost.Start > start || r.Lost.End < end) {
					t.Fatalf("%s cut [%d,%d): lost %v does not cover the gap", f, start, end, *r.Lost)
				}
			}
		}
	}
}

func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/vectors/*.hex")
	more, _ := filepath.Glob("testdata/seed000_fig*.txt")
	for _, name := range append(files, more...) {
		pkts := readPackets(f, name)
		f.Add(append([]byte(nil), pkts[0].Payload...), uint16(0), uint16(0))
	}
	f.Add([]byte("\x00\x00\x00\x00\x01splitnum\x00\x80\x00k\x00v\x00\x00"), uint16(3), uint16(0))
	f.Add([]byte("1\xff0.0.0.0:0\x00\x00"), uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, b []byte, cut, port uint16) {
		h := Hint{Src: netip.AddrPortFrom(netip.IPv4Unspecified(), port)}
		r := Decode(b, h)
		if r.Msg == nil && r.Err == nil {
			t.Fatalf("neither a message nor an error for % x", b)
		}
		if r.Err != nil && strings.TrimSpace(r.Err.Error()) == "" {
			t.Fatal("empty error message")
		}
		// The same bytes with a gap at cut.
		if c := int(cut); c > 0 && c < len(b)-1 {
			DecodePieces([]Piece{{0, b[:c]}, {c + 1, b[c+1:]}}, len(b), h)
		}
	})
}
