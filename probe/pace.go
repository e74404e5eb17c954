package probe

import (
	"math"
	"time"
)

// Defaults of a [Pace] whose fields are zero.
const (
	// DefaultStartRate is the rate a paced run starts at, in probes per
	// second: about twice what Enemy Territory's window of 16 gives
	// against servers 150-200 ms away, and 0.35 Mbit/s of Quake III
	// getinfo replies (220 bytes on the wire).
	DefaultStartRate = 200
	// DefaultMaxRate caps a paced run without a --bandwidth: 5,000 probes
	// a second are 2 Mbit/s of Quake III getinfo upstream (51 bytes on
	// the wire each), which the controller does not see (see Pacer).
	DefaultMaxRate = 5000
	// DefaultMinRate is the floor the controller never goes below.
	DefaultMinRate = 10
	// DefaultQueueTarget is the queueing delay on the access link that
	// 99% of the replies stay within: the rate fills the link to the
	// utilisation at which they do (see Pacer, "Utilisation").
	DefaultQueueTarget = 2 * time.Millisecond
	// DefaultUtilization is the largest share of the estimated capacity
	// of the link the rate may fill.
	DefaultUtilization = 0.9
)

// Constants of the controller (see Pacer).
const (
	// paceTrainLen is the number of evenly spaced inter-arrival gaps that
	// make one capacity sample.
	paceTrainLen = 6
	// paceTrainTol is how far (relative) the spacing per byte of one gap
	// may be from the train's mean and still belong to the train.
	paceTrainTol = 0.25
	// paceSamples is how many capacity samples the estimate is the median
	// of; paceAgree of them must lie within paceAgreeTol of the median
	// for it to count. A busy link spaces its datagrams exactly, so its
	// trains agree to the timestamps' noise; trains that random arrivals
	// form by chance do not.
	paceSamples  = 15
	paceAgree    = 8
	paceAgreeTol = 0.05
	// paceAgreeFirst: while fewer samples are in, a majority of them, and
	// at least this many, is enough (the first estimate ends slow start).
	paceAgreeFirst = 4
	// paceBusyTol and paceBusySlack decide that a gap is back to back at
	// the estimated capacity: at most (1+tol) times the reply's
	// transmission time, plus slack for timestamp noise.
	paceBusyTol   = 0.3
	paceBusySlack = 20 * time.Microsecond
	// paceStandingPackets: a run of replies back to back longer than this
	// many replies' transmission is a standing queue (see Pacer).
	paceStandingPackets = 400
	// paceEchoSlack and paceEchoShare: two replies whose gap is within
	// max(slack, gap/share) of their probes' gap are an echo of the
	// pacing (see Received).
	paceEchoSlack = 20 * time.Microsecond
	paceEchoShare = 20
	// paceDeliveryWindow is the window over which the delivery rate is
	// counted; paceGain bounds the rate to that many times it, so that
	// the rate can only grow as fast as replies show it is carried.
	paceDeliveryWindow = 100 * time.Millisecond
	paceGain           = 2
	// paceMaxWindowed bounds the send and reply times kept for the
	// delivery window (memory); sends past it count as settled at once.
	paceMaxWindowed = 1 << 16
	// paceStartGrowth doubles the rate every 100 ms (slow start, until
	// the first sign of queueing or the capacity ceiling);
	// paceProbeGrowth then probes upward by 10% every 100 ms, about one
	// feedback delay (a reply's RTT) per cut recovered.
	paceStartGrowth = math.Ln2 / 0.1
	paceProbeGrowth = 0.9531 // ln(1.1) / 0.1
	// paceBackoff multiplies the rate at each sign of queueing; the
	// first sign (the end of slow start) also brings the rate down to
	// paceDrain times the capacity, in probes, so that what slow start
	// queued drains; cuts never take the share below paceMinUtil of the
	// capacity. After a cut, signs are ignored for paceHoldRTTs
	// times the mean RTT (within paceHoldMin..paceHoldMax): the replies
	// of probes sent before the cut keep coming for about an RTT.
	paceBackoff  = 0.85
	paceDrain    = 0.5
	paceMinUtil  = 0.3
	paceHoldRTTs = 2
	paceHoldMin  = 50 * time.Millisecond
	paceHoldMax  = 500 * time.Millisecond
	// paceRTTWeight is the weight of one RTT in the mean RTT.
	paceRTTWeight = 1.0 / 32
	// paceSizeWeight is the weight of one reply in the mean reply size.
	paceSizeWeight = 1.0 / 64
	// paceMinSettled is how many settled sends the replies per probe are
	// measured over before they count.
	paceMinSettled = 100
)

