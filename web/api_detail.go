package web

import (
	"cmp"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/latency"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/gametext"
)

// PlayerJSON is one player of the detail view.
type PlayerJSON struct {
	// Name is as the game draws it, colour codes kept; NamePlain without
	// them; NameRaw the bytes the server sent, base64 (RFC 4648, standard
	// alphabet): JSON strings are UTF-8, the games' names are not.
	Name      string `json:"name"`
	NamePlain string `json:"name_plain"`
	NameRaw   []byte `json:"name_raw"`
	Score     *int   `json:"score,omitempty"` // absent in the Doom 3 family, whose records have none
	Ping      int    `json:"ping"`
	// Bot: the server gives it ping 0, as every engine gives its bots;
	// SuspectedBot: it has stayed in every player list since Since, for
	// longer than the master's SuspectAfter (master's bots.go).
	Bot          bool       `json:"bot"`
	SuspectedBot bool       `json:"suspected_bot"`
	Since        *time.Time `json:"since,omitempty"`
	// Page is the path of the player's page (where they played
	// recently); absent for bots, names of colour codes alone, and on a
	// master that keeps no sightings.
	Page string `json:"page,omitempty"`
}

// playerJSON is p as the API gives it, its name drawn with cs; Score is
// set, SuspectedBot, Since and Page are not.
func playerJSON(cs gametext.Charset, p master.Player) PlayerJSON {
	sc := p.Score
	return PlayerJSON{Name: cs.Decode(p.Name), NamePlain: cs.Plain(p.Name), NameRaw: []byte(p.Name),
		Score: &sc, Ping: p.Ping, Bot: p.Ping == 0}
}

// playerJSON is the package's playerJSON with the player's page, where
// this master keeps sightings and would have recorded p.
func (a *API) playerJSON(cs gametext.Charset, p master.Player) PlayerJSON {
	j := playerJSON(cs, p)
	if k := history.PlayerKey(p.Name); a.deps.Sightings != nil && !j.Bot && k != "" {
		j.Page = playerPath(k)
	}
	return j
}

// HistoryJSON is the detail view's player count over time.
type HistoryJSON struct {
	ResolutionS int             `json:"resolution_s"`
	Points      []history.Point `json:"points"`
}

// DetailJSON is the answer of /api/v1/servers/{address}.
type DetailJSON struct {
	ServerJSON
	// NameRaw is the server's name as the bytes it sent, base64, as a
	// player's (the list leaves it out to stay small).
	NameRaw    []byte            `json:"name_raw"`
	Info       map[string]string `json:"info"`
	PlayerList []PlayerJSON      `json:"player_list"`
	PlayersAt  *time.Time        `json:"players_at,omitempty"` // when the player list was received
	// Sources are where the master learned of it and when each last
	// named it (ecosystem.go): "heartbeat", upstream masters, peers.
	Sources []SourceJSON `json:"sources,omitempty"`
	History HistoryJSON  `json:"history"`
}

func (a *API) detail(w http.ResponseWriter, r *http.Request, now time.Time, client netip.Addr) {
	raw := strings.TrimPrefix(r.URL.Path, "/api/v1/servers/")
	addr, err := netip.ParseAddrPort(raw)
	if err != nil || addr.Port() == 0 || addr.Addr().Zone() != "" {
		writeError(w, badParam("address", "%q: want IP:PORT, [IPv6]:PORT for IPv6", clip(raw)))
		return
	}
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	from := ""
	fromGiven := false
	if r.URL.RawQuery != "" {
		vals, perr := parseRaw(r.URL.RawQuery, "from")
		if perr != nil {
			writeError(w, perr)
			return
		}
		if f := vals["from"]; len(f) > 1 || !isCountry(f[0]) {
			writeError(w, badParam("from", "%q: want one ISO 3166 alpha-2 code (AU)", clip(strings.Join(f, ","))))
			return
		}
		from, fromGiven = strings.ToUpper(vals["from"][0]), true
	}
	if !fromGiven {
		from = a.viewerCountry(client)
	}
	v := a.current(now)
	i, ok := v.byAddr[addr]
	if !ok {
		writeError(w, &Error{Status: http.StatusNotFound, Code: "not_found", Parameter: "address",
			Message: fmt.Sprintf("%v: no such server listed", addr)})
		return
	}
	row := &v.rows[i]
	players, at, hasPlayers := a.deps.Players(row.reg)
	etag := fmt.Sprintf(`W/"d%d.%d.%d-%s"`, v.version, v.slot, at.UnixNano(), from)
	modified := v.built
	if at.After(modified) {
		modified = at
	}
	private := !fromGiven && from != ""
	if notModified(r, etag, modified) {
		a.answer(w, r, etag, modified, private, nil, "", nil)
		return
	}
	d := DetailJSON{ServerJSON: row.ServerJSON, NameRaw: []byte(infoOf(row.info, "hostname", "sv_hostname", "si_name")),
		Info: map[string]string{}, PlayerList: []PlayerJSON{}, Sources: row.sources,
		History: HistoryJSON{ResolutionS: int(history.Resolution / time.Second), Points: []history.Point{}}}
	if fc, ok := latency.MainCity(from); ok {
		if ms, low, ok := pingRange(fc, true, row); ok {
			d.PingEstimateMs = &ms
			if len(row.via) > 0 {
				d.PingLowMs = &low
			}
		}
	}
	for _, p := range row.info {
		if _, dup := d.Info[p.Key]; !dup && !strings.EqualFold(p.Key, "challenge") {
			d.Info[p.Key] = p.Value
		}
	}
	if hasPlayers {
		t := at.UTC()
		d.PlayersAt = &t
		doom3 := d.Family == game.FamilyDoom3.String()
		for _, p := range players {
			pj := a.playerJSON(row.cs, p)
			pj.SuspectedBot = a.reg.Suspected(p, at)
			if !p.Since.IsZero() {
				since := p.Since.UTC()
				pj.Since = &since
			}
			if doom3 {
				pj.Score = nil
			}
			d.PlayerList = append(d.PlayerList, pj)
		}
	}
	if a.deps.History != nil {
		d.History.Points = a.deps.History.Points(row.reg, v.slot-int64(7*history.SlotsPerDay), v.slot+1)
	}
	c := newBodyCache(cacheLimits{}) // not kept: the detail changes with every player list
	b, _ := c.get("", func() ([]byte, any) { return marshal(d), nil })
	a.answer(w, r, etag, modified, private, c, "", b)
}

