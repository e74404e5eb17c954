package probe

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// teachCapacity feeds p evenly spaced trains of 220-byte replies gap
// apart, idle in between, until it knows the link's capacity, and
// returns the time after them.
func teachCapacity(t *testing.T, p *Pacer, at time.Time, gap time.Duration) time.Time {
	t.Helper()
	for range paceAgree + 1 {
		for range paceTrainLen + 1 {
			at = at.Add(gap)
			p.Received(at, 220, time.Time{})
		}
		at = at.Add(10 * time.Millisecond)
	}
	if c := p.Capacity(); c < 0.95*220/gap.Seconds() || c > 1.05*220/gap.Seconds() || p.Cuts != 0 {
		t.Fatalf("capacity %.0f bytes/s after %d cuts, want %.0f and none", c, p.Cuts, 220/gap.Seconds())
	}
	return at
}

// TestPacer_BacksOffOnQueue: replies arriving back to back at a known
// capacity for longer than paceStandingPackets transmissions (a standing
// queue) end slow start with a drain at half the capacity; later
// standing queues cut the share of the capacity, at most once per hold
// time, never below paceMinUtil.
func TestPacer_BacksOffOnQueue(t *testing.T) {
	p := NewPacer(Pace{StartRate: 1000})
	p.Answered(time.Unix(0, 0), 200*time.Millisecond) // hold: 400 ms
	gap := 176 * time.Microsecond                     // 220 bytes at 10 Mbit/s
	at := teachCapacity(t, p, time.Unix(0, 0), gap)
	queue := func() { // a standing queue: a window's worth of back-to-back replies and a little
		for range paceStandingPackets + 10 {
			at = at.Add(gap)
			p.Received(at, 220, time.Time{})
		}
	}
	queue()
	capRate := p.capacityRate()
	if got := p.Rate(at); p.Cuts != 1 || got != paceDrain*capRate {
		t.Errorf("after the first queue: %d cuts, rate %.0f; want 1 and %.0f", p.Cuts, got, paceDrain*capRate)
	}
	at = at.Add(p.hold() / 2)
	queue() // still draining: no cut
	if p.Cuts != 1 {
		t.Errorf("%d cuts while draining, want 1", p.Cuts)
	}
	for range 30 {
		at = at.Add(p.hold())
		queue()
	}
	if got := p.Rate(at); p.Cuts < 10 || got != paceMinUtil*capRate {
		t.Errorf("after 30 queues a hold apart: %d cuts, rate %.0f; want the floor %.0f", p.Cuts, got, paceMinUtil*capRate)
	}
}

// TestPacer_BusyRunsAreNoStandingQueue: a random stream of replies at
// 85% of a known 10 Mbit/s link (Poisson arrivals, each crossing the
// link in 176 µs) for 5 s forms runs back to back of many replies, up to
// tens of milliseconds, and the link idles between them: no standing
// queue, no cut, and after the trains the rate stays at the utilisation.
// A run of 2 ms (11 replies) counted as queueing before: this stream
// makes one every few hundred replies, and the rate was cut every hold
// time, to the floor.
func TestPacer_BusyRunsAreNoStandingQueue(t *testing.T) {
	p := NewPacer(Pace{StartRate: 1000})
	gap := 176 * time.Microsecond
	at := teachCapacity(t, p, time.Unix(0, 0), gap)
	rng := rand.New(rand.NewPCG(5, 5))
	free, longest, run := at, time.Duration(0), time.Duration(0)
	end := at.Add(5 * time.Second)
	arrive := at
	for arrive.Before(end) {
		arrive = arrive.Add(time.Duration(rng.ExpFloat64() * float64(gap) / 0.85))
		start := arrive
		if free.After(start) {
			start = free
			run += gap
		} else {
			run = 0
		}
		longest = max(longest, run)
		free = start.Add(gap)
		p.Received(free, 220, time.Time{})
		p.Rate(free)
	}
	if p.Cuts != 0 {
		t.Errorf("%d cuts from a random stream at 85%% of the link (longest run %v)", p.Cuts, longest)
	}
	t.Logf("longest run back to back %v, rate %.0f/s, utilisation %.3f", longest, p.Rate(end), p.target())
}

