package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/web"
)

// testWorld: six servers of four games in five countries; Alpha and Echo
// tie on players.
func testWorld() world.World {
	bot := func(n string) world.Player { return world.Player{Name: n, Bot: true} }
	hum := func(n string, score, ping int) world.Player { return world.Player{Name: n, Score: score, Ping: ping} }
	return world.World{Version: 1, Seed: 1, Servers: []world.Server{
		server(0, world.Q3A, "1.1.1.1:27960", "^1Alpha ^7Arena", "q3dm17", 16, hum("^2Bob", 10, 50), hum("Ann", 4, 80), bot("Sarge")),
		server(1, world.OA, "8.8.8.8:27960", "Bravo FFA", "oa_dm1", 8),
		server(2, world.ET, "81.169.145.1:27960", "Charlie CTF", "oasis", 4, hum("a", 1, 40), hum("b", 2, 40), hum("c", 3, 40), hum("d", 4, 40)),
		server(3, world.Q4, "88.198.1.1:28004", "Delta", "q4dm1", 8, hum("^1Q^7uad", 0, 60), hum("Rail", 0, 70)),
		server(4, world.Q3A, "133.1.1.1:27960", "Echo", "q3dm6", 8, hum("x", 1, 1), hum("y", 2, 2), hum("z", 3, 3)),
		server(5, world.Q3A, "195.154.1.1:27961", "Foxtrot", "q3dm6", 12, hum("solo", 9, 30)),
	}}
}

func names(l web.ListJSON) []string {
	var out []string
	for _, s := range l.Servers {
		out = append(out, s.NamePlain)
	}
	return out
}

// TestAPI_ListCachingAndFilters: a real master with six emulated servers
// registered over loopback UDP; the list over real HTTP: the default
// order, geolocation, the caching headers, 304s that encode nothing, gzip,
// every filter, sorting, paging.
func TestAPI_ListCachingAndFilters(t *testing.T) {
	f := start(t, testWorld(), 0, web.Config{}, nil)
	api := f.m.API

	r, b := f.get(t, "/api/v1/servers", "Accept-Encoding", "gzip")
	if r.StatusCode != 200 || r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v", r.StatusCode, r.Header)
	}
	var l web.ListJSON
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Charlie CTF", "Alpha Arena", "Echo", "Delta", "Foxtrot", "Bravo FFA"}; !slices.Equal(names(l), want) || l.Total != 6 {
		t.Fatalf("default order %q (total %d), want %q", names(l), l.Total, want)
	}
	alpha := l.Servers[1]
	if alpha.Address != f.pub["^1Alpha ^7Arena"].String() || alpha.Name != "^1Alpha ^7Arena" || alpha.Country != "AU" ||
		alpha.ASN != 13335 || alpha.Players != 3 || alpha.MaxPlayers != 16 || alpha.Map != "q3dm17" || alpha.Game != "Quake3Arena" ||
		alpha.LastVerified == nil || alpha.FirstSeen.IsZero() {
		t.Errorf("alpha %+v", alpha)
	}
	for _, h := range []string{"ETag", "Last-Modified"} {
		if r.Header.Get(h) == "" {
			t.Errorf("no %s", h)
		}
	}
	if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=24" {
		t.Errorf("Cache-Control %q", cc)
	}
	if r.Header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("Vary %q", r.Header.Get("Vary"))
	}

	// A tracker polling: If-None-Match and If-Modified-Since answer 304
	// with no body, with no new view and no encoding.
	builds, misses := api.Builds.Load(), api.Misses.Load()
	for _, hdr := range [][]string{
		{"If-None-Match", r.Header.Get("ETag")},
		{"If-None-Match", `"x", ` + strings.TrimPrefix(r.Header.Get("ETag"), "W/")},
		{"If-Modified-Since", r.Header.Get("Last-Modified")},
	} {
		r2, b2 := f.get(t, "/api/v1/servers", append(hdr, "Accept-Encoding", "gzip")...)
		if r2.StatusCode != http.StatusNotModified || len(b2) != 0 || r2.Header.Get("ETag") != r.Header.Get("ETag") ||
			r2.Header.Get("Cache-Control") == "" {
			t.Errorf("%v: %d %q %v", hdr, r2.StatusCode, b2, r2.Header)
		}
	}
	if r2, _ := f.get(t, "/api/v1/servers", "If-None-Match", `W/"0.0-"`); r2.StatusCode != 200 {
		t.Errorf("a stale ETag: %d", r2.StatusCode)
	}
	if api.Builds.Load() != builds || api.Misses.Load() != misses {
		t.Errorf("conditional requests built %d views, encoded %d lists", api.Builds.Load()-builds, api.Misses.Load()-misses)
	}
	// Identity encoding: the same JSON; and it came from the cache.
	hits := api.Hits.Load()
	r3, b3 := f.get(t, "/api/v1/servers")
	if r3.Header.Get("Content-Encoding") != "" || string(b3) != string(b) || api.Hits.Load() != hits+1 {
		t.Errorf("identity: %v, same %v, hits %d->%d", r3.Header, string(b3) == string(b), hits, api.Hits.Load())
	}

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"game=Quake4", []string{"Delta"}},
		{"game=quake3arena&sort=name", []string{"Alpha Arena", "Bravo FFA", "Echo", "Foxtrot"}},
		{"game=et&game=Quake4", []string{"Charlie CTF", "Delta"}},
		{"country=de", []string{"Charlie CTF", "Delta"}},
		{"country=JP&country=FR", []string{"Echo", "Foxtrot"}},
		{"empty=true", []string{"Bravo FFA"}},
		{"empty=false&full=false&sort=name", []string{"Alpha Arena", "Delta", "Echo", "Foxtrot"}},
		{"full=true", []string{"Charlie CTF"}},
		{"q=ALPHA", []string{"Alpha Arena"}},
		{"q=%5E1alpha", []string{"Alpha Arena"}}, // colours stripped from the search too
		{"q=a+a", []string{"Alpha Arena"}},
		{"map=Q3DM6&sort=name&order=desc", []string{"Foxtrot", "Echo"}},
		{"protocol=84", []string{"Charlie CTF"}},
		{"gametype=dm", []string{"Delta"}},
		{"sort=name", []string{"Alpha Arena", "Bravo FFA", "Charlie CTF", "Delta", "Echo", "Foxtrot"}},
		{"sort=players&order=asc", []string{"Bravo FFA", "Foxtrot", "Delta", "Alpha Arena", "Echo", "Charlie CTF"}},
		{"sort=country&per_page=2&page=2", []string{"Delta", "Foxtrot"}}, // AU, DE DE (by address), FR, JP, US
		{"sort=ping&from=de", []string{"Charlie CTF", "Delta", "Foxtrot", "Echo", "Alpha Arena", "Bravo FFA"}[:2]},
		{"sort=address&per_page=1&page=6", []string{"Foxtrot"}}, // numeric: 1.1.1.1 < 8.8.8.8 < ... < 195.154.1.1
		{"page=3&per_page=5", nil},
	} {
		var l web.ListJSON
		f.getJSON(t, "/api/v1/servers?"+c.query, &l)
		got := names(l)
		if strings.HasPrefix(c.query, "sort=ping") {
			got = got[:2]
			for _, s := range l.Servers {
				if s.PingEstimateMs == nil || *s.PingEstimateMs <= 0 {
					t.Errorf("%s: %s has no ping estimate", c.query, s.NamePlain)
				}
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.query, got, c.want)
		}
	}
	// country sort check in full: AU DE DE FR JP US
	var byCountry web.ListJSON
	f.getJSON(t, "/api/v1/servers?sort=country", &byCountry)
	if want := []string{"Alpha Arena", "Charlie CTF", "Delta", "Foxtrot", "Echo", "Bravo FFA"}; !slices.Equal(names(byCountry), want) {
		t.Errorf("sort=country %q, want %q", names(byCountry), want)
	}

	// meta: what the filters offer.
	var meta web.MetaJSON
	f.getJSON(t, "/api/v1/meta", &meta)
	if !slices.Equal(meta.Countries, []string{"AU", "DE", "FR", "JP", "US"}) || !slices.Contains(meta.Games, "Quake4") ||
		!slices.Contains(meta.Maps, "oasis") || meta.ReprobeS != 240 || meta.Version != l.Version {
		t.Errorf("meta %+v", meta)
	}
}

