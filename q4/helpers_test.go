package q4

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"github.com/scout-discovery/scout/infostring"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadHex reads a testdata file: either xxd output ("00000000: ffff ...")
// or plain hex bytes with '#' comment lines (the seed figure pieces).
func loadHex(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if i := strings.Index(line, ": "); i == 8 {
			// xxd: offset, then up to 8 groups of 4 hex digits, two
			// spaces, then the ASCII column.
			line = line[10:]
			if j := strings.Index(line, "  "); j >= 0 {
				line = line[:j]
			}
		}
		b, err := hex.DecodeString(strings.ReplaceAll(line, " ", ""))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, b...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// mustHex decodes a hex golden written with spaces and newlines.
func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encode(t testing.TB, m Message) []byte {
	t.Helper()
	b, err := m.AppendBinary(nil)
	if err != nil {
		t.Fatalf("AppendBinary(%#v): %v", m, err)
	}
	return b
}

// fig8Spliced is Fig. 8's head and tail pieces joined: a complete
// infoResponse without the elided middle keys. The tail starts at the key
// si_numPrivatePlayers, so the join falls on a key boundary.
func fig8Spliced(t testing.TB) []byte {
	return append(loadHex(t, "seed000_fig8_q4_infoResponse_head.hex"), loadHex(t, "seed000_fig8_q4_infoResponse_tail.hex")...)
}

type infostringPair struct{ k, v string }
type infostringPairs []infostringPair

func (ps infostringPairs) info() infostring.Info {
	var in infostring.Info
	for _, p := range ps {
		in = append(in, infostring.Pair{Key: p.k, Value: p.v})
	}
	return in
}
