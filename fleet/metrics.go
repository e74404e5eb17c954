package fleet

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	opPut = iota
	opDel
	opRTT // another landmark's RTT (landmarks.go)
)

// stats are the node's counters, read at scrape time.
type stats struct {
	written, superseded atomic.Uint64 // scripts that wrote / found a newer record
	queueDropped        atomic.Uint64
	applied             [3]atomic.Uint64 // peers' changes applied, by op
	refused, corrupt    atomic.Uint64
	errors, outages     atomic.Uint64
	resyncs, behind     atomic.Uint64
	resumed             atomic.Uint64 // full reads gone on with after an error
	resets              atomic.Uint64 // Redis came back without the registry
	histWritten         atomic.Uint64 // history days written (history.go)
	decoded, held       atomic.Uint64 // full reads' records decoded, and those skipped as held already
	latency             prometheus.Histogram
}

func (s *stats) init() {
	s.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "scout_fleet_redis_seconds",
		Help:    "Duration of the fleet's Redis round trips (a pipeline of writes, a beat, an XREAD that returned changes).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
	})
}

func (s *stats) observe(start time.Time) { s.latency.Observe(time.Since(start).Seconds()) }

// Describe implements prometheus.Collector.
func (n *Node) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(n, ch) }

// Collect implements prometheus.Collector: the fleet as this instance sees
// it (instances live, Redis reachable, store latency, queued writes,
// re-probe share, changes applied).
func (n *Node) Collect(ch chan<- prometheus.Metric) {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("scout_fleet_"+name, help, labels, prometheus.Labels{"instance_id": n.cfg.ID})
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	counter := func(desc *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	live := n.Live()
	up := 0.0
	if n.Up() {
		up = 1
	}
	gauge(d("instances", "Live instances of the fleet this one sees: those of its last beat, this one included, while that beat is less than the fleet's dead time old; 1 (itself) after, while it is cut off from Redis."), float64(n.LiveNow(time.Now())))
	gauge(d("redis_up", "1 if the last Redis round trip succeeded, 0 while Redis is unreachable (answers come from memory)."), up)
	gauge(d("queued_writes", "Writes waiting for Redis (one per address at most)."), float64(n.Queued()))
	share := 1.0
	if len(live) > 0 {
		share = 1 / float64(len(live))
	}
	gauge(d("reprobe_share", "The share of the listed servers this instance re-probes (1/instances by rendezvous hashing; see scout_master_probes_total{cause=\"reprobe\"} and scout_fleet_reprobes_left_total for the counts)."), share)
	counter(d("reprobes_left_total", "Due re-probes left to the other instances (their share)."), n.reg.LeftToPeers())
	counter(d("writes_total", "Records written by this instance, by outcome (written, or superseded by a newer record).", "outcome"), n.stats.written.Load(), "written")
	counter(d("writes_total", "Records written by this instance, by outcome (written, or superseded by a newer record).", "outcome"), n.stats.superseded.Load(), "superseded")
	counter(d("queue_dropped_total", "Writes dropped because the queue held MaxQueued addresses."), n.stats.queueDropped.Load())
	counter(d("applied_total", "Other instances' changes applied to this registry, by op.", "op"), n.stats.applied[opPut].Load(), "put")
	counter(d("applied_total", "Other instances' changes applied to this registry, by op.", "op"), n.stats.applied[opDel].Load(), "remove")
	counter(d("applied_total", "Other instances' changes applied to this registry, by op.", "op"), n.stats.applied[opRTT].Load(), "landmark_rtt")
	counter(d("refused_total", "Other instances' records this registry refused (full, or refused by its configuration)."), n.stats.refused.Load())
	counter(d("corrupt_total", "Records or changes in Redis that could not be read."), n.stats.corrupt.Load())
	counter(d("redis_errors_total", "Failed Redis round trips."), n.stats.errors.Load())
	counter(d("redis_outages_total", "Times Redis became unreachable."), n.stats.outages.Load())
	counter(d("resyncs_total", "Full reads of the shared registry (startup, and catching up after the stream lost changes)."), n.stats.resyncs.Load())
	counter(d("resync_records_total", "Records read by full reads of the shared registry: decoded, or skipped as held already at their version (held).", "outcome"), n.stats.decoded.Load(), "decoded")
	counter(d("resync_records_total", "Records read by full reads of the shared registry: decoded, or skipped as held already at their version (held).", "outcome"), n.stats.held.Load(), "held")
	counter(d("resyncs_resumed_total", "Full reads of the shared registry cut short by an error and gone on with from the last page read, not from the start."), n.stats.resumed.Load())
	counter(d("registry_lost_total", "Times Redis came back without the shared registry (started again without its data); this instance's list was written to it again."), n.stats.resets.Load())
	counter(d("history_days_written_total", "Player-history days (one server, one UTC day) this instance wrote to Redis: its share's."), n.stats.histWritten.Load())
	ch <- n.stats.latency
}
