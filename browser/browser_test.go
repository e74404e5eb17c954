package browser

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/infostring"
)

func res(port uint16, name, m string, players, maxp int, rtt time.Duration) probe.Result {
	return probe.Result{Addr: netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), port), Name: name, Map: m,
		NumPlayers: players, MaxPlayers: maxp, GameType: "4", RTT: rtt,
		Info: infostring.Info{{Key: "gamename", Value: "baseoa"}}}
}

func TestName_NeutralisesColoursAndControlBytes(t *testing.T) {
	// The Quake font draws ESC as its digit glyph 9, a tab as a block
	// and 0xFF as the arrow of 0x7F: no byte reaches the terminal as a
	// control.
	if got := Name("^1Red^7 \x1b[2J\tbox\xff"); got != "Red 9[2J▪box←" {
		t.Fatalf("Name = %q", got)
	}
	if got := NameFor("q4", "^1M\xfcller\x1b[2J\x85"); got != "Müller?[2J?" {
		t.Fatalf("NameFor(q4) = %q", got)
	}
	if got := NameFor("a2s", "caf\xc3\xa9 \x1b]0;x\x07"); got != "café ?]0;x?" {
		t.Fatalf("NameFor(a2s) = %q", got)
	}
}

func TestFilter_Show(t *testing.T) {
	r := res(1, "a", "oa_dm1", 3, 8, 50*time.Millisecond)
	for _, c := range []struct {
		f    Filter
		show bool
	}{
		{Filter{}, true},
		{Filter{HideEmpty: true}, true},
		{Filter{HideFull: true}, true},
		{Filter{MaxPing: 50 * time.Millisecond}, true},
		{Filter{MaxPing: 50*time.Millisecond - 1}, false},
		{Filter{GameType: "4"}, true},
		{Filter{GameType: "0"}, false},
		{Filter{Map: "DM1"}, true},
		{Filter{Map: "ctf"}, false},
		{Filter{GameName: "BaseOA"}, true},
		{Filter{GameName: "cpma"}, false},
	} {
		if got := c.f.Show(r); got != c.show {
			t.Errorf("%+v: Show = %v, want %v", c.f, got, c.show)
		}
	}
	if (Filter{HideEmpty: true}).Show(res(1, "a", "m", 0, 8, time.Millisecond)) ||
		(Filter{HideFull: true}).Show(res(1, "a", "m", 8, 8, time.Millisecond)) ||
		(Filter{}).Show(probe.Result{}) {
		t.Error("empty, full or silent server shown")
	}
}

func TestSort(t *testing.T) {
	rs := []probe.Result{res(1, "^2b", "z", 1, 8, 30), res(2, "A", "y", 5, 8, 20), res(3, "c", "x", 5, 8, 10)}
	want := map[string]string{"ping": "3 2 1", "players": "3 2 1", "name": "2 1 3", "map": "3 2 1"}
	for key, w := range want {
		if !Sort(rs, key) {
			t.Fatalf("Sort(%q) refused", key)
		}
		var got []string
		for _, r := range rs {
			got = append(got, string(rune('0'+r.Addr.Port())))
		}
		if strings.Join(got, " ") != w {
			t.Errorf("sort %s: %v, want %s", key, got, w)
		}
	}
	if Sort(rs, "country") {
		t.Error("unknown key accepted")
	}
}

// A Quake III-family server's game type is shown by name where its game
// names its numbers, as the page does; others as the server wrote it.
func TestGameType_ByNameAsOnThePage(t *testing.T) {
	q3 := func(gamename, protocol, gt string) probe.Result {
		r := probe.Result{Game: "q3", Protocol: protocol, GameType: gt}
		if gamename != "" {
			r.Info = infostring.Info{{Key: "gamename", Value: gamename}}
		}
		return r
	}
	for _, c := range []struct {
		r    probe.Result
		want string
	}{
		{q3("Quake3Arena", "71", "4"), "CTF"},  // OpenArena 0.8.8 on Debian
		{q3("", "68", "0"), "Free for all"},    // id's Q3A 1.32 sends no gamename
		{q3("et", "84", "4"), "Campaign"},      // Enemy Territory's 4
		{q3("wolfmp", "60", "5"), "Objective"}, // RtCW
		{q3("et", "84", "0"), "0"},             // a number without a name
		{q3("Xonotic", "3", "dm"), "dm"},       // DarkPlaces servers send names
		{q3("baseoa", "99", "4"), "4"},         // an unknown game
		{probe.Result{Game: "q4", GameType: "Tourney"}, "Tourney"},
		{q3("Quake3Arena", "68", "04"), "04"}, // not the number's text
	} {
		if got := GameType(c.r); got != c.want {
			t.Errorf("%s %s %q: %q, want %q", GameName(c.r), c.r.Protocol, c.r.GameType, got, c.want)
		}
	}
	// --gametype takes the name or the number.
	r := q3("Quake3Arena", "68", "4")
	for _, f := range []string{"ctf", "4"} {
		if !(Filter{GameType: f}).Show(probe.Result{Game: r.Game, Protocol: r.Protocol, GameType: r.GameType, Info: r.Info, RTT: time.Millisecond}) {
			t.Errorf("--gametype %s hides a CTF server", f)
		}
	}
}
