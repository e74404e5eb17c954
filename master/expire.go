package master

import (
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/game"
)

// DueProbes appends to dst, and returns, the probes due at now: the
// retries of unanswered checks whose time has come (every one due: at most
// one per check in flight, at most VerifyRetries per check), then up to
// max new checks: listed servers whose re-probe time has come (with their
// game's requests), and restored servers awaiting re-verification. Each
// new check is marked in flight; its answer goes to Verify and its silence
// is judged by Expire. max <= 0 means no bound. The scan is linear in the
// number of servers.
func (r *Registry) DueProbes(now time.Time, dst []Probe, max int) []Probe {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.servers {
		if c := e.chk; c != nil {
			if c.tries <= r.conf().VerifyRetries && !now.Before(c.sentAt.Add(retryOffset(r.conf().VerifyRetryDelay, c.tries))) &&
				now.Before(c.sentAt.Add(r.conf().ChallengeLifetime)) {
				dst = append(dst, r.tryLocked(now, e))
			}
			continue
		}
		if (max > 0 && n >= max) || !e.Listed || e.NextProbe == 0 || stampOf(now) < e.NextProbe {
			continue
		}
		reqs, interval := r.reprobeOf(e)
		if !r.mineLocked(e) {
			// Another instance's share: its verification will set the
			// next re-probe; look again soon in case that instance died.
			e.NextProbe = stampOf(now.Add(shareRecheck(interval)))
			r.leftToPeers.Add(1)
			continue
		}
		cause := CauseReprobe
		if e.restored() {
			cause = CauseRestored
			reqs |= game.GetInfo // an infoResponse restores everything a client filters on
		}
		e.NextProbe = stampOf(now.Add(interval))
		dst = append(dst, r.startProbeLocked(now, e, reqs, cause))
		n++
	}
	return dst
}

// reprobeOf returns the requests and the interval of e's periodic
// re-probe: its game's, or getinfo every game.DefaultReprobeInterval.
func (r *Registry) reprobeOf(e *entry) (game.Requests, time.Duration) {
	if g, ok := r.conf().Catalogue.ByName(e.Game); ok && g.Reprobe.Requests != 0 && g.Reprobe.Interval > 0 {
		return g.Reprobe.Requests, g.Reprobe.Interval
	}
	return game.GetInfo, game.DefaultReprobeInterval
}

// recheckDelay is the wait from an unanswered check's first try to the
// next check of a listed server that is kept: its re-probe interval
// divided by MaxMissedProbes, so that the MaxMissedProbes checks that
// drop a live server span its whole re-probe period (see Expire).
func (r *Registry) recheckDelay(e *entry) time.Duration {
	_, interval := r.reprobeOf(e)
	return interval / time.Duration(max(r.conf().MaxMissedProbes, 1))
}

