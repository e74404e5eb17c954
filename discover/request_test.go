package discover

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/q3"
)

func builtinGame(t *testing.T, name string) *game.Game {
	t.Helper()
	for _, g := range game.Builtin() {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no built-in game %q", name)
	return nil
}

// TestRequestFor_AsksEveryNameAGameIsListedUnder pins the getservers forms
// each game's client sends (ioquake3 cl_main.c CL_GlobalServers_f,
// DarkPlaces, ET, RtCW), and that a game a master may list under two
// names or two live protocols is asked for each.
func TestRequestFor_AsksEveryNameAGameIsListedUnder(t *testing.T) {
	for _, tc := range []struct {
		game     string
		protocol int
		ext      bool
		want     []string
	}{
		{"Quake3Arena", 0, false, []string{"getservers 68 empty full", "getservers 71 empty full"}},
		{"Quake3Arena", 71, false, []string{"getservers 71 empty full"}},
		{"Quake3Arena", 0, true, []string{"getserversExt Quake3Arena 68 empty full", "getserversExt Quake3Arena 71 empty full"}},
		{"OpenArena", 0, false, []string{"getservers OpenArena 71 empty full", "getservers 71 empty full"}},
		{"OpenArena", 0, true, []string{"getserversExt OpenArena 71 empty full", "getserversExt Quake3Arena 71 empty full"}},
		{"et", 0, false, []string{"getservers 84 empty full"}},
		{"wolfmp", 0, false, []string{"getservers 60 empty full"}},
		{"Xonotic", 0, false, []string{"getservers Xonotic 3 empty full"}},
		{"Xonotic", 0, true, []string{"getserversExt Xonotic 3 empty full"}},
	} {
		req, err := RequestFor(builtinGame(t, tc.game), tc.protocol, tc.ext)
		if err != nil {
			t.Fatalf("%s: %v", tc.game, err)
		}
		bs, err := req.queries(netip.AddrPort{})
		if err != nil {
			t.Fatalf("%s: %v", tc.game, err)
		}
		var got []string
		for _, b := range bs {
			got = append(got, strings.TrimPrefix(string(b), "\xff\xff\xff\xff"))
		}
		if !slices.Equal(got, tc.want) || req.forms() != len(tc.want) {
			t.Errorf("%s protocol %d ext %v: asks %q (%d forms), want %q", tc.game, tc.protocol, tc.ext, got, req.forms(), tc.want)
		}
	}
}

// TestDiscover_OpenArenaListedUnderBothNames: a master lists one
// OpenArena server under Quake3Arena (heartbeat QuakeArena-1, answered to
// "getservers 71") and one under OpenArena (heartbeat DarkPlaces, answered
// to "getservers OpenArena 71"); --game openarena finds both, and the
// master's list ends with the second end marker, not the first.
func TestDiscover_OpenArenaListedUnderBothNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		var asked []string
		n.node(masterA, func(b []byte, reply func([]byte, time.Duration)) {
			m, err := q3.Parse(b)
			gs, ok := m.(q3.GetServers)
			if err != nil || !ok || gs.Protocol != 71 {
				return
			}
			asked = append(asked, gs.GameName)
			list, delay := []netip.AddrPort{srv(1)}, 20*time.Millisecond // anonymous: Quake3Arena
			if gs.GameName == "OpenArena" {
				list, delay = []netip.AddrPort{srv(2)}, 80*time.Millisecond
			}
			out, _ := q3.ServersResponse{Servers: list, End: q3.EndEOT}.AppendBinary(nil)
			reply(out, delay)
		})
		for i := 1; i <= 2; i++ {
			n.node(srv(i), q3Server("oa", 5*time.Millisecond))
		}
		req, err := RequestFor(builtinGame(t, "OpenArena"), 0, false)
		if err != nil {
			t.Fatal(err)
		}
		rec, sum := discover(t, n, Config{Masters: []Master{{Name: "A", Addr: masterA, Request: req}}})
		if !slices.Equal(asked, []string{"OpenArena", ""}) {
			t.Fatalf("master asked for %q", asked)
		}
		m := rec.masters["A"]
		if m.End != EndMarker || m.Queries != 2 || m.Packets != 2 || m.Listed != 2 || m.Took != 80*time.Millisecond+EndGrace {
			t.Fatalf("master report %+v; want both lists, ended EndGrace after the second marker (80ms)", m)
		}
		if sum.Listed != 2 || sum.Probe.Answered != 2 || rec.probed[srv(1)].Name != "oa" || rec.probed[srv(2)].Name != "oa" {
			t.Fatalf("summary %+v, probed %+v", sum, rec.probed)
		}
	})
}

// TestDiscover_OneFormUnansweredEndsQuiet: a master that answers only one
// of two forms (an old master that ignores named queries) still counts;
// its list ends at the quiet window.
func TestDiscover_OneFormUnansweredEndsQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		n.node(masterA, func(b []byte, reply func([]byte, time.Duration)) {
			if m, err := q3.Parse(b); err != nil || m.(q3.GetServers).GameName != "" {
				return
			}
			out, _ := q3.ServersResponse{Servers: []netip.AddrPort{srv(1)}, End: q3.EndEOT}.AppendBinary(nil)
			reply(out, 10*time.Millisecond)
		})
		n.node(srv(1), q3Server("oa", 5*time.Millisecond))
		req, err := RequestFor(builtinGame(t, "OpenArena"), 0, false)
		if err != nil {
			t.Fatal(err)
		}
		rec, _ := discover(t, n, Config{Masters: []Master{{Name: "A", Addr: masterA, Request: req}}})
		if m := rec.masters["A"]; m.End != EndQuiet || m.Listed != 1 || m.Queries != 2 || m.Took != 10*time.Millisecond+DefaultQuiet {
			t.Fatalf("master report %+v", m)
		}
	})
}

// TestOtherNames_OnlyNamesOfTheSameEngine: --game q3 asks protocol 71
// anonymously, so OpenArena's named list is another name it misses;
// OpenArena asks both already; named games sharing a protocol (Xonotic,
// Nexuiz) are different games; --protocol 68 shares nothing.
func TestOtherNames_OnlyNamesOfTheSameEngine(t *testing.T) {
	cat := game.Builtin()
	names := func(g string, protocol int) []string {
		var out []string
		for _, o := range OtherNames(builtinGame(t, g), cat, protocol, false) {
			out = append(out, o.Game.Name+": "+strings.Join(o.Request.Describe(), "; "))
		}
		return out
	}
	if got := names("Quake3Arena", 0); !slices.Equal(got, []string{"OpenArena: getservers OpenArena 71 empty full"}) {
		t.Errorf("Quake3Arena: %q", got)
	}
	for _, tc := range []struct {
		g string
		p int
	}{{"Quake3Arena", 68}, {"OpenArena", 0}, {"Xonotic", 0}, {"et", 0}, {"Quake4", 0}} {
		if got := names(tc.g, tc.p); len(got) != 0 {
			t.Errorf("%s protocol %d: %q, want none", tc.g, tc.p, got)
		}
	}
}
