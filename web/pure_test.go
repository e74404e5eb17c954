package web

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/gametext"
)

// TestNames_AsTheirGameDrawsThem: a server's name and its players' are
// drawn with their game's character set and stripped of colour codes by
// package gametext, the one stripper (its tests hold the page's old
// cases): Quake III's high glyphs, Latin-1 for the Doom 3 family.
func TestNames_AsTheirGameDrawsThem(t *testing.T) {
	q3 := gametext.For(game.FamilyQ3.String())
	d3 := gametext.For(game.FamilyDoom3.String())
	for _, c := range []struct {
		cs              gametext.Charset
		raw, name, want string
	}{
		{q3, "^1Red^7White", "^1Red^7White", "RedWhite"},
		{q3, "\xc1\xe2\xe3 ^3glyphs", "Abc ^3glyphs", "Abc glyphs"},
		{q3, "a^!b", "a^!b", "a^!b"},
		{d3, "^c900M\xfcller", "^c900Müller", "Müller"},
	} {
		p := playerJSON(c.cs, master.Player{Name: c.raw, Ping: 50})
		if p.Name != c.name || p.NamePlain != c.want || string(p.NameRaw) != c.raw {
			t.Errorf("%q: name %q plain %q raw %q; want %q, %q and the bytes", c.raw, p.Name, p.NamePlain, p.NameRaw, c.name, c.want)
		}
	}
}

// TestParseListQuery: normalisation (two spellings of one query have one
// key) and defaults.
func TestParseListQuery(t *testing.T) {
	q, err := ParseListQuery("")
	if err != nil || q.Sort != SortPlayers || !q.Desc || q.Page != 1 || q.PerPage != DefaultPerPage {
		t.Fatalf("defaults %+v %v", q, err)
	}
	a, err1 := ParseListQuery("game=OpenArena&game=et&country=de&protocol=71&protocol=68&q=%5E1Foo+&sort=name")
	b, err2 := ParseListQuery("sort=name&q=foo&protocol=68&country=DE&game=ET&protocol=71&game=openarena&game=et")
	if err1 != nil || err2 != nil || a.Key() != b.Key() {
		t.Errorf("keys differ:\n%s\n%s (%v %v)", a.Key(), b.Key(), err1, err2)
	}
	if !slices.Equal(a.Games, []string{"et", "openarena"}) || !slices.Equal(a.Protocols, []int{68, 71}) || a.Text != "foo" || a.Desc {
		t.Errorf("%+v", a)
	}
	c, _ := ParseListQuery("sort=name&order=desc&from=au")
	if !c.Desc || c.From != "AU" || !c.FromGiven || c.Key() == a.Key() {
		t.Errorf("%+v", c)
	}
}

func FuzzParseListQuery(f *testing.F) {
	for _, s := range []string{"", "game=et&sort=name&order=desc&page=2&per_page=50", "q=%5E1a", "country=--&empty=true&full=false",
		"protocol=-1", "from=au&sort=ping", "a=b", "page=99999", "q=%zz", "game=%00", "&&&=", "sort=players&sort=name"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseListQuery(raw)
		if err != nil {
			if err.Status != 400 || err.Code == "" || err.Message == "" {
				t.Fatalf("%q: error %+v", raw, err)
			}
			return
		}
		if q.Page < 1 || q.Page > MaxPage || q.PerPage < 1 || q.PerPage > MaxPerPage || !slices.Contains(sortKeys, q.Sort) {
			t.Fatalf("%q: out of bounds %+v", raw, q)
		}
		// The key is a query that parses to the same key (from and the
		// sort order spelled differently aside).
		k := q.Key()
		if strings.Contains(k, "\n") && !strings.Contains(raw, "\n") && !strings.Contains(raw, "%0") {
			t.Fatalf("%q: key %q", raw, k)
		}
	})
}

