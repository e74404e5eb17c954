package web

import (
	"cmp"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"time"
)

// GameSummaryJSON is one game of /api/v1/games: how many servers it has,
// the people and bots on them, and its busiest maps.
type GameSummaryJSON struct {
	Game    string        `json:"game"`
	Servers int           `json:"servers"`
	Humans  int           `json:"humans"` // players less bots and suspected bots
	Bots    int           `json:"bots"`
	Slots   int           `json:"slots"`
	Maps    []MapLoadJSON `json:"busiest_maps"` // at most MaxBusiestMaps, most people first
}

// MapLoadJSON is a map and the people playing it, on how many servers.
type MapLoadJSON struct {
	Map     string `json:"map"`
	Humans  int    `json:"humans"`
	Servers int    `json:"servers"`
}

// GamesJSON is the answer of /api/v1/games: the games by people playing,
// then by servers, then by name.
type GamesJSON struct {
	Version   uint64            `json:"version"`
	Generated time.Time         `json:"generated"`
	Games     []GameSummaryJSON `json:"games"`
}

// MaxBusiestMaps is how many maps a game's summary names.
const MaxBusiestMaps = 3

// summarize sums the rows by game. It is pure: the rows in, the summary
// out.
func summarize(rows []row) []GameSummaryJSON {
	type acc struct {
		g    GameSummaryJSON
		maps map[string]*MapLoadJSON
	}
	by := map[string]*acc{}
	for i := range rows {
		r := &rows[i]
		if r.CloneOf != "" {
			continue // its primary counts the game server once
		}
		a := by[r.Game]
		if a == nil {
			a = &acc{g: GameSummaryJSON{Game: r.Game}, maps: map[string]*MapLoadJSON{}}
			by[r.Game] = a
		}
		humans := r.Humans
		a.g.Servers++
		a.g.Humans += humans
		a.g.Bots += r.Bots
		a.g.Slots += r.MaxPlayers
		m := a.maps[r.Map]
		if m == nil {
			m = &MapLoadJSON{Map: r.Map}
			a.maps[r.Map] = m
		}
		m.Humans += humans
		m.Servers++
	}
	out := make([]GameSummaryJSON, 0, len(by))
	for _, a := range by {
		ms := make([]MapLoadJSON, 0, len(a.maps))
		for _, m := range a.maps {
			ms = append(ms, *m)
		}
		slices.SortFunc(ms, func(x, y MapLoadJSON) int {
			return cmp.Or(cmp.Compare(y.Humans, x.Humans), cmp.Compare(y.Servers, x.Servers), cmp.Compare(x.Map, y.Map))
		})
		a.g.Maps = ms[:min(len(ms), MaxBusiestMaps)]
		out = append(out, a.g)
	}
	slices.SortFunc(out, func(x, y GameSummaryJSON) int {
		return cmp.Or(cmp.Compare(y.Humans, x.Humans), cmp.Compare(y.Servers, x.Servers), cmp.Compare(x.Game, y.Game))
	})
	return out
}

// games answers GET /api/v1/games.
func (a *API) games(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	if r.URL.RawQuery != "" {
		if _, perr := parseRaw(r.URL.RawQuery); perr != nil {
			writeError(w, perr)
			return
		}
	}
	v := a.current(now)
	etag := fmt.Sprintf(`W/"g%d.%d"`, v.version, v.slot)
	a.cached(w, r, v, etag, false, func() string { return "games" }, func() []byte {
		return marshal(GamesJSON{Version: v.version, Generated: v.built, Games: summarize(v.rows)})
	})
}
