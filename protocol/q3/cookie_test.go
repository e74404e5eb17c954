package q3

import (
	"errors"
	"testing"
)

func TestCookie_RoundTrip(t *testing.T) {
	for _, c := range []Cookie{{Token: "AbCdEf0123456789"}, {Token: "x_-Y", Again: true}} {
		b, err := c.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseCookie(b)
		if err != nil || got != c {
			t.Errorf("%q: %+v, %v", b, got, err)
		}
		// Cut before its token, it fails with the sentinel. (Cut in
		// its token it reads as a shorter one, which a master refuses:
		// UDP delivers whole datagrams.)
		for i := range len(cookieHeader) + 1 {
			if _, err := ParseCookie(b[:i]); err == nil || (i >= len(Prefix) && i < len(cookieHeader) && !errors.Is(err, ErrTruncated)) {
				t.Errorf("prefix %q: %v", b[:i], err)
			}
		}
	}
	golden := "\xff\xff\xff\xffcookie AbCd again"
	if b, _ := (Cookie{Token: "AbCd", Again: true}).AppendBinary(nil); string(b) != golden {
		t.Errorf("%q, want %q", b, golden)
	}
}

func TestCookie_Hostile(t *testing.T) {
	for _, bad := range []string{"\xff\xff\xff\xffcookie ", "\xff\xff\xff\xffcookie a\\b", "\xff\xff\xff\xffcookie ab maybe",
		"\xff\xff\xff\xffcookie " + string(make([]byte, 70)), "\xff\xff\xff\xffgetinfo x"} {
		if _, err := ParseCookie([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if _, err := ParseCookie([]byte("cookie x")); !errors.Is(err, ErrNotQ3) {
		t.Errorf("no prefix: %v", err)
	}
	if _, err := (Cookie{Token: "a b"}).AppendBinary(nil); err == nil {
		t.Error("a token with a space encoded")
	}
}

// A request's words: the bare word asks, cookie=TOKEN echoes; a bad
// token asks afresh; a master that does not know the word keeps it among
// the unknown ones, as dpmaster skips it.
func TestCookieOf(t *testing.T) {
	for _, c := range []struct {
		other []string
		token string
		asked bool
	}{
		{nil, "", false},
		{[]string{"landmarks"}, "", false},
		{[]string{"cookie"}, "", true},
		{[]string{"cookie=Ab_9"}, "Ab_9", true},
		{[]string{"cookie=a\"b"}, "", true},
	} {
		tok, asked := CookieOf(c.other)
		if tok != c.token || asked != c.asked {
			t.Errorf("%q: %q %v", c.other, tok, asked)
		}
	}
	m, err := Parse([]byte("\xff\xff\xff\xffgetservers 68 empty full cookie=Ab_9"))
	if err != nil {
		t.Fatal(err)
	}
	if tok, _ := CookieOf(m.(GetServers).Other); tok != "Ab_9" {
		t.Errorf("parsed request echoes %q", tok)
	}
}

func FuzzParseCookie(f *testing.F) {
	f.Add([]byte("\xff\xff\xff\xffcookie AbCd again"))
	f.Add([]byte("\xff\xff\xff\xffcookie AbCd"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCookie(b)
		if err != nil {
			return
		}
		out, err := c.AppendBinary(nil)
		if err != nil {
			t.Fatalf("%+v parsed but does not encode: %v", c, err)
		}
		if c2, err := ParseCookie(out); err != nil || c2 != c {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", b, c, out, c2, err)
		}
	})
}
