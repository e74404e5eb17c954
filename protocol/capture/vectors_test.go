package capture

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/xxd"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parseOne parses an input that must hold exactly one packet.
func parseOne(t *testing.T, b []byte) Packet {
	t.Helper()
	ps, st, err := Parse(b, Auto)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(ps) != 1 || st.Packets != 1 {
		t.Fatalf("got %d packets (stats %+v), want 1", len(ps), st)
	}
	return ps[0]
}

// The frames printed in the seed report decode as they are printed.
func TestSeedFigures(t *testing.T) {
	ap := netip.MustParseAddrPort
	tests := []struct {
		file     string
		link     Link
		src, dst netip.AddrPort
		head     string // the payload's first bytes
		tail     string // the payload's last printed bytes
		length   int
		gaps     []Range
		rest     []int // offsets of the pieces after gaps
	}{
		{"seed000_fig3.txt", LinkEthernet, ap("68.88.65.185:1336"), ap("10.1.1.2:27960"),
			"\xff\xff\xff\xffinfoResponse\n\\game\\cpma\\", "\\protocol\\68\\challenge\\xxx", 157, nil, nil},
		{"seed000_fig4.txt", LinkIPv4, ap("192.147.236.5:27960"), ap("192.246.40.56:27950"),
			"\xff\xff\xff\xffheartbeat QuakeArena-1\n", "QuakeArena-1\n", 27, nil, nil},
		{"seed000_fig5.txt", LinkIPv4, ap("136.186.229.32:27961"), ap("192.246.40.60:27950"),
			"\xff\xff\xff\xffheartbeat EnemyTerritory-1\n", "EnemyTerritory-1\n", 31, nil, nil},
		{"seed000_fig6.txt", LinkEthernet, ap("10.1.1.2:1590"), ap("192.246.40.28:27650"),
			"\xff\xffgetServers\x00\x55\x00\x02\x80\x00\x00\x00\x00", "\x80\x00\x00\x00\x00", 21, nil, nil},
		{"seed000_fig7.txt", LinkEthernet, ap("192.246.40.28:27650"), ap("10.1.1.2:1590"),
			"\xff\xffservers\x00\x55\xec\x65\x2b\x6e\x6d", "\xc3\x0d\x3e\x3a\x48\x71", 1396, []Range{{54, 1334}}, []int{1334}},
		{"seed000_fig8.txt", LinkEthernet, ap("69.65.15.4:28004"), ap("10.1.1.2:1590"),
			"\xff\xffinfoResponse\x00", "gamename\x00Q4MP 1.4.2\x00\x00\x00\x20\x07\x00\x00\x00\x00\x00\x00\x00\x01", 877, []Range{{134, 822}}, []int{822}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b := readTestdata(t, tt.file)
			if f := Detect(b); f != Dump {
				t.Errorf("Detect = %v, want dump", f)
			}
			p := parseOne(t, b)
			if p.Link != tt.link || p.Src != tt.src || p.Dst != tt.dst {
				t.Errorf("link %v %v -> %v, want %v %v -> %v", p.Link, p.Src, p.Dst, tt.link, tt.src, tt.dst)
			}
			if !bytes.HasPrefix(p.Payload, []byte(tt.head)) {
				t.Errorf("payload begins %q, want %q", p.Payload[:min(len(p.Payload), len(tt.head))], tt.head)
			}
			pcs := p.Pieces()
			last := pcs[len(pcs)-1]
			if !bytes.HasSuffix(last.Data, []byte(tt.tail)) {
				t.Errorf("last piece ends %q, want %q", last.Data[max(0, len(last.Data)-len(tt.tail)):], tt.tail)
			}
			if end := last.Offset + len(last.Data); end != tt.length {
				t.Errorf("last printed byte ends at %d, want %d (the declared end)", end, tt.length)
			}
			if p.Length != tt.length {
				t.Errorf("Length = %d, want %d", p.Length, tt.length)
			}
			if got := p.Gaps(); !reflect.DeepEqual(got, tt.gaps) {
				t.Errorf("Gaps = %v, want %v", got, tt.gaps)
			}
			var rest []int
			for _, pc := range p.Rest {
				rest = append(rest, pc.Offset)
			}
			if !reflect.DeepEqual(rest, tt.rest) {
				t.Errorf("Rest offsets = %v, want %v", rest, tt.rest)
			}
			if p.Complete() != (tt.gaps == nil) {
				t.Errorf("Complete = %v with gaps %v", p.Complete(), tt.gaps)
			}
		})
	}
}

