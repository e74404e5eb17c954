package demo

import (
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/discover"
)

// Found counts the playable servers a run found: those whose true RTT (in
// truth) is below stop and that answered at least one of probes, each
// server once, whatever RTT its probe measured. last is when the last of
// them was found (its first answer: the probe's send time plus its measured
// RTT), since the run began.
//
// The measured RTT decides nothing here on purpose: the emulator's jitter
// only lengthens an RTT, so a server at 199 ms may answer at 201 ms, and one
// at 205 ms never answers under 200 ms; a run is judged by whether it
// reached the playable servers, which is what its ordering decides, not by
// which side of the line a reply's jitter fell. A server missing from
// truth (not in the world) is not counted.
func Found(probes []discover.Outcome, truth map[netip.AddrPort]time.Duration, stop time.Duration) (n int, last time.Duration) {
	seen := make(map[netip.AddrPort]bool)
	for _, o := range probes {
		if !o.Answered {
			continue
		}
		rtt, ok := truth[o.Addr]
		if !ok || rtt >= stop {
			continue
		}
		if seen[o.Addr] {
			continue // found already, by an earlier answer
		}
		seen[o.Addr] = true
		n++
		last = max(last, o.At+o.RTT)
	}
	return n, last
}

// Missed splits the servers of playable that probes did not find (none of
// their probes answered): unprobed were never probed, unanswered were
// probed and none of those probes answered (every reply lost, or, on a
// busy machine, late past the probes' timeout). Each server counts once.
func Missed(probes []discover.Outcome, playable []netip.AddrPort) (unprobed, unanswered int) {
	probed, answered := map[netip.AddrPort]bool{}, map[netip.AddrPort]bool{}
	for _, o := range probes {
		probed[o.Addr] = true
		answered[o.Addr] = answered[o.Addr] || o.Answered
	}
	for _, a := range playable {
		switch {
		case !probed[a]:
			unprobed++
		case !answered[a]:
			unanswered++
		}
	}
	return unprobed, unanswered
}
