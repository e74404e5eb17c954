package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/geo"
	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/latency"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/upstream"
)

// DefaultMinRefresh is the least time between two views of the list: a
// change to the registry shows in the API at most this long after it is
// made (or at once when the list has not changed for that long). On a busy
// master, whose listing changes many times a second, it bounds the work to
// one snapshot and one encoding per query shape per MinRefresh, whatever
// the number of clients.
const DefaultMinRefresh = 2 * time.Second

// MaxAgeDivisor ties Cache-Control's max-age to the re-probe period: what
// the API says of a server can be one re-probe period old already (that is
// how often the master asks it), and a cache may add a tenth of that. With
// the built-in games (ET re-probed every 4 minutes, the rest every 5) it is
// 24 s.
const MaxAgeDivisor = 10

// Config is the API's settings: plain values that a user of the master
// fills directly (masterd.Config.API); the zero value of each is its
// default.
type Config struct {
	// MinRefresh: see DefaultMinRefresh; negative rebuilds on every
	// change (tests).
	MinRefresh time.Duration
	// MaxAge is Cache-Control's max-age; 0 means the shortest re-probe
	// interval of the registry's games / MaxAgeDivisor.
	MaxAge time.Duration
	// Rate and Burst are the per-client limits (see DefaultRate); 0
	// means the default, a negative Rate no limit. MaxClients bounds the
	// clients tracked; 0 means DefaultMaxClients.
	Rate       float64
	Burst      int
	MaxClients int
	// MaxRate bounds the requests per second of all clients together
	// (burst as many); 0 means DefaultMaxRate, negative no bound.
	MaxRate float64
	// MaxCachedBodies and MaxCachedBytes bound the body cache of each
	// view; 0 means the defaults.
	MaxCachedBodies, MaxCachedBytes int
}

// Deps is what the API serves from besides its settings. Only Registry
// is required.
type Deps struct {
	Registry *master.Registry
	// Players gives each server's last player list; nil: the
	// registry's (master.Registry.Players).
	Players func(netip.AddrPort) ([]master.Player, time.Time, bool)
	// History is the player-count history (recent_players, the detail's
	// history, the ranking); nil serves none.
	History *history.History
	// Geo geolocates servers and viewers; nil means geo.Default().
	Geo *geo.DB
	// Sightings, if set, is where players were seen recently, for the
	// players' pages (playerpage.go); nil serves none.
	Sightings *history.Sightings
	// Landmark, if set, is this master as a landmark: the API publishes
	// its RTTs to the servers and describes it at /api/v1/landmarks
	// (landmarks.go).
	Landmark *master.Landmark
	// Peers, if set, returns the other live landmarks of this master's
	// fleet, described at /api/v1/landmarks after this one (landmarks.go).
	Peers func() []master.Landmark
	// Upstreams, if set, returns the upstream masters' and scout peers'
	// health at now, for /api/v1/upstreams (master.Handler.Upstreams);
	// nil publishes none.
	Upstreams func(now time.Time) []upstream.Health
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives panics recovered (never expected) at Error; nil
	// discards.
	Logger *slog.Logger
}

// API serves the versioned JSON API under /api/v1/ (docs/api.md is the
// contract).
type API struct {
	cfg     Config
	deps    Deps
	reg     *master.Registry
	lim     *limiter
	global  *globalLimiter
	maxAge  int // seconds
	reprobe int // seconds: the shortest re-probe interval
	log     *slog.Logger

	// geoCache keeps geolocations across views (an address's answer does
	// not change while the process runs); at most maxGeoCache entries,
	// emptied when full. Only rebuilds touch it, under mu.
	geoCache map[netip.Addr]geoEntry

	// Answers that do not follow the listing version, built at most
	// every MinRefresh (ecosystem.go).
	upBody, blockBody timedBody

	view   atomic.Pointer[view]
	viewAt atomic.Int64 // unix ns the current view was built
	mu     sync.Mutex   // serialises rebuilds

	// Counters, for tests and metrics.
	Builds, Hits, Misses, NotModified, Limited, Overloaded, Panics atomic.Uint64
}

