package q4

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/xxd"
	"github.com/scout-discovery/scout/protocol/infostring"
)

// mustHex decodes a hex golden written with spaces and newlines.
func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parsesBack checks that parse decodes the vector b to want and that what
// it decoded encodes back to b byte for byte; it returns what it decoded.
func parsesBack[M any, P interface {
	*M
	Message
}](t *testing.T, b []byte, parse func([]byte) (M, error), want M) M {
	t.Helper()
	got, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if re := encode(t, P(&got)); !bytes.Equal(re, b) {
		t.Fatalf("re-encoded\n% x\nwant\n% x", re, b)
	}
	return got
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
	return append(xxd.ReadFile(t, "testdata/seed000_fig8_q4_infoResponse_head.hex"), xxd.ReadFile(t, "testdata/seed000_fig8_q4_infoResponse_tail.hex")...)
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
