package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"strings"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/geo"
	"github.com/scout-discovery/scout/lab/rttplot"
	"github.com/scout-discovery/scout/probe"
)

// orderOptions are scout servers' --order, --auto-stop, --cluster-by and
// --plot.
type orderOptions struct {
	order     string        // "master" (conventional, the default) or "adaptive"
	variant   string        // adaptive: "paper" (the default) or "scout"
	autoStop  time.Duration // Algorithm 2's RTTstop; 0 turns auto-stop off
	clusterBy adaptive.Key
	byGiven   bool   // --cluster-by was given: it overrides the variant's
	plot      string // RTT-vs-time chart to write (.svg or .png); "" for none
	seed      uint64 // the planner's random source (calibration samples)
	pings     int    // landmarks: pings to each landmark master after its list
	siblings  bool   // landmarks: skip servers their answered siblings predict unplayable
}

// orderHelp is the paragraph of scout servers -h on --order and its flags.
const orderHelp = `Order (--order): master probes in the masters' order, starting while the
lists arrive (conventional discovery, as the Enemy Territory client does;
paced by the link, the default, in random order among those listed, an
address's first server before its others).
adaptive is Armitage's client-side adaptive discovery (NETWORKING 2008): it
waits for the complete list (clustering needs every server), geolocates
every server (embedded tables; country and AS), clusters them by country
(--cluster-by as: by origin AS), probes a sample of each cluster
(calibration), then the clusters nearest first, and stops once the
2nd-percentile RTT of the last 100 re-ordered probes reaches --auto-stop
(0: probe every server). --variant scout runs this project's variant
instead (adaptive.Scout, measured in EVALUATION.md): clusters by country
and origin AS, a second round of calibration samples only for clusters
whose first sample is under --auto-stop + 50 ms, and a stop once the last
20 re-ordered probes were at or over --auto-stop and no cluster with
servers left has answered under it + 5 ms.

landmarks asks the masters (scout master --landmark-place) for their RTTs
to the servers with the list, takes the least of each list query's round
trip and --landmark-pings pings after it (an empty-list query each, one
small packet each way) as the client's RTT to that master, probes in ascending estimate (the triangle
upper bound) and stops once every unprobed server's lower bound, less a
54 ms margin, is past --auto-stop, passing over servers whose answered
siblings (servers whose landmark RTTs differ from theirs by the same
amount at every landmark) predict them unplayable (--landmark-siblings;
only for a client within 50 ms of a landmark); servers no landmark
measured get Armitage's calibration (--variant scout's constants).

--plot FILE writes the run's RTT against probe time (.svg or .png) with
the phases, the running 2nd percentile and the auto-stop line.`