// New returns the API with the settings cfg serving from deps.
func New(cfg Config, deps Deps) (*API, error) {
	if deps.Registry == nil {
		return nil, errors.New("web: no registry")
	}
	if deps.Players == nil {
		deps.Players = deps.Registry.Players
	}
	if deps.Geo == nil {
		deps.Geo = geo.Default()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MinRefresh == 0 {
		cfg.MinRefresh = DefaultMinRefresh
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = ReprobeMaxAge(deps.Registry.Config())
	}
	if cfg.Rate == 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.MaxClients == 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.MaxRate == 0 {
		cfg.MaxRate = DefaultMaxRate
	}
	if cfg.MaxCachedBodies == 0 {
		cfg.MaxCachedBodies = DefaultMaxCachedBodies
	}
	if cfg.MaxCachedBytes == 0 {
		cfg.MaxCachedBytes = DefaultMaxCachedBytes
	}
	if cfg.Burst < 1 || cfg.MaxClients < 1 || cfg.MaxAge < 0 || math.IsNaN(cfg.Rate) || math.IsNaN(cfg.MaxRate) {
		return nil, fmt.Errorf("web: bad limits in %+v", cfg)
	}
	a := &API{cfg: cfg, deps: deps, reg: deps.Registry, maxAge: int(cfg.MaxAge / time.Second), log: deps.Logger,
		reprobe: int(shortestReprobe(deps.Registry.Config()) / time.Second)}
	if cfg.Rate > 0 {
		a.lim = newLimiter(cfg.Rate, cfg.Burst, cfg.MaxClients)
	}
	if cfg.MaxRate > 0 {
		a.global = &globalLimiter{rate: cfg.MaxRate, burst: math.Max(cfg.MaxRate, 1)}
	}
	return a, nil
}

type geoEntry struct {
	info geo.Info
	ok   bool
}

// maxGeoCache bounds the geolocations kept across views: twice the
// registry's default bound on servers.
const maxGeoCache = 2 * master.DefaultMaxServers

// ReprobeMaxAge is the default max-age of a registry's answers: its games'
// shortest re-probe interval / MaxAgeDivisor, at least a second.
func ReprobeMaxAge(c master.Config) time.Duration {
	return max(time.Second, (shortestReprobe(c) / MaxAgeDivisor).Truncate(time.Second))
}

// shortestReprobe is the shortest re-probe interval of c's games.
func shortestReprobe(c master.Config) time.Duration {
	shortest := time.Duration(0)
	if c.Catalogue != nil {
		for _, g := range c.Catalogue.Games() {
			if iv := g.Reprobe.Interval; iv > 0 && (shortest == 0 || iv < shortest) {
				shortest = iv
			}
		}
	}
	if shortest == 0 {
		shortest = game.DefaultReprobeInterval
	}
	return shortest
}

// current returns the view of now: the last one if the registry has not
// changed (nor the history slot), or if it was built less than
// MinRefresh ago; else a new one.
func (a *API) current(now time.Time) *view {
	fresh := func(v *view) bool {
		return v != nil && ((v.version == a.reg.Version() && v.slot == history.SlotOf(now)) ||
			now.Sub(time.Unix(0, a.viewAt.Load())) < a.cfg.MinRefresh)
	}
	if v := a.view.Load(); fresh(v) {
		return v
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if v := a.view.Load(); fresh(v) {
		return v
	}
	ver := a.reg.Version() // before the servers: a change in between makes the next view
	rc := a.reg.Config()
	if len(a.geoCache) > maxGeoCache {
		a.geoCache = nil
	}
	if a.geoCache == nil {
		a.geoCache = map[netip.Addr]geoEntry{}
	}
	lookup := func(ad netip.Addr) (geo.Info, bool) {
		if e, ok := a.geoCache[ad]; ok {
			return e.info, e.ok
		}
		info, ok := a.deps.Geo.Lookup(ad)
		a.geoCache[ad] = geoEntry{info, ok}
		return info, ok
	}
	servers := a.reg.Servers(nil)
	v := buildView(now, ver, servers, rc.Catalogue, rc.AddrMap, lookup, a.deps.History,
		cacheLimits{a.cfg.MaxCachedBodies, a.cfg.MaxCachedBytes})
	a.addLandmarks(v, servers)
	v.setClones(a.reg.CloneGroups(), rc.AddrMap)
	a.viewAt.Store(now.UnixNano())
	a.view.Store(v)
	a.Builds.Add(1)
	return v
}

// ServeHTTP serves /api/... .
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			a.Panics.Add(1)
			a.log.Error("web: panic serving a request", "path", r.URL.Path, "panic", fmt.Sprint(p))
			writeError(w, &Error{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"})
		}
	}()
	a.serve(w, r)
}

// admit applies the per-client and the global limits to r at now: false
// when it answered 429 or 503 itself.
func (a *API) admit(w http.ResponseWriter, r *http.Request, now time.Time) bool {
	client, _ := netip.ParseAddrPort(r.RemoteAddr)
	if a.lim != nil {
		if ok, wait := a.lim.allow(now, client.Addr()); !ok {
			a.Limited.Add(1)
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			writeError(w, &Error{Status: http.StatusTooManyRequests, Code: "rate_limited",
				Message: fmt.Sprintf("more than %d requests at once or %g a second from this address; retry in %d s", a.cfg.Burst, a.cfg.Rate, max(secs, 1))})
			return false
		}
	}
	if a.global != nil && !a.global.allow(now) {
		a.Overloaded.Add(1)
		w.Header().Set("Retry-After", "1")
		writeError(w, &Error{Status: http.StatusServiceUnavailable, Code: "overloaded",
			Message: fmt.Sprintf("more than %g requests a second from all clients; retry in 1 s", a.cfg.MaxRate)})
		return false
	}
	return true
}

// Limit returns h behind the API's limits: the same per-client buckets
// and the same limit over all clients as the API's own requests, so that
// every endpoint a master serves beside the API (its page, /metrics, the
// legacy /servers, ...) counts against one budget per client.
func (a *API) Limit(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.admit(w, r, a.deps.Now()) {
			h.ServeHTTP(w, r)
		}
	})
}

