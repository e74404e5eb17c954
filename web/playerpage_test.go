package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/web"
)

// sightingsWorld has Bob on two servers (in two colours), a bot, and
// players whose names are no path segment as they are: "..", a Quake III
// high glyph, and "/", "%", "?", "#".
func sightingsWorld() world.World {
	hum := func(n string, ping int) world.Player { return world.Player{Name: n, Score: 1, Ping: ping} }
	return world.World{Version: 1, Seed: 1, Servers: []world.Server{
		server(0, world.Q3A, "1.1.1.1:27960", "^1Alpha ^7Arena", "q3dm17", 16, hum("^2Bob", 50), hum("..", 45), hum("\xc1lice", 40),
			hum("a/b%c?d#e", 30), world.Player{Name: "Sarge", Bot: true}),
		server(1, world.ET, "81.169.145.1:27960", "Charlie CTF", "oasis", 8, hum("^4Bob", 60)),
	}}
}

// waitFor polls the API every 50 ms until cond, at most 20 s.
func (f *fixture) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		<-tick.C
	}
}

// checkRevalidates fails unless a request for path with If-None-Match
// etag is a 304, or a 200 with another ETag (a player list came in
// between: the servers are re-probed every second).
func (f *fixture) checkRevalidates(t *testing.T, path, etag string) {
	t.Helper()
	r, _ := f.get(t, path, "If-None-Match", etag)
	if etag == "" || !(r.StatusCode == 304 || r.StatusCode == 200 && r.Header.Get("ETag") != etag) {
		t.Errorf("%s with If-None-Match %s: %d, ETag %s", path, etag, r.StatusCode, r.Header.Get("ETag"))
	}
}

