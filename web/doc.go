// Package web is scout master's web side, a shell over net/http: the
// versioned JSON API of the server list (/api/v1/..., see API.md in the
// issue's notes and the handlers' docs) and the server browser page.
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