// Expire removes, at now, the servers that must go, appending them to dst:
// new servers that never answered their challenge, listed servers silent
// for Timeout, listed servers whose flatline check went unanswered, and
// listed servers whose last MaxMissedProbes checks all went unanswered. A
// check is unanswered at its first try + ChallengeLifetime exactly
// (retries included); a server is silent at LastVerified+Timeout exactly.
//
// # Unanswered checks of a listed server
//
// A flatline check (ET's and RtCW's flatline tag, or a second heartbeat
// while a heartbeat's check runs: ioquake3 sends two on shutdown) that
// goes unanswered drops the server at once, ChallengeLifetime after the
// flatline: a server that says it is going and then does not answer is
// gone. Any other check (a re-probe, a heartbeat's check, a restored
// server's) that goes unanswered counts a miss and schedules the next
// check recheckDelay (re-probe interval / MaxMissedProbes) after its
// first try; the server is dropped when MaxMissedProbes checks in a row
// went unanswered, so its last chances are spread over its whole re-probe
// period instead of the few seconds of one check's retries. A reply to
// any check clears the misses.
//
// The arithmetic, with 5% loss each way, independent, and a one-packet
// request (Q3A's getstatus re-probe, the getinfo of a heartbeat check):
// a try fails with q = 1 - 0.95² = 0.0975, a check of 1+VerifyRetries = 3
// tries with p = q³ = 9.3e-4. Before this rule one unanswered heartbeat
// check dropped a listed server: with a heartbeat every 5-minute period,
// 9.3e-4 per server per period, 4.6 live servers of 5,000 delisted per
// period, each gone until its next heartbeat (23 in 9 minutes were
// measured in an emulated world; TestReprobe_FivePercentLossKeepsLiveServers
// simulates 1,000 servers heartbeating every 5 minutes for an hour: 19
// delisted by the old rule with its seed, 9.7 a seed over seeds 1-10,
// where the arithmetic predicts 11; none by this one).
// Now MaxMissedProbes = 3 checks, recheckDelay = 100 s apart for Q3A,
// must all go unanswered: p³ = 8.0e-10 per server per period, one live
// server of 5,000 delisted every 2.5e5 periods (2.4 years). A loss burst
// shorter than recheckDelay costs one miss, not the listing. A server
// that dies without a flatline goes 2 × recheckDelay + ChallengeLifetime
// after its first unanswered check (205 s for Q3A; it used to take
// MaxMissedProbes re-probe intervals, or its heartbeat check's 5 s).
func (r *Registry) Expire(now time.Time, dst []Removal) []Removal {
	var blocks blockList
	if r.blockCheck.Swap(false) {
		if l := r.blocks.Load(); l != nil {
			blocks = *l
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.servers {
		a := e.Addr
		why := OK
		var shutdown time.Time
		if len(blocks) > 0 && blocks.find(a.Addr()) != nil {
			why = ReasonBlocked
		}
		if c := e.chk; why == OK && c != nil && !now.Before(c.sentAt.Add(r.conf().ChallengeLifetime)) {
			e.chk = nil
			switch {
			case !e.Listed:
				why = ReasonChallengeTimedOut
			case c.cause == CauseFlatline:
				why = ReasonCheckUnanswered
				shutdown = c.sentAt
			default:
				e.Missed = uint8(min(int(e.Missed)+1, MaxMissedCount))
				if int(e.Missed) >= r.conf().MaxMissedProbes {
					why = ReasonProbesUnanswered
				} else {
					e.NextProbe = stampOf(c.sentAt.Add(r.recheckDelay(e)))
				}
			}
		}
		if why == OK && e.Listed && stampOf(now) >= e.expiry(r.conf().Timeout) &&
			(stampOf(now) >= e.expiry(2*r.conf().Timeout) || r.mineLocked(e)) {
			// In a fleet the owner of a server's share decides its
			// silence, once for all (share.go); the others wait one more
			// Timeout for its removal before deciding themselves.
			why = ReasonSilent
		}
		if why == OK {
			continue
		}
		r.removeLocked(a, e)
		dst = append(dst, Removal{Addr: a, Listed: e.Listed, Reason: why, LastVerified: e.LastVerified.Time(), Shutdown: shutdown})
	}
	return dst
}

func (r *Registry) removeLocked(a netip.AddrPort, e *entry) {
	if e.flags&flagInSnap != 0 {
		r.touchLocked(e) // its removal from the answer snapshot
	}
	e.flags |= flagRemoved
	delete(r.servers, keyOf(a))
	r.tallyLocked(e, -1)
	k := addrKeyOf(a.Addr())
	if r.perKey[k]--; r.perKey[k] <= 0 {
		delete(r.perKey, k)
	}
	delete(r.players, a)
	delete(r.peers, keyOf(a))
	delete(r.marks, keyOf(a))
	delete(r.crowds, keyOf(a))
	if e.Listed {
		r.version.Add(1)
	} else {
		r.pending--
	}
}
