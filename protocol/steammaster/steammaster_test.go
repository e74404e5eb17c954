package steammaster

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/xxd"
)

func TestParse_QstatQuery(t *testing.T) {
	b := xxd.ReadFile(t, "testdata/qstat_req_stm_query.hex")
	m, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Query{Region: RegionAll, Seed: FirstSeed(), Filter: ""}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("qstat-2.17/stm-query: got %#v, want %#v", m, want)
	}
	if enc := mustEncode(t, m); !bytes.Equal(enc, b) {
		t.Fatalf("re-encoded % x, want % x", enc, b)
	}
}

func goldenMessages() map[string]Message {
	return map[string]Message{
		"ours_query_seeded_filter.hex": Query{Region: RegionEurope, Seed: netip.MustParseAddrPort("192.0.2.7:27015"), Filter: `\appid\240\gamedir\cstrike`},
		"ours_reply_end.hex":           Reply{Servers: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:27015")}, End: true},
		"ours_reply_more.hex": Reply{Servers: []netip.AddrPort{
			netip.MustParseAddrPort("192.0.2.1:27015"), netip.MustParseAddrPort("198.51.100.2:27016")}},
	}
}

func TestGoldens(t *testing.T) {
	for name, m := range goldenMessages() {
		t.Run(name, func(t *testing.T) {
			b := mustEncode(t, m)
			xxd.Golden(t, "testdata/"+name, b, os.Getenv("STM_UPDATE") != "")
			got, err := Parse(b)
			if err != nil || !reflect.DeepEqual(got, m) {
				t.Fatalf("parsed back %#v, %v; want %#v", got, err, m)
			}
		})
	}
}

func TestTruncatedPrefixes(t *testing.T) {
	inputs := map[string][]byte{"qstat_req_stm_query.hex": xxd.ReadFile(t, "testdata/qstat_req_stm_query.hex")}
	for name, m := range goldenMessages() {
		inputs[name] = mustEncode(t, m)
	}
	for name, b := range inputs {
		for n := 1; n < len(b); n++ {
			p := b[:n]
			m, err := Parse(p)
			if err == nil {
				// A reply cut at an entry boundary is a whole reply without
				// the terminator.
				if enc := mustEncode(t, m); !bytes.Equal(enc, p) {
					t.Errorf("%s[:%d] parsed as %#v, encodes to % x", name, n, m, enc)
				}
				continue
			}
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("%s[:%d]: %v, want ErrTruncated", name, n, err)
			}
		}
	}
	if _, err := Parse(nil); !errors.Is(err, ErrNotSteamMaster) {
		t.Errorf("empty: %v", err)
	}
}

func TestParseReply_PartialEntryKeepsWhatParsed(t *testing.T) {
	b := mustEncode(t, goldenMessages()["ours_reply_more.hex"])
	r, err := ParseReply(b[:len(b)-2])
	if !errors.Is(err, ErrTruncated) || len(r.Servers) != 1 || r.Servers[0] != netip.MustParseAddrPort("192.0.2.1:27015") {
		t.Fatalf("got %#v, %v", r, err)
	}
	// Parse hands the partial reply on too.
	m, err := Parse(b[:len(b)-2])
	if !errors.Is(err, ErrTruncated) || !reflect.DeepEqual(m, r) {
		t.Fatalf("Parse: %#v, %v", m, err)
	}
}

func TestReply_Next(t *testing.T) {
	more := goldenMessages()["ours_reply_more.hex"].(Reply)
	if seed, ok := more.Next(); !ok || seed != netip.MustParseAddrPort("198.51.100.2:27016") {
		t.Fatalf("Next = %v, %v", seed, ok)
	}
	if _, ok := (Reply{Servers: more.Servers, End: true}).Next(); ok {
		t.Fatal("Next after the terminator")
	}
	if _, ok := (Reply{}).Next(); ok {
		t.Fatal("Next of an empty reply")
	}
}

