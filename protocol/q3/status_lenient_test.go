package q3

import (
	"errors"
	"reflect"
	"testing"

	"github.com/scout-discovery/scout/protocol/infostring"
)

// TestParseStatusResponse_BadPlayerLineCostsThatLineOnly: a player line
// that does not read is kept in BadLines and the other players are read,
// as quakestat and gamedig do.
func TestParseStatusResponse_BadPlayerLineCostsThatLineOnly(t *testing.T) {
	info := infostring.Info{{Key: "a", Value: "1"}}
	ok1, ok2 := Player{Score: 1, Ping: 2, Name: "ok"}, Player{Score: 5, Ping: 0, Name: "^1bot"}
	for _, tc := range []struct {
		name, line string
	}{
		{"missing-closing-quote", `3 4 "broken`},
		{"missing-opening-quote", `3 4 broken"`},
		{"bytes-after-name", `3 4 "a" b`},
		{"one-number", `3 "a"`},
		{"non-numeric-score", `x 4 "a"`},
		{"huge-score", `99999999999 4 "a"`},
		{"nul-in-name", "1 4 \"a\x00\""},
		{"empty", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Prefix + "statusResponse\n\\a\\1\n1 2 \"ok\"\n" + tc.line + "\n5 0 \"^1bot\"\n"
			m, err := Parse([]byte(in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := StatusResponse{Info: info, Players: []Player{ok1, ok2}, BadLines: []string{tc.line}}
			if !reflect.DeepEqual(m, want) {
				t.Fatalf("Parse =\n%#v\nwant\n%#v", m, want)
			}
		})
	}
}

// TestParseStatusResponse_StrayQuoteKeptInTheName: a name runs from the
// first quote to the last, so a '"' inside it costs nothing; ten players
// with one such name are ten players.
func TestParseStatusResponse_StrayQuoteKeptInTheName(t *testing.T) {
	in := Prefix + "statusResponse\n\\sv_hostname\\x\n"
	var want []Player
	for i := range 10 {
		name := "player" + string(rune('0'+i))
		if i == 4 {
			name = `the "quoted" one`
		}
		in += string(rune('0'+i)) + " 50 \"" + name + "\"\n"
		want = append(want, Player{Score: i, Ping: 50, Name: name})
	}
	m, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	r := m.(StatusResponse)
	if !reflect.DeepEqual(r.Players, want) || r.BadLines != nil {
		t.Fatalf("players %#v, bad lines %q", r.Players, r.BadLines)
	}
	out, err := r.AppendBinary(nil)
	if err != nil || string(out) != in {
		t.Fatalf("AppendBinary = %q, %v; want the packet back", out, err)
	}
}

// TestParseQuery_TrailingSpaceAsDpmaster: a getservers line that ends in
// whitespace is whole to the master and the decoder (ParseQuery), as to
// dpmaster, while Parse calls it truncated; anything else reads as Parse
// reads it.
func TestParseQuery_TrailingSpaceAsDpmaster(t *testing.T) {
	for _, in := range []string{"getservers 20 ", "getservers 84 empty  ", "getserversExt Xonotic 3 ipv6\t", "getservers OpenArena 71 "} {
		if _, err := Parse([]byte(Prefix + in)); !errors.Is(err, ErrTruncated) {
			t.Errorf("Parse(%q) error %v, want ErrTruncated", in, err)
		}
		m, err := ParseQuery([]byte(Prefix + in))
		if _, ok := m.(GetServers); !ok || err != nil {
			t.Errorf("ParseQuery(%q) = %#v, %v; want the query", in, m, err)
		}
	}
	for _, in := range []string{"getservers ", "getservers 68 gametype= ", "statusResponse\n\\a\\", "getinfo "} {
		m1, err1 := Parse([]byte(Prefix + in))
		m2, err2 := ParseQuery([]byte(Prefix + in))
		if !reflect.DeepEqual(m1, m2) || (err1 == nil) != (err2 == nil) {
			t.Errorf("%q: ParseQuery = %#v, %v; Parse = %#v, %v", in, m2, err2, m1, err1)
		}
	}
}

// FuzzParseQuery: ParseQuery never panics, and differs from Parse only by
// accepting a getservers line that ends in whitespace.
func FuzzParseQuery(f *testing.F) {
	seedAll(f)
	f.Add([]byte(Prefix + "getservers 20 "))
	f.Fuzz(func(t *testing.T, b []byte) {
		m1, err1 := Parse(b)
		m2, err2 := ParseQuery(b)
		if !reflect.DeepEqual(m1, m2) {
			t.Fatalf("ParseQuery(%q) = %#v, Parse %#v", b, m2, m1)
		}
		if (err1 == nil) != (err2 == nil) {
			if _, ok := m1.(GetServers); !ok || !errors.Is(err1, ErrTruncated) || err2 != nil {
				t.Fatalf("ParseQuery(%q) error %v, Parse %v", b, err2, err1)
			}
		}
	})
}