// Pace configures delay-based pacing ([Pacer]); a zero field takes its
// default above. Rates are probes per second, retries included.
type Pace struct {
	StartRate   float64
	MaxRate     float64
	MinRate     float64
	QueueTarget time.Duration
	Utilization float64
}

func (c Pace) withDefaults() Pace {
	if !(c.StartRate > 0) {
		c.StartRate = DefaultStartRate
	}
	if !(c.MaxRate > 0) {
		c.MaxRate = DefaultMaxRate
	}
	if !(c.MinRate > 0) {
		c.MinRate = DefaultMinRate
	}
	c.MinRate = min(c.MinRate, c.MaxRate)
	c.StartRate = min(max(c.StartRate, c.MinRate), c.MaxRate)
	if c.QueueTarget <= 0 {
		c.QueueTarget = DefaultQueueTarget
	}
	if !(c.Utilization > 0 && c.Utilization <= 1) {
		c.Utilization = DefaultUtilization
	}
	return c
}

// Pacer is the controller behind [Prober.Pace]: it sets the rate of
// probes from what the replies show of the player's access link. It is a
// pure state machine: every call takes the time, nothing reads a clock,
// and a run's session drives it (Sent at each send, Received at each
// datagram with its kernel receive time, Rate before each send).
//
// # Why this signal
//
// Probing too fast fills the player's own downstream link: replies queue
// there and every RTT measured grows by the queueing delay. LEDBAT and
// BBR see that delay as a flow's RTT rising above the lowest it has seen,
// but here every reply comes from another server at another distance: one
// reply 300 ms after its probe may be a 300 ms server or a 10 ms server
// behind 290 ms of queue, and the lowest RTT seen says nothing about the
// next server. What is comparable across servers is how replies arrive.
// A link that is busy sends datagrams back to back, each one transmission
// time (bytes / rate) after the one before, whatever server they come
// from; an idle link passes them as they come, at random gaps, since the
// servers' distances scatter the replies of evenly paced probes. So:
//
//   - Echoes: servers at the same distance (a hosting network's
//     servers sit next to each other in a master's list) answer evenly
//     paced probes with evenly spaced replies, the pacing's echo, not the
//     link's. A gap between two replies equal to the gap between their
//     probes is such an echo, and is left out of everything below.
//   - Capacity: a train of paceTrainLen gaps evenly spaced per byte
//     (within paceTrainTol) is a stretch where the link was busy; its
//     bytes over its span is the link's rate. The estimate is the median
//     of the last paceSamples trains, once most of them agree within 5%:
//     random arrivals seldom form such a train and their trains do not
//     agree, and a burst compressed by a late sender is outvoted. Until
//     then there is no ceiling but the delivery rate's.
//   - Utilisation: the replies of probes sent in random order to
//     servers at random distances reach the link as a random stream, and
//     such a stream queues even below the link's rate: the 99th
//     percentile of the wait in an M/D/1 queue (Poisson arrivals, one
//     transmission time each) is 10 transmissions at 80% of the link, 18
//     at 88%. The rate is the share of the capacity at which that
//     percentile is QueueTarget (at 10 Mbit/s, 2 ms is 11.4 transmissions
//     of a 220-byte reply: 81.5%), at least paceBudgetPackets
//     transmissions on a slow link (6 at 1 Mbit/s: 68%), at most
//     Utilization (pace_budget.go). The random stream of the emulated
//     world is smoother than Poisson, so the model errs on the safe side
//     (queueing p99 1.5-1.8 ms at 81.5% in the simulations of
//     TestPacer_AccessLink, pace_sim_test.go).
//   - Standing queue: once the capacity is known, a run of replies each
//     arriving one transmission time after the one before is a busy
//     period: each reply in it waited at most the run so far, and the
//     least of those over a window is zero unless the link never went
//     idle in it (the windowed minimum of LEDBAT's and BBR's delay
//     filters). A run longer than paceStandingPackets transmissions (70
//     ms at 10 Mbit/s) is a standing queue, a rate above the link's
//     (a capacity estimated too high, or cross traffic): the rate backs
//     off by paceBackoff. A random stream at the utilisation above makes
//     runs of up to about 20-40 ms (64 ms at 85% in 5 s of a Poisson
//     stream): before, a run of 2 ms counted, which such a stream makes
//     every few hundred replies at 60-90% of the link, and the rate was
//     cut 3-4 times a run to 55-65% of it (BENCHMARKS.md, "Discovery").
//   - Trains: the first paceTrains requests of a run (Quake III getinfo)
//     sent while paceTrainQueue or more wait are sent paceTrainProbes
//     times back to back to their one server
//     (Train). Its replies leave it together and cross the path's
//     narrowest link one after another, so their spacing at the client
//     is that link's time per reply, upstream or down (a request's
//     transmission upstream, a reply's downstream, whichever is longer):
//     the train's replies after the first over their dispersion are the
//     probes per second the path carries, measured within the nearest
//     train server's RTT instead of after a ramp (packet pairs, in the
//     manner of Jacobson's pathchar and Keshav's packet-pair probing). The
//     estimate is the median of the trains in so far, of the clean ones
//     (no other datagram between their replies) when there are (see
//     trainDone); the rate jumps to paceJump times it, or the utilisation
//     if lower, past slow start, and it caps capacityRate after.
//     Without a bottleneck the replies come microseconds apart and the
//     rate goes to MaxRate at once. The extra sends, 7 a train, are at
//     most 42 a run.
//   - Slow start (when no train came back): the rate doubles every 100 ms from StartRate, but
//     grows only while under paceGain times the rate replies arrive at
//     (the feedback comes an RTT late: this bounds the overshoot), and
//     ends at the utilisation's share of the capacity in probes (the
//     capacity over the mean reply size times the replies per probe) or
//     at the first standing queue.
//   - Drain: the first standing queue (in or after slow start) drops the
//     rate to paceDrain times the capacity for two mean RTTs, longer
//     while standing queues still come: what slow start queued drains.
//   - Steady state: the rate is a share of the capacity, that share cut
//     by paceBackoff at a standing queue (then held for two mean RTTs,
//     until the cut shows in the replies, and never below paceMinUtil)
//     and grown back by 10% every 100 ms, up to the utilisation, while
//     none comes.
//   - Replies planned: the session tells the pacer where each reply is
//     due (Planned: at the send plus the RTT of its server when another
//     server of the same address has answered, else spread by the run's
//     RTTs), and sends a probe to a server of known RTT only when its
//     reply is due in a millisecond with room at the rate (Room; see
//     pace_calendar.go and the session's order, session_order.go).
//
// A reply-rate plateau alone (BBR's delivery rate) was not enough: it
// shows the capacity only after the queue has begun, and the servers'
// spread of RTTs (10-400 ms) smears the reply rate over 400 ms, so slow
// start overshoots by that much. Reference probes to a few known servers
// would measure the queue directly, but cost probes and meet the servers'
// per-source rate limits (ioquake3: 1 a second after a burst of 10).
//
// The upstream: an upstream queue delays requests, not replies, so the
// replies of a run arrive as spread as ever and the busy-link signals
// above cannot see it. Only the trains do: a train's requests leave
// back to back, and on an upstream slower than the downstream (per
// request against per reply) they reach the servers, and their replies
// the client, one request's upstream transmission apart. That bound is
// held for the whole run; an upstream that slows later (cross traffic)
// is not seen, and MaxRate (--bandwidth) stays the way to give it. Nor
// does it see a bottleneck whose busy gaps are below the timestamps'
// resolution (paceBusySlack: above about 100 Mbit/s), where probing at
// MaxRate fills a few percent of it.
type Pacer struct {
	cfg  Pace
	rate float64
	last time.Time // of the last rate update

	slowStart  bool
	util       float64 // after slow start: the share of the capacity sent at
	drainUntil time.Time
	drained    bool // the first sign of queueing after slow start has come
	lastCut    time.Time
	meanRTT    time.Duration

	// Arrivals.
	prevAt   time.Time
	prevSent time.Time
	havePrev bool
	trainN   int
	trainB   float64 // bytes
	trainS   float64 // seconds
	samples  []float64
	capacity float64       // bytes per second; 0 while unknown
	run      time.Duration // the current back-to-back run
	meanSize float64       // wire bytes per reply datagram
	windowed []time.Time   // arrivals within paceDeliveryWindow

	sent, received int
	rtts           []paceRTT // answered, in the order answered (at most paceRetryKept)
	answered       int
	rto            time.Duration // RetryTimeout's last answer; 0: the full timeout
	rtoAt          time.Time     // when it was computed
	rtoHist        []int         // RTTs by paceRetryBucket, for retryTimeout
	sentTimes      []time.Time   // sends not yet settled (see capacityRate)
	settled        int           // sends older than hold()

	// Trains.
	trains    []paceTrain
	trainRate float64   // probes per second the trains measured; 0 while unknown
	trainAt   time.Time // the arrival of the latest train reply

	// The utilisation target (target) and the service time it was
	// computed for.
	targetUtil float64
	targetFor  time.Duration

	cal calendar // the replies due at the link (pace_calendar.go)

	// Cuts counts the backoffs; exported for tests and reports.
	Cuts int
}