func addOrderFlags(fs *flag.FlagSet, o *orderOptions) (check func() error) {
	fs.StringVar(&o.order, "order", "master", "probe order: master (conventional), adaptive, or landmarks (the masters' published RTTs: scout master --landmark-place)")
	fs.DurationVar(&o.autoStop, "auto-stop", adaptive.Paper().StopRTT, "adaptive: RTTstop, the largest playable RTT; paper: stop when the 2nd-percentile RTT of the last 100 probes reaches it (0: never stop)")
	fs.StringVar(&o.variant, "variant", "paper", "adaptive: paper (Algorithms 1 and 2 as published) or scout (country+AS clusters, two-round calibration, bound stop rule)")
	by := fs.String("cluster-by", "", "adaptive: cluster servers by country, as (origin AS) or country+as (default: the variant's, country for paper, country+as for scout)")
	fs.StringVar(&o.plot, "plot", "", "write the RTT-vs-time chart of the run to `FILE` (.svg or .png)")
	fs.Uint64Var(&o.seed, "order-seed", 1, "adaptive: seed of the calibration samples' random choice")
	fs.BoolVar(&o.siblings, "landmark-siblings", true, "landmarks: skip a server whose answered siblings (vectors that differ by the same amount at every landmark) predict it unplayable, for a client within 50 ms of a landmark (landmark.DefaultSiblings)")
	fs.IntVar(&o.pings, "landmark-pings", discover.DefaultLandmarkPings, fmt.Sprintf("landmarks: pings to each landmark master after its list, for the client's RTT to it (the least sample; 0 to %d)", discover.MaxLandmarkPings))
	return func() error {
		switch o.order {
		case "master", "adaptive", "landmarks":
		default:
			return fmt.Errorf("unknown --order %q (master, adaptive or landmarks; oracle needs true RTTs: scout demo, scout sim)", o.order)
		}
		switch o.variant {
		case "paper", "scout":
		default:
			return fmt.Errorf("unknown --variant %q (paper or scout)", o.variant)
		}
		o.byGiven = *by != ""
		switch strings.ToLower(*by) {
		case "":
		case "country":
			o.clusterBy = adaptive.ByCountry
		case "as":
			o.clusterBy = adaptive.ByAS
		case "country+as":
			o.clusterBy = adaptive.ByCountryAS
		default:
			return fmt.Errorf("unknown --cluster-by %q (country, as or country+as)", *by)
		}
		if o.pings < 0 || o.pings > discover.MaxLandmarkPings {
			return fmt.Errorf("--landmark-pings must be 0 to %d, got %d", discover.MaxLandmarkPings, o.pings)
		}
		if o.autoStop < 0 {
			return fmt.Errorf("--auto-stop must not be negative")
		}
		if o.plot != "" && !strings.HasSuffix(strings.ToLower(o.plot), ".svg") && !strings.HasSuffix(strings.ToLower(o.plot), ".png") {
			return fmt.Errorf("--plot %q: the file name must end in .svg or .png", o.plot)
		}
		return nil
	}
}

// params returns the planner's constants: the variant's (the paper's, or
// adaptive.Scout), with --auto-stop and --cluster-by.
func (o orderOptions) params() adaptive.Params {
	p := adaptive.Paper()
	if o.variant == "scout" {
		p = adaptive.Scout()
	}
	p.StopRTT = o.autoStop
	if o.byGiven {
		p.ClusterBy = o.clusterBy
	}
	return p
}

// geoLocator adapts geo.Default() to discover.Locator.
func geoLocator(db *geo.DB) discover.Locator {
	return func(a netip.Addr) (string, uint32) {
		info, ok := db.Lookup(a.Unmap())
		if !ok {
			return "", 0
		}
		return info.Country, info.ASN
	}
}

// adaptivePlanner builds Algorithms 1 and 2 with p, seeded.
func adaptivePlanner(p adaptive.Params, seed uint64) discover.Planner {
	return func(ts []adaptive.Target) (adaptive.Strategy, error) {
		return adaptive.New(ts, p, rand.New(rand.NewPCG(seed, 0x5c0)))
	}
}

