package capture

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want Format
	}{
		{"q3-binary", "\xff\xff\xff\xffgetinfo\n", Raw},
		{"empty", "", Raw},
		{"ascii-not-hex", "\\basic\\", Raw},
		{"plain-hex", "ffffffff 676574696e666f\n", Hex},
		{"plain-hex-0x", "0xff, 0xff, 0xff, 0xff # comment\n", Hex},
		{"plain-hex-zeros", "0000 0000 ffff\n", Hex}, // one space after 0000: not an offset
		{"xxd", "00000000: ffff ffff 0a                                ....\n", XXD},
		{"wireshark", "0000  ff ff ff ff 0a  .....\n", Dump},
		{"tshark-tab", "0000\tff ff\n", Dump},
		{"pcap", "\xd4\xc3\xb2\xa1rest", PCAP},
		{"pcapng", "\x0a\x0d\x0d\x0arest", PCAPNG},
	} {
		if got := Detect([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: Detect = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestHex(t *testing.T) {
	in := "# two packets\nff ff ff ff 0x67 0X65 \\x74\n  696e666f  \n\n\n\\xff\\xff,ff,ff 0a\n"
	ps, st, err := Parse([]byte(in), Auto)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || st.Records != 2 {
		t.Fatalf("%d packets, want 2", len(ps))
	}
	if string(ps[0].Payload) != "\xff\xff\xff\xffgetinfo" || ps[0].Source != "hex lines 2-3" || ps[0].Link != LinkNone {
		t.Errorf("packet 0: %q %s %v", ps[0].Payload, ps[0].Source, ps[0].Link)
	}
	if string(ps[1].Payload) != "\xff\xff\xff\xff\n" || ps[1].Source != "hex line 6" {
		t.Errorf("packet 1: %q %s", ps[1].Payload, ps[1].Source)
	}
	for _, bad := range []string{"fff\n", "ff gg\n"} {
		if _, _, err := Parse([]byte(bad), Hex); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: err = %v, want ErrMalformed", bad, err)
		}
	}
}

// A frame given as plain hex is stripped like a dumped one.
func TestHex_Frame(t *testing.T) {
	var sb strings.Builder
	for _, c := range ether(etherIPv4, udpIPv4(src4, dst4, payload, nil)) {
		sb.WriteString(strings.ToUpper(string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])))
		sb.WriteByte(' ')
	}
	p := parseOne(t, []byte(sb.String()))
	if !bytes.Equal(p.Payload, payload) || p.Src != src4 || p.Link != LinkEthernet {
		t.Errorf("got %v %v %q", p.Link, p.Src, p.Payload)
	}
}

// The ASCII column is never read as bytes, however hex-like it looks.
func TestDump_HexLookingASCII(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want string
	}{
		{"ascii-is-hex-pairs", "0000  de ad  be ef ca fe\n", "\xde\xad"},
		{"ascii-de-ad-after-8", "0000  01 02 03 04 05 06 07 08  de ad be ef\n", "\x01\x02\x03\x04\x05\x06\x07\x08\xde\xad\xbe\xef"}, // a lone line: a middle gap, as the text is not the bytes' ASCII
		{"ascii-of-8-bytes-looks-like-hex", "0000  64 65 20 61 64 20 62 65  de ad be\n", "de ad be"},
		{"no-mid-gap-layout", "0000  01 02 03 04 05 06 07 08 09 0a  ..\n000a  01 02 03 04 05 06 07 08  de ad\n", "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x01\x02\x03\x04\x05\x06\x07\x08"},
		{"game-path", "0000  5c 67 61 6d 65  .\\game\n", "\\game"},
		{"xxd-ascii-hexlike", "00000000: 6162 6364  abcd\n", "abcd"},
		{"xxd-odd-tail", "00000000: 6162 63    abc\n", "abc"},
	} {
		ps, _, err := Parse([]byte(tt.in), Auto)
		if err != nil || len(ps) != 1 {
			t.Errorf("%s: %v, %d packets", tt.name, err, len(ps))
			continue
		}
		if string(ps[0].Payload) != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, ps[0].Payload, tt.want)
		}
	}
}

