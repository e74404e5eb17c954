package web

import (
	"crypto/rand"
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/master"
)

// testAPI is an API over a registry with two servers listed through the
// registry's own verification (Heartbeat, then Verify of an infoResponse).
func testAPI(t testing.TB) *API {
	t.Helper()
	ch, err := master.NewChallenger(master.DefaultRotationPeriod, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := master.NewRegistry(master.Config{}, ch)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	hist := history.New()
	for i, a := range []string{"1.1.1.1:27960", "[2001:db8::1]:27960"} {
		addr := netip.MustParseAddrPort(a)
		p, why := reg.Heartbeat(now, addr, master.Heartbeat{Family: game.FamilyQ3, Tag: "QuakeArena-1"})
		if why != master.OK {
			t.Fatal(why)
		}
		s, _, why := reg.Verify(now, addr, master.Reply{Kind: master.ReplyInfo, Players: -1, Info: []master.Pair{
			{Key: "challenge", Value: p.Challenge.Text}, {Key: "protocol", Value: "68"}, {Key: "gamename", Value: "Quake3Arena"},
			{Key: "hostname", Value: "^1fuzz"}, {Key: "clients", Value: "1"}, {Key: "sv_maxclients", Value: "8"}, {Key: "mapname", Value: "q3dm" + string(rune('1'+i))},
		}})
		if why != master.OK {
			t.Fatal(why)
		}
		hist.Verified(now, s)
	}
	api, err := New(Config{Rate: -1, MaxRate: -1}, Deps{Registry: reg, History: hist})
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// FuzzAPI: any path under /api/v1/ and any query answer a JSON body with a
// status below 500, and the recover middleware never fires.
func FuzzAPI(f *testing.F) {
	for _, s := range [][2]string{
		{"servers", ""}, {"servers", "game=quake3arena&sort=ping&from=de"}, {"servers/1.1.1.1:27960", "from=au"},
		{"servers/[2001:db8::1]:27960", ""}, {"ranking", "period=1h&game=x"}, {"meta", ""}, {"servers/%zz", "q=%"},
		{"servers", "sort=ping"}, {"servers/::1", ""}, {"ranking", "period=-1h"}, {"x", "y"},
	} {
		f.Add(s[0], s[1])
	}
	api := testAPI(f)
	f.Fuzz(func(t *testing.T, path, query string) {
		req := httptest.NewRequest("GET", "/api/v1/", nil)
		req.URL.Path = "/api/v1/" + path
		req.URL.RawQuery = query
		req.RemoteAddr = "192.0.2.1:1234"
		req.Header.Set("Accept-Encoding", "identity")
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		if w.Code >= 500 || api.Panics.Load() != 0 {
			t.Fatalf("%q ? %q: %d %s (panics %d)", path, query, w.Code, w.Body, api.Panics.Load())
		}
		if w.Code != 304 && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%q ? %q: %d not JSON: %q", path, query, w.Code, w.Body)
		}
	})
}

// TestRecover: a panic in a handler is answered 500 with a JSON error and
// no detail, and counted (the fuzzing above checks it never happens).
func TestRecover(t *testing.T) {
	api := testAPI(t)
	api.deps.Players = func(netip.AddrPort) ([]master.Player, time.Time, bool) { panic("boom") }
	req := httptest.NewRequest("GET", "/api/v1/servers/1.1.1.1:27960", nil)
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	var e struct{ Error *Error }
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != 500 || e.Error.Code != "internal" || api.Panics.Load() != 1 {
		t.Errorf("%d %s %v", w.Code, w.Body, err)
	}
}

// TestGlobalLimit: beyond MaxRate requests a second from all clients
// together, 503 with Retry-After and a JSON error; a second later the
// tokens are back. Time is passed in.
func TestGlobalLimit(t *testing.T) {
	api := testAPI(t)
	now := time.Unix(1_800_000_000, 0)
	api.deps.Now = func() time.Time { return now }
	api.cfg.MaxRate = 3
	api.global = &globalLimiter{rate: 3, burst: 3}
	get := func(client string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/api/v1/meta", nil)
		req.RemoteAddr = client + ":1234"
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		return w
	}
	for i, c := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		if w := get(c); w.Code != 200 {
			t.Fatalf("request %d: %d", i, w.Code)
		}
	}
	w := get("192.0.2.4")
	var e struct{ Error *Error }
	json.Unmarshal(w.Body.Bytes(), &e)
	if w.Code != 503 || w.Header().Get("Retry-After") != "1" || e.Error == nil || e.Error.Code != "overloaded" || api.Overloaded.Load() != 1 {
		t.Errorf("4th: %d %v %s", w.Code, w.Header(), w.Body)
	}
	now = now.Add(time.Second)
	if w := get("192.0.2.4"); w.Code != 200 {
		t.Errorf("a second later: %d", w.Code)
	}
}
