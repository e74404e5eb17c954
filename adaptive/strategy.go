package adaptive

import (
	"errors"
	"math"
	"net/netip"
	"strconv"
	"time"
)

// UnknownCountry is the group name of servers whose country is not known
// (Target.Country == ""), after GeoIP's own code for "no country".
const UnknownCountry = "--"

// NoAnswer is how an unanswered probe counts in Algorithm 2's window: an RTT
// above every playable one. StopInfo.Bottom is NoAnswer when the percentile
// fell on lost probes.
const NoAnswer = time.Duration(math.MaxInt64)

// A Target is one server of the master's list.
type Target struct {
	// Addr is the server's address. New unmaps an IPv4-mapped IPv6 address.
	Addr netip.AddrPort
	// Country is the ISO 3166 alpha-2 code geolocation gave the address; ""
	// when geolocation had no answer.
	Country string
	// ASN is the origin autonomous system of the address; 0 when unknown.
	// Only ByAS and ByCountryAS use it.
	ASN uint32
	// Index is the target's position in the master's list given to New; New
	// sets it, and every Target the planner hands out carries it.
	Index int
}

// Phase says which step of Algorithm 1 a probe belongs to, or why Next has
// none.
type Phase uint8

const (
	// Waiting: no probe to send until outstanding calibration or split
	// probes are observed (step 5 needs every cluster's RTT), or, with
	// Params.HoldAhead, until a far probe's outcome is in.
	Waiting Phase = iota
	// Calibrate is step 4(c): a sample of a cluster.
	Calibrate
	// Split is step 4(e)iii: the probe of a cluster made by a split.
	Split
	// Reordered is step 6: the re-ordered probe of every remaining server.
	Reordered
	// Master is conventional discovery: the master's order.
	Master
	// Done: nothing left to send, or auto-stop fired.
	Done
)

var phaseNames = [...]string{"waiting", "calibrate", "split", "reordered", "master", "done"}

func (ph Phase) String() string {
	if int(ph) < len(phaseNames) {
		return phaseNames[ph]
	}
	return "Phase(" + strconv.Itoa(int(ph)) + ")"
}

// Errors from New and Observe.
var (
	ErrTarget = errors.New("adaptive: invalid target")
	// ErrUnknown: Observe was given an address that is not in the list.
	ErrUnknown = errors.New("adaptive: address not in the list")
	// ErrNotSent: Observe was given an address that was not handed out by
	// Next, or whose outcome was observed already.
	ErrNotSent = errors.New("adaptive: probe not outstanding")
)

// A Sample is a probe's outcome.
type Sample struct {
	Target   Target
	Phase    Phase
	RTT      time.Duration // meaningful when Answered
	Answered bool
}

// ClusterInfo describes one cluster.
type ClusterInfo struct {
	// ID names the cluster: its group ("AU", "AS1221", "AU AS1221",
	// UnknownCountry), then its prefix for a /8 cluster of step 2(c) or a
	// /16 cluster of step 4(e): "AU 203.0.0.0/8", "AU 203.4.0.0/16".
	ID string
	// Group is the country code, "AS<n>" or "<country> AS<n>".
	Group string
	// Prefix is the /8 (step 2(c)) or /16 (step 4(e)) the cluster is; the
	// zero Prefix for the rest of a group (step 2(d)).
	Prefix netip.Prefix
	// Parent is the index in Clusters() of the cluster this one was split
	// from, or -1.
	Parent int
	// Dissolved reports that step 4(e) split this cluster; its servers now
	// belong to the clusters whose Parent it is.
	Dissolved bool
	// Size is the number of servers in the cluster.
	Size int
	// Samples are the cluster's calibration (step 4(c)) and split (step
	// 4(e)iii) probes whose outcomes are known, in master order.
	Samples []Sample
	// RTT is RTTcluster (steps 4(d) and 4(e)iii), valid when Estimated.
	RTT       time.Duration
	Estimated bool
	// Rank is the 1-based position in step 5's order, 0 before step 5 and
	// for dissolved clusters.
	Rank int
	// Probed counts the cluster's servers handed out so far, all phases.
	Probed int
}

// StopInfo says why and when auto-stop fired.
type StopInfo struct {
	Rule Rule
	// Reordered is the number of step-6 outcomes observed when it fired.
	Reordered int
	// Sent is the number of probes handed out, all phases, when it fired.
	Sent int
	// Bottom is RTTbottom over the last Window (or fewer, for StopEstimate)
	// step-6 outcomes; NoAnswer when it fell on lost probes.
	Bottom time.Duration
	// Nearest is the lowest RTT estimate (StopEstimate) or lower bound
	// (StopBound) among the clusters with servers left; NoAnswer when no
	// such cluster has one.
	Nearest time.Duration
	// Unprobed is the number of servers never handed out.
	Unprobed int
}

// Stats counts what the planner handed out and was told.
type Stats struct {
	Targets    int // distinct servers
	Duplicates int // repeated addresses dropped from the list
	Calibrate  int // step 4(c) probes handed out
	Split      int // step 4(e)iii probes handed out
	Reordered  int // step 6 probes handed out
	Observed   int // outcomes accepted
	Refused    int // Observe calls refused (ErrUnknown, ErrNotSent)
}

// Strategy is what the prober and the simulator drive: the adaptive
// [Planner], [Conventional] and [Oracle] all implement it.
type Strategy interface {
	Next() (t Target, ph Phase, ok bool)
	Observe(addr netip.AddrPort, rtt time.Duration, answered bool) error
	Stopped() (bool, StopInfo)
	Clusters() []ClusterInfo
}

// SkipObserver is a Strategy that can be told that a server it handed
// out was not probed because answers already observed rule it out (group
// probing's skipped mates, at their group's least sample; [Grouped]). It
// counts as the server's outcome for the strategy's bookkeeping, not as
// fresh evidence for its stop rule: the answers it stands for were
// counted when they came, and one far /24 of many servers would otherwise
// make a stop rule's run of agreeing outcomes on its own.
type SkipObserver interface {
	ObserveSkipped(addr netip.AddrPort, least time.Duration) error
}
