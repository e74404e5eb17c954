package main

import (
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/demo"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/population"
)

// TestPrintDemo_StopLines checks the line printDemo writes under the table
// for each adaptive and landmark run: its own head (clusters, or
// landmarks), where its stop rule fired or that it did not, and its share
// of conventional's time and probes.
func TestPrintDemo_StopLines(t *testing.T) {
	paper, scout := adaptive.Paper(), adaptive.Scout()
	run := func(name string, p *adaptive.Params, stopped bool, landmarks []string) demo.Run {
		r := demo.Run{Name: name, Params: p, Landmarks: landmarks, Found: 5, LastPlayable: 3 * time.Second}
		r.Summary.Listed, r.Summary.Probe.Sent, r.Summary.Took = 100, 40, 9*time.Second
		r.Ordering = discover.Ordering{Stopped: stopped, StopAt: 4 * time.Second, Located: 99,
			Clusters: []adaptive.ClusterInfo{{}, {Dissolved: true}, {}},
			Probes:   []discover.Outcome{{Phase: adaptive.Calibrate}, {Phase: adaptive.Split}, {Phase: adaptive.Reordered}}}
		r.Ordering.Stop.Sent = 33
		return r
	}
	conv := run("conventional", nil, false, nil)
	conv.Summary.Probe.Sent, conv.LastPlayable = 100, 8*time.Second
	rep := demo.Report{Servers: 100, Listed: 100, Playable: 5, StopRTT: 200 * time.Millisecond, Place: population.Places()["AU"],
		Runs: []demo.Run{conv, run("adaptive, paper", &paper, true, nil), run("adaptive, scout", &scout, false, nil),
			run("landmarks", &scout, true, []string{"Frankfurt", "Tokyo"}), run("oracle", nil, false, nil)}}
	var b strings.Builder
	printDemo(&b, rep)
	out := b.String()
	const share = "\n  last playable server in 38% of conventional's time, with 40% of its probes\n"
	for _, want := range []string{
		"adaptive, paper: 99 of 100 servers geolocated, 2 clusters (by country), 2 initial probes; auto-stop at 4.00s after 33 probes (33.0% of the list)" + share,
		"adaptive, scout: 99 of 100 servers geolocated, 2 clusters (by country+as), 2 initial probes; auto-stop did not fire: it probed every server" + share,
		"landmarks: 2 landmarks [Frankfurt Tokyo]; stopped at 4.00s after 33 probes (33.0% of the list)" + share,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rep.Runs[3].Ordering.Stopped = false
	b.Reset()
	printDemo(&b, rep)
	if want := "landmarks: 2 landmarks [Frankfurt Tokyo]; the stop rule did not fire: it probed every server" + share; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, b.String())
	}
}
