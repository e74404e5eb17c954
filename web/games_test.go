package web

import (
	"reflect"
	"testing"
)

func TestSummarize_PeopleServersAndBusiestMaps(t *testing.T) {
	r := func(game, mapName string, players, bots, slots int) row {
		return row{ServerJSON: ServerJSON{Game: game, Map: mapName, Players: players, Bots: bots, MaxPlayers: slots}}
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
