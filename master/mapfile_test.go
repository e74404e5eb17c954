package master

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestMappingFile_RoundTrip(t *testing.T) {
	pairs := []MappingPair{
		{Public: netip.MustParseAddrPort("198.51.100.7:27960"), Loopback: netip.MustParseAddrPort("127.1.0.9:27960")},
		{Public: netip.MustParseAddrPort("203.0.113.1:27961"), Loopback: netip.MustParseAddrPort("127.1.0.10:27961")},
	}
	var b bytes.Buffer
	if _, err := WriteMappingFile(&b, pairs); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMappingFile(&b)
	if err != nil || len(got) != 2 || got[0] != pairs[0] || got[1] != pairs[1] {
		t.Fatalf("%v, %v; want %v", got, err, pairs)
	}
	if m := got[0].Mapping(); m.From != pairs[0].Loopback || m.To != pairs[0].Public {
		t.Errorf("mapping %v", m)
	}
}

// TestReadMappingFile_Refuses: a file that is not one, of another version,
// too large, or with a side that is not as the format says fails with
// ErrMappingFile.
func TestReadMappingFile_Refuses(t *testing.T) {
	for name, text := range map[string]string{
		"not JSON":           `pairs`,
		"version 2":          `{"version":2,"pairs":[]}`,
		"no version":         `{"pairs":[]}`,
		"public on loopback": `{"version":1,"pairs":[{"public":"127.0.0.2:1","loopback":"127.1.0.9:27960"}]}`,
		"loopback off lo":    `{"version":1,"pairs":[{"public":"198.51.100.7:1","loopback":"10.1.0.9:27960"}]}`,
		"port 0":             `{"version":1,"pairs":[{"public":"198.51.100.7:0","loopback":"127.1.0.9:27960"}]}`,
		"IPv6 public":        `{"version":1,"pairs":[{"public":"[2001:db8::1]:1","loopback":"127.1.0.9:27960"}]}`,
		"too large":          `{"version":1,"pairs":[` + strings.Repeat(" ", MaxMappingFileBytes) + `]}`,
	} {
		if _, err := ReadMappingFile(strings.NewReader(text)); !errors.Is(err, ErrMappingFile) {
			t.Errorf("%s: %v, want ErrMappingFile", name, err)
		}
	}
}

func FuzzReadMappingFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"pairs":[{"public":"198.51.100.7:27960","loopback":"127.1.0.9:27960"}]}`))
	f.Add([]byte(`{"version":1,"pairs":[{"public":"::ffff:198.51.100.7:1","loopback":"127.0.0.1:2"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pairs, err := ReadMappingFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, p := range pairs {
			if !p.Loopback.Addr().IsLoopback() || p.Public.Addr().IsLoopback() || p.Public.Port() == 0 || p.Loopback.Port() == 0 {
				t.Fatalf("accepted %v", p)
			}
		}
	})
}
