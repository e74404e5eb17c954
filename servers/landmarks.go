package servers

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/geo"
	"github.com/scout-discovery/scout/probe"
)

// runLandmarks runs --order landmarks: the masters are asked for their
// landmark RTTs with the list (discover.Config.Landmarks), and the
// landmark plan (discover.PlanLandmarks) probes in ascending estimate and
// stops when every unprobed server's lower bound, less the margin, is
// past the auto-stop; servers no landmark measured go to Armitage's
// calibration (adaptive.Scout's constants).
func runLandmarks(ctx context.Context, opt Config, out *output, mconn, pconn probe.Conn, cfg discover.Config, unresolved []discover.MasterReport) (Result, error) {
	o := opt.Order
	cfg.Landmarks, cfg.LandmarkPings = true, o.LandmarkPings
	var reps []discover.MasterReport
	each := func(e discover.Event) {
		if d, ok := e.(discover.MasterDone); ok {
			reps = append(reps, d.MasterReport)
		}
		out.event(e)
	}
	p := discover.LandmarkPlanParams(o.AutoStop)
	if !o.LandmarkSiblings {
		p.Siblings = nil
	}
	var lp discover.LandmarkPlan
	plan := func(ts []adaptive.Target) (adaptive.Strategy, error) {
		var err error
		if lp, err = discover.PlanLandmarks(ts, reps, p, o.Seed); err != nil {
			return nil, err
		}
		return lp.Planner, nil
	}
	sum, ord, err := discover.Ordered(ctx, mconn, pconn, cfg, geoLocator(geo.Default()), plan, each)
	sum.Masters = append(unresolved, sum.Masters...)
	ap := adaptive.Scout()
	ap.StopRTT = o.AutoStop
	rep := newOrderReport("landmarks", "", ap, sum, ord)
	names, height := lp.Landmarks, lp.Input.ClientHeight
	rep.Landmarks = names
	if names != nil {
		rep.AccessMs = &height
	}
	rep.ClientRTTs = clientRTTs(reps)
	if len(names) > 1 {
		rep.Matrix = "measured"
		if lp.Input.LandmarksDerived {
			rep.Matrix = "derived"
		}
	}
	out.ordering = &rep
	out.finish(sum)
	if out.enc == nil {
		fmt.Fprintf(out.w, "landmarks: %d (%v), their RTTs to each other %s; margin %d ms; access delay estimated %.1f ms\n", len(names), names, cmp.Or(rep.Matrix, "-"), discover.LandmarkMargin, height)
		for _, c := range rep.ClientRTTs {
			fmt.Fprintf(out.w, "  RTT to %s: %.1f ms (the least of the list's %.1f ms and %d of %d pings %v)\n", c.Landmark, c.RTTMs, c.ListMs, len(c.PingsMs), c.Sent, c.PingsMs)
		}
		rep.print(out.w)
	}
	return Result{Probes: ord.Probes, StopAt: ord.StopAt}, err
}

// clientRTTs reports the client's RTT samples to each landmark master.
func clientRTTs(reps []discover.MasterReport) []ClientRTT {
	var out []ClientRTT
	for _, r := range reps {
		if r.Landmark == "" {
			continue
		}
		c := ClientRTT{Landmark: r.Landmark, RTTMs: millis(r.BestRTT()), ListMs: millis(r.RTT), PingsMs: []float64{}, Sent: r.PingsSent}
		for _, p := range r.Pings {
			c.PingsMs = append(c.PingsMs, millis(p))
		}
		out = append(out, c)
	}
	return out
}

// millis is d in milliseconds.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
