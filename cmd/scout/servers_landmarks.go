package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/geo"
	"github.com/scout-discovery/scout/landmark"
	"github.com/scout-discovery/scout/probe"
)

// landmarkMargin is --order landmarks' safety margin (ms) for the
// triangle inequality's violations: the real-mesh evaluation's for three
// hub landmarks at the 0.999 quantile (EVALUATION.md, "Landmarks": 54 ms
// for Frankfurt, New York, Tokyo).
const landmarkMargin = 54

// landmarkInput builds the landmark planner's input from the masters'
// reports: each master that answered as a landmark is one, and the
// client's RTT to it is the least of its list query's round trip and its
// pings' (MasterReport.BestRTT);
// the other landmarks a master published (a fleet instance's peers,
// MasterReport.OtherLandmarks) are more, with no client RTT: they serve
// Repair and the landmarks' matrix. A server's vector holds each
// landmark's published RTT to it, NaN where that landmark has not
// measured it. The landmarks' RTTs to each other, for Repair, are the
// ones the masters measured and published (MasterReport.PeerRTTs: the
// smaller of the two directions); a pair none measured is bounded from
// the servers' vectors instead (landmark.MatrixFromVectors: no packet
// more), and the input then says the matrix was derived. The client's
// access delay is estimated from its vector and that matrix
// (landmark.AccessHeight). At most landmark.MaxLandmarks landmarks are
// used, the measured ones first.
func landmarkInput(ts []adaptive.Target, reps []discover.MasterReport) (landmark.PlanInput, []string) {
	in := landmark.PlanInput{Targets: ts}
	var names []string
	var rtts []map[netip.AddrPort]time.Duration
	index := map[string]int{}
	add := func(id string, client float64, m map[netip.AddrPort]time.Duration) {
		if k, ok := index[id]; ok {
			if math.IsNaN(in.Client[k]) && !math.IsNaN(client) {
				in.Client[k], rtts[k] = client, m
			}
			return
		}
		if len(names) >= landmark.MaxLandmarks {
			return
		}
		index[id] = len(names)
		names = append(names, id)
		in.Client = append(in.Client, client)
		rtts = append(rtts, m)
	}
	for _, r := range reps {
		if r.Landmark != "" && r.BestRTT() > 0 {
			add(r.Landmark, ms(r.BestRTT()), r.LandmarkRTTs)
		}
	}
	for _, r := range reps {
		if r.Landmark != "" && r.BestRTT() <= 0 {
			add(r.Landmark, math.NaN(), r.LandmarkRTTs)
		}
		for _, id := range slices.Sorted(maps.Keys(r.OtherLandmarks)) {
			add(id, math.NaN(), r.OtherLandmarks[id])
		}
	}
	in.Vectors = make([]landmark.Vector, len(ts))
	for i, t := range ts {
		v := make(landmark.Vector, len(names))
		for k, m := range rtts {
			v[k] = math.NaN()
			if d, ok := m[t.Addr]; ok {
				v[k] = ms(d)
			}
		}
		in.Vectors[i] = v
	}
	in.Landmarks, in.LandmarksDerived = landmarkMatrix(names, reps, in.Vectors)
	in.ClientHeight = landmark.AccessHeight(in.Client, in.Landmarks)
	return in, names
}

// landmarkMatrix returns the landmarks' RTTs to each other (ms, 0 on the
// diagonal, NaN where unknown): those the masters published, the smaller
// of the two directions where both came, and where neither did the bound
// through the servers (landmark.MatrixFromVectors); derived reports that
// some pair is.
func landmarkMatrix(names []string, reps []discover.MasterReport, vs []landmark.Vector) (lm [][]float64, derived bool) {
	lm = landmark.MatrixFromVectors(vs, len(names))
	measured := func(a, b string) float64 {
		best := math.NaN()
		for _, r := range reps {
			for _, d := range []time.Duration{r.PeerRTTs[a][b], r.PeerRTTs[b][a]} {
				if d > 0 && !(ms(d) >= best) {
					best = ms(d)
				}
			}
		}
		return best
	}
	for j := range names {
		for k := j + 1; k < len(names); k++ {
			if d := measured(names[j], names[k]); !math.IsNaN(d) {
				lm[j][k], lm[k][j] = d, d
			} else {
				derived = true
			}
		}
	}
	return lm, derived
}

