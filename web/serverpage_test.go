package web_test

import (
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/web"
)

// TestServerPage_RenderedForLinkPreviews: /servers/ADDRESS is HTML made
// on the server, with the server's name, humans, bots and slots in its
// title and description (what a forum's or a chat's preview shows), its
// hostile name escaped, and the API's caching (ETag, 304, gzip); an
// unknown server is a 404, a bad address a 400.
func TestServerPage_RenderedForLinkPreviews(t *testing.T) {
	w := testWorld()
	w.Servers = append(w.Servers, server(6, world.Q3A, "1.0.0.9:27960", `<script>alert(1)</script>'x`, "q3dm1", 8))
	f := start(t, w, 0, web.Config{}, nil)
	alpha := f.pub["^1Alpha ^7Arena"].String()

	var d web.DetailJSON
	f.getJSON(t, "/api/v1/servers/"+alpha, &d)
	humans, bots := d.Players-d.Bots, d.Bots
	title := fmt.Sprintf("Alpha Arena · q3dm17 · %d/16 — scout", humans)
	botText := ""
	if bots > 0 {
		botText = fmt.Sprintf(" and %d bots", bots)
	}

	r, b := f.get(t, "/servers/"+alpha, "Accept-Encoding", "gzip")
	if r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || r.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("%d %v", r.StatusCode, r.Header)
	}
	page := string(b)
	for _, want := range []string{
		"<title>" + title + "</title>",
		fmt.Sprintf(`<meta name="description" content="Quake3Arena server %s on q3dm17: %d players%s of 16 slots, map q3dm17, country AU.">`, alpha, humans, botText),
		`<meta property="og:title" content="` + title + `">`,
		`<link rel="canonical" href="/servers/` + alpha + `">`,
		fmt.Sprintf("%d of 16 slots", humans),
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	etag := r.Header.Get("ETag")
	if r, _ := f.get(t, "/servers/"+alpha, "If-None-Match", etag); r.StatusCode != 304 {
		t.Errorf("If-None-Match %s: %d, want 304", etag, r.StatusCode)
	}

	hostile := f.pub[`<script>alert(1)</script>'x`].String()
	_, b = f.get(t, "/servers/"+hostile)
	if strings.Contains(string(b), "<script>alert") || !strings.Contains(string(b), html.EscapeString(`<script>alert(1)</script>'x`)) {
		t.Errorf("a hostile name is not escaped:\n%s", b)
	}

	if r, _ := f.get(t, "/servers/192.0.2.1:27960"); r.StatusCode != 404 {
		t.Errorf("an unknown server: %d, want 404", r.StatusCode)
	}
	if r, _ := f.get(t, "/servers/"+url.PathEscape("not an address")); r.StatusCode != 400 {
		t.Errorf("a bad address: %d, want 400", r.StatusCode)
	}
}

// TestAPI_GamesSummary: /api/v1/games over a real master: every game of
// the list with its servers, people and busiest maps, cached like the
// list (ETag, 304).
func TestAPI_GamesSummary(t *testing.T) {
	f := start(t, testWorld(), 0, web.Config{}, nil)
	var g web.GamesJSON
	r := f.getJSON(t, "/api/v1/games", &g)
	servers := 0
	for _, s := range g.Games {
		servers += s.Servers
		if len(s.Maps) == 0 || len(s.Maps) > web.MaxBusiestMaps {
			t.Errorf("%s: %d busiest maps", s.Game, len(s.Maps))
		}
	}
	// Bravo's OpenArena heartbeats as Quake III (QuakeArena-1): three games.
	if servers != 6 || len(g.Games) != 3 || g.Games[0].Game != "Quake3Arena" {
		t.Fatalf("games %+v", g.Games)
	}
	if q := g.Games[0]; q.Servers != 4 || q.Maps[0].Map != "q3dm6" {
		t.Errorf("Quake3Arena %+v: want 4 servers, q3dm6 (Echo and Foxtrot) busiest", q)
	}
	if r2, _ := f.get(t, "/api/v1/games", "If-None-Match", r.Header.Get("ETag")); r2.StatusCode != 304 {
		t.Errorf("If-None-Match: %d", r2.StatusCode)
	}
}

// TestAPI_PlayerSearch: /api/v1/players finds a player by part of the
// name, colour codes ignored, on whichever server, and refuses a name too
// short or too long.
func TestAPI_PlayerSearch(t *testing.T) {
	f := start(t, testWorld(), time.Second, web.Config{MinRefresh: -1}, nil)
	// Player lists come with the re-probes (getstatus), a second apart.
	alpha := f.pub["^1Alpha ^7Arena"].String()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var d web.DetailJSON
		if f.getJSON(t, "/api/v1/servers/"+alpha, &d); len(d.PlayerList) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no player list for Alpha")
		}
		<-tick.C
	}
	var p web.PlayersJSON
	f.getJSON(t, "/api/v1/players?name=BO", &p)
	if p.Total != 1 || len(p.Players) != 1 || p.Players[0].NamePlain != "Bob" || p.Players[0].Server.Address != alpha {
		t.Fatalf("name=BO: %+v", p)
	}
	for _, q := range []string{"name=b", "name=" + strings.Repeat("x", 33), "", "name=ab&name=cd", "nam=bob"} {
		if r, _ := f.get(t, "/api/v1/players?"+q); r.StatusCode != 400 {
			t.Errorf("%q: %d, want 400", q, r.StatusCode)
		}
	}
}
