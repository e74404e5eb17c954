package gametext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecode_QuakeHighGlyphsRepeatTheLowHalf(t *testing.T) {
	for raw, want := range map[string]string{
		"Plain":                    "Plain",
		"\xc1\xe2\xe3":             "Abc", // 0x80 | 'A', 'b', 'c'
		"\x10\x12\x13\x11 tag":     "[01] tag",
		"dot\x05\x8e":              "dot••",
		"\x9d\x9e\x9f":             "───",
		"^1Red\xa0\xde":            "^1Red ^",
		"caf\xc3\xa9":              "café", // valid UTF-8: a DarkPlaces server with UTF-8 enabled
		"\xee\x80\x81\xee\x83\x81": "▪A",   // DarkPlaces' private-use glyphs U+E001, U+E0C1
	} {
		if got := Quake.Decode(raw); got != want {
			t.Errorf("Quake.Decode(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestDecode_Latin1WhereTheGameMeansIt(t *testing.T) {
	if got := Latin1.Decode("M\xfcller \xa9"); got != "Müller ©" {
		t.Errorf("Latin1.Decode = %q", got)
	}
	if got := UTF8.Decode("na\xefve caf\xc3\xa9"); got != "naïve café" {
		t.Errorf("UTF8.Decode of a stray Latin-1 byte = %q", got)
	}
	for dialect, want := range map[string]Charset{"q3": Quake, "q4": Latin1, "gs4": Latin1, "a2s": UTF8, "": Quake,
		"doom3": Latin1, "gamespy4": Latin1, "source": UTF8} {
		if got := For(dialect); got != want {
			t.Errorf("For(%q) = %v, want %v", dialect, got, want)
		}
	}
}

func TestStripColours_AsTheGamesDo(t *testing.T) {
	for in, want := range map[string]string{
		"^1Red^7White": "RedWhite",
		"^^smile^":     "^smile^",
		"a^!b":         "a^!b", // not a letter or digit: ioquake3 draws it
		"^c900Quake4":  "Quake4",
		"^xF80Xonotic": "Xonotic",
		"^xZZZ":        "ZZZ",
		"^":            "^",
		"no codes":     "no codes",
		"^a^B^z":       "",
		// The server browser page's cases, from when it had a stripper
		// of its own.
		"plain":            "plain",
		"^^caret":          "^caret",
		"end^":             "end^",
		"^c900Quake^c0004": "Quake4",
		"^c90":             "90", // not three digits: "^c" alone is the code
		"^a^b^c":           "",
		"ünï^3code":        "ünïcode",
	} {
		if got := StripColours(in); got != want {
			t.Errorf("StripColours(%q) = %q, want %q", in, got, want)
		}
	}
	// A control byte is no colour code: the Quake font draws it (the
	// page's stripper dropped it, which no game does).
	if got := Quake.Plain("tab\there"); got != "tab▪here" {
		t.Errorf("Quake.Plain of a tab = %q", got)
	}
	if got := Quake.Plain("\xde1A"); got != "^1A" {
		t.Errorf("a high byte drawn as '^' started a colour code: %q", got)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{"^1Red", "\xc1\xe2", "caf\xc3\xa9", "\xee\x80\x81", "\xff\xfe", "^c900x", "^xF80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, cs := range []Charset{Quake, Latin1, UTF8} {
			d := cs.Decode(raw)
			if !utf8.ValidString(d) || strings.ContainsRune(d, utf8.RuneError) && !strings.ContainsRune(raw, utf8.RuneError) {
				t.Fatalf("%v.Decode(%q) = %q: invalid or lossy", cs, raw, d)
			}
			if utf8.RuneCountInString(d) < utf8.RuneCountInString(StripColours(raw))/4 {
				t.Fatalf("%v.Decode(%q) lost characters: %q", cs, raw, d)
			}
			if p := cs.Plain(raw); len(p) > 3*len(raw) {
				t.Fatalf("%v.Plain(%q) grew to %d bytes", cs, raw, len(p))
			}
		}
	})
}
