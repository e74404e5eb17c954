// Package xxd reads and writes the hex dumps that `xxd` prints, the format
// of the packet vectors under each protocol package's testdata/ and of
// ../shared/vectors. It exists for tests: a vector is read with [ReadFile]
// (every vector of a folder with [ReadGlob]) and an encoder's output is
// checked against a hex golden with [Golden].
//
// A dump holds lines of two forms, which may be mixed:
//
//	00000000: ffff ffff 696e 666f 5265 7370 6f6e 7365  ....infoResponse
//	ff ff 73 65 72 76 65 72 73 00 55 ec 65 2b 6e 6d
//
// The first is xxd's (any grouping, as with xxd -g1): an offset, a colon,
// hex groups, two spaces and the ASCII column, which is ignored. The
// offset must be where the bytes read so far end, so a dump with a line
// left out is refused rather than read short. The second is bare hex
// bytes, as the seed figures' pieces are transcribed. Blank lines and
// lines starting with '#' are comments.
package xxd

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Decode returns the bytes of a dump.
func Decode(text []byte) ([]byte, error) {
	var out []byte
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		hexPart := line
		if off, rest, ok := strings.Cut(line, ": "); ok {
			at, err := strconv.ParseUint(off, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("xxd: line %d: offset %q: %v", i+1, off, err)
			}
			if at != uint64(len(out)) {
				return nil, fmt.Errorf("xxd: line %d: offset %#x, but %#x bytes read before it", i+1, at, len(out))
			}
			// The hex groups end at the two spaces before the ASCII column.
			hexPart, _, _ = strings.Cut(rest, "  ")
		}
		b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(hexPart), " ", ""))
		if err != nil {
			return nil, fmt.Errorf("xxd: line %d: %v", i+1, err)
		}
		out = append(out, b...)
	}
	return out, nil
}

// Encode renders b as `xxd` does: 16 bytes a line in groups of two, with
// the ASCII column.
func Encode(b []byte) []byte {
	var sb bytes.Buffer
	for off := 0; off < len(b); off += 16 {
		row := b[off:min(off+16, len(b))]
		fmt.Fprintf(&sb, "%08x: ", off)
		n := 0
		for i, c := range row {
			n += 2
			fmt.Fprintf(&sb, "%02x", c)
			if i%2 == 1 {
				sb.WriteByte(' ')
				n++
			}
		}
		sb.WriteString(strings.Repeat(" ", 41-n))
		for _, c := range row {
			if c >= 0x20 && c < 0x7f {
				sb.WriteByte(c)
			} else {
				sb.WriteByte('.')
			}
		}
		sb.WriteByte('\n')
	}
	return sb.Bytes()
}

// ReadFile returns the bytes of the dump in the file at path. An unreadable
// file or a malformed dump fails tb.
func ReadFile(tb testing.TB, path string) []byte {
	tb.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := Decode(text)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return b
}

// A File is one dump that [ReadGlob] read: its file name, without the
// folder, and its bytes.
type File struct {
	Name  string
	Bytes []byte
}

// ReadGlob reads every dump whose path matches pattern (filepath.Glob's
// syntax), in filepath.Glob's order, as a test's vectors and goldens are
// read: "testdata/*.hex". A bad pattern, no file at all, an unreadable
// file or a malformed dump fails tb.
func ReadGlob(tb testing.TB, pattern string) []File {
	tb.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no dumps match %s: %v", pattern, err)
	}
	out := make([]File, 0, len(paths))
	for _, p := range paths {
		out = append(out, File{Name: filepath.Base(p), Bytes: ReadFile(tb, p)})
	}
	return out
}

// Golden checks that got is the dump in the file at path, reporting both
// as dumps when they differ. With update set it first writes got there,
// which is how a golden is made or remade after a reviewed change.
func Golden(tb testing.TB, path string, got []byte, update bool) {
	tb.Helper()
	if update {
		if err := os.WriteFile(path, Encode(got), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if want := ReadFile(tb, path); !bytes.Equal(got, want) {
		tb.Errorf("%s: encoding differs from golden\ngot:\n%s\nwant:\n%s", path, Encode(got), Encode(want))
	}
}
