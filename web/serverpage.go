package web

import (
	"bytes"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// A server's own page, /servers/ADDRESS: rendered here, on the server, so
// that a link to it shows a title and a description in a forum's or a
// chat's preview and a search engine finds it without running the page's
// script. It carries the list's facts (humans, bots and slots), the last
// player list and a link to the browser; the page's #server=ADDRESS
// links redirect here.

// serverPageTmpl is the page. Every value from a server is hostile: the
// template escapes it for its context (text, attribute).
var serverPageTmpl = parsePage("server", "website", "server-page", `<main>
<h2 id="server-name">{{.Name}}</h2>
<p class="addr server-addr" id="server-addr">{{.Address}}</p>
<dl id="server-facts">
<dt>Game</dt><dd>{{.Game}}</dd>
<dt>Map</dt><dd>{{.Map}}</dd>
<dt>Players</dt><dd id="server-players">{{.Humans}} of {{.Slots}} slots{{if .Bots}}, and {{.Bots}} bot{{if ne .Bots 1}}s{{end}}{{end}}</dd>
<dt>Country</dt><dd><span class="cc">{{.Country}}</span></dd>
{{if .Verified}}<dt>Last verified</dt><dd>{{.Verified}}</dd>{{end}}
</dl>
<h3>Players</h3>
{{if .PlayerList}}<table id="server-player-list"><thead><tr><th scope="col">Name</th><th scope="col">Score</th><th scope="col">Ping</th></tr></thead><tbody>
{{range .PlayerList}}<tr><td>{{.Name}}</td><td>{{.Score}}</td><td>{{if .Bot}}bot{{else}}{{.Ping}}{{end}}</td></tr>
{{end}}</tbody></table>{{else}}<p>No player list yet, or nobody was playing at the last check.</p>{{end}}
<p><a href="/?q={{.Query}}">Find it in the server list</a> · <a href="/api/v1/servers/{{.Address}}">JSON</a></p>
</main>
</body>
</html>
`)

// serverPageData is what the template shows.
type serverPageData struct {
	Title, Description, Path        string
	Name, Address, Game, Map, Query string
	Country, Verified               string
	Humans, Bots, Slots             int
	PlayerList                      []serverPagePlayer
}

type serverPagePlayer struct {
	Name        string
	Score, Ping int
	Bot         bool
}

// serverPage answers GET /servers/ADDRESS.
func (a *API) serverPage(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	raw := strings.TrimPrefix(r.URL.Path, "/servers/")
	addr, err := netip.ParseAddrPort(raw)
	if err != nil || addr.Port() == 0 || addr.Addr().Zone() != "" {
		http.Error(w, fmt.Sprintf("%q: want /servers/IP:PORT ([IPv6]:PORT for IPv6)", clip(raw)), http.StatusBadRequest)
		return
	}
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	v := a.current(now)
	i, ok := v.byAddr[addr]
	if !ok {
		http.Error(w, fmt.Sprintf("%v: no such server listed", addr), http.StatusNotFound)
		return
	}
	row := &v.rows[i]
	players, at, _ := a.deps.Players(row.reg)
	etag := fmt.Sprintf(`W/"p%d.%d.%d"`, v.version, v.slot, at.UnixNano())
	modified := v.built
	if at.After(modified) {
		modified = at
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; frame-ancestors 'none'")
	if notModified(r, etag, modified) {
		a.answer(w, r, etag, modified, false, nil, "", nil)
		return
	}
	d := pageData(row.ServerJSON)
	for _, p := range players {
		d.PlayerList = append(d.PlayerList, serverPagePlayer{Name: row.cs.Plain(p.Name), Score: p.Score, Ping: p.Ping, Bot: p.Ping == 0})
	}
	var b bytes.Buffer
	if err := serverPageTmpl.Execute(&b, d); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	c := newBodyCache(cacheLimits{}) // not kept: the page changes with every player list
	body, _ := c.get("", func() ([]byte, any) { return b.Bytes(), nil })
	a.answer(w, r, etag, modified, false, c, "", body)
}

// pageData is the page's facts, title and description from the
// list's row of the server.
func pageData(s ServerJSON) serverPageData {
	humans := s.Humans
	name := strings.TrimSpace(s.NamePlain)
	if name == "" {
		name = s.Address
	}
	d := serverPageData{Name: name, Address: s.Address, Game: s.Game, Map: s.Map, Country: s.Country,
		Humans: humans, Bots: s.Bots, Slots: s.MaxPlayers, Path: "/servers/" + s.Address, Query: name}
	if s.LastVerified != nil {
		d.Verified = s.LastVerified.UTC().Format(time.RFC3339)
	}
	d.Title = fmt.Sprintf("%s · %s · %d/%d — scout", name, s.Map, humans, s.MaxPlayers)
	bots := ""
	if s.Bots > 0 {
		bots = fmt.Sprintf(" and %d bots", s.Bots)
	}
	d.Description = fmt.Sprintf("%s server %s on %s: %d players%s of %d slots, map %s, country %s.",
		s.Game, s.Address, s.Map, humans, bots, s.MaxPlayers, s.Map, s.Country)
	return d
}
