package discover

import "testing"

func TestParseHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3.4":          "1.2.3.4:27960",
		"1.2.3.4:28960":    "1.2.3.4:28960",
		"::1":              "[::1]:27960",
		"[::1]":            "[::1]:27960",
		"[2001:db8::1]:5":  "[2001:db8::1]:5",
		"[::ffff:1.2.3.4]": "1.2.3.4:27960",
	} {
		hp, err := ParseHostPort(in, 27960)
		if err != nil || hp.Literal.String() != want {
			t.Errorf("ParseHostPort(%q) = %v, %v; want %s", in, hp.Literal, err, want)
		}
	}
	if hp, err := ParseHostPort("example.org:27961", 27960); err != nil || hp.Host != "example.org" || hp.Port != 27961 {
		t.Errorf("host:port = %+v, %v", hp, err)
	}
	for _, bad := range []string{"1.2.3.4:99999", "host:port", "a:b:c", "", "[::1", "ho st"} {
		if _, err := ParseHostPort(bad, 27960); err == nil {
			t.Errorf("ParseHostPort(%q) accepted", bad)
		}
	}
}