// landmarkPlanParams are --order landmarks' planner constants for
// --auto-stop autoStop: the margin, the threshold (none for 0: the
// largest float, which the planner takes, where +Inf it refuses), for the
// servers no landmark measured adaptive.Scout's constants with the same
// RTTstop, and sibling skipping (landmark.DefaultSiblings).
func landmarkPlanParams(autoStop time.Duration) landmark.PlanParams {
	p := landmark.DefaultPlanParams()
	p.Margin = landmarkMargin
	p.Threshold = ms(autoStop)
	if autoStop == 0 {
		p.Threshold = math.MaxFloat64
	}
	ap := adaptive.Scout()
	ap.StopRTT = autoStop
	p.Unknown = &ap
	sib := landmark.DefaultSiblings()
	p.Siblings = &sib
	// Repair clips the client's own vector too when the matrix is
	// measured, as the margin was fitted (EVALUATION.md, "Leaving the
	// client's own vector unrepaired": on the real mesh keeping it raises
	// the violations and the margin); a derived matrix leaves it alone
	// (landmark.PlanInput.LandmarksDerived).
	return p
}

// serversLandmarks runs scout servers --order landmarks: the masters are
// asked for their landmark RTTs with the list (discover.Config.Landmarks),
// and landmark.Planner probes in ascending estimate and stops when every
// unprobed server's lower bound, less the margin, is past --auto-stop;
// servers no landmark measured go to Armitage's calibration
// (adaptive.Scout's constants).
func serversLandmarks(ctx context.Context, opt serversOptions, out *serversOutput, mconn, pconn probe.Conn, cfg discover.Config, unresolved []discover.MasterReport) error {
	o := opt.ordering
	cfg.Landmarks, cfg.LandmarkPings = true, o.pings
	var reps []discover.MasterReport
	each := func(e discover.Event) {
		if d, ok := e.(discover.MasterDone); ok {
			reps = append(reps, d.MasterReport)
		}
		out.event(e)
	}
	var names []string
	var height float64
	var derived bool
	p := landmarkPlanParams(o.autoStop)
	if !o.siblings {
		p.Siblings = nil
	}
	plan := func(ts []adaptive.Target) (adaptive.Strategy, error) {
		in, n := landmarkInput(ts, reps)
		names, height, derived = n, in.ClientHeight, in.LandmarksDerived
		return landmark.NewPlanner(in, p, rand.New(rand.NewPCG(o.seed, 0x1a4d)))
	}
	sum, ord, err := discover.Ordered(ctx, mconn, pconn, cfg, geoLocator(geo.Default()), plan, each)
	sum.Masters = append(unresolved, sum.Masters...)
	ap := adaptive.Scout()
	ap.StopRTT = o.autoStop
	rep := newOrderReport("landmarks", "", ap, sum, ord)
	rep.Landmarks = names
	if names != nil {
		rep.AccessMs = &height
	}
	rep.ClientRTTs = clientRTTs(reps)
	if len(names) > 1 {
		rep.Matrix = "measured"
		if derived {
			rep.Matrix = "derived"
		}
	}
	out.ordering = &rep
	out.finish(sum)
	if out.enc == nil {
		fmt.Fprintf(out.w, "landmarks: %d (%v), their RTTs to each other %s; margin %d ms; access delay estimated %.1f ms\n", len(names), names, cmp.Or(rep.Matrix, "-"), landmarkMargin, height)
		for _, c := range rep.ClientRTTs {
			fmt.Fprintf(out.w, "  RTT to %s: %.1f ms (the least of the list's %.1f ms and %d of %d pings %v)\n", c.Landmark, c.RTTMs, c.ListMs, len(c.PingsMs), c.Sent, c.PingsMs)
		}
		rep.print(out.w)
	}
	return err
}

// clientRTTs reports the client's RTT samples to each landmark master.
func clientRTTs(reps []discover.MasterReport) []clientRTTJSON {
	var out []clientRTTJSON
	for _, r := range reps {
		if r.Landmark == "" {
			continue
		}
		c := clientRTTJSON{Landmark: r.Landmark, RTTMs: ms(r.BestRTT()), ListMs: ms(r.RTT), PingsMs: []float64{}, Sent: r.PingsSent}
		for _, p := range r.Pings {
			c.PingsMs = append(c.PingsMs, ms(p))
		}
		out = append(out, c)
	}
	return out
}
