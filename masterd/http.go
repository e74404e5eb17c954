package masterd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/web"
)

// ServerJSON is one server of the legacy /servers list (kept for the
// scripts that read it; /api/v1/servers is the list with filters, paging,
// players and caching, see package web).
type ServerJSON struct {
	Address      string            `json:"address"`
	Game         string            `json:"game"`
	Family       string            `json:"family"`
	Protocol     int               `json:"protocol"`
	Gametype     string            `json:"gametype,omitempty"`
	Clients      int               `json:"clients"`
	MaxClients   int               `json:"max_clients"`
	Info         map[string]string `json:"info,omitempty"`
	FirstSeen    time.Time         `json:"first_seen"`
	LastVerified *time.Time        `json:"last_verified,omitempty"` // absent: restored, not yet re-verified
}

// HTTPHandler serves the JSON API under /api/ (package web), the server
// browser page at / (web.Page), /metrics (Prometheus), /healthz, /readyz,
// /backup (to loopback clients only) and the legacy /servers (JSON,
// ?game=NAME filters by game name; no paging). Every endpoint counts
// against the API's per-client and global request limits (web.API.Limit),
// and /metrics and /servers are rendered at most once per
// MetricsRefresh and ServersRefresh and served from a kept, gzipped copy
// (httpcache.go).
func (m *Master) HTTPHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(m), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(apiMetrics(m)...)
	mux := http.NewServeMux()
	mux.Handle("/api/", m.API)
	mux.Handle("/servers/", m.API) // a server's own page, rendered on the server
	mux.Handle("/players/", m.API) // a player's page, rendered on the server
	if m.deps.Fleet != nil {
		reg.MustRegister(m.deps.Fleet)
	}
	limit := m.API.Limit
	metrics := newBodyCache(MetricsRefresh, MetricsRefresh)
	mux.Handle("GET /metrics", limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		metrics.serve(w, r, "", 0, func() ([]byte, string, http.Header) { return gatherText(reg) })
	})))
	mux.Handle("GET /healthz", limit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})))
	mux.Handle("GET /readyz", limit(http.HandlerFunc(m.serveReady)))
	mux.Handle("GET /backup", limit(http.HandlerFunc(m.serveBackup)))
	mux.Handle("/", limit(web.Page()))
	servers := newBodyCache(ServersRefresh, MaxServersAge)
	mux.Handle("GET /servers", limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := r.URL.Query()["game"]
		slices.Sort(want)
		want = slices.Compact(want)
		servers.serve(w, r, strings.Join(want, "\x00"), m.Registry.Version(), func() ([]byte, string, http.Header) {
			return m.renderServers(r.Context(), want)
		})
	})))
	return mux
}

// gatherText renders reg's metrics in Prometheus's text format.
func gatherText(reg *prometheus.Registry) ([]byte, string, http.Header) {
	mfs, err := reg.Gather()
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		enc.Encode(mf)
	}
	if err != nil {
		fmt.Fprintf(&b, "# gathering: %v\n", err)
	}
	return b.Bytes(), string(expfmt.NewFormat(expfmt.TypeTextPlain)), nil
}

// renderServers is the legacy /servers body for the games in want (all
// if empty), and the header that says where the list came from.
func (m *Master) renderServers(ctx context.Context, want []string) ([]byte, string, http.Header) {
	list := []ServerJSON{}
	servers, source := m.listServers(ctx)
	for _, s := range servers {
		if len(want) > 0 && !slices.Contains(want, s.Game) {
			continue
		}
		pub, _ := m.Registry.Config().AddrMap.Map(s.Addr)
		j := ServerJSON{
			Address: pub.String(), Game: s.Game, Family: s.Family.String(), Protocol: s.Protocol,
			Gametype: s.Gametype, Clients: s.Clients, MaxClients: s.MaxClients, FirstSeen: s.FirstSeen,
		}
		if !s.LastVerified.IsZero() {
			t := s.LastVerified
			j.LastVerified = &t
		}
		if len(s.Info) > 0 {
			j.Info = make(map[string]string, len(s.Info))
			for _, p := range s.Info {
				if _, dup := j.Info[p.Key]; !dup && !strings.EqualFold(p.Key, "challenge") {
					j.Info[p.Key] = p.Value
				}
			}
		}
		list = append(list, j)
	}
	slices.SortFunc(list, func(a, b ServerJSON) int { return strings.Compare(a.Address, b.Address) })
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.Encode(list)
	return b.Bytes(), "application/json", http.Header{"X-Scout-List-Source": {source}}
}

// listServers returns the servers /servers lists and where they come
// from: the fleet's shared registry ("fleet"), so that every instance
// serves the same list, or this instance's memory ("memory": no fleet, or
// Redis unreachable).
func (m *Master) listServers(ctx context.Context) ([]master.Server, string) {
	if m.deps.Fleet != nil {
		s, err := m.deps.Fleet.Servers(ctx)
		if err == nil {
			return s, "fleet"
		}
		m.Log.Warn("reading the shared registry for /servers: serving this instance's list", "err", err)
	}
	return m.Registry.Servers(nil), "memory"
}

// apiMetrics are the JSON API's counters and the history's size, read at
// scrape time from their atomics.
func apiMetrics(m *Master) []prometheus.Collector {
	counter := func(name, help string, v func() uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "scout_master_api_" + name, Help: help},
			func() float64 { return float64(v()) })
	}
	a := m.API
	return []prometheus.Collector{
		counter("views_built_total", "Views of the list built (after a listing change, at most every MinRefresh).", a.Builds.Load),
		counter("encoded_total", "Answers encoded (a query's first in a view).", a.Misses.Load),
		counter("cache_hits_total", "Answers served from a view's cache.", a.Hits.Load),
		counter("not_modified_total", "Conditional requests answered 304.", a.NotModified.Load),
		counter("rate_limited_total", "Requests refused 429 (per-client limit).", a.Limited.Load),
		counter("overloaded_total", "Requests refused 503 (limit over all clients).", a.Overloaded.Load),
		counter("panics_total", "Panics recovered in the API (never expected).", a.Panics.Load),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "scout_master_history_servers", Help: "Servers with a player-count history."},
			func() float64 { n, _, _ := m.History.Len(); return float64(n) }),
	}
}
