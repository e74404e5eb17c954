package probe

import (
	"slices"
	"time"
)

// Constants of the packet trains (see Pacer, "Trains").
const (
	// Packet trains (see Pacer, "Trains"): the first paceTrains requests
	// of a run are sent paceTrainProbes times back to back, under the
	// per-source burst of 10 that ioquake3 (SVC_RateLimitAddress) and the
	// emulated world allow; a train counts once it has paceTrainMin
	// replies and all are in or none came for paceTrainSettle. The rate
	// then starts at paceJump times what the trains measured.
	paceTrains      = 6
	paceTrainProbes = 8
	// paceTrainQueue: trains are sent only while at least this many
	// requests wait to be sent; a shorter list ends at any rate in
	// about its servers' largest RTT, and the trains would be a large
	// share of its probes.
	paceTrainQueue = 256
	paceTrainMin   = 5
	// paceTrainClean: the trains' estimate is the clean trains' once
	// this many are in, unless it is more than paceTrainCleanMax times
	// all the trains' (see trainDone).
	paceTrainClean    = 3
	paceTrainCleanMax = 1.3
	paceTrainSettle   = 20 * time.Millisecond
	paceJump          = 0.8
	paceTrainMaxWait  = time.Second
)

// paceTrain is one train's replies so far.
type paceTrain struct {
	sent        time.Time
	first, last time.Time
	n           int
	final       bool
	rate        float64 // replies per second over the train's dispersion
	// seen counts the datagrams received since the train's first reply,
	// its own included; atLast is seen at its latest reply (see clean).
	seen, atLast int
}

// clean reports whether no other datagram came between t's replies.
func (t *paceTrain) clean() bool { return t.atLast == t.n }

// Train returns how many probes the first send of a new request should be
// sent as, back to back, and the train's id for TrainReply: a train of
// paceTrainProbes for each of the first paceTrains requests of a run
// sent while queued (the requests waiting to be sent) is at least
// paceTrainQueue, otherwise n = 1 (id 0). now is the time of the sends.
func (p *Pacer) Train(now time.Time, queued int) (id, n int) {
	if len(p.trains) >= paceTrains || queued < paceTrainQueue {
		return 0, 1
	}
	p.trains = append(p.trains, paceTrain{sent: now})
	return len(p.trains), paceTrainProbes
}

// TrainReply records a reply, arrived at at, to one probe of train id
// (from Train), its token matched: the first reply of the request and
// the others alike.
func (p *Pacer) TrainReply(id int, at time.Time) {
	if id < 1 || id > len(p.trains) {
		return
	}
	t := &p.trains[id-1]
	p.trainAt = at // Received leaves it out of the capacity's samples
	if t.final {
		return
	}
	if t.n == 0 {
		t.first, t.seen = at, 0
	}
	t.n++
	if at.After(t.last) {
		t.last = at
		t.atLast = t.seen + 1 // Received counts this datagram next
	}
	if t.n == paceTrainProbes {
		p.trainDone(t)
	}
}

// trainDone ends a train: with paceTrainMin replies or more, its rate is
// its replies after the first over their dispersion, and the trains'
// estimate is the median (the lower of two) of the clean trains
// measured, those with no other datagram received between their first
// and last reply, once paceTrainClean are and their median is at most
// paceTrainCleanMax times all the trains', or else of all. Other
// datagrams crossing the narrow link between a train's replies (the
// replies of the run's other probes, once the rate has jumped) spread
// them: on the emulated 10 Mbit/s link the median of all trains was
// 4,870-5,570 replies a second against the link's 5,680, where 4 or 5 of
// the 6 trains are clean (scout-lab discobench --link 10mbit; BENCHMARKS.md,
// "Discovery"). A clean train is exact, upstream or down, but a batch of
// datagrams released or stamped at once (as the emulator does when the
// machine stalls it) is clean too, and stamped too close: the median of
// three or more keeps one from counting alone, and a clean median far
// above all the trains' (interleaving spreads a train by a reply or two,
// a tenth or so) is such batches. On a slow upstream the replies of
// other servers cross the fast downstream between a train's replies
// without spreading them, so trains are seldom clean there, and all of
// them are right.
func (p *Pacer) trainDone(t *paceTrain) {
	t.final = true
	if t.n < paceTrainMin {
		return
	}
	d := t.last.Sub(t.first)
	t.rate = float64(t.n-1) / max(d.Seconds(), 1e-6)
	var all, clean []float64
	for _, o := range p.trains {
		if o.rate > 0 {
			all = append(all, o.rate)
			if o.clean() {
				clean = append(clean, o.rate)
			}
		}
	}
	slices.Sort(all)
	p.trainRate = all[(len(all)-1)/2]
	if len(clean) >= paceTrainClean {
		slices.Sort(clean)
		if m := clean[(len(clean)-1)/2]; m <= paceTrainCleanMax*p.trainRate {
			p.trainRate = m
		}
	}
}

// settleTrains ends the trains whose replies have stopped coming by now.
func (p *Pacer) settleTrains(now time.Time) {
	for i := range p.trains {
		t := &p.trains[i]
		switch {
		case t.final:
		case t.n > 0 && now.Sub(t.last) >= paceTrainSettle:
			p.trainDone(t)
		case t.n == 0 && now.Sub(t.sent) >= paceTrainMaxWait:
			t.final = true
		}
	}
}
