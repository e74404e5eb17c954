package gs4

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/xxd"
)

func mustEncode(t testing.TB, m Message) []byte {
	t.Helper()
	b, err := m.AppendBinary(nil)
	if err != nil {
		t.Fatalf("AppendBinary(%#v): %v", m, err)
	}
	return b
}

func TestParse_RealVectors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       Message
	}{
		{"qstat-2.17/gs4-challenge-request", "qstat_req_gs4_challenge.hex", ChallengeRequest{SessionID: 0x10203040}},
		{"qstat-2.17/ut3s-challenge-request", "qstat_req_ut3s_challenge.hex", ChallengeRequest{SessionID: 0x10203040}},
		// gamedig's 4 trailing zero bytes are ignored.
		{"gamedig-5.3.3/ut3-challenge-request", "gamedig_req_ut3_challenge.hex", ChallengeRequest{SessionID: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := xxd.ReadFile(t, "testdata/"+tc.file)
			got, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
			// We encode the 7-byte form qstat sends.
			if enc := mustEncode(t, got); !bytes.Equal(enc, b[:7]) {
				t.Fatalf("re-encoded % x, want % x", enc, b[:7])
			}
		})
	}
}

// goldenMessages are our encodings, kept as hex goldens and parsed back.
func goldenMessages(t testing.TB) map[string]Message {
	ps, err := sampleInfo().Split(1400)
	if err != nil {
		t.Fatal(err)
	}
	split, err := sampleInfo().Split(interopPacketSize)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || len(split) != 2 {
		t.Fatalf("got %d and %d packets, want 1 and 2", len(ps), len(split))
	}
	return map[string]Message{
		"ours_challenge_request.hex":        ChallengeRequest{SessionID: 0x10203040},
		"ours_challenge_reply_negative.hex": ChallengeReply{SessionID: 0x10203040, Challenge: 0xB3412B5A, Text: "-1287574694"},
		"ours_challenge_reply_positive.hex": ChallengeReply{SessionID: 1, Challenge: 123456789, Text: "123456789"},
		"ours_info_request.hex":             InfoRequest{SessionID: 0x10203040, HasChallenge: true, Challenge: 0xB3412B5A, Rules: true, Players: true, Teams: true, Split: true},
		"ours_info_request_nochallenge.hex": InfoRequest{SessionID: 1, Rules: true, Players: true, Teams: true, Split: true},
		"ours_ut3_info_single.hex":          ps[0],
		"ours_ut3_info_split0.hex":          split[0],
		"ours_ut3_info_split1.hex":          split[1],
		"ours_doc_sample.hex":               docSample(),
	}
}

// docSample is the packet shown in doc.go.
func docSample() InfoPacket {
	return InfoPacket{SessionID: 0x10203040, Number: 0, Last: true, Sections: []Section{
		{Kind: SectionServer, Rules: []KeyValue{{"hostname", "UT3"}, {"maxplayers", "16"}}},
		{Kind: SectionPlayers, Columns: []Column{{Field: "player_", Values: []string{"Alice"}}}},
		{Kind: SectionTeams, Columns: []Column{{Field: "team_t", Values: []string{"Red"}}}},
	}}
}

func TestGoldens(t *testing.T) {
	for name, m := range goldenMessages(t) {
		t.Run(name, func(t *testing.T) {
			b := mustEncode(t, m)
			xxd.Golden(t, "testdata/"+name, b, os.Getenv("GS4_UPDATE") != "")
			got, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("parsed back %#v, want %#v", got, m)
			}
		})
	}
}

func TestChallengeReply_Text(t *testing.T) {
	for _, tc := range []struct {
		text string
		want uint32
	}{
		{"-1287574694", 0xB3412B5A}, // qstat's gs3.c example: 0xb3412b5a
		{"-1", 0xFFFFFFFF},
		{"-2147483648", 0x80000000},
		{"2147483647", 0x7FFFFFFF},
		{"4294967295", 0xFFFFFFFF},
		{"0", 0},
	} {
		b := append([]byte{0x09, 0, 0, 0, 1}, tc.text...)
		b = append(b, 0)
		m, err := ParseChallengeReply(b)
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if m.Challenge != tc.want || m.Text != tc.text {
			t.Errorf("%q: got %#x %q, want %#x", tc.text, m.Challenge, m.Text, tc.want)
		}
	}
	// An empty Text is formatted as the signed decimal UT3 sends.
	b := mustEncode(t, ChallengeReply{Challenge: 0xB3412B5A})
	if want := "\x09\x00\x00\x00\x00-1287574694\x00"; string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
}

