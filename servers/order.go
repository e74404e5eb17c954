package servers

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/geo"
	"github.com/scout-discovery/scout/landmark"
	"github.com/scout-discovery/scout/probe"
)

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
		return adaptive.New(ts, p, rand.New(rand.NewPCG(seed, discover.AdaptiveSeedStream)))
	}
}

// runOrdered runs --order adaptive: paced as the default path is
// (discover.Ordered takes the same Prober), and with the same messages on
// stderr after the run (a master past a bound, game names).
func runOrdered(ctx context.Context, opt Config, out *output, mconn, pconn probe.Conn, cfg discover.Config, unresolved []discover.MasterReport, stderr io.Writer, mem *memory) (Result, error) {
	o := opt.Order
	gn := &gameNames{}
	nc := startNameCheck(ctx, opt, cfg)
	sum, ord, err := discover.Ordered(ctx, mconn, pconn, cfg, geoLocator(geo.Default()), adaptivePlanner(o.Params(), o.Seed), gn.wrap(opt.Filter, out.event))
	sum.Masters = append(unresolved, sum.Masters...)
	mem.record(sum.Masters, ord.Probes, nil) // its stop rule is not the default plan's: no list remembered
	rep := newOrderReport(o.Order, o.Variant, o.Params(), sum, ord)
	out.ordering = &rep
	out.finish(sum)
	if out.enc == nil {
		rep.print(out.w)
	}
	warnAfter(ctx, opt, sum, gn, nc, stderr)
	return Result{Probes: ord.Probes, StopAt: ord.StopAt}, err
}

// probeLog records the probes of a conventional run from its events
// (Config.KeepProbes).
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

// OrderReport is what an ordered run adds to the summary: where auto-stop
// fired, the clusters and the initial (calibration) probes. It is the
// "order" object of --json's summary.
type OrderReport struct {
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
	ClientRTTs []ClientRTT `json:"client_rtts,omitempty"`
	// Groups are group probing's counts (--order auto, landmarks).
	Groups *adaptive.GroupStats `json:"groups,omitempty"`
	// Sites are the landmark plan's site check's counts.
	Sites *landmark.SiteStats `json:"sites,omitempty"`
	// Memory is the client's memory's use in the run.
	Memory *MemoryReport `json:"memory,omitempty"`
	// Matrix says where --order landmarks' landmark RTTs to each other
	// came from: "measured" (the masters published every pair) or
	// "derived" (some pair bounded through the servers instead).
	Matrix string `json:"landmark_matrix,omitempty"`
}

// ClientRTT is the client's RTT to one landmark master.
type ClientRTT struct {
	Landmark string    `json:"landmark"`
	RTTMs    float64   `json:"rtt_ms"`      // the least sample
	ListMs   float64   `json:"list_rtt_ms"` // the list query's
	PingsMs  []float64 `json:"pings_ms"`    // each ping's answered in time
	Sent     int       `json:"pings_sent"`
}

func newOrderReport(order, variant string, p adaptive.Params, sum discover.Summary, ord discover.Ordering) OrderReport {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	r := OrderReport{Order: order, AutoStop: ms(p.StopRTT), Located: ord.Located, ProbeStart: ms(ord.ProbeStart),
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

func (r OrderReport) print(w io.Writer) {
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
	if g := r.Groups; g != nil {
		fmt.Fprintf(w, "groups (/24): %d servers skipped on a sample of their group, %d on the memory, %d probed first as remembered playable, %d further samples\n",
			g.Skipped, g.Remembered, g.First, g.Samples)
	}
	if m := r.Memory; m != nil {
		state := "not used (nothing fresh)"
		switch {
		case m.Moved:
			state = "not used: the RTTs to the masters are not the remembered ones (another network?)"
		case m.Used:
			state = "used"
		}
		fmt.Fprintf(w, "memory %s: %d groups, %s\n", m.File, m.Groups, state)
	}
	if r.Refused > 0 {
		fmt.Fprintf(w, "warning: the planner refused %d outcomes\n", r.Refused)
	}
}
