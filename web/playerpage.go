package web

import (
	"bytes"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/protocol/gametext"
)

// A player's page: where a player was seen recently (history.Sightings),
// as JSON at /api/v1/players/{name} and as a page rendered on the server
// at /players/{name}, with a title and a description for link previews as
// a server's own page has. {name} is the player's name with colour codes
// stripped (history.PlayerKey), its bytes %-escaped (playerPath): a
// name's bytes need not be UTF-8. A browser reads the path segments "."
// and ".." (escaped or not) as steps up the path, so those two names are
// given as ?name= after /players/ (or /api/v1/players/), which takes any
// name too.

// PlayerSightingsJSON is the answer of /api/v1/players/{name}.
type PlayerSightingsJSON struct {
	// Name is the name as the server that saw the player last drew it,
	// colour codes kept; NamePlain without them; NameRaw the bytes the
	// player is known by (colour codes stripped), base64.
	Name       string         `json:"name"`
	NamePlain  string         `json:"name_plain"`
	NameRaw    []byte         `json:"name_raw"`
	Page       string         `json:"page"`
	RetentionS int            `json:"retention_s"`
	Sightings  []SightingJSON `json:"sightings"`
}

// SightingJSON is one server a player was seen on.
type SightingJSON struct {
	Server SightedOnJSON `json:"server"`
	// Name is the name as that server sent it, drawn as its game draws
	// it; NameRaw its bytes.
	Name      string    `json:"name"`
	NamePlain string    `json:"name_plain"`
	NameRaw   []byte    `json:"name_raw"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// Playing: the server is listed and its last player list has the
	// player.
	Playing bool `json:"playing"`
}

// SightedOnJSON is the server of a sighting: its published address and
// game, and while it is listed its name and map.
type SightedOnJSON struct {
	Address   string `json:"address"`
	Game      string `json:"game"`
	Listed    bool   `json:"listed"`
	NamePlain string `json:"name_plain,omitempty"`
	Map       string `json:"map,omitempty"`
}

// playerPath is the path of the page of the player known by key.
func playerPath(key string) string {
	if key == "." || key == ".." {
		return "/players/?name=" + url.QueryEscape(key)
	}
	return "/players/" + escapeSegment(key)
}

// escapeSegment %-escapes every byte of s but letters, digits and "-_~",
// so that a segment never holds "/", never cleans to another path, and
// carries any bytes.
func escapeSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// playerName reads the name of a request to prefix (/api/v1/players/ or
// /players/): the %-escaped segment after it, or ?name=.
func playerName(r *http.Request, prefix string) (string, *Error) {
	seg := strings.TrimPrefix(r.URL.EscapedPath(), prefix)
	var name string
	var err error
	if seg == "" {
		raw := r.URL.RawQuery
		v, ok := strings.CutPrefix(raw, "name=")
		if !ok || len(raw) > MaxQueryBytes || strings.ContainsRune(v, '&') {
			return "", badParam("name", "want %s{name}, or %s?name={name}", prefix, prefix)
		}
		name, err = url.QueryUnescape(v)
	} else {
		name, err = url.PathUnescape(seg)
	}
	switch {
	case err != nil:
		return "", &Error{Status: http.StatusBadRequest, Code: "bad_query", Parameter: "name", Message: "name: a bad %-escape"}
	case name == "" || len(name) > MaxPlayerNameBytes:
		return "", badParam("name", "%d bytes: want 1 to %d", len(name), MaxPlayerNameBytes)
	}
	return name, nil
}

// MaxPlayerNameBytes bounds a player's name in a path: the longest name
// the master keeps (master.MaxPlayerNameBytes).
const MaxPlayerNameBytes = 40

// sighted is what a player's JSON and page show at now, from view v: the
// JSON, its ETag (the listing version and slot, the sightings' version,
// the time of each listed server's last player list) and whether the
// player was seen at all.
func (a *API) sighted(v *view, now time.Time, key string) (PlayerSightingsJSON, string, bool) {
	ss := a.deps.Sightings.Of(key, now)
	rc := a.reg.Config()
	out := PlayerSightingsJSON{NameRaw: []byte(key), Page: playerPath(key), RetentionS: int(history.SightingRetention / time.Second),
		Sightings: []SightingJSON{}}
	var tag strings.Builder
	fmt.Fprintf(&tag, `W/"u%d.%d.%d`, v.version, v.slot, a.deps.Sightings.Version())
	for i, s := range ss {
		pub, _ := rc.AddrMap.Map(s.Server)
		j := SightingJSON{Server: SightedOnJSON{Address: pub.String(), Game: s.Game}, NameRaw: []byte(s.Name),
			FirstSeen: s.First, LastSeen: s.Last}
		cs := gametext.Quake
		if g, ok := rc.Catalogue.ByName(s.Game); ok {
			cs = gametext.For(g.Family.String())
		}
		if k, ok := v.byAddr[pub]; ok {
			row := &v.rows[k]
			cs = row.cs
			j.Server.Listed, j.Server.NamePlain, j.Server.Map = true, row.NamePlain, row.Map
			if _, at, ok := a.deps.Players(row.reg); ok {
				j.Playing = at.Equal(s.Last)
				fmt.Fprintf(&tag, ".%d", at.Unix())
			}
		}
		j.Name, j.NamePlain = cs.Decode(s.Name), cs.Plain(s.Name)
		if i == 0 {
			out.Name, out.NamePlain = j.Name, cs.Decode(key)
		}
		out.Sightings = append(out.Sightings, j)
	}
	tag.WriteByte('"')
	return out, tag.String(), len(ss) > 0
}

