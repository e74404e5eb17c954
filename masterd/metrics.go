package masterd

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/upstream"
)

// Collector exposes a master's counters to Prometheus. It reads the
// handler's atomic counters and the registry's counts at scrape time, so
// the packet path pays nothing for metrics, and a scrape costs the same
// at 1,000,000 servers as at ten: the counts by game, protocol and
// gametype are kept by the registry as the listing changes
// (master.Registry.Tallies), not counted at the scrape.
type Collector struct {
	m *Master

	packetsIn, packetsOut, bytesOut, bytesIn *prometheus.Desc
	dropped, removed, changes, probes        *prometheus.Desc
	retries, afterRetry                      *prometheus.Desc
	answers, unknownGame, budgetDenied       *prometheus.Desc
	deferred, paced, cookies                 *prometheus.Desc
	listed, pending, listedByGame            *prometheus.Desc
	listedByKind                             *prometheus.Desc
	sendErrors, stateErrors                  *prometheus.Desc
	stateCommits, stateWritten, statePending *prometheus.Desc
	stateSeconds, stateLast, stateMax        *prometheus.Desc
	landmarkPings                            *prometheus.Desc
	// The upstreams (aggregation), one series per source.
	upUp, upReported, upVerified, upAnswer *prometheus.Desc
	upUptime, upLastSuccess, upRefreshes   *prometheus.Desc
	upQueries, upPackets, upEntries        *prometheus.Desc
	learned, learnQueued, blocked          *prometheus.Desc
	httpConns, httpRefused, httpEvicted    *prometheus.Desc
}

// MaxGametypeSeries bounds the series of
// scout_master_servers_listed_by_gametype: the largest are exported, the
// others summed in one series with empty labels, so that servers sending
// made-up protocols or gametypes cannot grow a scrape without bound.
const MaxGametypeSeries = 256

