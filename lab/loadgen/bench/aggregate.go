//go:build linux

package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/protocol/q3"
)

// AggregateOptions are an aggregation benchmark's: the two masters (the
// upstream the swarm registers with, and the master that aggregates it,
// each started by the benchmark), their /metrics URLs, the swarm, and
// how many steady refreshes to measure.
type AggregateOptions struct {
	Upstream, Aggregator               Target
	UpstreamMetrics, AggregatorMetrics string
	Swarm                              loadgen.SwarmConfig
	Rate                               int // heartbeats per second offered to the upstream
	Refreshes                          int
	Deadline                           time.Duration // for each phase
}

// AggregateResult is what one aggregation benchmark measured.
type AggregateResult struct {
	Servers int
	// Learn: from the aggregator's start to every server listed there,
	// checked with its own challenge.
	LearnWall              time.Duration
	LearnCPU               time.Duration // the aggregator's
	LearnIn, LearnOut      float64       // the aggregator's datagrams
	LearnUpstreamCPU       time.Duration
	Refreshes              int
	RefreshCPU             time.Duration // the aggregator's, per steady refresh
	RefreshIn, RefreshOut  float64       // the aggregator's datagrams per steady refresh
	RefreshUpstreamCPU     time.Duration // the upstream's over the same intervals: holding the same servers, answering the refresh
	RefreshUpstreamPackets float64       // list packets the upstream sent per refresh
	ListedAfter            float64
}

