package web_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/internal/masterproc"
	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/web"
)

// fixture is a real master (UDP and HTTP on loopback) with emulated
// servers of package world heartbeating to it.
type fixture struct {
	m    *masterd.Master
	url  string
	em   *world.Emulator
	pub  map[string]netip.AddrPort // hostname -> published address
	srvs map[string]world.Server   // hostname -> its world server
	http *http.Client              // no transparent gzip: the test sees Content-Encoding
}

// server is a world server at public with a loopback address of its own
// (127.1.k.n, port 0: the kernel's).
func server(n int, g world.Game, public, hostname, mapname string, max int, players ...world.Player) world.Server {
	return world.Server{
		Public:   netip.MustParseAddrPort(public),
		Loopback: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, byte(os.Getpid() % 200), byte(n + 1)}), 0),
		Game:     g, Hostname: hostname, Map: mapname, MaxClients: max, Players: players,
		GameType: map[world.Game]string{world.Q4: "DM"}[g],
	}
}

// start runs a master whose games are re-probed every reprobe (0: their
// usual intervals), with api's settings, and the servers of w heartbeating
// to it; it returns once every server is listed. obs, if not nil, is told
// of every verified reply; opts change the master's Config. Each server's loopback
// host is mapped (-m) to its public address, port kept, so the API
// publishes and geolocates the public addresses.
func start(t *testing.T, w world.World, reprobe time.Duration, api web.Config, obs master.Observer, opts ...func(*masterd.Config)) *fixture {
	return startDyn(t, w, reprobe, 0, api, obs, opts...)
}

// startDyn is start with the world's servers changing every dynamics on
// average (world.Config.Dynamics: a map change, a player leaving or
// joining).
func startDyn(t *testing.T, w world.World, reprobe, dynamics time.Duration, api web.Config, obs master.Observer, opts ...func(*masterd.Config)) *fixture {
	t.Helper()
	games := game.Builtin()
	for _, g := range games {
		if reprobe > 0 {
			g.Reprobe.Interval = reprobe
		}
	}
	cat, err := game.NewCatalogue(games...)
	if err != nil {
		t.Fatal(err)
	}
	var maps []master.Mapping
	for _, s := range w.Servers {
		maps = append(maps, master.Mapping{From: netip.AddrPortFrom(s.Loopback.Addr(), 0), To: netip.AddrPortFrom(s.Public.Addr(), 0)})
	}
	am, err := master.NewAddrMap(maps...)
	if err != nil {
		t.Fatal(err)
	}
	sig := masterproc.Listed{C: make(chan string, len(w.Servers)+16)}
	mc := masterd.Config{
		Listen: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")},
		HTTP:   "127.0.0.1:0",
		Reloadable: masterd.Reloadable{
			Registry: master.Config{Catalogue: cat, AddrMap: am},
			API:      api,
		},
	}
	for _, o := range opts {
		o(&mc)
	}
	m, err := masterd.NewMaster(time.Now(), mc, masterd.Deps{Observer: obs, Logger: slog.New(sig)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	em, err := world.Listen(w, world.Config{Masters: m.Addrs(), Dynamics: dynamics})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	emDone := make(chan error, 1)
	go func() { emDone <- em.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-emDone
		if err := <-ran; err != nil {
			t.Errorf("master: %v", err)
		}
	})
	f := &fixture{m: m, url: "http://" + m.HTTPAddr().String(), em: em, pub: map[string]netip.AddrPort{},
		srvs: map[string]world.Server{}, http: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	t.Cleanup(f.http.CloseIdleConnections)
	for _, p := range em.Table().Pairs() {
		for _, s := range w.Servers {
			if s.Public == p.Public {
				f.pub[s.Hostname] = netip.AddrPortFrom(s.Public.Addr(), p.Loopback.Port())
				f.srvs[s.Hostname] = s
			}
		}
	}
	timeout := time.After(20 * time.Second)
	for range w.Servers {
		select {
		case <-sig.C:
		case <-timeout:
			l, p := m.Registry.Counts()
			t.Fatalf("%d of %d servers listed (%d pending)", l, len(w.Servers), p)
		}
	}
	return f
}

// serveAPI points f's requests at an API of its master's registry and
// history built with deps (for what only a fleet or a landmark gives).
func (f *fixture) serveAPI(t *testing.T, deps web.Deps) {
	t.Helper()
	deps.Registry, deps.History = f.m.Registry, f.m.History
	api, err := web.New(web.Config{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	f.url = ts.URL
}

// get does a GET with the headers given as name, value pairs.
func (f *fixture) get(t *testing.T, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", f.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	r, err := f.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Fatalf("%s: gzip: %v", path, err)
		}
		rd = zr
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r, b
}

// getJSON does a GET that must answer 200 and decodes it into v.
func (f *fixture) getJSON(t *testing.T, path string, v any) *http.Response {
	t.Helper()
	r, b := f.get(t, path, "Accept-Encoding", "gzip")
	if r.StatusCode != 200 {
		t.Fatalf("%s: %d %s", path, r.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v: %s", path, err, b)
	}
	return r
}

// apiError decodes a JSON error body.
func apiError(t *testing.T, b []byte) web.Error {
	t.Helper()
	var e struct {
		Error *web.Error `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil {
		t.Fatalf("not a JSON error: %q (%v)", b, err)
	}
	return *e.Error
}

var _ = fmt.Sprint
var _ sync.Mutex