// TestPacer_Utilisation: the share of the link the rate fills is the
// M/D/1 utilisation whose 99th-percentile wait is the queue target: at
// 10 Mbit/s (a 220-byte reply crosses in 176 µs: 2 ms are 11.4 of them)
// 81.5%; at 1 Mbit/s the budget is paceBudgetPackets transmissions (6:
// 68%); above about 20 transmissions, Utilization. The model itself
// against the textbook's figures (M/D/1 99th percentile wait: 10.4
// service times at 80%, 21.9 at 90%).
func TestPacer_Utilisation(t *testing.T) {
	for _, c := range []struct{ b, util float64 }{{10.4, 0.80}, {21.9, 0.90}, {6, 0.68}, {3.35, 0.50}} {
		if got := md1Util(c.b); math.Abs(got-c.util) > 0.003 {
			t.Errorf("md1Util(%v) = %.3f, want %.2f", c.b, got, c.util)
		}
	}
	for _, c := range []struct {
		name string
		gap  time.Duration
		want float64
	}{{"10 Mbit/s", 176 * time.Microsecond, 0.815}, {"1 Mbit/s", 1760 * time.Microsecond, 0.68}, {"100 Mbit/s", 18 * time.Microsecond, DefaultUtilization}} {
		p := NewPacer(Pace{})
		teachCapacity(t, p, time.Unix(0, 0), c.gap)
		if got := p.target(); math.Abs(got-c.want) > 0.005 {
			t.Errorf("%s: utilisation %.3f, want %.3f", c.name, got, c.want)
		}
	}
}

// TestPacer_Trains: no train while fewer than paceTrainQueue requests
// wait; the first paceTrains requests are trains of paceTrainProbes, then
// single sends; replies of a train 176 µs apart
// (220 bytes at 10 Mbit/s) make the rate jump past slow start to
// paceJump times 5,680 a second; a train with fewer than paceTrainMin
// replies counts for nothing.
func TestPacer_Trains(t *testing.T) {
	p := NewPacer(Pace{})
	at := time.Unix(0, 0)
	if id, n := p.Train(at, paceTrainQueue-1); id != 0 || n != 1 {
		t.Fatalf("a short queue: train %d of %d", id, n)
	}
	for i := range paceTrains + 2 {
		id, n := p.Train(at, 1000)
		if i < paceTrains && (id != i+1 || n != paceTrainProbes) || i >= paceTrains && (id != 0 || n != 1) {
			t.Fatalf("request %d: train %d of %d", i, id, n)
		}
	}
	if r := p.Rate(at); r != DefaultStartRate {
		t.Fatalf("before any reply: rate %.0f", r)
	}
	at = at.Add(50 * time.Millisecond)
	for k := range paceTrainMin - 1 { // train 1: too few, then silence
		p.TrainReply(1, at.Add(time.Duration(k)*176*time.Microsecond))
	}
	at = at.Add(paceTrainSettle + time.Millisecond)
	if r := p.Rate(at); !p.slowStart || p.trainRate != 0 || r > 2*DefaultStartRate {
		t.Fatalf("after a short train: rate %.0f, train rate %.0f; want slow start's", r, p.trainRate)
	}
	for k := range paceTrainProbes { // train 2: all in
		p.TrainReply(2, at.Add(time.Duration(k)*176*time.Microsecond))
	}
	at = at.Add(2 * time.Millisecond)
	want := 1 / 176e-6
	if r := p.Rate(at); math.Abs(p.trainRate-want) > 1 || math.Abs(r-paceJump*want) > 0.01*want || p.slowStart {
		t.Errorf("after a full train: rate %.0f, train rate %.0f, slow start %v; want %.0f, %.0f, over", r, p.trainRate, p.slowStart, paceJump*want, want)
	}
}