// noSightings is the answer for a name nobody was seen with.
func noSightings(key string) *Error {
	return &Error{Status: http.StatusNotFound, Code: "not_found", Parameter: "name",
		Message: fmt.Sprintf("%q: not seen on a listed server in the last %d days", clip(key), int(history.SightingRetention/(24*time.Hour)))}
}

// player answers GET /api/v1/players/{name}.
func (a *API) player(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	key, perr := playerName(r, "/api/v1/players/")
	if perr == nil && a.deps.Sightings == nil {
		perr = &Error{Status: http.StatusNotFound, Code: "not_found", Message: "this master keeps no player sightings (scout master --no-player-sightings)"}
	}
	if perr != nil {
		writeError(w, perr)
		return
	}
	v := a.current(now)
	d, etag, ok := a.sighted(v, now, key)
	if !ok {
		writeError(w, noSightings(key))
		return
	}
	if notModified(r, etag, v.built) {
		a.answer(w, r, etag, v.built, false, nil, "", nil)
		return
	}
	c := newBodyCache(cacheLimits{}) // not kept: a player's sightings move with every player list
	b, _ := c.get("", func() ([]byte, any) { return marshal(d), nil })
	a.answer(w, r, etag, v.built, false, c, "", b)
}

// playerPageTmpl is a player's page. Every value from a server is
// hostile: the template escapes it for its context.
var playerPageTmpl = parsePage("player", "profile", "player-page", `<main>
<h2 id="player-name">{{.Name}}</h2>
<p id="player-summary">{{.Summary}}</p>
<table id="player-sightings"><thead><tr><th scope="col">Server</th><th scope="col">Game</th><th scope="col">Name there</th><th scope="col">First seen</th><th scope="col">Last seen</th></tr></thead><tbody>
{{range .Rows}}<tr data-address="{{.Address}}"{{if .Playing}} class="playing"{{end}}><td>{{if .Listed}}<a href="/servers/{{.Address}}">{{.Server}}</a>{{else}}<span class="addr">{{.Address}}</span> <span class="gone">(no longer listed)</span>{{end}}</td><td>{{.Game}}</td><td>{{.Name}}</td><td><time datetime="{{.First}}">{{.FirstText}}</time></td><td>{{if .Playing}}<strong>playing now</strong>{{else}}<time datetime="{{.Last}}">{{.LastText}}</time>{{end}}</td></tr>
{{end}}</tbody></table>
<p class="note">Seen in the player lists the servers publish, bots left out, for {{.Days}} days; this master's own record (a fleet's instances each keep theirs).</p>
<p><a href="/">The server list</a> · <a href="{{.JSON}}">JSON</a></p>
</main>
</body>
</html>
`)

