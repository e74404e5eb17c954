package web

import (
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/scout-discovery/scout/latency"
)

func TestSummarize_PeopleServersAndBusiestMaps(t *testing.T) {
	r := func(game, mapName string, players, bots, slots int) row {
		return row{ServerJSON: ServerJSON{Game: game, Map: mapName, Players: players, Humans: players - bots, Bots: bots, MaxPlayers: slots}}
	}
	got := summarize([]row{
		r("et", "oasis", 10, 2, 20), r("et", "radar", 3, 0, 20), r("et", "oasis", 5, 5, 20), r("et", "goldrush", 0, 0, 16),
		r("et", "battery", 1, 0, 16),
		r("Quake3Arena", "q3dm17", 4, 4, 8), // bots only: no people
		r("OpenArena", "oa_dm1", 2, 0, 8),
	})
	want := []GameSummaryJSON{
		{Game: "et", Servers: 5, Humans: 12, Bots: 7, Slots: 92, Maps: []MapLoadJSON{
			{Map: "oasis", Humans: 8, Servers: 2}, {Map: "radar", Humans: 3, Servers: 1}, {Map: "battery", Humans: 1, Servers: 1}}},
		{Game: "OpenArena", Servers: 1, Humans: 2, Slots: 8, Maps: []MapLoadJSON{{Map: "oa_dm1", Humans: 2, Servers: 1}}},
		{Game: "Quake3Arena", Servers: 1, Humans: 0, Bots: 4, Slots: 8, Maps: []MapLoadJSON{{Map: "q3dm17", Servers: 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summarize =\n%+v\nwant\n%+v", got, want)
	}
	if got := summarize(nil); len(got) != 0 {
		t.Errorf("no rows: %+v", got)
	}
}

func TestFindPlayers_SubstringOfThePlainNameAcrossServers(t *testing.T) {
	rows := []row{
		{ServerJSON: ServerJSON{Address: "192.0.2.1:27960", NamePlain: "One", Game: "et", Map: "oasis"}},
		{ServerJSON: ServerJSON{Address: "192.0.2.2:27960", NamePlain: "Two", Game: "et", Map: "radar"}},
	}
	rows[0].reg = netip.MustParseAddrPort("192.0.2.1:27960")
	rows[1].reg = netip.MustParseAddrPort("192.0.2.2:27960")
	lists := map[netip.AddrPort][]PlayerJSON{
		rows[0].reg: {{Name: "^1Sarge", NamePlain: "Sarge", Ping: 0, Bot: true}, {Name: "Bob", NamePlain: "Bob", Ping: 40}},
		rows[1].reg: {{Name: "^3sargeant", NamePlain: "sargeant", Ping: 55}},
	}
	total, found := findPlayers(rows, "sarge", func(r *row) []PlayerJSON { return lists[r.reg] })
	if total != 2 || len(found) != 2 || found[0].Server.Address != "192.0.2.1:27960" || !found[0].Bot ||
		found[1].NamePlain != "sargeant" || found[1].Bot || found[1].Server.Map != "radar" {
		t.Errorf("found %d: %+v", total, found)
	}
	many := map[netip.AddrPort][]PlayerJSON{}
	for i := range MaxPlayerResults + 5 {
		many[rows[0].reg] = append(many[rows[0].reg], PlayerJSON{NamePlain: fmt.Sprintf("bob%d", i), Ping: 1})
	}
	if total, found := findPlayers(rows, "bob", func(r *row) []PlayerJSON { return many[r.reg] }); total != MaxPlayerResults+5 || len(found) != MaxPlayerResults {
		t.Errorf("a common name: total %d, %d found; want every one counted and %d listed", total, len(found), MaxPlayerResults)
	}
}

// TestPingRange_LandmarksTellServersOfOneCountryApart: two German servers
// the country model gives one figure; a landmark in Frankfurt that
// measured them 5 and 40 ms away gives two: the triangle's upper bounds
// through it, each with its lower bound.
func TestPingRange_LandmarksTellServersOfOneCountryApart(t *testing.T) {
	de, _ := latency.MainCity("DE")
	au, _ := latency.MainCity("AU")
	fra := latency.City{Name: "Frankfurt", Lat: 50.11, Lon: 8.68}
	near := row{city: de, hasCity: true, via: []viaLandmark{{at: fra, rtt: 5 * time.Millisecond}}}
	far := row{city: de, hasCity: true, via: []viaLandmark{{at: fra, rtt: 40 * time.Millisecond}}}
	plain := row{city: de, hasCity: true}
	e1, l1, ok1 := pingRange(au, true, &near)
	e2, l2, ok2 := pingRange(au, true, &far)
	e3, l3, ok3 := pingRange(au, true, &plain)
	if !ok1 || !ok2 || !ok3 || e1 >= e2 || l3 != e3 {
		t.Fatalf("near %d (>= %d), far %d (>= %d), country model %d (>= %d)", e1, l1, e2, l2, e3, l3)
	}
	vl := int(latency.CityRTT(au, fra).Round(time.Millisecond) / time.Millisecond)
	for _, c := range []struct{ est, low, rtt int }{{e1, l1, 5}, {e2, l2, 40}} {
		if d := c.est - (vl + c.rtt); d < -1 || d > 1 {
			t.Errorf("estimate %d for a server %d ms from a landmark %d ms from the viewer: want %d", c.est, c.rtt, vl, vl+c.rtt)
		}
		if d := c.low - (vl - c.rtt); d < -1 || d > 1 {
			t.Errorf("low %d for a server %d ms from a landmark %d ms from the viewer: want %d", c.low, c.rtt, vl, vl-c.rtt)
		}
	}
	if _, _, ok := pingRange(au, false, &near); ok {
		t.Error("an estimate without the viewer's place")
	}
}
