package master

import (
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

// The registry measures its round trip to a server from each verified
// check: from the try's hand-out to the reply, time passed in. Server.RTT
// is the median of the last RTTSamples samples, with the last one's time.
func TestRegistry_RTTMedianOfLastSamples(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	p, why := r.Heartbeat(t0, a, q3hb)
	if why != OK {
		t.Fatal(why)
	}
	if s, _ := r.Lookup(a); s.RTT != 0 || !s.RTTMeasured.IsZero() {
		t.Fatalf("pending server has an RTT: %v at %v", s.RTT, s.RTTMeasured)
	}
	s, _, why := r.Verify(t0.Add(40*time.Millisecond), a, infoReply(p.Challenge.Text))
	if why != OK {
		t.Fatal(why)
	}
	if s.RTT != 40*time.Millisecond || !s.RTTMeasured.Equal(t0.Add(40*time.Millisecond)) {
		t.Fatalf("after one sample: RTT %v at %v", s.RTT, s.RTTMeasured)
	}
	// Re-probes answered in 30, 200 and 50 ms: medians of (40, 30),
	// (40, 30, 200), then (30, 200, 50): the first sample has left.
	at := t0.Add(40 * time.Millisecond)
	want := []time.Duration{35 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond}
	for i, d := range []time.Duration{30 * time.Millisecond, 200 * time.Millisecond, 50 * time.Millisecond} {
		at = at.Add(game.Q3AReprobeInterval)
		ps := r.DueProbes(at, nil, 0)
		if len(ps) != 1 || ps[0].Cause != CauseReprobe {
			t.Fatalf("re-probe %d: %+v", i, ps)
		}
		rep := infoReply(ps[0].Challenge.Text)
		rep.Kind, rep.Players = ReplyStatus, 3
		if s, _, why = r.Verify(at.Add(d), a, rep); why != OK {
			t.Fatal(why)
		}
		at = at.Add(d)
		if s.RTT != want[i] || !s.RTTMeasured.Equal(at) {
			t.Errorf("after sample %v: RTT %v at %v, want %v at %v", d, s.RTT, s.RTTMeasured, want[i], at)
		}
	}
}

// A reply to a check whose retry carried the same challenge (same epoch)
// could answer either try: it verifies but gives no RTT sample. A retry
// in a new epoch has its own challenge, so its reply is timed from it.
func TestRegistry_RTTAmbiguousRetryNotSampled(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.8:27960")
	p, _ := r.Heartbeat(t0, a, q3hb)
	ps := r.DueProbes(t0.Add(DefaultVerifyRetryDelay), nil, 0)
	if len(ps) != 1 || ps[0].Try != 1 || ps[0].Challenge != p.Challenge {
		t.Fatalf("retry %+v (first challenge %q)", ps, p.Challenge.Text)
	}
	s, _, why := r.Verify(t0.Add(1100*time.Millisecond), a, infoReply(p.Challenge.Text))
	if why != OK {
		t.Fatal(why)
	}
	if s.RTT != 0 || !s.RTTMeasured.IsZero() {
		t.Errorf("ambiguous reply sampled: %v", s.RTT)
	}

	// The first try just before an epoch ends, the retry in the next.
	b := ap("198.51.100.9:27960")
	start := t0.Add(DefaultRotationPeriod - 500*time.Millisecond)
	p, _ = r.Heartbeat(start, b, q3hb)
	ps = r.DueProbes(start.Add(DefaultVerifyRetryDelay), nil, 0)
	if len(ps) != 1 || ps[0].Challenge == p.Challenge {
		t.Fatalf("retry in a new epoch %+v", ps)
	}
	retry := start.Add(DefaultVerifyRetryDelay)
	s, _, why = r.Verify(retry.Add(25*time.Millisecond), b, infoReply(ps[0].Challenge.Text))
	if why != OK {
		t.Fatal(why)
	}
	if s.RTT != 25*time.Millisecond {
		t.Errorf("reply to the retry: RTT %v, want 25ms", s.RTT)
	}
}

func TestRTTRing_Bounds(t *testing.T) {
	var r rttRing
	r.add(t0, 0)
	r.add(t0, -time.Second)
	r.add(t0, MaxRTT+time.Nanosecond)
	if r.n != 0 || r.median() != 0 {
		t.Fatalf("out-of-range samples kept: %+v", r)
	}
	r.add(t0, time.Nanosecond) // rounds up to one unit
	r.add(t0, MaxRTT)
	if r.median() != (RTTUnit+MaxRTT)/2 {
		t.Errorf("median of 1 unit and MaxRTT = %v", r.median())
	}
}
