package q3

import (
	"errors"
	"reflect"
	"testing"
)

// strictRefusal reports whether AppendBinary may refuse a message Parse
// accepted: only a challenge that ValidateChallenge rejects (decoding is
// lenient about challenges, encoding is not).
func strictRefusal(m Message) bool {
	var c string
	switch m := m.(type) {
	case GetInfo:
		c = m.Challenge
	case GetStatus:
		c = m.Challenge
	default:
		return false
	}
	return c != "" && ValidateChallenge(c) != nil
}

// checkDecoded is the property every fuzzer checks on Parse's result.
func checkDecoded(t *testing.T, in []byte, m Message, err error) {
	if err != nil {
		if s := sentinels(err); len(s) != 1 {
			t.Fatalf("Parse(%q): error %v wraps %d sentinels, want 1", in, err, len(s))
		}
		if m == nil {
			return
		}
		// A partial message is still a clean one.
	}
	if m == nil {
		t.Fatalf("Parse(%q) returned neither a message nor an error", in)
	}
	out, encErr := m.AppendBinary(nil)
	if encErr != nil {
		if !errors.Is(encErr, ErrInvalid) || !strictRefusal(m) {
			t.Fatalf("Parse(%q) = %#v, which AppendBinary refuses: %v", in, m, encErr)
		}
		return
	}
	back, err2 := Parse(out)
	if err2 != nil {
		t.Fatalf("Parse(%q) = %#v; its encoding %q does not parse: %v", in, m, out, err2)
	}
	if r, ok := m.(ServersResponse); ok {
		for _, d := range r.Dropped {
			if checkEntry(d) == nil {
				t.Fatalf("Parse(%q) dropped %v, a usable entry", in, d)
			}
		}
		r.Dropped = nil // not encoded
		m = r
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("Parse(%q) = %#v\nencodes to %q\nwhich parses as %#v", in, m, out, back)
	}
}

func seedAll(f *testing.F) {
	for _, b := range validPackets(f) {
		f.Add(b)
	}
}

// FuzzParse: Parse never panics; what it decodes encodes and decodes back
// to an equal message.
func FuzzParse(f *testing.F) {
	seedAll(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		checkDecoded(t, b, m, err)
		_, _ = Command(b)
	})
}

// fuzzBody drives one parser through Parse by prefixing its command word,
// so the fuzzer spends its time on that parser's grammar.
func fuzzBody(f *testing.F, word string) {
	for _, b := range validPackets(f) {
		if w, ok := Command(b); ok && w == word {
			f.Add(b[len(Prefix)+len(word):])
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in := append([]byte(Prefix+word), body...)
		m, err := Parse(in)
		checkDecoded(t, in, m, err)
	})
}

func FuzzParseHeartbeat(f *testing.F)           { fuzzBody(f, cmdHeartbeat) }
func FuzzParseGetServers(f *testing.F)          { fuzzBody(f, cmdGetServers) }
func FuzzParseServersResponse(f *testing.F)     { fuzzBody(f, cmdGetServersExtResponse) }
func FuzzParseInfoResponse(f *testing.F)        { fuzzBody(f, cmdInfoResponse) }
func FuzzParseStatusResponse(f *testing.F)      { fuzzBody(f, cmdStatusResponse) }
func FuzzParseGetInfo(f *testing.F)             { fuzzBody(f, cmdGetInfo) }
func FuzzParseChallenge(f *testing.F)           { fuzzBody(f, cmdChallengeResponse) }
func FuzzParseDPChallenge(f *testing.F)         { fuzzBody(f, cmdChallenge) }
func FuzzParseMOTD(f *testing.F)                { fuzzBody(f, cmdMOTD) }
func FuzzParseRegister(f *testing.F)            { fuzzBody(f, cmdRegister) }
func FuzzParseGetServersExt(f *testing.F)       { fuzzBody(f, cmdGetServersExt) }
func FuzzParseServersResponseIPv4(f *testing.F) { fuzzBody(f, cmdGetServersResponse) }
func FuzzParseGetStatus(f *testing.F)           { fuzzBody(f, cmdGetStatus) }
func FuzzParseGetChallenge(f *testing.F)        { fuzzBody(f, cmdGetChallenge) }
func FuzzParsePrint(f *testing.F)               { fuzzBody(f, cmdPrint) }
func FuzzParseGetMOTD(f *testing.F)             { fuzzBody(f, cmdGetMOTD) }