func TestDump_OffsetsChecked(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want error
	}{
		{"short-line", "0000  01 02 03  ...\n0004  04  .\n", ErrMalformed},
		{"offset-goes-back", "0000  01 02 03 04  ....\n0002  05  .\n", ErrMalformed},
		{"starts-mid-frame", "0010  01 02  ..\n", ErrMalformed},
		{"offset-over-MaxRecord", "0000  01  .\n[...]\n40000000  02  .\n", ErrTooLarge},
	} {
		if _, _, err := Parse([]byte(tt.in), Dump); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// An elision makes a gap; pieces are not glued. Offsets restarting at 0
// make a new packet.
func TestDump_GapsAndSeveralDumps(t *testing.T) {
	in := "0000  01 02 03 04  ....\n[...lines elided...]\n0010  05 06  ..\n0000  aa bb  ..\n"
	ps, st, err := Parse([]byte(in), Auto)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || st.Incomplete != 1 {
		t.Fatalf("%d packets, %d incomplete", len(ps), st.Incomplete)
	}
	p := ps[0]
	if string(p.Payload) != "\x01\x02\x03\x04" || p.Length != 0x12 || !reflect.DeepEqual(p.Gaps(), []Range{{4, 16}}) ||
		len(p.Rest) != 1 || p.Rest[0].Offset != 16 || string(p.Rest[0].Data) != "\x05\x06" {
		t.Errorf("packet 0: %q length %d gaps %v rest %v", p.Payload, p.Length, p.Gaps(), p.Rest)
	}
	if string(ps[1].Payload) != "\xaa\xbb" || ps[1].Source != "dump 2 (lines 4-4)" {
		t.Errorf("packet 1: %q %s", ps[1].Payload, ps[1].Source)
	}
}

// An elided frame whose printed head ends inside the UDP header cannot be
// decoded, and says so.
func TestDump_HeadEndsInHeaders(t *testing.T) {
	fig := readTestdata(t, "seed000_fig7.txt")
	lines := strings.Split(string(fig), "\n")
	// 0x00-0x27: Ethernet and IPv4 headers, half the UDP header; then the tail.
	head := append(append([]string{}, lines[:2]...), "0020  01 02 6c 02 06 36 05 7c  ..l..6.|")
	cut := strings.Join(append(head, lines[6:]...), "\n")
	_, st, err := Parse([]byte(cut), Dump)
	if !errors.Is(err, ErrTruncated) || st.Malformed != 1 {
		t.Errorf("err = %v, stats %+v; want ErrTruncated, 1 malformed", err, st)
	}
}

// Every prefix of a printed figure is either refused cleanly or yields a
// packet that reports what is missing.
func TestDump_TruncatedPrefixes(t *testing.T) {
	for _, name := range []string{"seed000_fig3.txt", "seed000_fig7.txt", "oa088_frame4.hexdump-C"} {
		b := readTestdata(t, name)
		for n := range len(b) {
			ps, _, err := Parse(b[:n], Dump)
			if err != nil {
				if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) {
					t.Errorf("%s[:%d]: err = %v", name, n, err)
				}
				continue
			}
			for _, p := range ps {
				present := len(p.Payload)
				for _, pc := range p.Rest {
					present += len(pc.Data)
				}
				missing := 0
				for _, g := range p.Gaps() {
					missing += g.End - g.Start
				}
				if p.Link != LinkNone && present+missing != p.Length {
					t.Errorf("%s[:%d]: %d present + %d missing != %d declared", name, n, present, missing, p.Length)
				}
			}
		}
	}
}

// '*' lines repeat the line before, but many of them cannot blow up memory.
func TestDump_StarExpansionBounded(t *testing.T) {
	one := "0000  01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10  ................\n*\n3fff0  01  .\n"
	ps, _, err := Parse([]byte(one), Dump)
	if err != nil || len(ps) != 1 || len(ps[0].Payload) != 0x3fff1 || ps[0].Payload[0x3ffe0] != 1 || ps[0].Payload[0x3ffef] != 0x10 {
		t.Fatalf("one dump: %v", err)
	}
	many := strings.Repeat(one, MaxInput/0x3fff0+1)
	if _, _, err := Parse([]byte(many), Dump); !errors.Is(err, ErrTooLarge) {
		t.Errorf("err = %v, want ErrTooLarge", err)
	}
}

func TestRaw_Empty(t *testing.T) {
	ps, st, err := Parse(nil, Auto)
	if err != nil || len(ps) != 0 || st != (Stats{}) {
		t.Errorf("empty input: %d packets, %+v, %v", len(ps), st, err)
	}
}