// TestAPI_Errors: every bad request is a JSON error with its status and
// code, never a 500.
func TestAPI_Errors(t *testing.T) {
	f := start(t, world.World{Version: 1, Servers: testWorld().Servers[:1]}, 0, web.Config{}, nil)
	for _, c := range []struct {
		method, path string
		status       int
		code, param  string
	}{
		{"GET", "/api/v1/servers?page=0", 400, "bad_parameter", "page"},
		{"GET", "/api/v1/servers?page=10001", 400, "bad_parameter", "page"},
		{"GET", "/api/v1/servers?page=x", 400, "bad_parameter", "page"},
		{"GET", "/api/v1/servers?page=1&page=2", 400, "bad_parameter", "page"},
		{"GET", "/api/v1/servers?per_page=501", 400, "bad_parameter", "per_page"},
		{"GET", "/api/v1/servers?per_page=-1", 400, "bad_parameter", "per_page"},
		{"GET", "/api/v1/servers?sort=frags", 400, "bad_parameter", "sort"},
		{"GET", "/api/v1/servers?order=up", 400, "bad_parameter", "order"},
		{"GET", "/api/v1/servers?order=asc&order=desc", 400, "bad_parameter", "order"},
		{"GET", "/api/v1/servers?empty=yes", 400, "bad_parameter", "empty"},
		{"GET", "/api/v1/servers?full=", 400, "bad_parameter", "full"},
		{"GET", "/api/v1/servers?protocol=68.5", 400, "bad_parameter", "protocol"},
		{"GET", "/api/v1/servers?protocol=99999999999", 400, "bad_parameter", "protocol"},
		{"GET", "/api/v1/servers?country=DEU", 400, "bad_parameter", "country"},
		{"GET", "/api/v1/servers?country=1x", 400, "bad_parameter", "country"},
		{"GET", "/api/v1/servers?from=Germany", 400, "bad_parameter", "from"},
		{"GET", "/api/v1/servers?game=", 400, "bad_parameter", "game"},
		{"GET", "/api/v1/servers?game=a+b", 400, "bad_parameter", "game"},
		{"GET", "/api/v1/servers?map=" + strings.Repeat("m", 65), 400, "bad_parameter", "map"},
		{"GET", "/api/v1/servers?gametype=%01", 400, "bad_parameter", "gametype"},
		{"GET", "/api/v1/servers?q=%FF", 400, "bad_parameter", "q"},
		{"GET", "/api/v1/servers?q=%zz", 400, "bad_query", ""},
		{"GET", "/api/v1/servers?" + strings.Repeat("game=a&", 17), 400, "bad_parameter", "game"},
		{"GET", "/api/v1/servers?" + strings.Repeat("x", 3000), 400, "query_too_long", ""},
		{"GET", "/api/v1/servers?players=1", 400, "unknown_parameter", "players"},
		{"GET", "/api/v1/servers?sort=ping&from=ZZ&sort=name", 400, "bad_parameter", "sort"},
		{"GET", "/api/v1/servers/nonsense", 400, "bad_parameter", "address"},
		{"GET", "/api/v1/servers/1.2.3.4", 400, "bad_parameter", "address"},
		{"GET", "/api/v1/servers/1.2.3.4:0", 400, "bad_parameter", "address"},
		{"GET", "/api/v1/servers/[fe80::1%25eth0]:27960", 400, "bad_parameter", "address"},
		{"GET", "/api/v1/servers/203.0.113.9:27960", 404, "not_found", "address"},
		{"GET", "/api/v1/servers/1.1.1.1:27960?from=x", 400, "bad_parameter", "from"},
		{"GET", "/api/v1/servers/1.1.1.1:27960?foo=1", 400, "unknown_parameter", "foo"},
		{"GET", "/api/v1/ranking?period=2d", 400, "bad_parameter", "period"},
		{"GET", "/api/v1/ranking?period=30m", 400, "bad_parameter", "period"},
		{"GET", "/api/v1/ranking?period=169h", 400, "bad_parameter", "period"},
		{"GET", "/api/v1/ranking?period=90m", 400, "bad_parameter", "period"},
		{"GET", "/api/v1/meta?x=1", 400, "unknown_parameter", "x"},
		{"GET", "/api/v1/nothing", 404, "not_found", ""},
		{"GET", "/api/v2/servers", 404, "not_found", ""},
		{"POST", "/api/v1/servers", 405, "method_not_allowed", ""},
		{"DELETE", "/api/v1/servers/1.1.1.1:27960", 405, "method_not_allowed", ""},
	} {
		req, _ := http.NewRequest(c.method, f.url+c.path, nil)
		r, err := f.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body []byte
		body = make([]byte, 4096)
		n, _ := r.Body.Read(body)
		r.Body.Close()
		body = body[:n]
		if r.StatusCode != c.status || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, r.StatusCode, body, c.status)
			continue
		}
		e := apiError(t, body)
		if e.Status != c.status || e.Code != c.code || e.Parameter != c.param || e.Message == "" {
			t.Errorf("%s %s: %+v, want %d %s %s", c.method, c.path, e, c.status, c.code, c.param)
		}
	}
	if p := f.m.API.Panics.Load(); p != 0 {
		t.Errorf("%d panics", p)
	}
}