// TestPlayerPage_WhereTheyPlayedRecently: the master records where each
// person was seen from the servers' player lists; the search and the
// detail link each person (not bots) to their page; /api/v1/players/{name}
// gives the servers, most recent first, with the name as each sent it,
// and /players/{name} is HTML made on the server for link previews, both
// with the API's caching; names of any bytes have a page that resolves.
func TestPlayerPage_WhereTheyPlayedRecently(t *testing.T) {
	f := start(t, sightingsWorld(), time.Second, web.Config{MinRefresh: -1}, nil)
	alpha, charlie := f.pub["^1Alpha ^7Arena"].String(), f.pub["Charlie CTF"].String()
	var bob web.PlayerSightingsJSON
	f.waitFor(t, "Bob seen on both servers", func() bool {
		r, b := f.get(t, "/api/v1/players/Bob")
		return r.StatusCode == 200 && strings.Contains(string(b), alpha) && strings.Contains(string(b), charlie)
	})
	r := f.getJSON(t, "/api/v1/players/Bob", &bob)
	if bob.NamePlain != "Bob" || string(bob.NameRaw) != "Bob" || bob.Page != "/players/Bob" || bob.RetentionS != 7*24*3600 || len(bob.Sightings) != 2 {
		t.Fatalf("Bob: %+v", bob)
	}
	got := map[string]web.SightingJSON{}
	for i, s := range bob.Sightings {
		got[s.Server.Address] = s
		if i > 0 && s.LastSeen.After(bob.Sightings[i-1].LastSeen) {
			t.Errorf("not the most recent first: %+v", bob.Sightings)
		}
		if !s.Server.Listed || !s.Playing || s.FirstSeen.After(s.LastSeen) || s.NamePlain != "Bob" {
			t.Errorf("sighting %+v", s)
		}
	}
	if got[alpha].Name != "^2Bob" || got[alpha].Server.Game != "Quake3Arena" || got[alpha].Server.NamePlain != "Alpha Arena" ||
		got[charlie].Name != "^4Bob" || got[charlie].Server.Map != "oasis" {
		t.Errorf("Bob's sightings %+v", got)
	}
	f.checkRevalidates(t, "/api/v1/players/Bob", r.Header.Get("ETag"))

	var found web.PlayersJSON
	f.getJSON(t, "/api/v1/players?name=bob", &found)
	for _, p := range found.Players {
		if p.Page != "/players/Bob" {
			t.Errorf("search result %+v links to %q", p, p.Page)
		}
	}
	var d web.DetailJSON
	f.getJSON(t, "/api/v1/servers/"+alpha, &d)
	pages := map[string]string{}
	for _, p := range d.PlayerList {
		if p.Bot != (p.Page == "") {
			t.Errorf("%q: bot %v, page %q", p.NameRaw, p.Bot, p.Page)
		}
		pages[string(p.NameRaw)] = p.Page
	}
	for raw, want := range map[string]string{"..": "/players/?name=..", "\xc1lice": "/players/%C1lice", "a/b%c?d#e": "/players/a%2Fb%25c%3Fd%23e"} {
		if pages[raw] != want {
			t.Errorf("%q's page %q, want %q", raw, pages[raw], want)
			continue
		}
		api := "/api/v1" + want
		if strings.HasPrefix(want, "/players/?") {
			api = "/api/v1/players/?" + strings.TrimPrefix(want, "/players/?")
		}
		var p web.PlayerSightingsJSON
		f.getJSON(t, api, &p)
		if string(p.NameRaw) != raw || len(p.Sightings) != 1 || p.Sightings[0].Server.Address != alpha || p.Page != want {
			t.Errorf("%s: %+v", api, p)
		}
		if r, b := f.get(t, want); r.StatusCode != 200 || !strings.Contains(string(b), `href="/servers/`+alpha+`"`) {
			t.Errorf("%s: %d\n%s", want, r.StatusCode, b)
		}
	}
	if p := pages["\xc1lice"]; p != "" {
		var a web.PlayerSightingsJSON
		f.getJSON(t, "/api/v1"+p, &a)
		if a.NamePlain != "Alice" { // Quake III's font draws 0xC1 as an A
			t.Errorf("\\xc1lice drawn as %q", a.NamePlain)
		}
	}

	r, b := f.get(t, "/players/Bob", "Accept-Encoding", "gzip")
	if r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || r.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("/players/Bob: %d %v", r.StatusCode, r.Header)
	}
	page := string(b)
	title := "Bob · 2 servers in 7 days — scout"
	for _, want := range []string{
		"<title>" + title + "</title>",
		`<meta property="og:title" content="` + title + `">`,
		`<meta name="description" content="Bob is playing on `,
		`<link rel="canonical" href="/players/Bob">`,
		`<a href="/servers/` + alpha + `">Alpha Arena</a>`,
		`<a href="/servers/` + charlie + `">Charlie CTF</a>`,
		"playing now",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	f.checkRevalidates(t, "/players/Bob", r.Header.Get("ETag"))

	for path, want := range map[string]int{
		"/api/v1/players/Sarge":                           404, // a bot
		"/api/v1/players/Nobody":                          404,
		"/players/Nobody":                                 404,
		"/api/v1/players/" + strings.Repeat("x", 41):      400,
		"/api/v1/players/?nam=Bob":                        400,
		"/api/v1/players/?name=Bob&name=Ann":              400,
		"/players/" + strings.Repeat("%C1", 41):           400,
		"/api/v1/players/?name=" + strings.Repeat("x", 2): 404,
	} {
		if r, b := f.get(t, path); r.StatusCode != want {
			t.Errorf("%s: %d, want %d: %s", path, r.StatusCode, want, b)
		}
	}
}

// TestPlayerPage_NoSightingsKept: a master told to keep no sightings
// links no player to a page and answers 404 for every name.
func TestPlayerPage_NoSightingsKept(t *testing.T) {
	f := start(t, sightingsWorld(), time.Second, web.Config{MinRefresh: -1}, nil, func(c *masterd.Config) { c.NoPlayerSightings = true })
	alpha := f.pub["^1Alpha ^7Arena"].String()
	var d web.DetailJSON
	f.waitFor(t, "Alpha's player list", func() bool { f.getJSON(t, "/api/v1/servers/"+alpha, &d); return len(d.PlayerList) > 0 })
	for _, p := range d.PlayerList {
		if p.Page != "" {
			t.Errorf("%q links to %q", p.NameRaw, p.Page)
		}
	}
	for _, path := range []string{"/api/v1/players/Bob", "/players/Bob"} {
		if r, _ := f.get(t, path); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, r.StatusCode)
		}
	}
	if f.m.Sightings != nil {
		t.Error("sightings kept")
	}
}
