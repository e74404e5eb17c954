package xxd

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       string
	}{
		{"xxd", "00000000: ffff ffff 696e 666f 5265 7370 6f6e 7365  ....infoResponse\n00000010: 0a5c  .\\\n",
			"\xff\xff\xff\xffinfoResponse\n\\"},
		{"xxd-g1", "00000000: ff ff 20 20 41  ..  A\n", "\xff\xff  A"},
		{"ascii column starting with spaces", "00000000: 2020 4142                                  AB\n", "  AB"},
		{"bare hex with comments", "# seed Fig. 7, head piece\nff ff 73 65\n\n72 76\n", "\xff\xffserv"},
		{"crlf", "00000000: 4142  AB\r\n00000002: 43  C\r\n", "ABC"},
		{"empty", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.text))
			if err != nil || string(got) != tt.want {
				t.Fatalf("Decode = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDecode_Refuses(t *testing.T) {
	for _, tt := range []struct{ name, text string }{
		{"line left out", "00000000: 4142  AB\n00000010: 4344  CD\n"},
		{"odd digit", "00000000: 414  A.\n"},
		{"not hex", "00000000: zz41  .A\n"},
		{"bad offset", "0000000g: 4142  AB\n"},
		{"bare line not hex", "hello\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := Decode([]byte(tt.text)); err == nil {
				t.Fatalf("Decode = %q, nil; want an error", b)
			}
		})
	}
}

// Encode writes what xxd writes, and Decode reads it back.
func TestEncode_RoundTrip(t *testing.T) {
	var b []byte
	for i := range 300 {
		b = append(b, byte(i*7))
	}
	for _, n := range []int{0, 1, 2, 15, 16, 17, 31, 300} {
		got, err := Decode(Encode(b[:n]))
		if err != nil || !bytes.Equal(got, b[:n]) {
			t.Fatalf("n=%d: Decode(Encode) = %x, %v", n, got, err)
		}
	}
}

// Encode's output is what xxd (vim's, on this machine) printed for the same
// bytes, copied from its output.
func TestEncode_AsXXDPrints(t *testing.T) {
	want := "" +
		"00000000: ffff ffff 696e 666f 5265 7370 6f6e 7365  ....infoResponse\n" +
		"00000010: 0a5c 6761 6d65 5c63 706d 61              .\\game\\cpma\n"
	if got := string(Encode([]byte("\xff\xff\xff\xffinfoResponse\n\\game\\cpma"))); got != want {
		t.Errorf("Encode:\n%s\nxxd prints:\n%s", got, want)
	}
}

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.hex")
	Golden(t, path, []byte("\xff\xffgetInfo\x00"), true)
	text, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(text), "00000000: ffff 6765 7449 6e66 6f00") {
		t.Fatalf("written golden %q, %v", text, err)
	}
	Golden(t, path, []byte("\xff\xffgetInfo\x00"), false)
}

// ReadGlob reads every matching dump in name order, and fails the test
// when nothing matches (a vector folder emptied by mistake is not an empty
// corpus).
func TestReadGlob(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"b.hex": "4344\n", "a.hex": "00000000: 4142  AB\n", "c.txt": "4546\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := ReadGlob(t, filepath.Join(dir, "*.hex"))
	if len(got) != 2 || got[0].Name != "a.hex" || string(got[0].Bytes) != "AB" || got[1].Name != "b.hex" || string(got[1].Bytes) != "CD" {
		t.Fatalf("ReadGlob = %q", got)
	}
	for _, pattern := range []string{filepath.Join(dir, "*.pcap"), "["} {
		tb := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			ReadGlob(tb, pattern)
		}()
		<-done
		if !tb.failed {
			t.Errorf("ReadGlob(%q) did not fail the test", pattern)
		}
	}
}

// fatalTB records a Fatalf and ends its goroutine, as testing's does.
type fatalTB struct {
	testing.TB
	failed bool
}

func (f *fatalTB) Fatalf(string, ...any) {
	f.failed = true
	runtime.Goexit()
}
