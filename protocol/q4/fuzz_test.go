package q4

import (
	"reflect"
	"testing"
)

// seedFuzz adds every valid packet and a few broken ones.
func seedFuzz(f *testing.F) {
	for _, b := range validPackets(f) {
		f.Add(b)
		if len(b) > 3 {
			f.Add(b[:len(b)-3])
		}
	}
	f.Add([]byte("\xff\xff\xff\xffgetinfo\n"))
	f.Add([]byte("\xff\xffservers\x00\x01\x02\x03\x04\x05\x06\x07"))
}

// roundTrip checks that a successful decode encodes, and that decoding
// the encoding gives the same message.
func roundTrip[M any, P interface {
	*M
	Message
}](t *testing.T, b []byte, parse func([]byte) (M, error)) {
	m, err := parse(b)
	if err != nil {
		return
	}
	enc, err := P(&m).AppendBinary(nil)
	if err != nil {
		t.Fatalf("decoded %#v from % x, but encoding fails: %v", m, b, err)
	}
	m2, err := parse(enc)
	if err != nil {
		t.Fatalf("re-decode of % x: %v", enc, err)
	}
	if !reflect.DeepEqual(m, m2) {
		t.Fatalf("round trip changed the message:\n%#v\n%#v", m, m2)
	}
}

func FuzzParse(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		enc, err := m.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded %#v, but encoding fails: %v", m, err)
		}
		m2, err := Parse(enc)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip: %#v -> %#v, %v", m, m2, err)
		}
	})
}

func FuzzParseGetInfo(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip[GetInfo](t, b, ParseGetInfo) })
}

func FuzzParseInfoResponse(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip[InfoResponse](t, b, ParseInfoResponse) })
}

func FuzzParseGetServers(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip[GetServers](t, b, ParseGetServers) })
}

func FuzzParseServers(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip[Servers](t, b, ParseServers) })
}

func FuzzParseHeartbeat(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip[Heartbeat](t, b, ParseHeartbeat) })
}

func FuzzParseGameAuth(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip[GameAuth](t, b, ParseGameAuth) })
}

func FuzzParseAuthKey(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip[AuthKey](t, b, ParseAuthKey) })
}
