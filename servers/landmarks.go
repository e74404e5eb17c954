package servers

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/geo"
	"github.com/scout-discovery/scout/probe"
)

// runPlanned runs --order auto and --order landmarks: the default plan
// (discover.PlanDefault: the landmark plan with the site check when a
// master answered as a landmark, else Armitage's planner with scout's
// constants; group probing over either) with the client's memory
// (Config.Memory) as the groups' priors when it was measured from where
// the client is now (rttcache.Cache.Matches). --order landmarks asks the
// masters for their landmark RTTs with the list (discover.Config.Landmarks);
// auto uses them when the query carries the landmark words (getserversExt:
// --ipv6).
func runPlanned(ctx context.Context, opt Config, out *output, mconn, pconn probe.Conn, cfg discover.Config, unresolved []discover.MasterReport, stderr io.Writer, mem *memory) (Result, error) {
	o := opt.Order
	if o.Order == "landmarks" || opt.IPv6 {
		cfg.Landmarks, cfg.LandmarkPings = true, o.LandmarkPings
	}
	var reps []discover.MasterReport
	gn := &gameNames{}
	nc := startNameCheck(ctx, opt, cfg)
	each := gn.wrap(opt.Filter, func(e discover.Event) {
		if d, ok := e.(discover.MasterDone); ok {
			reps = append(reps, d.MasterReport)
		}
		out.event(e)
	})
	var pl discover.Plan
	var listed []netip.AddrPort
	plan := func(ts []adaptive.Target) (adaptive.Strategy, error) {
		var err error
		prior, known := mem.priors(reps)
		pl, err = discover.PlanDefault(ts, reps, discover.PlanOptions{AutoStop: o.AutoStop, Seed: o.Seed, Landmarks: cfg.Landmarks,
			Siblings: o.LandmarkSiblings, Prior: prior, Known: known})
		for _, t := range ts {
			listed = append(listed, t.Addr)
		}
		return pl.Strategy(), err
	}
	sum, ord, err := discover.Ordered(ctx, mconn, pconn, cfg, geoLocator(geo.Default()), plan, each)
	sum.Masters = append(unresolved, sum.Masters...)
	if err != nil {
		listed = nil // cut short: what it did not probe, it did not decide on
	}
	mem.record(reps, ord.Probes, listed)
	ap := adaptive.Scout()
	ap.StopRTT = o.AutoStop
	rep := newOrderReport(o.Order, "", ap, sum, ord)
	rep.Memory = mem.report()
	if g := pl.Groups; g != nil {
		st := g.Stats()
		rep.Groups = &st
	}
	if lp := pl.Landmark; lp != nil {
		names, height := lp.Landmarks, lp.Input.ClientHeight
		rep.Landmarks = names
		rep.AccessMs = &height
		ss := lp.Planner.SiteStats()
		rep.Sites = &ss
		if len(names) > 1 {
			rep.Matrix = "measured"
			if lp.Input.LandmarksDerived {
				rep.Matrix = "derived"
			}
		}
	}
	rep.ClientRTTs = clientRTTs(reps)
	out.ordering = &rep
	out.finish(sum)
	// The default order's plain output is conventional's (the servers and
	// the summary); --json's summary and --order landmarks say how it ran.
	if out.enc == nil && o.Order == "landmarks" {
		if lp := pl.Landmark; lp != nil {
			fmt.Fprintf(out.w, "landmarks: %d (%v), their RTTs to each other %s; access delay estimated %.1f ms; %d sites, %d representatives probed, %d sites brought back\n",
				len(lp.Landmarks), lp.Landmarks, cmp.Or(rep.Matrix, "-"), lp.Input.ClientHeight, rep.Sites.Sites, rep.Sites.Reps, rep.Sites.Back)
			for _, c := range rep.ClientRTTs {
				fmt.Fprintf(out.w, "  RTT to %s: %.1f ms (the least of the list's %.1f ms and %d of %d pings %v)\n", c.Landmark, c.RTTMs, c.ListMs, len(c.PingsMs), c.Sent, c.PingsMs)
			}
		} else {
			fmt.Fprintln(out.w, "landmarks: no master answered as a landmark; Armitage's planner with scout's constants instead")
		}
		rep.print(out.w)
	}
	warnAfter(ctx, opt, sum, gn, nc, stderr)
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
