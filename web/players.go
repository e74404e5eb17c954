package web

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/scout-discovery/scout/protocol/gametext"
)

// Player search across servers (GET /api/v1/players?name=TEXT): the
// players of every listed server's last player list whose name, colour
// codes stripped, holds TEXT (case-insensitive), as GameTracker's and
// BattleMetrics' player search finds them.

// Bounds of a player search.
const (
	MinPlayerQuery   = 2   // characters: one letter matches everybody
	MaxPlayerQuery   = 32  // characters: the games' longest names
	MaxPlayerResults = 100 // players in an answer; Total counts them all
)

// FoundPlayerJSON is one player a search found, with the server.
type FoundPlayerJSON struct {
	PlayerJSON
	Server FoundOnJSON `json:"server"`
}

// FoundOnJSON is the server a found player is on.
type FoundOnJSON struct {
	Address   string `json:"address"`
	NamePlain string `json:"name_plain"`
	Game      string `json:"game"`
	Map       string `json:"map"`
}

// PlayersJSON is the answer of /api/v1/players.
type PlayersJSON struct {
	Version uint64            `json:"version"`
	Query   string            `json:"name"`
	Total   int               `json:"total"`
	Players []FoundPlayerJSON `json:"players"`
}

// findPlayers searches the rows' player lists (players gives a row's
// list) for name, lower case. It is pure but for players.
func findPlayers(rows []row, name string, players func(*row) []PlayerJSON) (int, []FoundPlayerJSON) {
	total := 0
	out := []FoundPlayerJSON{}
	for i := range rows {
		r := &rows[i]
		for _, p := range players(r) {
			if !strings.Contains(strings.ToLower(p.NamePlain), name) {
				continue
			}
			total++
			if len(out) < MaxPlayerResults {
				out = append(out, FoundPlayerJSON{PlayerJSON: p,
					Server: FoundOnJSON{Address: r.Address, NamePlain: r.NamePlain, Game: r.Game, Map: r.Map}})
			}
		}
	}
	return total, out
}

// players answers GET /api/v1/players?name=TEXT.
func (a *API) players(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	vals, perr := parseRaw(r.URL.RawQuery, "name")
	if perr != nil {
		writeError(w, perr)
		return
	}
	names := vals["name"]
	if len(names) != 1 {
		writeError(w, badParam("name", "give one name to search for"))
		return
	}
	name := strings.ToLower(strings.TrimSpace(gametext.StripColours(names[0])))
	if n := utf8.RuneCountInString(name); n < MinPlayerQuery || n > MaxPlayerQuery {
		writeError(w, badParam("name", "%d characters: want %d to %d", n, MinPlayerQuery, MaxPlayerQuery))
		return
	}
	v := a.current(now)
	etag := fmt.Sprintf(`W/"n%d.%d"`, v.version, v.slot)
	a.cached(w, r, v, etag, false, func() string { return "players\x00" + name }, func() []byte {
		total, found := findPlayers(v.rows, name, func(r *row) []PlayerJSON {
			ps, at, ok := a.deps.Players(r.reg)
			if !ok {
				return nil
			}
			out := make([]PlayerJSON, len(ps))
			for i, p := range ps {
				out[i] = a.playerJSON(r.cs, p)
				out[i].SuspectedBot = a.reg.Suspected(p, at)
			}
			return out
		})
		return marshal(PlayersJSON{Version: v.version, Query: name, Total: total, Players: found})
	})
}
