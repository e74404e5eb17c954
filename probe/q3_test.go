package probe

import (
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// xxd reads a dump in xxd's format ("00000000: ffff ffff 696e  ....in").
func xxd(t testing.TB, name string) []byte {
	t.Helper()
	text, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, line := range strings.Split(string(text), "\n") {
		_, rest, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		hexPart, _, _ := strings.Cut(rest, "  ")
		b, err := hex.DecodeString(strings.ReplaceAll(hexPart, " ", ""))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, b...)
	}
	return out
}

func TestQ3_RealOpenArenaReplies(t *testing.T) {
	info, err := Q3.parse(xxd(t, "openarena_infoResponse.hex"))
	if err != nil {
		t.Fatal(err)
	}
	// The capture answered someone else's 8-digit challenge: not ours.
	if !info.hasToken || info.token != 0 || info.kind != q3Info {
		t.Errorf("infoResponse: %+v; want a token no send has", info)
	}
	bare, err := Q3.parse(xxd(t, "openarena_infoResponse_nochallenge.hex"))
	if err != nil || bare.hasToken || bare.kind != q3Info {
		t.Errorf("bare infoResponse: %+v, %v; want matched by address and kind", bare, err)
	}
	status, err := Q3.parse(xxd(t, "openarena_statusResponse_3bots.hex"))
	if err != nil || status.kind != q3Status {
		t.Fatalf("statusResponse: %+v, %v", status, err)
	}
	_, err = Q3.parse(xxd(t, "openarena_print_gamemismatch.hex"))
	if err == nil || !strings.Contains(err.Error(), "Game mismatch") {
		t.Errorf("print: err %v; want the server's text", err)
	}

	// Both replies into one result, status first: the infoResponse keys
	// still lead.
	var res Result
	for _, r := range []reply{status, bare} {
		st := step{kind: r.kind}
		if _, done, err := Q3.handle(&st, r, &res); err != nil || !done {
			t.Fatalf("handle: %v", err)
		}
	}
	if res.Name != "oa-peer-28960" || res.Map != "oa_dm1" || res.NumPlayers != 3 || res.MaxPlayers != 8 ||
		res.GameType != "0" || res.Protocol != "71" {
		t.Errorf("summary %+v", res)
	}
	want := []Player{{Name: "Sarge"}, {Name: "Grism"}, {Name: "Kyonshi"}}
	if len(res.Players) != 3 || res.Players[0] != want[0] || res.Players[1] != want[1] || res.Players[2] != want[2] {
		t.Errorf("players %+v", res.Players)
	}
	if res.Info[0].Key != "voip" || len(res.Info) < 40 {
		t.Errorf("info starts %q with %d keys; want the infoResponse keys first", res.Info[0].Key, len(res.Info))
	}
	if _, ok := res.Info.Get("challenge"); ok {
		t.Error("the challenge is in Info")
	}
	if v, _ := res.Info.Get("gamename"); v != "Quake3Arena" {
		t.Errorf("gamename %q; want the infoResponse's, not the statusResponse's baseoa", v)
	}
}

func TestQuery_Q3OverUDP(t *testing.T) {
	for _, echo := range []bool{true, false} {
		t.Run(map[bool]string{true: "challenge echoed", false: "no challenge"}[echo], func(t *testing.T) {
			infoMsg, _ := q3.Parse(xxd(t, "openarena_infoResponse.hex"))
			statusMsg, _ := q3.Parse(xxd(t, "openarena_statusResponse_3bots.hex"))
			addr := responder(t, func(b []byte) [][]byte {
				m, err := q3.Parse(b)
				if err != nil {
					return nil
				}
				var out q3.Message
				switch m := m.(type) {
				case q3.GetInfo:
					r := infoMsg.(q3.InfoResponse)
					r.Info = append(r.Info[:0:0], r.Info...)
					r.Info.Delete("challenge")
					if echo {
						r.Info.Set("challenge", m.Challenge)
					}
					out = &r
				case q3.GetStatus:
					r := statusMsg.(q3.StatusResponse)
					r.Info = append(r.Info[:0:0], r.Info...)
					r.Info.Delete("challenge")
					if echo {
						r.Info.Set("challenge", m.Challenge)
					}
					out = &r
				default:
					return nil
				}
				enc, err := out.AppendBinary(nil)
				if err != nil {
					t.Error(err)
				}
				return [][]byte{enc}
			})
			r, c := queryOne(t, &Prober{}, Target{addr, Q3})
			if r.Err != nil || r.Attempts != 1 || r.Name != "oa-peer-28960" || len(r.Players) != 3 {
				t.Fatalf("result %+v", r)
			}
			if c.Sent != 2 || c.Matched != 2 || c.Unknown+c.Garbled+c.Late != 0 {
				t.Errorf("counts %+v", c)
			}
		})
	}
}

func TestQuery_Q3ForeignChallengeIsNotAccepted(t *testing.T) {
	// A server (or spoofer) answering with a challenge scout never sent.
	canned := xxd(t, "openarena_infoResponse.hex")
	addr := responder(t, func([]byte) [][]byte { return [][]byte{canned} })
	r, c := queryOne(t, &Prober{Timeout: 50 * time.Millisecond, Attempts: 1}, Target{addr, Q3Info})
	if !errors.Is(r.Err, ErrTimeout) || c.Unknown != 1 || c.Matched != 0 {
		t.Fatalf("err %v, counts %+v; want the reply dropped as unknown", r.Err, c)
	}
}