// RankedJSON is one server of the ranking.
type RankedJSON struct {
	Rank        int     `json:"rank"`
	Address     string  `json:"address"`
	Name        string  `json:"name"`
	NamePlain   string  `json:"name_plain"`
	Game        string  `json:"game"`
	AvgPlayers  float64 `json:"avg_players"`
	PeakPlayers int     `json:"peak_players"`
	Samples     int     `json:"samples"`
}

// RankingJSON is the answer of /api/v1/ranking.
type RankingJSON struct {
	Version   uint64       `json:"version"`
	Generated time.Time    `json:"generated"`
	PeriodS   int          `json:"period_s"`
	Total     int          `json:"total"`
	Page      int          `json:"page"`
	PerPage   int          `json:"per_page"`
	Servers   []RankedJSON `json:"servers"`
}

func (a *API) ranking(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	q, perr := ParseRankingQuery(r.URL.RawQuery)
	if perr != nil {
		writeError(w, perr)
		return
	}
	v := a.current(now)
	etag := fmt.Sprintf(`W/"r%d.%d"`, v.version, v.slot)
	a.cached(w, r, v, etag, false, q.Key, func() []byte { return marshal(v.rank(a.deps.History, &q)) })
}

// rank ranks v's servers of q's games by their average players over q's
// period up to v's slot, included (GameTracker's rank), then peak, then address.
// Servers without a sample in the period are left out.
func (v *view) rank(h *history.History, q *RankingQuery) RankingJSON {
	out := RankingJSON{Version: v.version, Generated: v.built, PeriodS: int(q.Period / time.Second),
		Page: q.Page, PerPage: q.PerPage, Servers: []RankedJSON{}}
	if h == nil {
		return out
	}
	lq := ListQuery{Games: q.Games}
	from := v.slot + 1 - int64(q.Period/history.Resolution)
	var all []RankedJSON
	for i := range v.rows {
		if v.rows[i].CloneOf != "" {
			continue // a clone is ranked as its primary
		}
		r := &v.rows[i]
		if !matches(r, &lq) {
			continue
		}
		avg, peak, n := h.Stats(r.reg, from, v.slot+1)
		if n == 0 {
			continue
		}
		all = append(all, RankedJSON{Address: r.Address, Name: r.Name, NamePlain: r.NamePlain, Game: r.Game,
			AvgPlayers: float64(int(avg*100+0.5)) / 100, PeakPlayers: peak, Samples: n})
	}
	slices.SortStableFunc(all, func(x, y RankedJSON) int {
		if c := cmp.Compare(y.AvgPlayers, x.AvgPlayers); c != 0 {
			return c
		}
		if c := cmp.Compare(y.PeakPlayers, x.PeakPlayers); c != 0 {
			return c
		}
		return cmp.Compare(x.Address, y.Address)
	})
	for i := range all {
		all[i].Rank = i + 1
	}
	out.Total = len(all)
	lo := min((q.Page-1)*q.PerPage, len(all))
	out.Servers = append(out.Servers, all[lo:min(lo+q.PerPage, len(all))]...)
	return out
}

// MetaJSON is the answer of /api/v1/meta: what the page's filters offer.
type MetaJSON struct {
	Version   uint64   `json:"version"`
	Games     []string `json:"games"`
	Gametypes []string `json:"gametypes"`
	Countries []string `json:"countries"`
	Maps      []string `json:"maps"`
	ReprobeS  int      `json:"reprobe_s"`
	MaxAgeS   int      `json:"max_age_s"`
	// ResolutionS is the history's slot (recent_players, history).
	ResolutionS int `json:"resolution_s"`
}

func (a *API) meta(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	if r.URL.RawQuery != "" {
		if _, perr := parseRaw(r.URL.RawQuery); perr != nil {
			writeError(w, perr)
			return
		}
	}
	v := a.current(now)
	etag := fmt.Sprintf(`W/"m%d.%d"`, v.version, v.slot)
	a.cached(w, r, v, etag, false, func() string { return "meta" }, func() []byte {
		m := MetaJSON{Version: v.version, ReprobeS: a.reprobe, MaxAgeS: a.maxAge, ResolutionS: int(history.Resolution / time.Second)}
		set := func(dst *[]string, val func(*row) string) {
			seen := map[string]bool{}
			for i := range v.rows {
				if s := val(&v.rows[i]); s != "" && !seen[s] {
					seen[s] = true
					*dst = append(*dst, s)
				}
			}
			if *dst == nil {
				*dst = []string{}
			}
			slices.Sort(*dst)
		}
		set(&m.Games, func(r *row) string { return r.Game })
		set(&m.Gametypes, func(r *row) string { return r.Gametype })
		set(&m.Countries, func(r *row) string { return r.Country })
		set(&m.Maps, func(r *row) string { return r.Map })
		return marshal(m)
	})
}