// recorder counts verified replies per server, for waiting on re-probes.
type recorder struct {
	mu sync.Mutex
	n  map[netip.AddrPort]int
	ch chan struct{}
}

func (r *recorder) Verified(_ time.Time, s master.Server) {
	r.mu.Lock()
	r.n[s.Addr]++
	r.mu.Unlock()
	select {
	case r.ch <- struct{}{}:
	default:
	}
}

// TestAPI_RateLimit: per client, the burst then 429 with Retry-After and
// a JSON error.
func TestAPI_RateLimit(t *testing.T) {
	f := start(t, world.World{Version: 1, Servers: testWorld().Servers[:1]}, 0, web.Config{}, nil)
	api, err := web.New(web.Config{Rate: 0.5, Burst: 3}, web.Deps{Registry: f.m.Registry})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api)
	defer ts.Close()
	for i := range 4 {
		r, err := ts.Client().Get(ts.URL + "/api/v1/servers")
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error *web.Error }
		json.NewDecoder(r.Body).Decode(&e)
		r.Body.Close()
		switch {
		case i < 3 && r.StatusCode != 200:
			t.Errorf("request %d: %d", i, r.StatusCode)
		case i == 3 && (r.StatusCode != 429 || r.Header.Get("Retry-After") != "2" || e.Error == nil || e.Error.Code != "rate_limited"):
			t.Errorf("request %d: %d Retry-After %q %+v", i, r.StatusCode, r.Header.Get("Retry-After"), e.Error)
		}
	}
}