// NewPacer returns a controller at cfg's start rate.
func NewPacer(cfg Pace) *Pacer {
	cfg = cfg.withDefaults()
	return &Pacer{cfg: cfg, rate: cfg.StartRate, slowStart: true}
}

// Capacity returns the estimated link capacity in bytes per second, 0
// while unknown.
func (p *Pacer) Capacity() float64 { return p.capacity }

// Sent records a probe sent at now.
func (p *Pacer) Sent(now time.Time) {
	p.sent++
	if len(p.sentTimes) < paceMaxWindowed {
		p.sentTimes = append(p.sentTimes, now)
	} else {
		p.settled++
	}
}

// hold is how long signs of queueing are ignored after a cut.
func (p *Pacer) hold() time.Duration {
	return min(max(paceHoldRTTs*p.meanRTT, paceHoldMin), paceHoldMax)
}

// capacityRate is the capacity in probes per second: the link's bytes
// over the mean reply size times the replies per probe; 0 while unknown.
// Replies per probe count the sends sent more than hold() ago (settled:
// their replies are in), 1 until paceMinSettled are, and at most the
// datagrams per answered request; a list with dead servers gets fewer
// replies than probes, a split reply more.
func (p *Pacer) capacityRate() float64 {
	if p.capacity <= 0 || p.meanSize <= 0 {
		return p.trainRate
	}
	perProbe := 1.0
	if p.settled >= paceMinSettled && p.answered > 0 {
		// received counts the replies to unsettled sends too, so its
		// share of the settled sends runs high while the rate grows:
		// it is held to the datagrams per answer.
		perProbe = min(float64(p.received)/float64(p.settled), float64(p.received)/float64(p.answered))
		perProbe = min(max(perProbe, 0.25), 4)
	}
	r := p.capacity / (p.meanSize * perProbe)
	if p.trainRate > 0 {
		r = min(r, p.trainRate)
	}
	return r
}