func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	now := a.deps.Now()
	client, _ := netip.ParseAddrPort(r.RemoteAddr)
	if !a.admit(w, r, now) {
		return
	}
	path := r.URL.Path
	var route func(http.ResponseWriter, *http.Request, time.Time, netip.Addr)
	switch {
	case path == "/api/v1/servers":
		route = a.list
	case strings.HasPrefix(path, "/api/v1/servers/"):
		route = a.detail
	case path == "/api/v1/ranking":
		route = a.ranking
	case path == "/api/v1/meta":
		route = a.meta
	case path == "/api/v1/landmarks":
		route = a.landmarks
	case path == "/api/v1/games":
		route = a.games
	case path == "/api/v1/players":
		route = a.players
	case strings.HasPrefix(path, "/api/v1/players/"):
		route = a.player
	case strings.HasPrefix(path, "/players/"):
		route = a.playerPage
	case strings.HasPrefix(path, "/servers/"):
		route = a.serverPage
	case path == "/api/v1/upstreams":
		route = a.upstreams
	case path == "/api/v1/blocklist":
		route = a.blocklist
	case path == upstream.PeerPath:
		route = a.verified
	default:
		writeError(w, &Error{Status: http.StatusNotFound, Code: "not_found",
			Message: fmt.Sprintf("%q: no such path; see /api/v1/servers, /api/v1/servers/{address}, /api/v1/ranking, /api/v1/meta, /api/v1/landmarks, /api/v1/games, /api/v1/players, /api/v1/players/{name}, /api/v1/upstreams, /api/v1/blocklist, /api/v1/verified", clip(path))})
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
			Message: r.Method + ": only GET and HEAD"})
		return
	}
	route(w, r, now, client.Addr())
}

// viewerCountry is the country of the request's address, or "".
func (a *API) viewerCountry(client netip.Addr) string {
	if gi, ok := a.deps.Geo.Lookup(client); ok {
		return gi.Country
	}
	return ""
}

