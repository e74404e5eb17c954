package sim

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/lab/population"
)

func TestQueue_TimeThenScheduleOrder(t *testing.T) {
	var q Queue
	q.Push(Event{At: 30, Probe: 1})
	q.Push(Event{At: 10, Probe: 2})
	q.Push(Event{At: 30, Probe: 3})
	q.Push(Event{At: 10, Probe: 4})
	q.Push(Event{At: 20, Probe: 5})
	var got []int
	for {
		e, ok := q.Pop()
		if !ok {
			break
		}
		got = append(got, e.Probe)
	}
	if want := []int{2, 4, 5, 1, 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("pop order %v, want %v", got, want)
	}
}

// targets makes n servers in distinct /16s with the given RTTs.
func targets(rtts []time.Duration) []adaptive.Target {
	ts := make([]adaptive.Target, len(rtts))
	for i := range ts {
		ts[i] = adaptive.Target{
			Addr:    netip.AddrPortFrom(netip.AddrFrom4([4]byte{byte(20 + i%100), byte(i / 100), 0, 1}), 27960),
			Country: []string{"DE", "US", "AU"}[i%3], Index: i,
		}
	}
	return ts
}

func flat(n int, d time.Duration) []time.Duration {
	r := make([]time.Duration, n)
	for i := range r {
		r[i] = d
	}
	return r
}