// congested backs off after a sign of queueing at at. The first (in or
// after slow start) drains: the rate drops to paceDrain times the capacity for a hold
// time, longer while runs too long still come (what slow start queued
// drains), then goes on at Utilization*paceBackoff of it.
func (p *Pacer) congested(at time.Time) {
	if at.Before(p.drainUntil) {
		// What slow start queued is still draining: drain on.
		p.drainUntil = at.Add(p.hold() / 2)
		return
	}
	if !p.lastCut.IsZero() && at.Sub(p.lastCut) < p.hold() {
		return
	}
	p.lastCut = at
	p.Cuts++
	if p.slowStart || !p.drained {
		p.slowStart, p.drained = false, true
		p.drainUntil = at.Add(p.hold())
		p.util = p.target() * paceBackoff
		return
	}
	p.util = max(paceMinUtil, p.util*paceBackoff)
}

// Rate returns the rate to send at now, in probes per second.
func (p *Pacer) Rate(now time.Time) float64 {
	dt := 0.0
	if !p.last.IsZero() {
		dt = min(max(now.Sub(p.last).Seconds(), 0), 1)
	}
	p.last = now
	settle := now.Add(-p.hold())
	k := 0
	for k < len(p.sentTimes) && p.sentTimes[k].Before(settle) {
		k++
	}
	p.settled += k
	p.sentTimes = p.sentTimes[k:]
	cut := now.Add(-paceDeliveryWindow)
	i := 0
	for i < len(p.windowed) && p.windowed[i].Before(cut) {
		i++
	}
	p.windowed = p.windowed[i:]
	p.settleTrains(now)
	capRate := p.capacityRate()
	if p.slowStart && p.trainRate > 0 {
		// The trains measured the path: start at a share of it, past
		// slow start. Nothing was queued to drain.
		p.slowStart, p.drained = false, true
		p.util = min(paceJump, p.target())
	}

	if !p.slowStart && capRate > 0 {
		// Steady state: a share of the capacity, that share cut at each
		// run too long and grown back while none comes.
		switch {
		case now.Before(p.drainUntil):
			p.rate = paceDrain * capRate
		default:
			if now.Sub(p.lastCut) >= p.hold() {
				p.util = min(p.target(), p.util*math.Exp(paceProbeGrowth*dt))
			}
			p.rate = p.util * capRate
		}
		p.rate = min(max(p.rate, p.cfg.MinRate), p.cfg.MaxRate)
		return p.rate
	}

	// Slow start: double every 100 ms, but grow only up to paceGain
	// times the delivery rate (the delivery rate, the sends of an RTT ago
	// and the host's hiccups, never cuts the rate: that is the queueing
	// signal's job), and end at the capacity ceiling.
	before := p.rate
	p.rate *= math.Exp(paceStartGrowth * dt)
	if p.received > 0 {
		delivered := float64(len(p.windowed)) / paceDeliveryWindow.Seconds()
		p.rate = min(p.rate, max(before, p.cfg.StartRate, paceGain*delivered))
	}
	if c := p.target() * capRate; c > 0 && p.rate >= c {
		p.rate = c
		p.slowStart = false
		p.util = p.target()
	}
	p.rate = min(max(p.rate, p.cfg.MinRate), p.cfg.MaxRate)
	return p.rate
}

// Interval returns the time until the next send after one at now.
func (p *Pacer) Interval(now time.Time) time.Duration {
	return max(time.Duration(float64(time.Second)/p.Rate(now)), 1)
}
