package steammaster

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readHex reads an xxd dump from testdata.
func readHex(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, line := range strings.Split(string(raw), "\n") {
		if len(line) < 10 {
			continue
		}
		hexPart, _, _ := strings.Cut(line[10:], "  ")
		b, err := hex.DecodeString(strings.ReplaceAll(hexPart, " ", ""))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, b...)
	}
	return out
}

// xxd renders b as `xxd` does, for writing goldens.
func xxd(b []byte) string {
	var sb strings.Builder
	for off := 0; off < len(b); off += 16 {
		row := b[off:min(off+16, len(b))]
		sb.WriteString(strings.ToLower(hex.EncodeToString([]byte{byte(off >> 24), byte(off >> 16), byte(off >> 8), byte(off)})))
		sb.WriteString(": ")
		var hx strings.Builder
		for i, c := range row {
			hx.WriteString(hex.EncodeToString([]byte{c}))
			if i%2 == 1 {
				hx.WriteByte(' ')
			}
		}
		sb.WriteString(hx.String())
		sb.WriteString(strings.Repeat(" ", 41-hx.Len()))
		sb.WriteByte(' ')
		for _, c := range row {
			if c >= 0x20 && c < 0x7f {
				sb.WriteByte(c)
			} else {
				sb.WriteByte('.')
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

// golden compares an encoding with testdata/name; STM_UPDATE=1 rewrites it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	if os.Getenv("STM_UPDATE") != "" {
		if err := os.WriteFile(filepath.Join("testdata", name), []byte(xxd(got)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := readHex(t, name); !bytes.Equal(got, want) {
		t.Errorf("%s: encoding differs from golden\ngot:\n%s\nwant:\n%s", name, xxd(got), xxd(want))
	}
}

func mustEncode(t testing.TB, m Message) []byte {
	t.Helper()
	b, err := m.AppendBinary(nil)
	if err != nil {
		t.Fatalf("AppendBinary(%#v): %v", m, err)
	}
	return b
}