// row builds a view row for the pure tests.
func testRow(addr, name string, players, max int) row {
	a := netip.MustParseAddrPort(addr)
	r := row{reg: a, pub: a}
	r.Address, r.Name, r.NamePlain, r.Players, r.MaxPlayers = addr, name, gametext.StripColours(name), players, max
	r.nameKey = strings.ToLower(r.NamePlain)
	r.Country = "--"
	return r
}

func order(rows []row, q ListQuery) []string {
	var out []string
	for _, i := range selectRows(rows, &q) {
		out = append(out, rows[i].NamePlain)
	}
	return out
}

// TestSelectRows_StableAcrossRefresh: ties are broken by address, so a
// refresh in which players change moves only the servers whose count
// changed.
func TestSelectRows_StableAcrossRefresh(t *testing.T) {
	rows := []row{
		testRow("192.0.2.3:27960", "C", 3, 8), testRow("192.0.2.1:27960", "Same", 3, 8),
		testRow("192.0.2.2:27960", "Same", 3, 8), testRow("192.0.2.4:27960", "D", 1, 8),
	}
	q, _ := ParseListQuery("")
	if got, want := order(rows, q), []string{"C", "Same", "Same", "D"}; !slices.Equal(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
	idx := selectRows(rows, &q)
	if rows[idx[1]].Address != "192.0.2.1:27960" || rows[idx[2]].Address != "192.0.2.2:27960" {
		t.Errorf("tie not by address: %v %v", rows[idx[1]].Address, rows[idx[2]].Address)
	}
	// D gains two players: it joins the 3s? no, 3 > 3 is false: it
	// sorts by name among them.
	rows[3].Players = 3
	if got, want := order(rows, q), []string{"C", "D", "Same", "Same"}; !slices.Equal(got, want) {
		t.Errorf("after a change %q, want %q", got, want)
	}
	for range 10 { // any input order gives the same answer
		rows[0], rows[1], rows[2], rows[3] = rows[2], rows[0], rows[3], rows[1]
		var addrs []string
		for _, i := range selectRows(rows, &q) {
			addrs = append(addrs, rows[i].Address)
		}
		if want := []string{"192.0.2.3:27960", "192.0.2.4:27960", "192.0.2.1:27960", "192.0.2.2:27960"}; !slices.Equal(addrs, want) {
			t.Fatalf("%v, want %v", addrs, want)
		}
	}
	// By name, descending, ties still by ascending address.
	qn, _ := ParseListQuery("sort=name&order=desc")
	idx = selectRows(rows, &qn)
	if rows[idx[0]].NamePlain != "Same" || rows[idx[0]].Address != "192.0.2.1:27960" {
		t.Errorf("desc tie %v", rows[idx[0]].Address)
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter(2, 3, 2)
	t0 := time.Unix(1_800_000_000, 0)
	a := netip.MustParseAddr("192.0.2.1")
	for i := range 3 {
		if ok, _ := l.allow(t0, a); !ok {
			t.Fatalf("burst %d refused", i)
		}
	}
	ok, wait := l.allow(t0, a)
	if ok || wait != 500*time.Millisecond {
		t.Errorf("4th: %v %v", ok, wait)
	}
	if ok, _ := l.allow(t0.Add(500*time.Millisecond), a); !ok {
		t.Error("refilled token refused")
	}
	// One IPv6 /64 is one client.
	v6a, v6b := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::ffff:1")
	for range 3 {
		l.allow(t0, v6a)
	}
	if ok, _ := l.allow(t0, v6b); ok {
		t.Error("another address of the /64 has its own bucket")
	}
	// A third client beyond MaxClients shares the overflow bucket.
	c := netip.MustParseAddr("198.51.100.1")
	d := netip.MustParseAddr("198.51.100.2")
	for range 3 {
		l.allow(t0, c)
	}
	if ok, _ := l.allow(t0, d); ok {
		t.Error("the shared bucket is not shared")
	}
	// Once buckets refill, clients are forgotten and d gets its own.
	if ok, _ := l.allow(t0.Add(10*time.Second), d); !ok || len(l.m) > 2 {
		t.Errorf("after refill: %v, %d tracked", ok, len(l.m))
	}
}