// NewCollector returns the collector of m.
func NewCollector(m *Master) *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("scout_master_"+name, help, labels, nil)
	}
	return &Collector{
		m:            m,
		packetsIn:    d("packets_received_total", "Datagrams received, by kind.", "kind"),
		bytesIn:      d("received_bytes_total", "UDP payload bytes received."),
		packetsOut:   d("packets_sent_total", "Datagrams handed to the sockets, by kind.", "kind"),
		bytesOut:     d("sent_bytes_total", "UDP payload bytes handed to the sockets, by kind.", "kind"),
		dropped:      d("dropped_total", "Datagrams that produced nothing, by reason.", "reason"),
		removed:      d("removed_total", "Servers removed from the registry, by reason.", "reason"),
		changes:      d("verified_total", "Verified server replies, by what they changed.", "change"),
		probes:       d("probes_total", "Checks started (first tries of probes sent to servers), by cause.", "cause"),
		retries:      d("probe_retries_total", "Retries of unanswered checks, by cause.", "cause"),
		afterRetry:   d("verified_after_retry_total", "Checks verified after at least one retry had been sent."),
		answers:      d("answers_total", "Queries answered (getservers, getServers, gameAuth, getmotd)."),
		unknownGame:  d("answers_unknown_game_total", "Queries for no known game, answered with the empty list."),
		deferred:     d("encodings_deferred_total", "List queries whose reply (not cached, selecting at least Config.DeferEncoding servers) was left to the socket's encoder goroutine."),
		budgetDenied: d("budget_denied_bytes_total", "Outbound bytes the global byte budget refused."),
		paced:        d("replies_paced_total", "Replies larger than a budget's burst, sent paced at the budgets' rates (master.Pace)."),
		cookies:      d("cookies_total", "Cookies of scout's clients (master's cookie.go): given, lists answered on an echoed cookie, echoed cookies that did not check.", "outcome"),
		listed:       d("servers_listed", "Servers listed."),
		pending:      d("servers_pending", "Servers challenged and not yet verified."),
		listedByGame: d("servers_listed_by_game", "Servers listed, by game.", "game"),
		listedByKind: d("servers_listed_by_gametype", "Servers listed, by game, protocol and gametype; beyond the largest "+
			strconv.Itoa(MaxGametypeSeries)+" series, the others summed in one with empty labels.", "game", "protocol", "gametype"),
		sendErrors:   d("send_errors_total", "Datagrams the kernel refused or with no socket of their family, and long replies dropped with their socket's send queue full (queue_full), list queries dropped with their socket's encoder queue full (encode_queue_full).", "error"),
		httpConns:    d("http_connections", "HTTP connections open."),
		httpRefused:  d("http_connections_refused_total", "HTTP connections closed at accept: their client had HTTPLimits.MaxConnsPerClient open (per_client), or all MaxConns were open and busy (full).", "reason"),
		httpEvicted:  d("http_connections_evicted_total", "Idle HTTP connections closed to make room for a new one at HTTPLimits.MaxConns."),
		stateErrors:  d("state_write_errors_total", "Failed commits to the state file (their changes are tried again at the next)."),
		stateCommits: d("state_commits_total", "Commits to the state file (one transaction each)."),
		stateWritten: d("state_changes_written_total", "Listing changes (servers written or deleted) committed to the state file."),
		statePending: d("state_changes_pending", "Listing changes waiting for the next commit."),
		stateSeconds: d("state_commit_seconds_total", "Time spent in successful commits to the state file."),
		stateLast:    d("state_last_commit_seconds", "Duration of the last successful commit."),
		stateMax:     d("state_max_commit_seconds", "Duration of the longest successful commit since start."),
		landmarkPings: d("landmark_pings_total", "A landmark master's pings to its peers (sent), their replies taken as samples (sampled), "+
			"replies from a peer with no ping in flight (stray: late, doubled or spoofed) and samples refused or undone because of them (spurned).", "result"),
		upUp:          d("upstream_up", "Whether an upstream master or scout peer answered its last refresh (1) or not (0); absent before its first.", "source", "kind"),
		upReported:    d("upstream_reported_servers", "Distinct servers of an upstream's last successful refresh.", "source"),
		upVerified:    d("upstream_verified_servers", "Servers of an upstream's last successful refresh that this master lists (verified with its own challenge).", "source"),
		upAnswer:      d("upstream_answer_seconds", "Time from an upstream's last successful refresh's first query to its first packet (a peer: the fetch).", "source"),
		upUptime:      d("upstream_uptime_ratio", "Share of an upstream's refreshes that answered, over a window (24h, 7d).", "source", "window"),
		upLastSuccess: d("upstream_last_success_timestamp_seconds", "End of an upstream's last successful refresh, Unix time.", "source"),
		upRefreshes:   d("upstream_refreshes_total", "Refreshes of an upstream, by result (ok, failed).", "source", "result"),
		upQueries:     d("upstream_queries_total", "List queries sent to an upstream, retries included (a peer: fetches).", "source"),
		upPackets:     d("upstream_packets_total", "List packets received from an upstream, by outcome (read, garbled).", "source", "outcome"),
		upEntries: d("upstream_entries_total", "Entries of an upstream's lists, by outcome: new (to this refresh), duplicate, unusable (port 0, broadcast, ...), "+
			"refused (local addresses, the upstream's own host), over_learned (beyond the bound on servers per upstream), queue_full.", "source", "outcome"),
		learned:     d("learned_checks_total", "First checks of servers an upstream or peer named, by outcome (ok: started or already known; else why refused).", "outcome"),
		learnQueued: d("learned_queued", "Servers an upstream or peer named, waiting for their first check."),
		blocked:     d("blocklist_entries", "Entries of the block list."),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.packetsIn, c.bytesIn, c.packetsOut, c.bytesOut, c.dropped, c.removed,
		c.changes, c.probes, c.retries, c.afterRetry, c.answers, c.unknownGame, c.budgetDenied, c.deferred, c.paced, c.cookies, c.listed, c.pending, c.listedByGame, c.listedByKind,
		c.sendErrors, c.stateErrors, c.stateCommits, c.stateWritten, c.statePending, c.stateSeconds, c.stateLast, c.stateMax, c.landmarkPings,
		c.upUp, c.upReported, c.upVerified, c.upAnswer, c.upUptime, c.upLastSuccess, c.upRefreshes, c.upQueries, c.upPackets, c.upEntries,
		c.learned, c.learnQueued, c.blocked, c.httpConns, c.httpRefused, c.httpEvicted} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.Handler.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for _, k := range master.Kinds() {
		counter(c.packetsIn, st.In(k), k.String())
		p, b := st.Out(k)
		counter(c.packetsOut, p, k.String())
		counter(c.bytesOut, b, k.String())
	}
	counter(c.bytesIn, st.InBytes())
	for _, r := range master.Reasons() {
		if r == master.OK {
			continue
		}
		counter(c.dropped, st.Dropped(r), r.String())
		counter(c.removed, st.Removed(r), r.String())
	}
	for _, ch := range []master.Change{master.ChangeListed, master.ChangeUpdated, master.ChangeRefreshed} {
		counter(c.changes, st.Changes(ch), ch.String())
	}
	for _, p := range []master.ProbeCause{master.CauseHeartbeat, master.CauseFlatline, master.CauseReprobe, master.CauseRestored, master.CauseLearned} {
		counter(c.probes, st.Probes(p), p.String())
		counter(c.retries, st.Retries(p), p.String())
	}
	counter(c.afterRetry, c.m.Registry.VerifiedAfterRetry())
	counter(c.answers, st.Answers())
	counter(c.unknownGame, st.UnknownGame())
	counter(c.budgetDenied, st.BudgetDeniedBytes())
	counter(c.deferred, st.Deferred())
	counter(c.paced, st.Paced())
	given, onCookie, bad := st.Cookies()
	counter(c.cookies, given, "given")
	counter(c.cookies, onCookie, "answered")
	counter(c.cookies, bad, "bad")
	listed, pending := c.m.Registry.Counts()
	gauge(c.listed, listed)
	gauge(c.pending, pending)
	tallies := c.m.Registry.Tallies(nil)
	byGame := map[string]int{}
	for _, t := range tallies {
		byGame[t.Game] += t.Servers
	}
	for g, n := range byGame {
		gauge(c.listedByGame, n, g)
	}
	slices.SortFunc(tallies, func(a, b master.Tally) int {
		return cmp.Or(cmp.Compare(b.Servers, a.Servers), cmp.Compare(a.Game, b.Game),
			cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.Gametype, b.Gametype))
	})
	rest := 0
	for i, t := range tallies {
		if i >= MaxGametypeSeries {
			rest += t.Servers
			continue
		}
		gauge(c.listedByKind, t.Servers, t.Game, strconv.Itoa(t.Protocol), t.Gametype)
	}
	if len(tallies) > MaxGametypeSeries {
		gauge(c.listedByKind, rest, "", "", "")
	}
	mesh := c.m.Registry.Mesh()
	pings, pongs := mesh.Counts()
	stray, spurned := mesh.Strays()
	counter(c.landmarkPings, pings, "sent")
	counter(c.landmarkPings, pongs, "sampled")
	counter(c.landmarkPings, stray, "stray")
	counter(c.landmarkPings, spurned, "spurned")
	c.collectUpstreams(ch)
	refused, noSocket := c.m.Server.SendErrors()
	counter(c.sendErrors, refused, "refused")
	counter(c.sendErrors, noSocket, "no_socket")
	counter(c.sendErrors, c.m.Server.QueueDrops(), "queue_full")
	counter(c.sendErrors, c.m.Server.EncodeDrops(), "encode_queue_full")
	if hc := c.m.httpConns; hc != nil {
		gauge(c.httpConns, hc.Open())
		counter(c.httpRefused, hc.refusedClient.Load(), "per_client")
		counter(c.httpRefused, hc.refusedFull.Load(), "full")
		counter(c.httpEvicted, hc.evicted.Load())
	}
	if w := c.m.writer; w != nil {
		seconds := func(d *prometheus.Desc, t prometheus.ValueType, ns int64) {
			ch <- prometheus.MustNewConstMetric(d, t, float64(ns)/1e9)
		}
		counter(c.stateErrors, w.errs.Load())
		counter(c.stateCommits, w.commits.Load())
		counter(c.stateWritten, w.written.Load())
		gauge(c.statePending, w.Pending())
		seconds(c.stateSeconds, prometheus.CounterValue, w.commitNS.Load())
		seconds(c.stateLast, prometheus.GaugeValue, w.lastNS.Load())
		seconds(c.stateMax, prometheus.GaugeValue, w.maxNS.Load())
	}
}

