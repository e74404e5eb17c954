package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/web"
)

func TestPage_ServesEmbeddedFiles(t *testing.T) {
	srv := httptest.NewServer(web.Page())
	defer srv.Close()
	for _, c := range []struct {
		path, ctype string
		status      int
	}{
		{"/", "text/html; charset=utf-8", 200},
		{"/static/app.js", "text/javascript; charset=utf-8", 200},
		{"/static/style.css", "text/css; charset=utf-8", 200},
		{"/static/nope.js", "", 404},
		{"/index.html", "", 404},
	} {
		r, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != c.status {
			t.Errorf("GET %s: status %d, want %d", c.path, r.StatusCode, c.status)
			continue
		}
		if c.status != 200 {
			continue
		}
		if got := r.Header.Get("Content-Type"); got != c.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", c.path, got, c.ctype)
		}
		etag := r.Header.Get("ETag")
		req, _ := http.NewRequest("GET", srv.URL+c.path, nil)
		req.Header.Set("If-None-Match", etag)
		r2, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r2.Body.Close()
		if etag == "" || r2.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match %s: status %d, want 304", c.path, etag, r2.StatusCode)
		}
	}
	r, err := http.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: status %d, want 405", r.StatusCode)
	}
}

// hostile are server and player names written to break a page that puts
// them in as HTML.
var hostile = []string{
	`<img src=x onerror="window.pwned=1">^1Red^7White`,
	`^c900Quake4 ^x0F0DP </td></tr><script>window.pwned=2</script>`,
	"\"'><svg onload=window.pwned=3>^",
}

// fixtureAPI serves the API's shapes from docs/api.md for three servers with
// hostile names: the page's rendering is tested without a master.
func fixtureAPI(t *testing.T) *httptest.Server {
	now := time.Now().UTC()
	servers := []map[string]any{}
	for i, name := range hostile {
		servers = append(servers, map[string]any{
			"address": fmt.Sprintf("192.0.2.%d:27960", i+1), "game": "OpenArena", "family": "q3", "protocol": 71,
			"name": name, "name_plain": name, "map": "oa_dm" + fmt.Sprint(i+1), "gametype": "0",
			"players": 3 - i, "bots": 1, "max_players": 12, "country": []string{"DE", "--", "AU"}[i],
			"first_seen": now.Add(-time.Hour), "last_verified": now, "ping_estimate_ms": 20 + 100*i,
			"recent_players": []int{0, 1, 2, 3 - i},
		})
	}
	mux := http.NewServeMux()
	mux.Handle("GET /", web.Page())
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /api/v1/servers", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"version": 1, "generated": now, "total": len(servers), "page": 1,
			"per_page": 100, "from": "DE", "servers": servers})
	})
	mux.HandleFunc("GET /api/v1/servers/{address}", func(w http.ResponseWriter, r *http.Request) {
		s := map[string]any{}
		for k, v := range servers[0] {
			s[k] = v
		}
		s["info"] = map[string]string{"sv_hostname": hostile[0], "<b>key</b>": hostile[1]}
		s["player_list"] = []map[string]any{{"name": hostile[1], "score": 5, "ping": 48}, {"name": hostile[2], "score": 9, "ping": 0}}
		pts := []map[string]any{}
		for i := range 12 {
			pts = append(pts, map[string]any{"t": now.Add(time.Duration(i-12) * 5 * time.Minute), "players": i % 4})
		}
		s["history"] = map[string]any{"resolution_s": 300, "points": pts}
		writeJSON(w, s)
	})
	mux.HandleFunc("GET /api/v1/meta", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"games": []string{"OpenArena"}, "gametypes": []string{"0"},
			"countries": []string{"AU", "DE"}, "maps": []string{"oa_dm1"}, "reprobe_s": 300, "version": 1})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestPage_HostileNamesStayText renders names made of HTML and colour codes:
