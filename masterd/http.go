package masterd

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
// /backup (to loopback clients only) and the legacy /servers (JSON, ?game=NAME filters by game name; no paging or
// caching).
func (m *Master) HTTPHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(m), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(apiMetrics(m)...)
	mux := http.NewServeMux()
	mux.Handle("/api/", m.API)
	mux.Handle("/servers/", m.API) // a server's own page, rendered on the server
	if m.deps.Fleet != nil {
		reg.MustRegister(m.deps.Fleet)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", m.serveReady)
	mux.HandleFunc("GET /backup", m.serveBackup)
	mux.Handle("/", web.Page())
	mux.HandleFunc("GET /servers", func(w http.ResponseWriter, r *http.Request) {
		want := r.URL.Query()["game"]
		list := []ServerJSON{}
		servers, source := m.listServers(r.Context())
		w.Header().Set("X-Scout-List-Source", source)
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
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(list)
	})
	return mux
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