func TestSplitReply(t *testing.T) {
	var all []netip.AddrPort
	for i := range 500 {
		all = append(all, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), 27015))
	}
	for _, tc := range []struct {
		n, budget, packets int
	}{
		{500, MaxReplySize, 3}, // 231 + 231 + 38 and the terminator
		{231, MaxReplySize, 2}, // a full packet, then the terminator alone
		{0, MaxReplySize, 1},   // only the terminator
		{5, HeaderSize + 2*EntrySize, 3},
	} {
		replies, err := SplitReply(all[:tc.n], tc.budget)
		if err != nil {
			t.Fatal(err)
		}
		if len(replies) != tc.packets {
			t.Errorf("%d servers, budget %d: %d packets, want %d", tc.n, tc.budget, len(replies), tc.packets)
		}
		// A client walking the packets gets every server back, in order.
		var got []netip.AddrPort
		for i, r := range replies {
			b := mustEncode(t, r)
			if len(b) > tc.budget {
				t.Errorf("packet %d is %d bytes, budget %d", i, len(b), tc.budget)
			}
			p, err := ParseReply(b)
			if err != nil {
				t.Fatal(err)
			}
			if p.End != (i == len(replies)-1) {
				t.Errorf("packet %d: End %v", i, p.End)
			}
			got = append(got, p.Servers...)
		}
		if !reflect.DeepEqual(got, all[:tc.n]) && tc.n > 0 {
			t.Errorf("%d servers: got back %d", tc.n, len(got))
		}
	}
	if _, err := SplitReply(all, HeaderSize+EntrySize-1); !errors.Is(err, ErrBadField) {
		t.Fatalf("tiny budget: %v", err)
	}
}

func TestFilter(t *testing.T) {
	s, err := Filter{AppID: 240, GameDir: "cstrike", Dedicated: true, Secure: true, NotEmpty: true, Raw: `\map\de_dust`}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := `\appid\240\gamedir\cstrike\dedicated\1\secure\1\empty\1\map\de_dust`; s != want {
		t.Fatalf("got %q, want %q", s, want)
	}
	if s, _ := (Filter{}).Encode(); s != "" {
		t.Fatalf("empty filter: %q", s)
	}
	if _, err := (Filter{Map: `de\dust`}).Encode(); !errors.Is(err, ErrBadField) {
		t.Fatalf("backslash in value: %v", err)
	}
}

func TestHostile(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want error
	}{
		{"seed not an address", "1\xffhello\x00\x00", ErrMalformed},
		{"seed IPv6", "1\xff[::1]:0\x00\x00", ErrMalformed},
		{"bytes after filter", "1\xff0.0.0.0:0\x00\x00junk", ErrMalformed},
		{"filter unterminated", "1\xff0.0.0.0:0\x00\\appid\\240", ErrTruncated},
		{"filter overlong", "1\xff0.0.0.0:0\x00" + strings.Repeat("\\appid\\240", MaxFilterLen/10+1) + "\x00", ErrMalformed},
		{"seed overlong", "1\xff" + strings.Repeat("9", 4096) + "\x00\x00", ErrMalformed},
		{"seed with wrong separator", "1\xff0.0.0.0;0\x00\x00", ErrMalformed},
		{"a2s header", "\xff\xff\xff\xffI\x11", ErrNotSteamMaster},
		{"reply wrong second byte", "\xff\xff\xff\xfff\x0b", ErrNotSteamMaster},
		{"reply half entry", "\xff\xff\xff\xfff\n\x7f\x00\x00", ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.in)); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	for _, m := range []Message{
		Query{Seed: netip.MustParseAddrPort("[::1]:1")},
		Query{Seed: FirstSeed(), Filter: "a\x00b"},
		Query{Seed: FirstSeed(), Filter: strings.Repeat("f", MaxFilterLen+1)},
		Reply{Servers: []netip.AddrPort{FirstSeed()}},
		Reply{Servers: []netip.AddrPort{netip.MustParseAddrPort("[2001:db8::1]:1")}},
	} {
		if _, err := m.AppendBinary(nil); !errors.Is(err, ErrBadField) {
			t.Errorf("%#v: %v, want ErrBadField", m, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(xxd.ReadFile(f, "testdata/qstat_req_stm_query.hex"))
	for _, m := range goldenMessages() {
		b, err := m.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if m == nil {
			return
		}
		_ = err // a partial reply comes with ErrTruncated and still round-trips
		enc, err := m.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", m, err)
		}
		m2, err := Parse(enc)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed %#v to %#v (%v)", m, m2, err)
		}
	})
}