// Aggregate measures what aggregation costs: a swarm of servers
// registers with the upstream; the aggregator, asking it on its period,
// learns and checks every one (the first refresh), then refreshes with
// every server known (the steady state). Datagrams are the aggregator's
// own counts (/metrics), CPU its and the upstream's (/proc).
func Aggregate(ctx context.Context, stdout io.Writer, o AggregateOptions) (AggregateResult, error) {
	var res AggregateResult
	req, _ := q3.GetServers{Protocol: 68, Empty: true, Full: true}.AppendBinary(nil)
	up := &o.Upstream
	if err := up.Launch(ctx, req, 10*time.Second); err != nil {
		return res, err
	}
	defer up.Stop()
	s, err := loadgen.NewSwarm(o.Swarm)
	if err != nil {
		return res, err
	}
	serveCtx, stop := context.WithCancel(ctx)
	s.Serve(serveCtx)
	defer func() { stop(); s.Close() }()
	res.Servers = s.Len()
	start := time.Now()
	// Registered until the upstream lists every server: those whose every
	// answer was lost (a loaded machine) are found missing in its lists and
	// heartbeated again, as the swarm benchmark does.
	up6 := netip.AddrPortFrom(netip.IPv6Loopback(), up.Addr.Port())
	for attempt := 1; ; attempt++ {
		if _, err := s.Register(ctx, up.Addr, up6, loadgen.RegisterConfig{Rate: o.Rate, Deadline: o.Deadline}); err != nil {
			return res, fmt.Errorf("registering with the upstream: %w", err)
		}
		n := settle(ctx, o.UpstreamMetrics, int64(s.Len()))
		if n >= int64(s.Len()) {
			break
		}
		if attempt == 4 {
			return res, fmt.Errorf("the upstream lists %d of %d", n, s.Len())
		}
		for i, ok := range listUntil(ctx, stdout, s, up.Addr, int(n), attempt) {
			if !ok {
				s.Reset(i)
			}
		}
	}
	fmt.Fprintf(stdout, "upstream lists %d servers after %v\n", s.Len(), time.Since(start).Round(time.Millisecond))

	ag := &o.Aggregator
	upCPU0, _ := loadgen.ProcCPU(up.PID)
	start = time.Now()
	if err := ag.Launch(ctx, req, 10*time.Second); err != nil {
		return res, err
	}
	defer ag.Stop()
	// The learning: until every server is listed by the aggregator.
	deadline := time.Now().Add(o.Deadline)
	for {
		n, err := masterListed(ctx, o.AggregatorMetrics)
		if err == nil && int(n) >= s.Len() {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("the aggregator lists %d of %d after %v", n, s.Len(), o.Deadline)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	res.LearnWall = time.Since(start)
	res.LearnCPU, _ = loadgen.ProcCPU(ag.PID)
	upCPU1, _ := loadgen.ProcCPU(up.PID)
	res.LearnUpstreamCPU = upCPU1 - upCPU0
	m0, err := scrape(ctx, o.AggregatorMetrics)
	if err != nil {
		return res, err
	}
	res.LearnIn, res.LearnOut = m0.sum("scout_master_packets_received_total"), m0.sum("scout_master_packets_sent_total")
	fmt.Fprintf(stdout, "aggregator lists %d servers after %v: %.0f datagrams in, %.0f out, CPU %v; upstream CPU %v\n",
		s.Len(), res.LearnWall.Round(time.Millisecond), res.LearnIn, res.LearnOut, res.LearnCPU.Round(time.Millisecond), res.LearnUpstreamCPU.Round(time.Millisecond))

	// Steady refreshes: every server known; the counts between the end
	// of one refresh and the end of the R-th after it.
	ok0 := m0.get(`scout_master_upstream_refreshes_total{result="ok",source="up"}`)
	cpu0, _ := loadgen.ProcCPU(ag.PID)
	upc0, _ := loadgen.ProcCPU(up.PID)
	upSent0, err := metric(ctx, o.UpstreamMetrics, `scout_master_packets_sent_total{kind="getserversResponse"}`)
	if err != nil {
		return res, err
	}
	var m1 metrics
	for {
		if m1, err = scrape(ctx, o.AggregatorMetrics); err != nil {
			return res, err
		}
		if m1.get(`scout_master_upstream_refreshes_total{result="ok",source="up"}`) >= ok0+float64(o.Refreshes) {
			break
		}
		if time.Now().After(deadline.Add(time.Duration(o.Refreshes) * time.Minute)) {
			return res, fmt.Errorf("%d refreshes did not come", o.Refreshes)
		}
		// Both masters are scraped once a second, alike, so that the
		// scrapes cost them the same.
		if _, err := scrape(ctx, o.UpstreamMetrics); err != nil {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	cpu1, _ := loadgen.ProcCPU(ag.PID)
	upc1, _ := loadgen.ProcCPU(up.PID)
	upSent1, _ := metric(ctx, o.UpstreamMetrics, `scout_master_packets_sent_total{kind="getserversResponse"}`)
	r := float64(o.Refreshes)
	res.Refreshes = o.Refreshes
	res.RefreshCPU = time.Duration(float64(cpu1-cpu0) / r)
	res.RefreshUpstreamCPU = time.Duration(float64(upc1-upc0) / r)
	res.RefreshIn = (m1.sum("scout_master_packets_received_total") - res.LearnIn) / r
	res.RefreshOut = (m1.sum("scout_master_packets_sent_total") - res.LearnOut) / r
	res.RefreshUpstreamPackets = (upSent1 - upSent0) / r
	res.ListedAfter = m1.get("scout_master_servers_listed")
	fmt.Fprintf(stdout, "per steady refresh (%d, each an interval): aggregator %.0f datagrams in, %.0f out, CPU %v; upstream (the same servers, no aggregation) CPU %v, %.0f list packets; aggregator lists %.0f\n",
		o.Refreshes, res.RefreshIn, res.RefreshOut, res.RefreshCPU.Round(time.Microsecond), res.RefreshUpstreamCPU.Round(time.Microsecond),
		res.RefreshUpstreamPackets, res.ListedAfter)
	return res, nil
}

// metrics is one scrape of a /metrics page: each series' value by its
// line's name and labels.
type metrics map[string]float64

func (m metrics) get(series string) float64 { return m[series] }

// sum adds every series of the metric name.
func (m metrics) sum(name string) float64 {
	t := 0.0
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			t += v
		}
	}
	return t
}

func scrape(ctx context.Context, url string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

// metric reads one series of a /metrics page.
func metric(ctx context.Context, url, series string) (float64, error) {
	m, err := scrape(ctx, url)
	if err != nil {
		return 0, err
	}
	v, ok := m[series]
	if !ok {
		return 0, fmt.Errorf("%s: no %s", url, series)
	}
	return v, nil
}