// collectUpstreams exports the upstreams' health, the first checks of the
// servers they named, and the block list's size.
func (c *Collector) collectUpstreams(ch chan<- prometheus.Metric) {
	h := c.m.Handler
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	for _, u := range h.Upstreams(time.Now()) {
		n := u.Name
		if u.State != upstream.StateUnknown {
			up := 0.0
			if u.State == upstream.StateUp {
				up = 1
			}
			metric(c.upUp, prometheus.GaugeValue, up, n, u.Kind)
		}
		if !u.LastSuccess.IsZero() {
			metric(c.upReported, prometheus.GaugeValue, float64(u.Reported), n)
			metric(c.upVerified, prometheus.GaugeValue, float64(u.Verified), n)
			metric(c.upAnswer, prometheus.GaugeValue, u.AnswerTime.Seconds(), n)
			metric(c.upLastSuccess, prometheus.GaugeValue, float64(u.LastSuccess.UnixNano())/1e9, n)
		}
		for _, w := range []struct {
			v    float64
			name string
		}{{u.Uptime24h, "24h"}, {u.Uptime7d, "7d"}} {
			if !math.IsNaN(w.v) {
				metric(c.upUptime, prometheus.GaugeValue, w.v, n, w.name)
			}
		}
		metric(c.upRefreshes, prometheus.CounterValue, float64(u.Refreshes-u.Failures), n, "ok")
		metric(c.upRefreshes, prometheus.CounterValue, float64(u.Failures), n, "failed")
		metric(c.upQueries, prometheus.CounterValue, float64(u.QueriesSent), n)
		metric(c.upPackets, prometheus.CounterValue, float64(u.Packets-u.Garbled), n, "read")
		metric(c.upPackets, prometheus.CounterValue, float64(u.Garbled), n, "garbled")
		read := u.Entries - u.Duplicates - u.Unusable - u.Refused - u.OverLearned
		for _, e := range []struct {
			v       uint64
			outcome string
		}{{read, "new"}, {u.Duplicates, "duplicate"}, {u.Unusable, "unusable"}, {u.Refused, "refused"}, {u.OverLearned, "over_learned"}, {u.QueueFull, "queue_full"}} {
			metric(c.upEntries, prometheus.CounterValue, float64(e.v), n, e.outcome)
		}
	}
	for r, v := range h.LearnOutcomes() {
		metric(c.learned, prometheus.CounterValue, float64(v), r.String())
	}
	metric(c.learnQueued, prometheus.GaugeValue, float64(h.LearnQueued()))
	metric(c.blocked, prometheus.GaugeValue, float64(len(c.m.Registry.BlockList())))
}