func TestStripColours(t *testing.T) {
	for in, want := range map[string]string{
		"^1scout ^7interop": "scout interop",
		"plain":             "plain",
		"a^^b":              "a^", // the second ^ escapes b
		"end^":              "end^",
		"^xX^":              "X^",
		"^!keep":            "^!keep",
	} {
		if got := StripColours(in); got != want {
			t.Errorf("StripColours(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQ3Challenge_RoundTripAndOneSpelling(t *testing.T) {
	toks := []uint64{1, 61, 62, 0x0f1e2d3c4b5a6978, 0x8796a5b4c3d2e1f0, math.MaxUint64 - 1, math.MaxUint64}
	for i := range 1000 {
		toks = append(toks, rand.Uint64()>>(i%64))
	}
	for _, tok := range toks {
		c := q3Challenge(tok)
		if len(c) != Q3ChallengeLen {
			t.Fatalf("q3Challenge(%#x) = %q: %d bytes, want %d", tok, c, len(c), Q3ChallengeLen)
		}
		if err := q3.ValidateChallenge(c); err != nil {
			t.Fatalf("q3Challenge(%#x) = %q: %v", tok, c, err)
		}
		for j := 0; j < len(c); j++ {
			if !isAlnum(c[j]) {
				t.Fatalf("q3Challenge(%#x) = %q: byte %q is no letter or digit", tok, c, c[j])
			}
		}
		if got, ok := parseQ3Challenge(c); !ok || got != tok {
			t.Fatalf("parseQ3Challenge(%q) = %#x, %v; want %#x", c, got, ok, tok)
		}
	}
	// The largest token is the largest challenge; one past it overflows.
	if c := q3Challenge(math.MaxUint64); c != "LygHa16AHYF" {
		t.Errorf("q3Challenge(MaxUint64) = %q", c)
	}
	for _, bad := range []string{
		"", "0", "0000000000", "000000000000", // lengths
		"LygHa16AHYG", "zzzzzzzzzzz", "M0000000000", // past 64 bits
		"0000000000-", "00000 00000", "0000000000\x00", "000000000\xc3\xa9", // not in the alphabet
		"0123456789abcdef", // the old 16-hex-digit form
	} {
		if tok, ok := parseQ3Challenge(bad); ok {
			t.Errorf("parseQ3Challenge(%q) = %#x, true; want refused", bad, tok)
		}
	}
}

func TestQ3_ReplyWithUndecodableChallengeIsNoOnesToken(t *testing.T) {
	info, err := q3.Parse(xxd(t, "openarena_infoResponse.hex"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"LygHa16AHYG", "0123456789abcdef", "1ITGmfJN2w", "1ITGmfJN2w!"} {
		r := info.(q3.InfoResponse)
		r.Info = append(r.Info[:0:0], r.Info...)
		r.Info.Set("challenge", c)
		b, err := r.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Q3.parse(b)
		if err != nil || !rep.hasToken || rep.token != 0 {
			t.Errorf("challenge %q: %+v, %v; want token 0 (unknown)", c, rep, err)
		}
	}
}

// FuzzQ3Parse: any datagram is read without panicking; a reply that
// parses carries either no challenge (matched by address) or a token that
// is 0 (no send has it) or whose spelling is exactly the echoed challenge.
func FuzzQ3Parse(f *testing.F) {
	for _, name := range []string{"openarena_infoResponse.hex", "openarena_infoResponse_nochallenge.hex",
		"openarena_statusResponse_3bots.hex", "openarena_print_gamemismatch.hex"} {
		f.Add(xxd(f, name))
	}
	f.Add([]byte("\xff\xff\xff\xffinfoResponse\n\\challenge\\1ITGmfJN2wC\\hostname\\x"))
	f.Add([]byte("\xff\xff\xff\xffstatusResponse\n\\challenge\\LygHa16AHYG\\sv_hostname\\x\n0 0 \"a\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := Q3.parse(b)
		if err != nil {
			return
		}
		var info interface{ Get(string) (string, bool) }
		switch m := rep.msg.(type) {
		case q3.InfoResponse:
			info = m.Info
		case q3.StatusResponse:
			info = m.Info
		default:
			t.Fatalf("parse returned %T", rep.msg)
		}
		c, has := info.Get("challenge")
		if has != rep.hasToken {
			t.Fatalf("challenge %q present %v, hasToken %v", c, has, rep.hasToken)
		}
		if has && rep.token != 0 && q3Challenge(rep.token) != c {
			t.Fatalf("challenge %q read as %#x, which is spelt %q", c, rep.token, q3Challenge(rep.token))
		}
	})
}

// TestQ3_InfoAndStatusKeysBothKept: where a server's infoResponse and
// statusResponse give a key different values (OpenArena's gamename:
// Quake3Arena and baseoa, in these captures), Info keeps the
// infoResponse's and StatusInfo the statusResponse's, whichever came
// first.
func TestQ3_InfoAndStatusKeysBothKept(t *testing.T) {
	info, err := Q3.parse(xxd(t, "openarena_infoResponse_nochallenge.hex"))
	if err != nil {
		t.Fatal(err)
	}
	status, err := Q3.parse(xxd(t, "openarena_statusResponse_3bots.hex"))
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]reply{{info, status}, {status, info}} {
		var res Result
		for _, r := range order {
			st := step{kind: r.kind}
			if _, _, err := Q3.handle(&st, r, &res); err != nil {
				t.Fatal(err)
			}
		}
		if v, _ := res.Info.Get("gamename"); v != "Quake3Arena" {
			t.Errorf("Info gamename %q, want the infoResponse's Quake3Arena", v)
		}
		if v, ok := res.StatusInfo.Get("gamename"); !ok || v != "baseoa" {
			t.Errorf("StatusInfo %v, want the statusResponse's gamename baseoa", res.StatusInfo)
		}
		for _, p := range res.StatusInfo {
			if v, _ := res.Info.Get(p.Key); v == p.Value {
				t.Errorf("StatusInfo holds %s=%q, which Info has too", p.Key, p.Value)
			}
		}
	}
}