func TestTruncatedPrefixes(t *testing.T) {
	msgs := goldenMessages(t)
	inputs := map[string][]byte{}
	for name, m := range msgs {
		inputs[name] = mustEncode(t, m)
	}
	for _, v := range xxd.ReadGlob(t, "testdata/*.hex") { // every vector and golden
		inputs[v.Name] = v.Bytes
	}
	for name, b := range inputs {
		full, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for n := 0; n < len(b); n++ {
			p := b[:n]
			m, err := Parse(p)
			if err == nil {
				// A prefix that is itself a whole packet (an info packet
				// ending between sections, a request without its trailing
				// option byte) must be exactly what it re-encodes to. A
				// prefix that only cut bytes the decoder ignores on purpose
				// (challenge text padding, gamedig's trailing zeros) must
				// decode to the full packet's value.
				enc := mustEncode(t, m)
				ignoredCut := reflect.DeepEqual(m, full)
				if !bytes.Equal(enc, p) && !ignoredCut {
					t.Errorf("%s[:%d] parsed as %#v, which encodes to % x", name, n, m, enc)
				}
				continue
			}
			if n == 0 {
				if !errors.Is(err, ErrNotGS4) {
					t.Errorf("%s[:0]: %v, want ErrNotGS4", name, err)
				}
				continue
			}
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("%s[:%d]: %v, want ErrTruncated", name, n, err)
			}
		}
	}
}

func TestHostile(t *testing.T) {
	hdr := "\x00\x10\x20\x30\x40splitnum\x00\x80"
	for _, tc := range []struct {
		name string
		in   string
		want error
	}{
		{"challenge text not a number", "\x09\x00\x00\x00\x01abc\x00", ErrBadChallenge},
		{"challenge text only a sign", "\x09\x00\x00\x00\x01-\x00", ErrBadChallenge},
		{"challenge text empty", "\x09\x00\x00\x00\x01\x00", ErrBadChallenge},
		{"challenge text overlong", "\x09\x00\x00\x00\x01123456789012\x00", ErrBadChallenge},
		{"challenge out of range", "\x09\x00\x00\x00\x014294967296\x00", ErrBadChallenge},
		{"challenge text with backslash", "\x09\x00\x00\x00\x0112\\34\x00", ErrBadChallenge},
		{"challenge text unterminated", "\x09\x00\x00\x00\x01123", ErrTruncated},
		{"info request key list (qstat status query)", "\xfe\xfd\x00\x10\x20\x30\x40\xb3\x41\x2b\x5a\x06\x01\x06\x05\x08\x0a\x04\x00\x00", ErrKeyList},
		{"info request bad key byte", "\xfe\xfd\x00\x10\x20\x30\x40\x00\x00\x00\x01\x07\xff\xff\x01", ErrKeyList},
		{"info request bad option byte", "\xfe\xfd\x00\x10\x20\x30\x40\x00\x00\x00\x01\xff\xff\xff\x02", ErrKeyList},
		{"unknown request type", "\xfe\xfd\x05\x10\x20\x30\x40", ErrNotGS4},
		{"reply without splitnum", "\x00\x10\x20\x30\x40hostname\x00x\x00", ErrNotGS4},
		{"unknown first byte", "\xff\xff\xff\xffgetinfo", ErrNotGS4},
		{"bad section id", hdr + "\x03abc\x00", ErrBadSection},
		{"key without value", hdr + "\x00hostname\x00", ErrTruncated},
		{"overlong key to the end of the packet", hdr + "\x00" + strings.Repeat("k", 1400), ErrTruncated},
		{"overlong value to the end of the packet", hdr + "\x00hostname\x00" + strings.Repeat("v", 1400), ErrTruncated},
		{"wrong separator between key and value", hdr + "\x00hostname\\x\x00\x00", ErrTruncated},
		{"key/values without terminator", hdr + "\x00hostname\x00x\x00", ErrTruncated},
		{"field without offset", hdr + "\x01player_\x00", ErrTruncated},
		{"column without terminator", hdr + "\x01player_\x00\x00Alice\x00", ErrTruncated},
		{"table without terminator", hdr + "\x01player_\x00\x00Alice\x00\x00", ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestEncode_Refuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Message
	}{
		{"NUL in key", InfoPacket{Sections: []Section{{Kind: SectionServer, Rules: []KeyValue{{"a\x00b", "v"}}}}}},
		{"empty key", InfoPacket{Sections: []Section{{Kind: SectionServer, Rules: []KeyValue{{"", "v"}}}}}},
		{"empty table value", InfoPacket{Sections: []Section{{Kind: SectionPlayers, Columns: []Column{{Field: "player_", Values: []string{""}}}}}}},
		{"field starting with 0x01", InfoPacket{Sections: []Section{{Kind: SectionPlayers, Columns: []Column{{Field: "\x01x"}}}}}},
		{"packet number 128", InfoPacket{Number: 128}},
		{"bad section kind", InfoPacket{Sections: []Section{{Kind: 3}}}},
		{"text disagrees with challenge", ChallengeReply{Challenge: 1, Text: "2"}},
		{"challenge without HasChallenge", InfoRequest{Challenge: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.m.AppendBinary(nil); !errors.Is(err, ErrBadField) && !errors.Is(err, ErrBadSection) && !errors.Is(err, ErrBadChallenge) {
				t.Fatalf("got %v, want a refusal", err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, m := range goldenMessages(f) {
		b, err := m.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seedVectors(f)
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, Parse) })
}