// Figure 7's servers list: 6-byte entries from payload offset 10; the
// printed tail begins mid-entry, and the offsets say so.
func TestSeedFigure7_ServersListOffsets(t *testing.T) {
	p := parseOne(t, readTestdata(t, "seed000_fig7.txt"))
	const listStart, entry = 10, 6 // after "\xff\xffservers\x00"
	first := p.Payload[listStart : listStart+entry]
	addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte(first[:4])), binary.LittleEndian.Uint16(first[4:]))
	if addr != netip.MustParseAddrPort("85.236.101.43:28014") {
		t.Errorf("first server %v, want 85.236.101.43:28014", addr)
	}
	if n := (p.Length - listStart) / entry; n != 231 || (p.Length-listStart)%entry != 0 {
		t.Errorf("declared list holds %d entries (rem %d), want 231 whole", n, (p.Length-listStart)%entry)
	}
	tail := p.Rest[0]
	if (tail.Offset-listStart)%entry == 0 {
		t.Errorf("tail at %d begins on an entry boundary; the figure's tail begins mid-entry", tail.Offset)
	}
}

// All six figures in one text, between prose and code fences, are six
// packets (the whole seed document can be fed to scout decode).
func TestSeedFigures_InOneDocument(t *testing.T) {
	var doc bytes.Buffer
	for i := 3; i <= 8; i++ {
		name := "seed000_fig" + strconv.Itoa(i) + ".txt"
		doc.WriteString("Some prose, 2007, then a figure.\n```\n\n")
		doc.Write(readTestdata(t, name))
		doc.WriteString("\n```\n\nFig. " + strconv.Itoa(i) + ". A hex and ASCII dump\n\n")
	}
	ps, st, err := Parse(doc.Bytes(), Auto)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 6 || st.Incomplete != 2 {
		t.Fatalf("got %d packets, %d incomplete; want 6, 2", len(ps), st.Incomplete)
	}
	for i, p := range ps {
		one := parseOne(t, readTestdata(t, "seed000_fig"+strconv.Itoa(i+3)+".txt"))
		if !bytes.Equal(p.Payload, one.Payload) || p.Src != one.Src || p.Length != one.Length {
			t.Errorf("packet %d (%s) differs from the figure read alone", i, p.Source)
		}
	}
}

// tsharkRow is one line of a testdata/*.tshark.tsv golden.
type tsharkRow struct {
	epoch    string
	src, dst netip.AddrPort
	payload  []byte
}

func readTshark(t *testing.T, name string) []tsharkRow {
	var rows []tsharkRow
	for _, l := range strings.Split(strings.TrimSpace(string(readTestdata(t, name))), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 7 {
			t.Fatalf("%s: bad line %q", name, l)
		}
		pl, err := hex.DecodeString(f[6])
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, tsharkRow{
			epoch:   f[1],
			src:     netip.MustParseAddrPort(f[2] + ":" + f[3]),
			dst:     netip.MustParseAddrPort(f[4] + ":" + f[5]),
			payload: pl,
		})
	}
	return rows
}

// epoch formats a time as tshark's frame.time_epoch does (9 decimals).
func epoch(p Packet) string {
	return strconv.FormatInt(p.Time.Unix(), 10) + "." + strconv.FormatInt(int64(p.Time.Nanosecond())+1e9, 10)[1:]
}

// The real captures yield what tshark says they hold.
func TestRealCaptures_MatchTshark(t *testing.T) {
	for _, tt := range []struct {
		file   string
		format Format
		link   Link
	}{
		{"oa088_lo_usec.pcap", PCAP, LinkEthernet},
		{"oa088_lo_nsec.pcap", PCAP, LinkEthernet},
		{"oa088_lo.pcapng", PCAPNG, LinkEthernet},
		{"oa088_any_sll2.pcap", PCAP, LinkLinuxSLL2},
		{"oa088_any_sll.pcapng", PCAPNG, LinkLinuxSLL},
	} {
		t.Run(tt.file, func(t *testing.T) {
			b := readTestdata(t, tt.file)
			if f := Detect(b); f != tt.format {
				t.Errorf("Detect = %v, want %v", f, tt.format)
			}
			ps, st, err := Read(bytes.NewReader(b), Auto)
			if err != nil {
				t.Fatal(err)
			}
			want := readTshark(t, tt.file+".tshark.tsv")
			if len(ps) != len(want) || st.Records != len(want) {
				t.Fatalf("got %d packets (stats %+v), tshark says %d", len(ps), st, len(want))
			}
			for i, p := range ps {
				w := want[i]
				if p.Src != w.src || p.Dst != w.dst || !bytes.Equal(p.Payload, w.payload) || epoch(p) != w.epoch {
					t.Errorf("%s: %v %v->%v %q; tshark: %s %v->%v %q", p.Source, epoch(p), p.Src, p.Dst, p.Payload, w.epoch, w.src, w.dst, w.payload)
				}
				if p.Link != tt.link || !p.Complete() || p.Index != i {
					t.Errorf("%s: link %v complete %v index %d", p.Source, p.Link, p.Complete(), p.Index)
				}
			}
		})
	}
}