// nothing of them runs or becomes an element, colours become spans.
func TestPage_HostileNamesStayText(t *testing.T) {
	srv := fixtureAPI(t)
	ctx := newBrowser(t, desktopWidth, desktopHeight)
	do(t, ctx, "loading the page", chromedp.Navigate(srv.URL+"/"),
		poll(`document.querySelectorAll("#servers tbody tr").length === 3`))
	if got := eval[any](t, ctx, `window.pwned ?? null`); got != nil {
		t.Fatalf("a name ran script: window.pwned = %v", got)
	}
	if got := strings.Join(rowAddresses(t, ctx), " "); got != "192.0.2.1:27960 192.0.2.2:27960 192.0.2.3:27960" {
		t.Errorf("rows %s, want the API's order", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#servers img, #servers script, #servers tbody svg[onload], #servers td td").length`); n != 0 {
		t.Errorf("%d elements made from names", n)
	}
	first := eval[string](t, ctx, `document.querySelector("#servers tbody tr .qname").textContent`)
	if want := `<img src=x onerror="window.pwned=1">RedWhite`; first != want {
		t.Errorf("first name shows %q, want %q", first, want)
	}
	if cls := eval[[]string](t, ctx, `[...document.querySelectorAll("#servers tbody tr:first-child .qname span")].map(s => s.className)`); strings.Join(cls, " ") != "q7 q1 q7" {
		t.Errorf("colour spans %v, want q7 q1 q7", cls)
	}
	if c := eval[[]string](t, ctx, `[...document.querySelectorAll("#servers tbody tr:nth-child(2) .qname span")].map(s => s.style.color)`); len(c) != 2 || c[0] != "rgb(255, 0, 0)" || c[1] != "rgb(0, 255, 0)" {
		t.Errorf("Quake 4 and DarkPlaces colours %v, want red then green", c)
	}
	do(t, ctx, "opening the detail panel", chromedp.Click(`#servers tbody tr:first-child a.open`),
		poll(`document.querySelectorAll("#detail-players tbody tr").length === 2`),
		poll(`document.querySelector("#detail-chart svg path.line") !== null`))
	if n := eval[int](t, ctx, `document.querySelectorAll("#detail img, #detail script, #detail b").length`); n != 0 {
		t.Errorf("%d elements made from names or info in the detail panel", n)
	}
	if got := eval[any](t, ctx, `window.pwned ?? null`); got != nil {
		t.Fatalf("a name ran script: window.pwned = %v", got)
	}
	screenshot(t, ctx, "fixture.png", false)
}

// The page names game types with its own table (static/quake.js); the
// CLI with the catalogue's (game.Game.Gametypes). They must say the same.
func TestPage_GametypeNamesAreTheCatalogues(t *testing.T) {
	js, err := os.ReadFile("static/quake.js")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)const GAMETYPES = \{(.*?)\n\};`).FindSubmatch(js)
	if block == nil {
		t.Fatal("no GAMETYPES table in static/quake.js")
	}
	entries := regexp.MustCompile(`(?s)(\w+): (\[.*?\])`).FindAllSubmatch(block[1], -1)
	seen := map[string]bool{}
	for _, e := range entries {
		var names []*string
		if err := json.Unmarshal(e[2], &names); err != nil {
			t.Fatalf("%s: %v", e[1], err)
		}
		g, ok := game.Default().ByName(string(e[1]))
		if !ok {
			t.Errorf("the page names the game types of %s, which the catalogue does not know", e[1])
			continue
		}
		seen[g.Name] = true
		var page []string
		for _, n := range names {
			page = append(page, ptrString(n))
		}
		if !slices.Equal(page, g.Gametypes) {
			t.Errorf("%s: the page says %q, the catalogue %q", g.Name, page, g.Gametypes)
		}
	}
	for _, g := range game.Default().Games() {
		if len(g.Gametypes) > 0 && !seen[g.Name] {
			t.Errorf("the catalogue names %s's game types, the page does not", g.Name)
		}
	}
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
