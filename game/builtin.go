package game

// Builtin returns the built-in games, freshly allocated (the caller may
// modify them). Sources: dpmaster 2.x doc/manual.txt "GAME PROPERTIES" for
// the anonymous games' names, tags, protocols and options; the seed
// documents (CAIA 070730A, the Q3Master notes) for re-probing, ports and
// masters; captured packets in /work/shared/vectors for ioquake3/OpenArena.
func Builtin() []*Game {
	q3 := func(g Game) *Game { g.Family = FamilyQ3; return &g }
	dp := func(name, title string, protocols []int, masters ...string) *Game {
		return &Game{
			Name: name, Title: title, Family: FamilyQ3,
			Gamenames: []string{name},
			Protocols: protocols,
			// getstatus, as for Quake III: ioquake3 (OpenArena...) and
			// DarkPlaces answer it with the serverinfo, the challenge
			// echoed and the player list, which the web list's detail
			// view shows; getinfo carries no players.
			Reprobe:    Reprobe{Requests: GetStatus, Interval: DefaultReprobeInterval},
			GamePort:   26000,
			MasterPort: PortQ3Master,
			Masters:    masters,
		}
	}
	const deathmask = "dpmaster.deathmask.net:27950"
	return []*Game{
		q3(Game{
			Name:      "Quake3Arena",
			Title:     "Quake III Arena (and ioquake3 engines: OpenArena, ...)",
			Anonymous: true,
			// 66-68 are id's Q3A 1.30-1.32; 71 is ioquake3's protocol. An
			// ioquake3 server (OpenArena 0.8.8 on Debian) with the default
			// com_gamename heartbeats "QuakeArena-1" and says
			// gamename\Quake3Arena\protocol\71 (vector
			// openarena_infoResponse.hex), so it belongs here; dpmaster only
			// finds it through its "first anonymous server with this
			// protocol" fallback.
			Heartbeats: []string{"QuakeArena-1"},
			Gamenames:  []string{"Quake3Arena"},
			// 0-4 are id's; 5 and up OpenArena's extra modes.
			Gametypes: []string{"Free for all", "Tournament", "Single player", "Team DM", "CTF", "One-flag CTF",
				"Overload", "Harvester", "Elimination", "CTF Elimination", "Last man standing", "Double domination", "Domination"},
			Protocols:  []int{66, 67, 68, 71},
			Reprobe:    Reprobe{Requests: GetStatus, Interval: Q3AReprobeInterval},
			GamePort:   PortQ3Server,
			MasterPort: PortQ3Master,
			Masters: []string{
				"master.quake3arena.com:27950", // id Software, historical
				"master.ioquake3.org:27950",
				deathmask,
			},
		}),
		q3(Game{
			Name:       "wolfmp",
			Title:      "Return to Castle Wolfenstein",
			Anonymous:  true,
			Heartbeats: []string{"Wolfenstein-1"},
			Flatlines:  []string{"WolfFlatline-1"},
			Gamenames:  []string{"wolfmp"},
			Gametypes:  []string{5: "Objective", 6: "Stopwatch", 7: "Checkpoint"},
			Protocols:  []int{50, 59, 60},
			Reprobe:    Reprobe{Requests: GetStatus, Interval: Q3AReprobeInterval},
			GamePort:   PortQ3Server,
			MasterPort: PortQ3Master,
			Masters:    []string{"wolfmaster.idsoftware.com:27950"},
		}),
		q3(Game{
			Name:       "et",
			Title:      "Wolfenstein: Enemy Territory",
			Anonymous:  true,
			Heartbeats: []string{"EnemyTerritory-1"},
			Flatlines:  []string{"ETFlatline-1"},
			Gamenames:  []string{"et"},
			Gametypes:  []string{2: "Objective", 3: "Stopwatch", 4: "Campaign", 5: "Last man standing"},
			Protocols:  []int{72, 80, 83, 84},
			// ET clients expect the whole list whatever they ask
			// (dpmaster's built-in options for "et").
			Options:    SendEmpty | SendFull,
			Reprobe:    Reprobe{Requests: GetChallenge | GetStatus | GetInfo, Interval: ETReprobeInterval},
			GamePort:   PortQ3Server,
			MasterPort: PortQ3Master,
			MOTDPort:   PortETMOTD,
			Masters: []string{
				"etmaster.idsoftware.com:27950", // id Software, historical
				"master.etlegacy.com:27950",
			},
		}),
		dp("OpenArena", "OpenArena (com_gamename OpenArena)", []int{71}, deathmask),
		dp("Xonotic", "Xonotic", []int{3}, deathmask),
		dp("Nexuiz", "Nexuiz", []int{3}, deathmask),
		dp("DarkPlaces-Quake", "DarkPlaces Quake", []int{3}, deathmask),
		dp("Transfusion", "Transfusion", []int{3}, deathmask),
		// Warsow's protocol changes with each release: no fixed list, any
		// protocol it declares is accepted and matched exactly.
		dp("Warsow", "Warsow", nil, deathmask),
		{
			Name: "Quake4", Title: "Quake 4", Family: FamilyDoom3,
			Anonymous: true,
			// Quake 4 1.4.2 (the seed's Figure 8 and qstat's q4 decoders).
			Protocols:  []int{Doom3Version(2, 85)},
			Reprobe:    Reprobe{Requests: GetInfo, Interval: DefaultReprobeInterval},
			GamePort:   PortQuake4,
			MasterPort: PortDoom3Master,
			Masters:    []string{"q4master.idsoftware.com:27650"},
		},
		{
			Name: "Doom3", Title: "Doom 3 (and dhewm3)", Family: FamilyDoom3,
			Anonymous: true,
			// Doom 3 1.3.1 and dhewm3 speak 1.41.
			Protocols:  []int{Doom3Version(1, 41)},
			Reprobe:    Reprobe{Requests: GetInfo, Interval: DefaultReprobeInterval},
			GamePort:   PortDoom3,
			MasterPort: PortDoom3Master,
			Masters:    []string{"idnet.ua-corp.com:27650"},
		},
		{
			Name: "ut3", Title: "Unreal Tournament 3", Family: FamilyGameSpy4,
			GamePort: 6500, // query port; GameSpy's masters are gone
		},
		{
			Name: "cstrike", Title: "Counter-Strike: Source", Family: FamilySource,
			GamePort: 27015,
			Masters:  []string{"hl2master.steampowered.com:27011"},
		},
	}
}