// serversOrdered runs scout servers --order adaptive: paced as the
// default path is (discover.Ordered takes the same Prober), and with the
// same messages on stderr after the run (a master past a bound, game
// names).
func serversOrdered(ctx context.Context, opt serversOptions, out *serversOutput, mconn, pconn probe.Conn, cfg discover.Config, unresolved []discover.MasterReport, stderr io.Writer) error {
	o := opt.ordering
	if cfg.Prober.Pace != nil {
		// Paced as the default path: the pacer's window and rate, each
		// target decided just before it is sent.
		cfg.Prober.Lookahead = discover.OrderedLookahead
	}
	gn := &gameNames{}
	nc := startNameCheck(ctx, opt, cfg)
	sum, ord, err := discover.Ordered(ctx, mconn, pconn, cfg, geoLocator(geo.Default()), adaptivePlanner(o.params(), o.seed), gn.wrap(opt.filter, out.event))
	sum.Masters = append(unresolved, sum.Masters...)
	rep := newOrderReport(o.order, o.variant, o.params(), sum, ord)
	out.ordering = &rep
	out.finish(sum)
	if out.enc == nil {
		rep.print(out.w)
	}
	warnLimits(sum, stderr)
	warnGameName(ctx, opt, sum, gn, nc, stderr)
	if o.plot != "" {
		series := plotSeries("adaptive", ord.Probes, ord.StopAt, o.params())
		if perr := writePlot(o.plot, "scout servers --order adaptive", o.autoStop, series); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

// probeLog records the probes of a conventional run from its events, for
// --plot.
type probeLog struct {
	start  time.Time
	probes []discover.Outcome
}

func (l *probeLog) wrap(each func(discover.Event)) func(discover.Event) {
	return func(e discover.Event) {
		if p, ok := e.(discover.Probed); ok {
			now := time.Since(l.start)
			o := discover.Outcome{Addr: p.Addr, Phase: adaptive.Master, Answered: p.Answered(), At: now}
			if o.Answered {
				o.RTT, o.At = p.RTT, now-p.RTT
			}
			l.probes = append(l.probes, o)
		}
		each(e)
	}
}

// orderReport is what an ordered run adds to the summary: where auto-stop
// fired, the clusters and the initial (calibration) probes. It is the
// "order" object of --json's summary.
type orderReport struct {
	Order     string  `json:"order"`
	Variant   string  `json:"variant,omitempty"`
	ClusterBy string  `json:"cluster_by,omitempty"`
	AutoStop  float64 `json:"auto_stop_ms"`
	Located   int     `json:"located"`
	Clusters  int     `json:"clusters"`
	// Initial counts the calibration and split probes (Algorithm 1 step 4).
	Initial int `json:"initial_probes"`
	// ProbeStart is when probing began: the lists took that long.
	ProbeStart float64 `json:"probe_start_ms"`
	Stopped    bool    `json:"stopped"`
	StopMs     float64 `json:"stop_ms,omitempty"`
	// StopProbes is the servers handed out when auto-stop fired; StopShare
	// that as a share of the list (the paper's "auto-stop as % of full
	// probe").
	StopProbes int     `json:"stop_probes,omitempty"`
	StopShare  float64 `json:"stop_share,omitempty"`
	Unprobed   int     `json:"unprobed"`
	// Playable counts the servers that answered below AutoStop;
	// LastPlayable is when the last of them was found.
	Playable       int     `json:"playable"`
	LastPlayableMs float64 `json:"last_playable_ms"`
	Refused        int     `json:"refused,omitempty"`
	// Landmarks are the landmark ids of --order landmarks.
	Landmarks []string `json:"landmarks,omitempty"`
	// AccessMs is --order landmarks' estimate of the client's access delay
	// (landmark.AccessHeight), the lower bounds' client height.
	AccessMs *float64 `json:"access_ms,omitempty"`
	// ClientRTTs are --order landmarks' RTTs to the landmark masters it
	// asked: the samples and the least, which the planner takes.
	ClientRTTs []clientRTTJSON `json:"client_rtts,omitempty"`
	// Matrix says where --order landmarks' landmark RTTs to each other
	// came from: "measured" (the masters published every pair) or
	// "derived" (some pair bounded through the servers instead).
	Matrix string `json:"landmark_matrix,omitempty"`
}

// clientRTTJSON is the client's RTT to one landmark master.
type clientRTTJSON struct {
	Landmark string    `json:"landmark"`
	RTTMs    float64   `json:"rtt_ms"`      // the least sample
	ListMs   float64   `json:"list_rtt_ms"` // the list query's
	PingsMs  []float64 `json:"pings_ms"`    // each ping's answered in time
	Sent     int       `json:"pings_sent"`
}

func newOrderReport(order, variant string, p adaptive.Params, sum discover.Summary, ord discover.Ordering) orderReport {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	r := orderReport{Order: order, AutoStop: ms(p.StopRTT), Located: ord.Located, ProbeStart: ms(ord.ProbeStart),
		Stopped: ord.Stopped, Refused: ord.Refused, Unprobed: max(sum.Listed-len(ord.Probes), 0)}
	if order == "adaptive" {
		r.Variant, r.ClusterBy = variant, p.ClusterBy.String()
	}
	for _, c := range ord.Clusters {
		if !c.Dissolved {
			r.Clusters++
		}
	}
	for _, o := range ord.Probes {
		if o.Phase == adaptive.Calibrate || o.Phase == adaptive.Split {
			r.Initial++
		}
	}
	if ord.Stopped {
		r.StopMs, r.StopProbes = ms(ord.StopAt), ord.Stop.Sent
		if sum.Listed > 0 {
			r.StopShare = 100 * float64(ord.Stop.Sent) / float64(sum.Listed)
		}
	}
	r.Playable, r.LastPlayableMs = playable(ord.Probes, p.StopRTT)
	return r
}

// playable counts the servers that answered below stop (all answered when
// stop is 0) and returns when the last of them was found (sent + RTT).
func playable(probes []discover.Outcome, stop time.Duration) (n int, lastMs float64) {
	var last time.Duration
	for _, o := range probes {
		if o.Answered && (stop == 0 || o.RTT < stop) {
			n++
			last = max(last, o.At+o.RTT)
		}
	}
	return n, float64(last.Microseconds()) / 1000
}

func (r orderReport) print(w io.Writer) {
	fmt.Fprintf(w, "order %s", r.Order)
	if r.ClusterBy != "" {
		fmt.Fprintf(w, " (%s, clusters by %s): list complete at %.2fs; %d of the servers geolocated, %d clusters, %d initial probes",
			r.Variant, r.ClusterBy, r.ProbeStart/1000, r.Located, r.Clusters, r.Initial)
	}
	fmt.Fprintln(w)
	switch {
	case r.Stopped:
		fmt.Fprintf(w, "auto-stop (RTTstop %.0f ms) fired at %.2fs after %d probes, %.1f%% of the list; %d servers not probed\n",
			r.AutoStop, r.StopMs/1000, r.StopProbes, r.StopShare, r.Unprobed)
	case r.AutoStop > 0 && r.Order == "adaptive":
		fmt.Fprintf(w, "auto-stop (RTTstop %.0f ms) did not fire: every server probed\n", r.AutoStop)
	}
	if r.AutoStop > 0 {
		fmt.Fprintf(w, "%d playable servers (RTT < %.0f ms), the last found at %.2fs\n", r.Playable, r.AutoStop, r.LastPlayableMs/1000)
	}
	if r.Refused > 0 {
		fmt.Fprintf(w, "warning: the planner refused %d outcomes\n", r.Refused)
	}
}

// plotPhase maps a planner phase to the chart's.
func plotPhase(ph adaptive.Phase) rttplot.Phase {
	switch ph {
	case adaptive.Calibrate:
		return rttplot.Calibrate
	case adaptive.Split:
		return rttplot.Split
	case adaptive.Reordered:
		return rttplot.Reordered
	}
	return rttplot.Conventional
}

// plotSeries draws a run: its probes by phase, Algorithm 2's running
// percentile over them with p's window, and the auto-stop line.
func plotSeries(name string, probes []discover.Outcome, stopAt time.Duration, p adaptive.Params) rttplot.Series {
	s := rttplot.Series{Name: name, StopAt: stopAt}
	for _, o := range probes {
		s.Probes = append(s.Probes, rttplot.Probe{At: o.At, RTT: o.RTT, Answered: o.Answered, Phase: plotPhase(o.Phase)})
	}
	w, pct := p.Window, p.StopPercentile
	if w < 1 || !(pct > 0 && pct <= 1) {
		w, pct = adaptive.Paper().Window, adaptive.Paper().StopPercentile
	}
	s.Bottom = rttplot.Bottom(s.Probes, w, pct)
	return s
}

// writePlot writes one chart of series side by side.
func writePlot(path, title string, stopRTT time.Duration, series ...rttplot.Series) error {
	c := rttplot.Chart{Title: title, Series: series, StopRTT: stopRTT}
	if len(series) > 1 {
		c.Layout = rttplot.SideBySide
	}
	if err := rttplot.Write(path, c); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	return nil
}
