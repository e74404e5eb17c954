package dissect

import (
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/protocol/capture"
	"github.com/scout-discovery/scout/protocol/q3"
)

// Real pcap and pcapng captures of an OpenArena server (loopback and Linux
// cooked links) decode packet by packet as scout decode does: every UDP
// payload that tshark sees, from the addresses it names, is a clean Quake
// III packet.
func TestDecode_RealCaptures(t *testing.T) {
	files, err := filepath.Glob("testdata/captures/oa088_*.pcap*")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, f := range files {
		if strings.HasSuffix(f, ".tsv") {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			pkts, _, err := capture.Parse(b, capture.Auto)
			if err != nil {
				t.Fatal(err)
			}
			want := tsharkRows(t, f+".tshark.tsv")
			if len(pkts) != len(want) {
				t.Fatalf("%d packets, tshark sees %d", len(pkts), len(want))
			}
			for i, p := range pkts {
				w := want[i]
				if p.Src != w.src || p.Dst != w.dst || !p.Complete() || hex.EncodeToString(p.Payload) != w.payload {
					t.Fatalf("packet %d: %v -> %v, complete %v; tshark: %v -> %v", i, p.Src, p.Dst, p.Complete(), w.src, w.dst)
				}
				r := Decode(p.Payload, Hint{Src: p.Src, Dst: p.Dst})
				word, _ := q3.Command(p.Payload)
				if r.Family != Q3 || r.Err != nil || r.Msg == nil || r.Message == "" || r.Message != word {
					t.Errorf("packet %d (%q): %s %q %T, %v; want a clean q3 %q", i, p.Payload[:min(len(p.Payload), 24)], r.Family, r.Message, r.Msg, r.Err, word)
				}
			}
		})
	}
	if n != 5 {
		t.Errorf("%d captures in testdata/captures, want the 5 of its README", n)
	}
}

type tsharkRow struct {
	src, dst netip.AddrPort
	payload  string // hex
}

// tsharkRows reads tshark's fields: number, time, src, sport, dst, dport,
// payload hex.
func tsharkRows(t *testing.T, path string) []tsharkRow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []tsharkRow
	for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(ln, "\t")
		if len(f) != 7 {
			t.Fatalf("%s: line %q has %d fields, want 7", path, ln, len(f))
		}
		src, err1 := netip.ParseAddrPort(f[2] + ":" + f[3])
		dst, err2 := netip.ParseAddrPort(f[4] + ":" + f[5])
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: line %q: %v %v", path, ln, err1, err2)
		}
		rows = append(rows, tsharkRow{src, dst, f[6]})
	}
	return rows
}
