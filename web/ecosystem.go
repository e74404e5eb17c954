package web

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/upstream"
)

// The master in the ecosystem: the upstream masters' health
// (/api/v1/upstreams), the block list (/api/v1/blocklist) and the
// verified list scout peers fetch (/api/v1/verified, upstream.PeerPath).

// SourceJSON is one source of a server: "heartbeat", an upstream
// master's or a scout peer's name, "register from ADDR"; and when it last
// named the server.
type SourceJSON struct {
	Source string    `json:"source"`
	At     time.Time `json:"at"`
}

// sourcesJSON returns s's sources, its heartbeats first; nil if none.
func sourcesJSON(s *master.Server) []SourceJSON {
	if s.LastHeartbeat.IsZero() && len(s.Sources) == 0 {
		return nil
	}
	out := make([]SourceJSON, 0, len(s.Sources)+1)
	if !s.LastHeartbeat.IsZero() {
		out = append(out, SourceJSON{master.SourceHeartbeat, s.LastHeartbeat.UTC()})
	}
	for _, m := range s.Sources {
		out = append(out, SourceJSON{m.Source, m.At.UTC()})
	}
	return out
}

// UpstreamJSON is one upstream of /api/v1/upstreams: upstream.Health with
// its times in milliseconds, its uptimes as fractions (null before the
// first refresh) and its times absent until they happen.
type UpstreamJSON struct {
	upstream.Health
	LastAttempt   *time.Time `json:"last_attempt,omitempty"`
	LastSuccess   *time.Time `json:"last_success,omitempty"`
	AnswerTimeMs  *float64   `json:"answer_time_ms,omitempty"`
	RefreshTimeMs *float64   `json:"refresh_time_ms,omitempty"`
	Uptime24h     *float64   `json:"uptime_24h"`
	Uptime7d      *float64   `json:"uptime_7d"`
}

// UpstreamsJSON is the answer of /api/v1/upstreams.
type UpstreamsJSON struct {
	Generated time.Time      `json:"generated"`
	Upstreams []UpstreamJSON `json:"upstreams"`
}

// UpstreamsOf returns hs as the API publishes them.
func UpstreamsOf(now time.Time, hs []upstream.Health) UpstreamsJSON {
	out := UpstreamsJSON{Generated: now.UTC().Truncate(time.Second), Upstreams: []UpstreamJSON{}}
	for _, h := range hs {
		j := UpstreamJSON{Health: h}
		if !h.LastAttempt.IsZero() {
			t := h.LastAttempt.UTC()
			j.LastAttempt = &t
		}
		if !h.LastSuccess.IsZero() {
			t := h.LastSuccess.UTC()
			j.LastSuccess = &t
			ms := float64(h.AnswerTime.Microseconds()) / 1000
			rt := float64(h.RefreshTime.Microseconds()) / 1000
			j.AnswerTimeMs, j.RefreshTimeMs = &ms, &rt
		}
		for _, u := range []struct {
			v   float64
			dst **float64
		}{{h.Uptime24h, &j.Uptime24h}, {h.Uptime7d, &j.Uptime7d}} {
			if !math.IsNaN(u.v) {
				v := math.Round(u.v*10000) / 10000
				*u.dst = &v
			}
		}
		out.Upstreams = append(out.Upstreams, j)
	}
	return out
}

// BlockListJSON is the answer of /api/v1/blocklist.
type BlockListJSON struct {
	Blocked []master.Block `json:"blocked"`
}

// timedBody is an answer kept for MinRefresh: what does not follow the
// listing version (the upstreams' health) is built at most that often.
type timedBody struct {
	mu    sync.Mutex
	at    time.Time
	etag  string
	cache *bodyCache
	b     *body
}

// get returns the body built at most refresh ago, or builds one.
func (t *timedBody) get(now time.Time, refresh time.Duration, build func() []byte) (string, time.Time, *bodyCache, *body) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.b == nil || now.Sub(t.at) >= refresh || now.Before(t.at) {
		c := newBodyCache(cacheLimits{})
		b, _ := c.get("", func() ([]byte, any) { return build(), nil })
		sum := sha256.Sum256(b.plain)
		t.at, t.cache, t.b, t.etag = now, c, b, `W/"`+hex.EncodeToString(sum[:10])+`"`
	}
	return t.etag, t.at.Truncate(time.Second), t.cache, t.b
}

func (a *API) upstreams(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	if !a.noQuery(w, r) {
		return
	}
	etag, at, c, b := a.upBody.get(now, max(a.cfg.MinRefresh, 0), func() []byte {
		var hs []upstream.Health
		if a.deps.Upstreams != nil {
			hs = a.deps.Upstreams(now)
		}
		return marshal(UpstreamsOf(now, hs))
	})
	a.answer(w, r, etag, at, false, c, "", b)
}

func (a *API) blocklist(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	if !a.noQuery(w, r) {
		return
	}
	etag, at, c, b := a.blockBody.get(now, max(a.cfg.MinRefresh, 0), func() []byte {
		bl := a.reg.BlockList()
		if bl == nil {
			bl = []master.Block{}
		}
		return marshal(BlockListJSON{Blocked: bl})
	})
	a.answer(w, r, etag, at, false, c, "", b)
}

// verified serves the list scout peers fetch: every listed server this
// master verified since it started, under its published address.
func (a *API) verified(w http.ResponseWriter, r *http.Request, now time.Time, _ netip.Addr) {
	if !a.noQuery(w, r) {
		return
	}
	v := a.current(now)
	etag := fmt.Sprintf(`W/"v%d"`, v.version)
	a.cached(w, r, v, etag, false, func() string { return "verified" }, func() []byte {
		pl := upstream.PeerList{Version: v.version, Servers: make([]upstream.PeerListServer, 0, len(v.rows))}
		for i := range v.rows {
			s := &v.rows[i]
			if s.LastVerified == nil {
				continue // restored, not verified again by this master
			}
			pl.Servers = append(pl.Servers, upstream.PeerListServer{Address: s.Address, Family: s.Family, Game: s.Game})
		}
		return marshal(pl)
	})
}

// noQuery refuses a request with query parameters (the endpoint takes
// none) with a 400, and reports whether it may go on.
func (a *API) noQuery(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.RawQuery == "" {
		return true
	}
	if _, perr := parseRaw(r.URL.RawQuery); perr != nil {
		writeError(w, perr)
		return false
	}
	return true
}

// setClones marks v's rows with the registry's groups of clones: the
// primary's also_listed_as, each clone's clone_of (published addresses).
func (v *view) setClones(groups []master.CloneGroup, am *master.AddrMap) {
	for _, g := range groups {
		pp, _ := am.Map(g.Primary)
		pi, ok := v.byAddr[pp]
		if !ok {
			continue
		}
		for _, c := range g.Clones {
			cp, _ := am.Map(c)
			ci, ok := v.byAddr[cp]
			if !ok {
				continue
			}
			v.rows[ci].CloneOf = pp.String()
			v.rows[pi].AlsoListedAs = append(v.rows[pi].AlsoListedAs, cp.String())
		}
	}
}
