package probe

import (
	"math"
	"time"
)

// Constants of the retry timeout (see RetryTimeout).
const (
	// The retry timeout (RetryTimeout): paceRetryFactor times the 99th
	// percentile of the RTTs of the sends old enough that an RTT of
	// paceRetryUncensored times that percentile would have been seen,
	// plus paceRetrySlack, at least paceRetryMin, once paceRetrySamples
	// such RTTs are in; recomputed at most every paceRetryEvery. The
	// last paceRetryKept RTTs are kept. With a factor of 1 the servers
	// slower than the percentile plus the slack (1% of them at most) get
	// a probe more, whose cost is one probe; 1.2 before, which on the
	// emulated world (RTTs up to 400 ms) kept every lost reply waiting
	// 80 ms longer, at the end of a run its tail.
	paceRetryFactor     = 1.0
	paceRetrySlack      = 20 * time.Millisecond
	paceRetryUncensored = 1.5
	paceRetryMin        = 250 * time.Millisecond
	paceRetrySamples    = 100
	paceRetryEvery      = 10 * time.Millisecond
	paceRetryKept       = 1 << 14
	// paceRetryBucket and paceRetryBuckets: the percentile's resolution
	// and range (the last bucket holds every longer RTT).
	paceRetryBucket  = time.Millisecond
	paceRetryBuckets = 3000
)

// paceRTT is one answered send: when it was sent and its RTT.
type paceRTT struct {
	sent time.Time
	rtt  time.Duration
}

// Answered records the round-trip time of a reply matched to its probe,
// sent at sent.
func (p *Pacer) Answered(sent time.Time, rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	if len(p.rtts) == paceRetryKept {
		p.rtts = append(p.rtts[:0], p.rtts[paceRetryKept/2:]...)
	}
	p.rtts = append(p.rtts, paceRTT{sent, rtt})
	p.cal.rtt(rtt)
	p.answered++
	if p.meanRTT == 0 {
		p.meanRTT = rtt
	} else {
		p.meanRTT += time.Duration(paceRTTWeight * float64(rtt-p.meanRTT))
	}
}

// RetryTimeout returns how long a send at now that is not its request's
// last waits for its reply before the request is sent again, given the
// full timeout: when the reply is overdue against the RTTs of this run.
// That is paceRetryFactor times their 99th percentile plus
// paceRetrySlack, within paceRetryMin..timeout, once paceRetrySamples
// RTTs are in; timeout until then. The RTTs early in a run are censored:
// the near servers answer first, and a percentile of them alone would
// retry every far server. So the percentile q is taken over the sends
// made at least paceRetryUncensored*q before now (whose RTTs up to that
// would all be in), recomputing q over the older sends until it holds.
// A lost reply then costs about one more largest RTT, which at the end
// of a run is most of its tail. A reply slower than that is still taken
// when it comes (its token lives on) and measured from its own send; it
// costs one more probe. The last send of a request waits the full
// timeout.
func (p *Pacer) RetryTimeout(now time.Time, timeout time.Duration) time.Duration {
	if len(p.rtts) < paceRetrySamples {
		return timeout
	}
	if p.rtoAt.IsZero() || now.Sub(p.rtoAt) >= paceRetryEvery || now.Before(p.rtoAt) {
		p.rtoAt = now
		p.rto = p.retryTimeout(now)
	}
	if p.rto == 0 {
		return timeout
	}
	return min(max(p.rto, paceRetryMin), timeout)
}

// retryTimeout computes RetryTimeout's answer at now, 0 while too few
// RTTs are uncensored.
func (p *Pacer) retryTimeout(now time.Time) time.Duration {
	q := time.Duration(0)
	cut := now // sends before cut count
	if p.rtoHist == nil {
		p.rtoHist = make([]int, paceRetryBuckets)
	}
	for range 8 {
		clear(p.rtoHist)
		n := 0
		for _, r := range p.rtts {
			if !r.sent.After(cut) {
				p.rtoHist[min(int(r.rtt/paceRetryBucket), paceRetryBuckets-1)]++
				n++
			}
		}
		if n < paceRetrySamples {
			return 0
		}
		rank, seen, q2 := int(math.Ceil(0.99*float64(n))), 0, time.Duration(0)
		for i, c := range p.rtoHist {
			if seen += c; seen >= rank {
				q2 = time.Duration(i+1) * paceRetryBucket
				break
			}
		}
		if q > 0 && q2 <= q {
			break
		}
		q = q2
		cut = now.Add(-time.Duration(paceRetryUncensored * float64(q)))
	}
	return time.Duration(paceRetryFactor*float64(q)) + paceRetrySlack
}
