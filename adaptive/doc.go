// Package adaptive plans the order in which a server browser probes the game
// servers a master returned, after G. Armitage, "Client-Side Adaptive Search
// Optimisation for Online Game Server Discovery", NETWORKING 2008, LNCS 4982,
// pp. 494-505 (Algorithm 1: clustering, calibration and re-ordered probing;
// Algorithm 2: auto-stop).
//
// The package owns no socket and reads no clock. A [Planner] is told the
// master's list once, hands out the next probe to send with Next, and is told
// each probe's outcome with Observe; every decision it takes is a function of
// the list, the outcomes in the order they were observed, and a seeded
// random source. The live prober (real sockets, real timeouts) and the
// discrete-event simulator (virtual time) drive the same code, and a run is
// reproduced exactly by replaying its outcomes with the same seed.
//
// # Algorithm 1, as implemented
//
// Step 2 (clusters). Every server carries a country code ([Target].Country;
// "" is unknown geolocation, and those servers form one pseudo-country,
// [UnknownCountry], that goes through the same rules). Within a country, every
// /8 holding more than [Params].Slash8Servers (10) servers and more than
// [Params].Slash8Share (10%) of the country's servers is a cluster of its own,
// "country /8"; the rest of the country is one cluster, "country". Both limits
// are strict ("more than"): 10 servers, or exactly 10%, is not enough. IPv6
// servers use /32 for /8 and /48 for /16 (the paper is IPv4 only; these are
// the usual registry and site allocation sizes, and [Params] can change all
// four lengths). Servers of the two families never share a /8 or /16.
//
// Step 4 (calibration). Nsample = ceil(SampleScale * sqrt(Ncluster)), at least
// 1 and at most Ncluster. The paper writes Nsample = sqrt(Ncluster) without a
// rounding; ceil is chosen because it never yields zero and errs towards the
// better estimate that section 5.1 says a larger Nsample buys, at a cost of
// at most one probe per cluster. The samples are drawn one per /16: when the
// cluster has at least Nsample /16s, Nsample of them are chosen uniformly at
// random and one random server from each; when it has fewer, every /16 gives
// one, then every /16 with servers left gives a second, and so on (round
// robin, /16s in random order), so no /16 gives two before each gave one.
// Calibration probes are handed out in master order.
//
// The cluster's RTT is the median of the answered samples (the mean of the
// two middle ones for an even count). An unanswered probe says nothing about
// the path (the server may have gone away since it registered), so it is left
// out of the median and of the percentiles; a cluster none of whose samples
// answered has no estimate and is ranked after every cluster that has one.
// Step 4(e) takes the 20th and 80th percentiles of the answered samples by the
// nearest-rank definition (the ceil(p*n)-th smallest), so that both are
// measured RTTs, as the paper's "the 20th and 80th percentile measurements"
// says. When P80 - P20 is more than 40 ms (strictly) and the cluster spans at
// least two /16s, the cluster is split into one cluster per /16, and one
// previously unprobed server chosen at random from each new cluster is probed;
// its RTT is the new cluster's RTT. A new cluster whose servers were all probed
// already, or whose split probe got no answer, takes the median of its own
// answered calibration samples, or failing those its parent's RTT. A cluster
// spanning a single /16 cannot be split and keeps its median. New clusters are
// not split again.
//
// Step 5 ranks clusters by ascending RTT; clusters without an estimate come
// last; ties, and the order among clusters without an estimate, go to the
// cluster whose first server comes first in the master's list. Step 6 probes
// every server not yet probed, cluster by cluster in rank order, in master
// order within a cluster. No server is handed out twice; a duplicate address
// in the master's list is dropped when the Planner is made (the first
// occurrence keeps its place).
//
// # Algorithm 2, as implemented
//
// Once [Params].Window (W = 100) step-6 probes have been observed, after each
// further step-6 outcome RTTbottom is the [Params].StopPercentile (2nd)
// percentile of the last W step-6 outcomes, nearest rank: the ceil(0.02*100) =
// 2nd smallest. Nearest rank is the paper's own wording ("the RTT below which
// 2% of RTT samples have fallen") and it is always a measured value, never an
// interpolation between an RTT and a lost probe. An unanswered probe counts as
// an infinite RTT: a server that does not answer is not playable, and the
// player is no better served by waiting for more of them. Auto-stop fires when
// RTTbottom >= [Params].StopRTT (200 ms), so with W = 100 it fires exactly
// when 99 of the last 100 step-6 outcomes are at or above 200 ms or lost. The
// window holds outcomes in the order Observe reported them, which is the
// order the probes were sent when one probe is in flight at a time.
//
// # Beyond the paper
//
// Each is an option that [Paper] leaves off: clustering by autonomous system
// ([ByAS], [ByCountryAS]; the paper's section 5.2), a stopping rule that waits
// for a run of agreeing windows ([StopRun]; the "smooth run of consistently
// high probe RTTs" of section 5.2), that also asks the estimates of the
// clusters still unprobed ([StopEstimate]), or that asks their lowest
// answered RTT instead of a window ([StopBound]), a two-round calibration
// that stops sampling a cluster whose first sample is far past RTTstop
// ([Params].FarCut), a scaled Nsample ([Params].SampleScale),
// re-ranking clusters as step-6 RTTs arrive ([Params].Rerank), and holding
// the far tail to what StopBound still needs to see when many probes are
// in flight ([Params].HoldAhead). [Scout] combines country+AS clusters,
// FarCut, StopBound and HoldAhead: the variant
// EVALUATION.md measures as "scout". [Conventional] (master order) and
// [Oracle] (exactly the playable servers, nearest first) are planners with
// the same methods, so a simulator drives every strategy alike through
// [Strategy].
package adaptive