// answer writes a cacheable answer: the validators, then 304 if the
// request's match, else the body (gzip when accepted).
func (a *API) answer(w http.ResponseWriter, r *http.Request, etag string, modified time.Time, private bool,
	c *bodyCache, key string, b *body) {
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
	scope := "public"
	if private {
		scope = "private"
	}
	h.Set("Cache-Control", fmt.Sprintf("%s, max-age=%d", scope, a.maxAge))
	h.Set("Vary", "Accept-Encoding")
	if notModified(r, etag, modified) {
		a.NotModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if b == nil {
		return
	}
	if e, ok := b.extra.(*Error); ok {
		h.Del("ETag")
		h.Del("Last-Modified")
		writeError(w, e)
		return
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	out := b.plain
	if acceptsGzip(r) {
		out = c.gzipped(key, b)
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

// notModified applies If-None-Match (weak comparison), or, without it,
// If-Modified-Since.
func notModified(r *http.Request, etag string, modified time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for t := range strings.SplitSeq(inm, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == strings.TrimPrefix(etag, "W/") {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" {
		if t, err := http.ParseTime(ims); err == nil && !modified.Truncate(time.Second).After(t) {
			return true
		}
	}
	return false
}

// acceptsGzip reports an Accept-Encoding that takes gzip (q not 0).
func acceptsGzip(r *http.Request) bool {
	for _, ae := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(ae, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.TrimSpace(coding) != "*" {
				continue
			}
			q := strings.ReplaceAll(params, " ", "")
			if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
				return false
			}
			return true
		}
	}
	return false
}

func writeError(w http.ResponseWriter, e *Error) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Encoding")
	b, _ := json.Marshal(struct {
		Error *Error `json:"error"`
	}{e})
	b = append(b, '\n')
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.Status)
	w.Write(b)
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // our own types: never
	}
	return append(b, '\n')
}

// ListJSON is the answer of /api/v1/servers.
type ListJSON struct {
	Version   uint64       `json:"version"`
	Generated time.Time    `json:"generated"`
	Total     int          `json:"total"`
	Page      int          `json:"page"`
	PerPage   int          `json:"per_page"`
	From      string       `json:"from,omitempty"`
	Servers   []ServerJSON `json:"servers"`
}

func (a *API) list(w http.ResponseWriter, r *http.Request, now time.Time, client netip.Addr) {
	q, perr := ParseListQuery(r.URL.RawQuery)
	if perr != nil {
		writeError(w, perr)
		return
	}
	if !q.FromGiven {
		q.From = a.viewerCountry(client)
	}
	if q.Sort == SortPing && q.From == "" {
		writeError(w, badParam("sort", "ping: the viewer's country is unknown; give from=CC"))
		return
	}
	v := a.current(now)
	etag := fmt.Sprintf(`W/"%d.%d-%s"`, v.version, v.slot, q.From)
	private := !q.FromGiven && q.From != "" // the answer depends on the client's address
	a.cached(w, r, v, etag, private, q.Key, func() []byte { return v.encodeList(&q) })
}

// cached answers from v's body cache: a request whose validators match gets
// 304 before any key or body is made; otherwise the body under key(), built
// by build on a miss.
func (a *API) cached(w http.ResponseWriter, r *http.Request, v *view, etag string, private bool,
	key func() string, build func() []byte) {
	if notModified(r, etag, v.built) {
		a.answer(w, r, etag, v.built, private, v.cache, "", nil)
		return
	}
	k := key()
	b, hit := v.cache.get(k, func() ([]byte, any) { return build(), nil })
	a.count(hit)
	a.answer(w, r, etag, v.built, private, v.cache, k, b)
}

func (a *API) count(hit bool) {
	if hit {
		a.Hits.Add(1)
	} else {
		a.Misses.Add(1)
	}
}

// encodeList encodes the page of v that q selects.
func (v *view) encodeList(q *ListQuery) []byte {
	idx := selectRows(v.rows, q)
	out := ListJSON{Version: v.version, Generated: v.built, Total: len(idx), Page: q.Page, PerPage: q.PerPage, From: q.From,
		Servers: []ServerJSON{}}
	from, fromOK := latency.MainCity(q.From)
	lo := min((q.Page-1)*q.PerPage, len(idx))
	hi := min(lo+q.PerPage, len(idx))
	for _, i := range idx[lo:hi] {
		s := v.rows[i].ServerJSON
		if ms, low, ok := pingRange(from, fromOK, &v.rows[i]); ok {
			s.PingEstimateMs = &ms
			if len(v.rows[i].via) > 0 {
				s.PingLowMs = &low
			}
		}
		out.Servers = append(out.Servers, s)
	}
	return marshal(out)
}
