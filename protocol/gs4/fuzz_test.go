package gs4

import (
	"reflect"
	"testing"

	"github.com/scout-discovery/scout/internal/xxd"
)

// seedVectors adds every packet in testdata: the real requests and our
// goldens.
func seedVectors(f *testing.F) {
	for _, v := range xxd.ReadGlob(f, "testdata/*.hex") {
		f.Add(v.Bytes)
	}
}

// roundTrip checks that what parse decodes encodes, and decodes back to
// an equal message.
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
	if err != nil || !reflect.DeepEqual(m, m2) {
		t.Fatalf("round trip changed %#v to %#v (%v)", m, m2, err)
	}
}

func FuzzParseChallengeRequest(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseChallengeRequest) })
}

func FuzzParseChallengeReply(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseChallengeReply) })
}

func FuzzParseInfoRequest(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseInfoRequest) })
}

func FuzzParseInfoPacket(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, ParseInfoPacket) })
}

// FuzzAssemble: an info packet that parses is a whole reply when it is
// the last and only one; what Assemble makes of it splits into packets
// that assemble to the same Info.
func FuzzAssemble(f *testing.F) {
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseInfoPacket(b)
		if err != nil {
			return
		}
		info, err := Assemble([]InfoPacket{p})
		if err != nil {
			return
		}
		ps, err := info.Split(1400)
		if err != nil {
			return // an Info the encoder refuses (e.g. a key too long for one packet)
		}
		again, err := Assemble(ps)
		if err != nil || !reflect.DeepEqual(info, again) {
			t.Fatalf("Assemble(Split(%#v)) = %#v, %v", info, again, err)
		}
	})
}
