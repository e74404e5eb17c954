package infostring

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/xxd"
)

// infoOf returns the info string of a Quake III response packet: the text
// after the first newline up to the next newline or the end.
func infoOf(t testing.TB, pkt []byte) string {
	t.Helper()
	_, rest, ok := bytes.Cut(pkt, []byte("\n"))
	if !ok {
		t.Fatal("no newline in packet")
	}
	s, _, _ := bytes.Cut(rest, []byte("\n"))
	return string(s)
}

func TestParse_OpenArenaVectors(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		pairs int
		want  map[string]string
	}{
		{
			name:  "openarena-0.8.8/infoResponse",
			file:  "testdata/openarena_infoResponse.hex",
			pairs: 12,
			want: map[string]string{
				"voip": "opus", "g_needpass": "0", "pure": "1", "gametype": "0",
				"sv_maxclients": "8", "g_humanplayers": "0", "clients": "3",
				"mapname": "oa_dm1", "hostname": "oa-peer-28960", "protocol": "71",
				"gamename": "Quake3Arena", "challenge": "16054539",
			},
		},
		{
			name:  "openarena-0.8.8/statusResponse-3bots",
			file:  "testdata/openarena_statusResponse_3bots.hex",
			pairs: 44,
			want: map[string]string{
				"challenge": "51cbb02a", "sv_hostname": "oa-peer-28960",
				"version":               "ioq3 1.36+u20221123.70d07d9+dfsg-1/Debian linux-x86_64 Jan  8 2023",
				"g_voteGametypes":       "/0/1/3/4/5/6/7/8/9/10/11/12/",
				"gamename":              "baseoa",
				"g_timestamp":           "2026-11-22 01:56:40",
				"sv_floodProtect":       "1",
				"elimination_roundtime": "120",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := infoOf(t, xxd.ReadFile(t, tt.file))
			info, err := Parse(s)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(info) != tt.pairs {
				t.Errorf("got %d pairs, want %d", len(info), tt.pairs)
			}
			for k, v := range tt.want {
				got, ok := info.Get(k)
				if !ok || got != v {
					t.Errorf("Get(%q) = %q, %v; want %q, true", k, got, ok, v)
				}
			}
			// The encoding is the wire bytes exactly.
			b, err := info.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != s {
				t.Errorf("re-encoded differs:\n got %q\nwant %q", b, s)
			}
			if err := info.Validate(MaxBigInfoString); err != nil {
				t.Errorf("a real server's info string fails Validate: %v", err)
			}
		})
	}
}

func TestGet_MissingIsNotEmpty(t *testing.T) {
	info, err := Parse(`\needpass\\hostname\x`)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := info.Get("needpass"); !ok || v != "" {
		t.Errorf(`Get("needpass") = %q, %v; want "", true`, v, ok)
	}
	if v, ok := info.Get("password"); ok || v != "" {
		t.Errorf(`Get("password") = %q, %v; want "", false`, v, ok)
	}
}

func TestGet_KeyCaseIgnoredSpellingKept(t *testing.T) {
	info, err := Parse(`\sv_hostName\A\Sv_HostName\B`)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := info.Get("SV_HOSTNAME"); !ok || v != "A" {
		t.Errorf("Get = %q, %v; want the first match %q", v, ok, "A")
	}
	info.Set("sv_hostname", "C")
	if got := info.String(); got != `\sv_hostName\C\Sv_HostName\B` {
		t.Errorf("after Set: %q", got)
	}
	if !info.Delete("SV_HOSTNAME") || len(info) != 0 {
		t.Errorf("Delete left %v", info)
	}
	info.Set("new", "1")
	if got := info.String(); got != `\new\1` {
		t.Errorf("Set on a missing key: %q", got)
	}
}

func TestInt(t *testing.T) {
	info, _ := Parse(`\clients\3\sv_maxclients\\bad\x`)
	if n, err := info.Int("clients"); err != nil || n != 3 {
		t.Errorf("Int(clients) = %d, %v", n, err)
	}
	if _, err := info.Int("protocol"); !errors.Is(err, ErrMissing) {
		t.Errorf("Int(missing) err = %v, want ErrMissing", err)
	}
	if _, err := info.Int("sv_maxclients"); err == nil || errors.Is(err, ErrMissing) {
		t.Errorf("Int(empty) err = %v, want a syntax error", err)
	}
	if _, err := info.Int("bad"); err == nil {
		t.Error("Int(non-number) succeeded")
	}
}

func TestParse_LeadingBackslashOptional(t *testing.T) {
	// Enemy Territory's motd reply writes its info string without the
	// leading separator (seed 000, section III.C).
	a, err1 := Parse(`challenge\29862\motd\Welcome`)
	b, err2 := Parse(`\challenge\29862\motd\Welcome`)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("%v %v / %v %v", a, err1, b, err2)
	}
}