// TestPacer_RandomArrivalsTeachNoCapacity: replies at random gaps (an
// idle link) never look like a busy link.
func TestPacer_RandomArrivalsTeachNoCapacity(t *testing.T) {
	p := NewPacer(Pace{})
	rng := rand.New(rand.NewPCG(3, 3))
	at := time.Unix(0, 0)
	for range 20000 {
		at = at.Add(time.Duration(rng.ExpFloat64() * float64(time.Millisecond)))
		p.Received(at, 150+rng.IntN(200), time.Time{})
	}
	if c := p.Capacity(); c != 0 || p.Cuts != 0 {
		t.Errorf("capacity %.0f, %d cuts from random arrivals", c, p.Cuts)
	}
}

// TestPacer_RetryTimeout: the full timeout until enough RTTs are in, then
// their 99th percentile plus 20 ms, within 250 ms and the full timeout;
// and early in a run, while only the near servers have answered, not the
// percentile of those alone.
func TestPacer_RetryTimeout(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := NewPacer(Pace{})
	if got := p.RetryTimeout(t0, time.Second); got != time.Second {
		t.Errorf("before any RTT: %v", got)
	}
	// 1,000 sends over the first second, RTTs 10-400 ms, all answered.
	for i := range 1000 {
		sent := t0.Add(time.Duration(i) * time.Millisecond)
		p.Answered(sent, time.Duration(10+i*7%391)*time.Millisecond)
	}
	now := t0.Add(2 * time.Second)
	if got := p.RetryTimeout(now, time.Second); got < 410*time.Millisecond || got > 420*time.Millisecond {
		t.Errorf("RTTs of 10-400 ms: retry after %v, want about 396 + 20 = 416ms", got)
	}
	if got := p.RetryTimeout(now, 300*time.Millisecond); got != 300*time.Millisecond {
		t.Errorf("capped by the timeout: %v", got)
	}
	q := NewPacer(Pace{})
	for i := range 200 {
		q.Answered(t0.Add(time.Duration(i)*time.Millisecond), 5*time.Millisecond)
	}
	if got := q.RetryTimeout(t0.Add(time.Second), time.Second); got != paceRetryMin {
		t.Errorf("RTTs of 5 ms: retry after %v, want the floor %v", got, paceRetryMin)
	}

	// Censored: sends at 5,000/s from t0, servers 10-400 ms away; at
	// t0+150ms only RTTs under 150 ms are in. The percentile of those
	// would retry every far server; the answer is the full timeout until
	// the sends old enough to show RTTs up to 1.5 times the percentile
	// are 100, then about 495 ms.
	c := NewPacer(Pace{})
	type pending struct {
		sent time.Time
		rtt  time.Duration
	}
	var flight []pending
	for i := range 5000 {
		sent := t0.Add(time.Duration(i) * 200 * time.Microsecond)
		flight = append(flight, pending{sent, time.Duration(10+i*7%391) * time.Millisecond})
	}
	answerBy := func(now time.Time) {
		kept := flight[:0]
		for _, f := range flight {
			if !f.sent.Add(f.rtt).After(now) {
				c.Answered(f.sent, f.rtt)
			} else {
				kept = append(kept, f)
			}
		}
		flight = kept
	}
	for _, at := range []time.Duration{150 * time.Millisecond, 400 * time.Millisecond, 600 * time.Millisecond} {
		answerBy(t0.Add(at))
		if got := c.RetryTimeout(t0.Add(at), time.Second); got != time.Second {
			t.Errorf("at %v, only the RTTs under %v in: retry after %v, want the full 1s", at, at, got)
		}
	}
	answerBy(t0.Add(time.Second))
	if got := c.RetryTimeout(t0.Add(time.Second), time.Second); got < 410*time.Millisecond || got > 420*time.Millisecond {
		t.Errorf("at 1s: retry after %v, want about 416ms", got)
	}
}

