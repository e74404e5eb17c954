package masterd

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Cached bodies: the endpoints beside the JSON API whose answers cost the
// master in proportion to its list (the legacy /servers) or to its series
// (/metrics) are rendered at most once per refresh and kept, with their
// gzip, so that a flood of requests costs writing bytes, not rendering
// them; the requests still count against the API's per-client limit.
const (
	// ServersRefresh is the most often the legacy /servers is rendered
	// again while the list changes; MaxServersAge the oldest it is
	// served when the list has changed.
	ServersRefresh = time.Second
	MaxServersAge  = 30 * time.Second
	// MetricsRefresh is the most often /metrics is gathered again: every
	// scrape within it gets the same figures.
	MetricsRefresh = time.Second
	// MaxCachedBodies bounds the bodies kept per endpoint (one per
	// ?game= filter of /servers); beyond, the oldest goes.
	MaxCachedBodies = 64
)

// cachedBody is one rendered answer and its gzip.
type cachedBody struct {
	at       time.Time
	version  uint64
	plain    []byte
	gz       []byte
	ctype    string
	header   http.Header
	lastUsed time.Time
}

// bodyCache keeps rendered answers by key. mu guards entries and
// serialises renders, so that requests arriving together wait for one
// render instead of each doing its own.
type bodyCache struct {
	refresh, maxAge time.Duration

	mu      sync.Mutex
	entries map[string]*cachedBody
}

func newBodyCache(refresh, maxAge time.Duration) *bodyCache {
	return &bodyCache{refresh: refresh, maxAge: maxAge, entries: map[string]*cachedBody{}}
}

// serve writes the body for key: the one kept if it is less than refresh
// old, or of version and less than maxAge old; else render's, kept.
func (c *bodyCache) serve(w http.ResponseWriter, r *http.Request, key string, version uint64, render func() (body []byte, ctype string, header http.Header)) {
	now := time.Now()
	c.mu.Lock()
	b := c.entries[key]
	if b == nil || (now.Sub(b.at) >= c.refresh && (b.version != version || now.Sub(b.at) >= c.maxAge)) {
		plain, ctype, header := render()
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
		zw.Write(plain)
		zw.Close()
		b = &cachedBody{at: now, version: version, plain: plain, gz: gz.Bytes(), ctype: ctype, header: header}
		if len(c.entries) >= MaxCachedBodies {
			c.dropOldestLocked()
		}
		c.entries[key] = b
	}
	b.lastUsed = now
	c.mu.Unlock()
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", b.ctype)
	w.Header().Set("Vary", "Accept-Encoding")
	body := b.plain
	if acceptsGzip(r) {
		w.Header().Set("Content-Encoding", "gzip")
		body = b.gz
	}
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

func (c *bodyCache) dropOldestLocked() {
	var oldest string
	var at time.Time
	for k, b := range c.entries {
		if oldest == "" || b.lastUsed.Before(at) {
			oldest, at = k, b.lastUsed
		}
	}
	delete(c.entries, oldest)
}

// acceptsGzip reports whether r takes a gzip body.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, e := range strings.Split(v, ",") {
			name, q, _ := strings.Cut(strings.TrimSpace(e), ";")
			if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.TrimSpace(q) != "q=0" {
				return true
			}
		}
	}
	return false
}