type playerPageData struct {
	Title, Description, Path, JSON string
	Name, Summary                  string
	Days                           int
	Rows                           []playerPageRow
}

type playerPageRow struct {
	Address, Server, Game, Name      string
	First, Last, FirstText, LastText string
	Listed, Playing                  bool
}

// pageTime is how the page writes a time.
const pageTime = "2006-01-02 15:04 UTC"

// playerPage answers GET /players/{name}.
func (a *API) playerPage(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	key, perr := playerName(r, "/players/")
	if perr != nil {
		http.Error(w, perr.Message, perr.Status)
		return
	}
	if a.deps.Sightings == nil {
		http.Error(w, "this master keeps no player sightings", http.StatusNotFound)
		return
	}
	v := a.current(now)
	d, etag, ok := a.sighted(v, now, key)
	if !ok {
		http.Error(w, noSightings(key).Message, http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; frame-ancestors 'none'")
	if notModified(r, etag, v.built) {
		a.answer(w, r, etag, v.built, false, nil, "", nil)
		return
	}
	var b bytes.Buffer
	cat := a.reg.Config().Catalogue
	title := func(game string) string {
		if g, ok := cat.ByName(game); ok && g.Title != "" {
			return g.Title
		}
		return game
	}
	if err := playerPageTmpl.Execute(&b, playerData(d, title)); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	c := newBodyCache(cacheLimits{})
	body, _ := c.get("", func() ([]byte, any) { return b.Bytes(), nil })
	a.answer(w, r, etag, v.built, false, c, "", body)
}

// playerData is the page's rows, title and description from the JSON,
// games named by title.
func playerData(d PlayerSightingsJSON, title func(game string) string) playerPageData {
	name := strings.TrimSpace(d.Sightings[0].NamePlain)
	if name == "" {
		name = d.NamePlain
	}
	days := int(history.SightingRetention / (24 * time.Hour))
	p := playerPageData{Name: name, Path: d.Page, JSON: "/api/v1" + d.Page, Days: days}
	if strings.HasPrefix(d.Page, "/players/?") {
		p.JSON = "/api/v1/players/?" + strings.TrimPrefix(d.Page, "/players/?")
	}
	playing := ""
	for _, s := range d.Sightings {
		row := playerPageRow{Address: s.Server.Address, Server: strings.TrimSpace(s.Server.NamePlain), Game: title(s.Server.Game),
			Name: s.NamePlain, First: s.FirstSeen.UTC().Format(time.RFC3339), Last: s.LastSeen.UTC().Format(time.RFC3339),
			FirstText: s.FirstSeen.UTC().Format(pageTime), LastText: s.LastSeen.UTC().Format(pageTime),
			Listed: s.Server.Listed, Playing: s.Playing}
		if row.Server == "" {
			row.Server = row.Address
		}
		if row.Playing && playing == "" {
			playing = row.Server
		}
		p.Rows = append(p.Rows, row)
	}
	servers := fmt.Sprintf("%d server", len(d.Sightings))
	if len(d.Sightings) != 1 {
		servers += "s"
	}
	last := p.Rows[0]
	if playing != "" {
		p.Summary = fmt.Sprintf("%s is playing on %s now; seen on %s in the last %d days.", name, playing, servers, days)
	} else {
		p.Summary = fmt.Sprintf("%s was last seen on %s (%s) at %s; seen on %s in the last %d days.", name, last.Server, last.Game, last.LastText, servers, days)
	}
	p.Title = fmt.Sprintf("%s · %s in %d days — scout", name, servers, days)
	p.Description = p.Summary
	return p
}
