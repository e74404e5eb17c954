package gs4

// sampleInfo is the UT3-style reply the goldens and the interop test use:
// the keys a UT3 server sends (names from gamedig's unrealtournament3 and
// qstat's gs3.c), two players and two teams.
func sampleInfo() Info {
	return Info{
		SessionID: 0x10203040,
		Rules: []KeyValue{
			{"hostname", "Scout UT3 Test"},
			{"hostport", "7777"},
			{"numplayers", "2"},
			{"maxplayers", "16"},
			{"gamemode", "openplaying"},
			{"mapname", "DM-Deck"},
			{"p1073741825", "DM-Deck"},
			{"p1073741826", "UTGame.UTDeathmatch"},
			{"p1073741827", "Scout UT3 Test"},
			{"p268435704", "20"},
			{"p268435705", "15"},
			{"s32779", "1"},
		},
		Players: Table{
			Fields: []string{"player_", "score_", "ping_", "team_", "deaths_"},
			Rows: [][]string{
				{"Alice", "12", "48", "0", "3"},
				{"Bob", "7", "95", "1", "9"},
			},
		},
		Teams: Table{
			Fields: []string{"team_t", "score_t"},
			Rows:   [][]string{{"Red", "12"}, {"Blue", "7"}},
		},
	}
}
