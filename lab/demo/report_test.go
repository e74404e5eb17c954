package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"

	"github.com/scout-discovery/scout/lab/population"
)

// TestPrint_StopLines checks the line printDemo writes under the table
// for each adaptive and landmark run: its own head (clusters, or
// landmarks), where its stop rule fired or that it did not, and its share
// of conventional's time and probes.
func TestPrint_StopLines(t *testing.T) {
	paper, scout := adaptive.Paper(), adaptive.Scout()
	run := func(name string, p *adaptive.Params, stopped bool, landmarks []string) Run {
		r := Run{Name: name, Params: p, Landmarks: landmarks, Found: 5, LastPlayable: 3 * time.Second}
		r.Summary.Listed, r.Summary.Probe.Sent, r.Summary.Took = 100, 40, 9*time.Second
		r.Ordering = discover.Ordering{Stopped: stopped, StopAt: 4 * time.Second, Located: 99,
			Clusters: []adaptive.ClusterInfo{{}, {Dissolved: true}, {}},
			Probes:   []discover.Outcome{{Phase: adaptive.Calibrate}, {Phase: adaptive.Split}, {Phase: adaptive.Reordered}}}
		r.Ordering.Stop.Sent = 33
		return r
	}
	conv := run("conventional", nil, false, nil)
	conv.Summary.Probe.Sent, conv.LastPlayable = 100, 8*time.Second
	rep := Report{Servers: 100, Listed: 100, Playable: 5, StopRTT: 200 * time.Millisecond, Place: population.Places()["AU"],
		Runs: []Run{conv, run("adaptive, paper", &paper, true, nil), run("adaptive, scout", &scout, false, nil),
			run("landmarks", &scout, true, []string{"Frankfurt", "Tokyo"}), run("oracle", nil, false, nil)}}
	var b strings.Builder
	Print(&b, rep)
	out := b.String()
	const share = "\n  last playable server in 38% of conventional's time, with 40% of its probes\n"
	for _, want := range []string{
		"adaptive, paper: 99 of 100 servers geolocated, 2 clusters (by country), 2 initial probes; auto-stop at 4.00s after 33 probes (33.0% of the list)" + share,
		"adaptive, scout: 99 of 100 servers geolocated, 2 clusters (by country+as), 2 initial probes; auto-stop did not fire: it probed every server" + share,
		"landmarks: 2 landmarks [Frankfurt Tokyo], no matrix; stopped at 4.00s after 33 probes (33.0% of the list)" + share,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rep.Runs[3].Ordering.Stopped = false
	b.Reset()
	Print(&b, rep)
	if want := "landmarks: 2 landmarks [Frankfurt Tokyo], no matrix; the stop rule did not fire: it probed every server" + share; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, b.String())
	}
}

// TestPrint_MatrixAndMisses checks the landmark run's matrix text
// (measured by the masters, each pair once in the matrix's order, an
// unknown pair as "?", derived said so) and the line for each run that
// missed playable servers: those never probed (after its stop when it
// stopped) and those probed with every reply lost, from the run's counts.
func TestPrint_MatrixAndMisses(t *testing.T) {
	ms := time.Millisecond
	m := LandmarkMatrix{Landmarks: []string{"Frankfurt", "NewYork", "Tokyo"},
		RTTs: [][]time.Duration{{0, 78 * ms, 233 * ms}, {78 * ms, 0, -1}, {233 * ms, -1, 0}}}
	if got, want := matrixText(m), "matrix measured by the masters (Frankfurt-NewYork 78 ms, Frankfurt-Tokyo 233 ms, NewYork-Tokyo ?)"; got != want {
		t.Errorf("matrixText = %q, want %q", got, want)
	}
	m.Derived = true
	if got, want := matrixText(m), "matrix derived from the servers' RTTs (some pair not measured) (Frankfurt-NewYork 78 ms, Frankfurt-Tokyo 233 ms, NewYork-Tokyo ?)"; got != want {
		t.Errorf("matrixText = %q, want %q", got, want)
	}
	if got := matrixText(LandmarkMatrix{Landmarks: []string{"Tokyo"}}); got != "no matrix" {
		t.Errorf("one landmark: %q", got)
	}

	scout := adaptive.Scout()
	conv := Run{Name: "conventional", Found: 47, Unanswered: 1}
	lm := Run{Name: "landmarks", Params: &scout, Found: 45, Unprobed: 2, Unanswered: 1}
	lm.Ordering.Stopped = true
	notStopped := Run{Name: "adaptive, scout", Params: &scout, Found: 46, Unprobed: 2}
	for _, c := range []struct {
		r    Run
		want string
	}{
		{conv, "conventional missed 1 of 48 playable: 0 never probed, 1 probed with every reply lost"},
		{lm, "landmarks missed 3 of 48 playable: 2 never probed (after its stop), 1 probed with every reply lost"},
		{notStopped, "adaptive, scout missed 2 of 48 playable: 2 never probed, 0 probed with every reply lost"},
	} {
		if got := missedText(c.r, 48); got != c.want {
			t.Errorf("missedText = %q, want %q", got, c.want)
		}
	}
	rep := Report{Playable: 48, Runs: []Run{conv, lm, {Name: "oracle", Found: 48}}}
	var b strings.Builder
	Print(&b, rep)
	if out := b.String(); !strings.Contains(out, "\nconventional missed 1 of 48") || !strings.Contains(out, "\nlandmarks missed 3 of 48") || strings.Contains(out, "oracle missed") {
		t.Errorf("printDemo's misses:\n%s", out)
	}
}