func conventional(t *testing.T, ts []adaptive.Target) adaptive.Strategy {
	t.Helper()
	c, err := adaptive.NewConventional(ts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRun_PacedAtTheInterval(t *testing.T) {
	const n = 50
	rtts := flat(n, 50*time.Millisecond)
	ts := targets(rtts)
	r, err := Run(conventional(t, ts), Input{Targets: ts, RTTs: rtts, Pacing: Pacing{Interval: 10 * time.Millisecond, Timeout: time.Second}, Playable: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Trace {
		if want := time.Duration(p.Index) * 10 * time.Millisecond; p.Sent != want {
			t.Fatalf("probe %d sent at %v, want %v", p.Index, p.Sent, want)
		}
		if p.Done-p.Sent < 50*time.Millisecond || p.Done-p.Sent > 100*time.Millisecond {
			t.Fatalf("probe %d took %v, want the 50 ms RTT plus jitter", p.Index, p.Done-p.Sent)
		}
	}
	if r.Sent != n || r.Answered != n || r.Found != n || r.Playable != n {
		t.Fatalf("sent %d answered %d found %d playable %d, want %d each", r.Sent, r.Answered, r.Found, r.Playable, n)
	}
}

func TestRun_WindowHoldsSends(t *testing.T) {
	rtts := flat(20, 100*time.Millisecond)
	ts := targets(rtts)
	r, err := Run(conventional(t, ts), Input{Targets: ts, RTTs: rtts, Pacing: Pacing{Interval: time.Millisecond, Window: 4, Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	sent := make([]time.Duration, len(ts))
	for _, p := range r.Trace {
		sent[p.Index] = p.Sent
	}
	for i := 4; i < len(sent); i++ {
		if sent[i]-sent[i-4] < 100*time.Millisecond {
			t.Fatalf("probe %d sent %v after probe %d: a window of 4 needs a reply (100 ms) in between", i, sent[i]-sent[i-4], i-4)
		}
	}
	if r.End < 500*time.Millisecond {
		t.Fatalf("20 probes of 100 ms through a window of 4 ended at %v, want at least 500 ms", r.End)
	}
}

func TestRun_ConventionalProbesEveryoneInMasterOrder(t *testing.T) {
	w, err := population.Build(population.Fitted(population.ET, 500, 2))
	if err != nil {
		t.Fatal(err)
	}
	row, err := Simulate(Spec{Place: "AU", World: w, Seed: 2, Trace: true, Variants: []Variant{}})
	if err != nil {
		t.Fatal(err)
	}
	tr := row.ConventionalTrace
	if len(tr) != len(w.Servers) {
		t.Fatalf("%d probes for %d servers", len(tr), len(w.Servers))
	}
	var last time.Duration = -1
	seen := map[int]bool{}
	for _, p := range tr {
		if seen[p.Index] {
			t.Fatalf("server %d probed twice", p.Index)
		}
		seen[p.Index] = true
		if p.Phase != adaptive.Master {
			t.Fatalf("phase %v", p.Phase)
		}
		if p.Done < last {
			t.Fatal("trace not in the order outcomes arrived")
		}
		last = p.Done
	}
	prevSent := time.Duration(-1)
	byIndex := make([]Probe, len(tr))
	for _, q := range tr {
		byIndex[q.Index] = q
	}
	for i, p := range byIndex {
		if p.Sent <= prevSent {
			t.Fatalf("server %d sent at %v, not after server %d (%v): not master order", i, p.Sent, i-1, prevSent)
		}
		prevSent = p.Sent
	}
}

func TestRun_OracleProbesExactlyThePlayable(t *testing.T) {
	w, err := population.Build(population.Fitted(population.ET, 800, 4))
	if err != nil {
		t.Fatal(err)
	}
	row, err := Simulate(Spec{Place: "JP", World: w, Seed: 4, Variants: []Variant{}})
	if err != nil {
		t.Fatal(err)
	}
	o := row.Oracle
	if row.Playable == 0 || o.Found != row.Playable || o.FoundPct != 100 {
		t.Fatalf("oracle found %d of %d playable", o.Found, row.Playable)
	}
	silentPlayable := o.Probes - row.Playable // probed but silent (Loss)
	if silentPlayable < 0 || silentPlayable > row.Playable/20+3 {
		t.Fatalf("oracle sent %d probes for %d playable servers", o.Probes, row.Playable)
	}
	if o.LastPlayable > row.Conventional.LastPlayable {
		t.Fatalf("oracle's last playable at %vs, after conventional's %vs", o.LastPlayable, row.Conventional.LastPlayable)
	}
}

func TestRun_SilentServersTimeOutAndAreNotPlayable(t *testing.T) {
	rtts := flat(400, 30*time.Millisecond)
	ts := targets(rtts)
	in := Input{Targets: ts, RTTs: rtts, Pacing: Pacing{Interval: time.Millisecond, Timeout: 700 * time.Millisecond, Loss: 0.25}, Seed: 9, Playable: 200 * time.Millisecond}
	r, err := Run(conventional(t, ts), in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lost < 60 || r.Lost > 140 {
		t.Fatalf("%d of 400 lost at 25%%", r.Lost)
	}
	for _, p := range r.Trace {
		if !p.Answered && p.Done-p.Sent != 700*time.Millisecond {
			t.Fatalf("lost probe done after %v, want the 700 ms timeout", p.Done-p.Sent)
		}
	}
	if r.Playable != 400-r.Lost || r.Found != r.Playable {
		t.Fatalf("playable %d found %d lost %d", r.Playable, r.Found, r.Lost)
	}
	r2, _ := Run(conventional(t, ts), in)
	for i := range r.Trace {
		if r.Trace[i].Answered != r2.Trace[i].Answered {
			t.Fatal("silent servers differ between runs of one seed")
		}
	}
}

// A 2,000-server world: every strategy runs, the paper's adaptive search
// stops early for a far client, and the whole row is the same for a seed.
func TestSimulate_2000ServersDeterministic(t *testing.T) {
	w, err := population.Build(population.Fitted(population.ET, 2000, 5))
	if err != nil {
		t.Fatal(err)
	}
	sp := Spec{Place: "AU", World: w, Seed: 5, Trace: true}
	a, err := Simulate(sp)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Simulate(sp)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs of one spec differ")
	}
	if len(a.Variants) != len(Variants()) || a.InitialProbes == 0 || a.Slash8 == 0 || a.Countries == 0 {
		t.Fatalf("row %+v", a)
	}
	if !a.Adaptive.Stopped || a.AutoStopPct >= 100 {
		t.Fatalf("AU client: adaptive did not stop early (%.0f%%)", a.AutoStopPct)
	}
	if a.Adaptive.LastPlayable > a.Conventional.LastPlayable {
		t.Fatalf("adaptive's last playable at %vs after conventional's %vs", a.Adaptive.LastPlayable, a.Conventional.LastPlayable)
	}
	if a.FullProbe < 65 || a.FullProbe > 75 {
		t.Fatalf("ET full probe %.1fs, want about 70 s", a.FullProbe)
	}
	// The running 2nd percentile is in the trace once 100 step-6 outcomes
	// are in.
	n := 0
	for _, p := range a.AdaptiveTrace {
		if p.Phase == adaptive.Reordered {
			n++
			if (n >= 100) != (p.Bottom != 0) {
				t.Fatalf("step-6 outcome %d: Bottom %v", n, p.Bottom)
			}
		}
	}
}

func TestRun_RefusesMismatchedInput(t *testing.T) {
	ts := targets(flat(3, time.Millisecond))
	if _, err := Run(conventional(t, ts), Input{Targets: ts, RTTs: flat(2, 0), Pacing: Pacing{Timeout: time.Second}}); err == nil {
		t.Fatal("3 targets, 2 RTTs: no error")
	}
	if _, err := Run(conventional(t, ts), Input{Targets: ts, RTTs: flat(3, 0), Pacing: Pacing{Timeout: time.Second, Loss: 2}}); err == nil {
		t.Fatal("loss 2: no error")
	}
}
