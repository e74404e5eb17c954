// Package web is scout master's web side, a shell over net/http: the
// versioned JSON API of the server list (its contract, which the page
// relies on, is docs/api.md at the repository's root) and the server
// browser page.
//
// The API ([API], mounted by package masterd under /api/): the list of
// servers with filters, sorting and paging, one server in detail with its
// players and history, the popularity ranking, and the values the filters
// offer. Its pure parts take no clock and no socket: the query parser
// (ParseListQuery, ParseRankingQuery) and the selection and order of a
// view's rows (selectRows). Names are drawn as their game draws them and
// stripped of colour codes by package gametext, the one place that knows
// the games' character sets and colour codes. The player counts over time come from package history,
// which masterd feeds from the handler's verified replies.
//
// # Caching
//
// Answers are made from a view: an immutable picture of the registry's
// listed servers at one listing version (master.Registry.Version, which
// moves only when something a list shows changes) and one history slot
// (history.Resolution). A request finds the current view with two atomic loads
// when nothing changed, so a tracker that polls with If-None-Match gets
// its 304 after a string compare: no list is copied, sorted or encoded.
// A new view is built when the version or the slot moved, at most once per
// MinRefresh (DefaultMinRefresh, 2 s). Each view caches the bodies it
// encoded (plain and gzip, made once each) by normalised query
// (ListQuery.Key), at most DefaultMaxCachedBodies entries and
// DefaultMaxCachedBytes bytes per view; beyond them an answer is encoded
// for its request only.
//
// Every answer carries a weak ETag from the view's version and slot (and
// the viewer's country, which the ping estimates depend on), Last-Modified
// (when the view was built), Cache-Control: max-age tied to the re-probe
// period (ReprobeMaxAge: a tenth of the shortest re-probe interval, 24 s
// with the built-in games; "private" when the viewer's country came from
// the request's address rather than from=), and Vary: Accept-Encoding.
// A server's last-verified time in a view is as of the view's version: a
// re-probe that changes nothing does not make a new version.
//
// # Limits
//
// Each client (IPv4 address, IPv6 /64) may make DefaultBurst requests at
// once and DefaultRate a second after; beyond, 429 with Retry-After. All
// clients together may make DefaultMaxRate a second; beyond, 503 with
// Retry-After (the HTTP side's share of the master's CPU is bounded). Query
// strings are bounded (MaxQueryBytes, MaxValues, MaxTextBytes, MaxPage,
// MaxPerPage); every bad parameter is a 400 with a JSON error naming it.
// A panic is recovered, logged and answered 500 with a JSON error without
// detail; FuzzAPI checks that no request makes one.
//
// # Players, country, ping
//
// The player list is the registry's (master.Registry.Players: the last
// statusResponse or Quake 4 getInfo of the server; see package master for
// its bounds and cost). Country and network come from package geo for the
// published address (after -m mapping); the ping estimate is
// latency.CityRTT between the main cities (latency.MainCity) of the
// viewer's country and the server's: a model's estimate, not a
// measurement.
//
// # The page
//
// The page ([Page]) is plain HTML, CSS and JavaScript modules under
// static/, embedded in the binary with go:embed: no build step, no CDN,
// nothing fetched from elsewhere, so it works offline. It reads only the
// JSON API. Its URL's query string holds the API's own parameters, so a
// link reproduces a view. Its refresh rule: a periodic refresh updates the
// rows in place and never moves one under the reader; the order is applied
// again only when the reader sorts, filters, pages or asks to re-sort.
// Names from servers are hostile input and reach the page only as text.
//
// The browser tests (browser_*_test.go) drive headless Chromium with
// chromedp against a real master with real registered servers.
package web
