package q3

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readHex reads an xxd dump (the format of testdata/*.hex).
func readHex(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := decodeXXD(string(raw))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// decodeXXD reverses `xxd`: each line is "offset: hex groups  ascii".
func decodeXXD(s string) ([]byte, error) {
	var out []byte
	for _, ln := range strings.Split(s, "\n") {
		if ln == "" {
			continue
		}
		_, rest, ok := strings.Cut(ln, ": ")
		if !ok {
			continue
		}
		// The hex part ends at the double space before the ASCII column.
		hexPart, _, _ := strings.Cut(rest, "  ")
		b, err := hex.DecodeString(strings.ReplaceAll(hexPart, " ", ""))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

func TestSmokeVectorsRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.hex")
	for _, f := range files {
		b := readHex(t, filepath.Base(f))
		m, err := Parse(b)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		out, err := m.AppendBinary(nil)
		if err != nil {
			t.Errorf("%s: encode: %v", f, err)
			continue
		}
		if !bytes.Equal(out, b) {
			t.Errorf("%s: re-encoded\n%q\nwant\n%q", f, out, b)
		}
	}
}
