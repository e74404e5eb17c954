package a2s

import (
	"bytes"
	"testing"

	"github.com/scout-discovery/scout/internal/xxd"
)

// seedVectors adds every packet in testdata: Valve's documented samples,
// real requests and our goldens.
func seedVectors(f *testing.F) {
	for _, v := range xxd.ReadGlob(f, "testdata/*.hex") {
		f.Add(v.Bytes)
	}
}

// roundTrip checks that what parse decodes encodes, and that decoding the
// encoding gives a message with the same encoding (compared as bytes, as
// FuzzParse does: a NaN duration is not equal to itself).
func roundTrip[M Message](t *testing.T, b []byte, parse func([]byte) (M, error)) {
	m, err := parse(b)
	if err != nil {
		return
	}
	enc, err := m.AppendBinary(nil)
	if err != nil {
		t.Fatalf("decoded %#v does not encode: %v", m, err)
	}
	m2, err := parse(enc)
	if err != nil {
		t.Fatalf("re-encoded % x does not decode: %v", enc, err)
	}
	if enc2, err := m2.AppendBinary(nil); err != nil || !bytes.Equal(enc, enc2) {
		t.Fatalf("round trip changed %#v to %#v (%v)", m, m2, err)
	}
}

func FuzzParseInfoRequest(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseInfoRequest) })
}

func FuzzParseChallenge(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseChallenge) })
}

func FuzzParseInfo(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseInfo) })
}

func FuzzParseGoldSrcInfo(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseGoldSrcInfo) })
}

func FuzzParsePlayerRequest(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParsePlayerRequest) })
}

func FuzzParsePlayers(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParsePlayers) })
}

func FuzzParseSplitPacket(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseSplitPacket) })
}

func FuzzParseRulesRequest(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseRulesRequest) })
}

// FuzzParseRules also checks that a reply that parsed lists no more rules
// than its bytes can hold: the count from the wire is not trusted.
func FuzzParseRules(f *testing.F) {
	seedVectors(f)
	f.Add([]byte("\xff\xff\xff\xffE\xff\xff\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _ := ParseRules(b)
		if len(m.Rules) > len(b)/minRuleSize {
			t.Fatalf("%d rules from %d bytes", len(m.Rules), len(b))
		}
		roundTrip(t, b, ParseRules)
	})
}
