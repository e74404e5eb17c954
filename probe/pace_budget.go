package probe

import (
	"math"
	"time"
)

// The share of the link the rate fills (see Pacer, "Utilisation"): the
// highest utilisation at which the replies' queueing stays within the
// queue target at the 99th percentile, for replies arriving as a Poisson
// stream (an M/D/1 queue).

// Constants of the utilisation (see targetUtil).
const (
	// paceBudgetPackets: on a slow link, where one reply's transmission
	// is a large share of QueueTarget, the budget is at least this many
	// replies' transmission (at 1 Mbit/s a 220-byte reply takes 1.76 ms:
	// a queue of 2 ms would hold the rate to a third of the line).
	paceBudgetPackets = 6
	// paceBudgetQuantile is the share of replies that wait at most the
	// budget.
	paceBudgetQuantile = 0.99
	// paceBudgetMaxServices bounds the budget in service times where
	// md1WaitCDF's alternating sum stays exact in float64; its
	// utilisation there, about 0.9, is DefaultUtilization anyway.
	paceBudgetMaxServices = 22
	// paceUpstreamReplies: replies that came without the downstream
	// queueing enough to show its capacity (see service).
	paceUpstreamReplies = 1000
)

// md1WaitCDF is the probability that a customer of an M/D/1 queue at
// utilisation rho waits at most b service times (Erlang's formula, in
// Crommelin's form: (1-rho) sum_{k=0}^{floor b} (rho(k-b))^k/k! e^{-rho(k-b)}).
// The sum alternates; it is exact in float64 for b up to about 25.
func md1WaitCDF(rho, b float64) float64 {
	if b < 0 {
		return 0
	}
	s := 0.0
	for k := 0; k <= int(b); k++ {
		x := rho * (float64(k) - b) // <= 0
		lg, _ := math.Lgamma(float64(k + 1))
		term := math.Exp(float64(k)*math.Log(math.Abs(x))-lg) * math.Exp(-x)
		if k == 0 {
			term = math.Exp(-x)
		} else if k%2 == 1 {
			term = -term // x^k for x < 0
		}
		s += term
	}
	return min(max((1-rho)*s, 0), 1)
}

// md1Util returns the highest utilisation, to 0.001, at which an M/D/1
// queue's paceBudgetQuantile wait is at most b service times; b is held
// to paceBudgetMaxServices.
func md1Util(b float64) float64 {
	b = min(b, paceBudgetMaxServices)
	lo, hi := 0.0, 1.0
	for hi-lo > 0.001 {
		mid := (lo + hi) / 2
		if md1WaitCDF(mid, b) >= paceBudgetQuantile {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// service returns one reply's transmission time on the narrow link: the
// mean reply's bytes over the downstream capacity, learnt where replies
// of different servers queue there (not from the trains); until it is
// known, one probe's share of the trains' rate while fewer than
// paceUpstreamReplies replies have come, and then 0: that many replies
// without a downstream queue mean the trains measured the upstream,
// whose requests leave paced, not at random, and queue only above its
// rate. 0 while nothing is known.
func (p *Pacer) service() time.Duration {
	switch {
	case p.capacity > 0 && p.meanSize > 0:
		return time.Duration(p.meanSize / p.capacity * float64(time.Second))
	case p.trainRate > 0 && p.received < paceUpstreamReplies:
		return time.Duration(float64(time.Second) / p.trainRate)
	}
	return 0
}

// target returns the share of the capacity the rate may fill: the
// highest utilisation at which the M/D/1 queue of replies waits at most
// the budget at the paceBudgetQuantile, the budget being QueueTarget and
// at least paceBudgetPackets services (service); at most Utilization,
// and Utilization while the service is 0. It is recomputed when the
// service time changes by more than 1%.
func (p *Pacer) target() float64 {
	sv := p.service()
	if sv <= 0 {
		p.targetUtil, p.targetFor = 0, 0
		return p.cfg.Utilization
	}
	if d := sv - p.targetFor; p.targetUtil == 0 || d.Abs()*100 > p.targetFor {
		b := max(p.cfg.QueueTarget.Seconds()/sv.Seconds(), paceBudgetPackets)
		p.targetUtil, p.targetFor = min(md1Util(b), p.cfg.Utilization), sv
	}
	return p.targetUtil
}