// The OpenArena replies are what the server says they are.
func TestRealCaptures_OpenArenaReplies(t *testing.T) {
	ps, _, err := Parse(readTestdata(t, "oa088_lo.pcapng"), PCAPNG)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"\xff\xff\xff\xffgetinfo abc",
		"\xff\xff\xff\xffinfoResponse\n\\",
		"\xff\xff\xff\xffgetinfo\n",
		"\xff\xff\xff\xffinfoResponse\n\\",
		"\xff\xff\xff\xffgetstatus\n",
		"\xff\xff\xff\xffstatusResponse\n\\",
	}
	server := netip.MustParseAddrPort("127.0.0.1:28960")
	for i, p := range ps {
		if !bytes.HasPrefix(p.Payload, []byte(want[i])) {
			t.Errorf("%s: %.30q, want prefix %q", p.Source, p.Payload, want[i])
		}
		if (i%2 == 0) != (p.Dst == server) || (i%2 == 1) != (p.Src == server) {
			t.Errorf("%s: %v -> %v, want requests to and replies from %v", p.Source, p.Src, p.Dst, server)
		}
	}
	if !bytes.HasSuffix(ps[1].Payload, []byte(`\challenge\abc`)) {
		t.Errorf("infoResponse does not end with the challenge: %q", ps[1].Payload)
	}
}

// Dumps made by real tools from the real captures yield the same payloads.
func TestRealTextDumps(t *testing.T) {
	ng, _, err := Parse(readTestdata(t, "oa088_lo.pcapng"), PCAPNG)
	if err != nil {
		t.Fatal(err)
	}
	zeros := append([]byte("\xff\xff\xff\xffzeros"), make([]byte, 100)...)
	zeros = append(zeros, "end\n"...)
	vec := readTestdata(t, "vectors_openarena_infoResponse.xxd")
	for _, tt := range []struct {
		file   string
		format Format
		want   [][]byte
		link   Link
	}{
		{"oa088_lo.tshark-x.txt", Dump, [][]byte{ng[0].Payload, ng[1].Payload, ng[2].Payload, ng[3].Payload, ng[4].Payload, ng[5].Payload}, LinkEthernet},
		{"oa088_frame4.xxd", XXD, [][]byte{ng[3].Payload}, LinkEthernet},
		{"oa088_frame4.xxd-g1", XXD, [][]byte{ng[3].Payload}, LinkEthernet},
		{"oa088_frame4.hexdump-C", Dump, [][]byte{ng[3].Payload}, LinkEthernet},
		{"zeros109.xxd-a", XXD, [][]byte{zeros}, LinkNone},
		{"zeros109.hexdump-C", Dump, [][]byte{zeros}, LinkNone},
		{"vectors_openarena_infoResponse.xxd", XXD, [][]byte{mustDecodeXXD(t, vec)}, LinkNone},
	} {
		t.Run(tt.file, func(t *testing.T) {
			b := readTestdata(t, tt.file)
			if f := Detect(b); f != tt.format {
				t.Errorf("Detect = %v, want %v", f, tt.format)
			}
			ps, st, err := Parse(b, Auto)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != len(tt.want) || st.Incomplete != 0 {
				t.Fatalf("got %d packets (stats %+v), want %d complete", len(ps), st, len(tt.want))
			}
			for i, p := range ps {
				if !bytes.Equal(p.Payload, tt.want[i]) || p.Link != tt.link {
					t.Errorf("%s: %v %q, want %v %q", p.Source, p.Link, p.Payload, tt.link, tt.want[i])
				}
			}
		})
	}
}

// mustDecodeXXD is the reference for xxd -r: internal/xxd, a reader
// written apart from this package's.
func mustDecodeXXD(t *testing.T, b []byte) []byte {
	t.Helper()
	d, err := xxd.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