// TestPacer_TrainsCleanMedian: the trains' estimate is the median of the
// clean trains (no other datagram between their replies) once three are
// in: three trains 176 µs a reply and three with another reply crossing
// between theirs (200 µs a reply) give 5,682 a second (the median of all
// six, as before, 5,000); two clean ones among four interleaved fall back
// to the median of all (5,000); a clean train stamped too close (1 µs a
// reply, a batch released at once) does not count alone (the median of
// all: 5,000), nor do three when the clean median is more than 1.3 times
// all the trains' (5,000 then).
func TestPacer_TrainsCleanMedian(t *testing.T) {
	// train sends n trains, each of 8 replies gap apart, with one other
	// datagram between its second and third reply when interleaved.
	train := func(p *Pacer, at time.Time, gaps []time.Duration, interleaved []bool) time.Time {
		for i, gap := range gaps {
			id, n := p.Train(at, 1000)
			if n != paceTrainProbes {
				t.Fatalf("train %d: %d probes", i, n)
			}
			for k := range paceTrainProbes {
				if k == 2 && interleaved[i] {
					p.Received(at.Add(gap/2), 220, time.Time{})
				}
				p.TrainReply(id, at)
				p.Received(at, 220, time.Time{})
				at = at.Add(gap)
			}
			at = at.Add(30 * time.Millisecond)
			p.Rate(at)
		}
		return at
	}
	us := time.Microsecond
	for _, c := range []struct {
		name        string
		gaps        []time.Duration
		interleaved []bool
		want        float64
	}{
		{"three clean", []time.Duration{176 * us, 200 * us, 200 * us, 176 * us, 200 * us, 176 * us}, []bool{false, true, true, false, true, false}, 1 / 176e-6},
		{"two clean", []time.Duration{200 * us, 176 * us, 200 * us, 200 * us, 176 * us, 200 * us}, []bool{true, false, true, true, false, true}, 1 / 200e-6},
		{"one compressed", []time.Duration{176 * us, 1 * us, 176 * us, 200 * us, 200 * us, 200 * us}, []bool{false, false, false, true, true, true}, 1 / 176e-6},
		{"three compressed", []time.Duration{1 * us, 200 * us, 1 * us, 200 * us, 1 * us, 200 * us}, []bool{false, true, false, true, false, true}, 1 / 200e-6},
	} {
		p := NewPacer(Pace{})
		train(p, time.Unix(0, 0), c.gaps, c.interleaved)
		if math.Abs(p.trainRate-c.want) > 0.01*c.want {
			t.Errorf("%s: trains measured %.0f a second, want %.0f", c.name, p.trainRate, c.want)
		}
	}
}

// TestPacer_UpstreamUtilisation: trains whose replies come 408 µs apart
// (51-byte requests over a 1 Mbit/s upstream: 2,451 a second) and, the
// downstream being fast, replies of different servers that never queue
// on it. The trains teach no downstream capacity; until 1,000 replies
// have come the utilisation is the M/D/1 one for the trains' spacing (6
// transmissions of budget: 68%), in case they measured the downstream;
// then, no downstream queue having shown, Utilization (90%): the
// requests leave paced and queue on the upstream only above its rate.
func TestPacer_UpstreamUtilisation(t *testing.T) {
	p := NewPacer(Pace{})
	at := time.Unix(0, 0)
	for range paceTrains {
		id, _ := p.Train(at, 1000)
		for range paceTrainProbes {
			p.TrainReply(id, at)
			p.Received(at, 220, time.Time{})
			at = at.Add(408 * time.Microsecond)
		}
		at = at.Add(20 * time.Millisecond)
		p.Rate(at)
	}
	if p.Capacity() != 0 || math.Abs(p.trainRate-2451) > 5 || math.Abs(p.target()-0.68) > 0.005 {
		t.Fatalf("after the trains: capacity %.0f, trains %.0f a second, utilisation %.3f; want none, 2451, 0.68", p.Capacity(), p.trainRate, p.target())
	}
	rng := rand.New(rand.NewPCG(6, 6))
	for p.received < paceUpstreamReplies {
		at = at.Add(time.Duration(rng.ExpFloat64() * float64(time.Millisecond))) // a random stream
		p.Received(at, 220, time.Time{})
	}
	if got := p.target(); p.Capacity() != 0 || got != DefaultUtilization {
		t.Errorf("after %d replies: capacity %.0f, utilisation %.3f; want none and %v", p.received, p.Capacity(), got, DefaultUtilization)
	}
}