// Hostile and malformed inputs: each keeps the pairs before the defect and
// reports it.
func TestParse_Hostile(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		keep    int
		wantErr error
	}{
		{"dangling key", `\a\1\b`, 1, ErrMalformed},
		{"empty key", `\a\1\\x`, 1, ErrMalformed},
		{"NUL in value", "\\a\\1\\b\\x\x00y", 1, ErrMalformed},
		{"newline in key", "\\a\\1\\b\ny\\2", 1, ErrMalformed},
		{"only a separator", `\`, 0, nil},
		{"two separators", `\\`, 0, ErrMalformed},
		{"wrong separator slash", `/a/1/b/2`, 0, ErrMalformed},
		{"wrong separator semicolon", `\a\1;b\2`, 1, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := Parse(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if len(info) != tt.keep {
				t.Errorf("kept %d pairs (%v), want %d", len(info), info, tt.keep)
			}
		})
	}
}

// Overlong keys and values: Parse keeps them exactly (lenient in), and
// Validate refuses them against the engine's limits (strict out).
func TestParse_OverlongKeptValidateRefuses(t *testing.T) {
	long := strings.Repeat("k", MaxBigInfoString+1)
	for _, tt := range []struct{ name, in, key, value string }{
		{"overlong key", `\` + long + `\v`, long, "v"},
		{"overlong value", `\k\` + long, "k", long},
	} {
		t.Run(tt.name, func(t *testing.T) {
			info, err := Parse(tt.in)
			if err != nil || len(info) != 1 || info[0].Key != tt.key || info[0].Value != tt.value {
				t.Fatalf("Parse kept %d pairs, %v; want the one pair as sent", len(info), err)
			}
			if err := info.Validate(MaxBigInfoString); !errors.Is(err, ErrTooLong) {
				t.Fatalf("Validate(MaxBigInfoString) = %v, want ErrTooLong", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("v", MaxInfoString)
	tests := []struct {
		name    string
		info    Info
		limit   int
		wantErr error
	}{
		{"ok", Info{{"hostname", "^1red server"}}, MaxInfoString, nil},
		{"quote in value", Info{{"hostname", `a"b`}}, 0, ErrInvalid},
		{"semicolon in key", Info{{"a;b", "1"}}, 0, ErrInvalid},
		{"backslash in value", Info{{"a", `x\y`}}, 0, ErrInvalid},
		{"control byte", Info{{"a", "x\x01"}}, 0, ErrInvalid},
		{"DEL", Info{{"a", "x\x7f"}}, 0, ErrInvalid},
		{"empty key", Info{{"", "x"}}, 0, ErrInvalid},
		{"overlong value", Info{{"k", long}}, MaxInfoString, ErrTooLong},
		{"overlong key", Info{{long, "v"}}, MaxInfoString, ErrTooLong},
		{"overlong fits big", Info{{"k", long}}, MaxBigInfoString, nil},
		{"no limit", Info{{"k", long + long}}, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.info.Validate(tt.limit); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Validate = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestAppendBinary_RefusesWhatTheWireCannotCarry(t *testing.T) {
	for _, info := range []Info{
		{{"", "x"}},
		{{`a\b`, "x"}},
		{{"a", `x\y`}},
		{{"a", "x\x00"}},
		{{"a", "x\n"}},
	} {
		if b, err := info.AppendBinary([]byte("keep")); !errors.Is(err, ErrMalformed) || string(b) != "keep" {
			t.Errorf("%q: AppendBinary = %q, %v; want ErrMalformed and b unchanged", info, b, err)
		}
	}
	// Bytes the engine would refuse but the wire carries are encoded as
	// they are: decoding is lenient, so encoding must not lose them.
	info := Info{{"hostname", "caf\xe9 \"q;\""}}
	b, err := info.AppendBinary(nil)
	if err != nil || string(b) != "\\hostname\\caf\xe9 \"q;\"" {
		t.Errorf("AppendBinary = %q, %v", b, err)
	}
}

func TestGolden(t *testing.T) {
	info := Info{{"protocol", "68"}, {"hostname", "EDs LAN Party"}, {"challenge", "xxx"}}
	b, err := info.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	const want = "5c70726f746f636f6c5c36385c686f73746e616d655c454473204c414e2050617274795c6368616c6c656e67655c787878"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("golden:\n got %s\nwant %s", got, want)
	}
	back, err := Parse(string(b))
	if err != nil || !reflect.DeepEqual(back, info) {
		t.Fatalf("parsed back %v, %v", back, err)
	}
}

func TestJSON_KeepsOrder(t *testing.T) {
	info := Info{{"z", "1"}, {"a", "2"}, {"m", `q"uote`}}
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"z":"1","a":"2","m":"q\"uote"}` {
		t.Fatalf("Marshal = %s", b)
	}
	var back Info
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, info) {
		t.Fatalf("Unmarshal = %v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`["a"]`), &back); err == nil {
		t.Error("Unmarshal of an array succeeded")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(infoOf(f, xxd.ReadFile(f, "testdata/openarena_infoResponse.hex")))
	f.Add(infoOf(f, xxd.ReadFile(f, "testdata/openarena_statusResponse_3bots.hex")))
	f.Add(`\a\\b\`)
	f.Add(`challenge\1\motd\x`)
	f.Fuzz(func(t *testing.T, s string) {
		info, err := Parse(s)
		if err != nil {
			return
		}
		b, err := info.AppendBinary(nil)
		if err != nil {
			t.Fatalf("Parse accepted %q but AppendBinary refused %v: %v", s, info, err)
		}
		again, err := Parse(string(b))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", b, err)
		}
		if len(info) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(info, again) {
			t.Fatalf("round trip changed %v into %v", info, again)
		}
		if info.Len() != len(b) {
			t.Fatalf("Len = %d, encoded %d", info.Len(), len(b))
		}
	})
}
