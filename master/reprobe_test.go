package master

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

// runCheck sends every try of the check started at start (the retries,
// via DueProbes, each second) and answers none; it returns the probes.
func runCheck(r *Registry, start time.Time) []Probe {
	var ps []Probe
	for at := start; at.Before(start.Add(DefaultChallengeLifetime)); at = at.Add(time.Second) {
		ps = r.DueProbes(at, ps, 0)
	}
	return ps
}

// A periodic re-probe whose every try goes unanswered does not drop a
// listed server: it is checked again recheckDelay (the re-probe interval
// / MaxMissedProbes) after, and a reply then keeps it. With no reply at
// all it goes after MaxMissedProbes checks, 2 × recheckDelay +
// ChallengeLifetime after the first. The same for a heartbeat's check.
func TestReprobe_LostRepliesRetriedLaterInPeriod(t *testing.T) {
	a := ap("198.51.100.80:27960")
	recheck := game.Q3AReprobeInterval / DefaultMaxMissedProbes // 100 s

	// A live server with bad luck: three lost replies, then an answer.
	r := newTestRegistry(t, Config{})
	register(t, r, t0, a)
	due := t0.Add(game.Q3AReprobeInterval)
	if ps := runCheck(r, due); len(ps) != 1+DefaultVerifyRetries || ps[0].Cause != CauseReprobe {
		t.Fatalf("re-probe tries %+v", ps)
	}
	if rem := r.Expire(due.Add(DefaultChallengeLifetime), nil); len(rem) != 0 {
		t.Fatalf("dropped after one unanswered re-probe: %v", rem)
	}
	if s, _ := r.Lookup(a); !s.Listed || s.Missed != 1 || !s.NextProbe.Equal(due.Add(recheck)) {
		t.Fatalf("after a miss: listed %v, missed %d, next check at +%v, want +%v", s.Listed, s.Missed, s.NextProbe.Sub(due), recheck)
	}
	if ps := r.DueProbes(due.Add(recheck-time.Nanosecond), nil, 0); len(ps) != 0 {
		t.Fatalf("re-checked early: %+v", ps)
	}
	ps := r.DueProbes(due.Add(recheck), nil, 0)
	if len(ps) != 1 || ps[0].Cause != CauseReprobe || ps[0].Requests != game.GetStatus || ps[0].Try != 0 {
		t.Fatalf("re-check %+v", ps)
	}
	rep := infoReply(ps[0].Challenge.Text)
	rep.Kind, rep.Players = ReplyStatus, 3
	if _, _, why := r.Verify(due.Add(recheck+time.Second), a, rep); why != OK {
		t.Fatal(why)
	}
	if s, _ := r.Lookup(a); !s.Listed || s.Missed != 0 || !s.NextProbe.Equal(due.Add(recheck+time.Second+game.Q3AReprobeInterval)) {
		t.Fatalf("after the reply: %+v", s)
	}

	// A dead server (no flatline): MaxMissedProbes checks, then gone.
	r = newTestRegistry(t, Config{})
	register(t, r, t0, a)
	for i := range DefaultMaxMissedProbes {
		start := due.Add(time.Duration(i) * recheck)
		if ps := runCheck(r, start); len(ps) != 1+DefaultVerifyRetries {
			t.Fatalf("check %d: tries %+v", i, ps)
		}
		end := start.Add(DefaultChallengeLifetime)
		if rem := r.Expire(end.Add(-time.Nanosecond), nil); len(rem) != 0 {
			t.Fatalf("check %d: dropped before its end: %v", i, rem)
		}
		rem := r.Expire(end, nil)
		last := i == DefaultMaxMissedProbes-1
		if last != (len(rem) == 1) || (last && (rem[0].Reason != ReasonProbesUnanswered || !rem[0].Listed)) {
			t.Fatalf("check %d: removed %v", i, rem)
		}
	}

	// A heartbeat's check of a listed server: the same rule.
	r = newTestRegistry(t, Config{})
	register(t, r, t0, a)
	hb := t0.Add(time.Minute)
	if p, why := r.Heartbeat(hb, a, q3hb); why != OK || p.Cause != CauseHeartbeat {
		t.Fatalf("heartbeat: %+v %v", p, why)
	}
	runCheck(r, hb)
	if rem := r.Expire(hb.Add(DefaultChallengeLifetime), nil); len(rem) != 0 {
		t.Fatalf("dropped after one unanswered heartbeat check: %v", rem)
	}
	if ps := r.DueProbes(hb.Add(recheck), nil, 0); len(ps) != 1 {
		t.Fatalf("no re-check after the heartbeat's: %+v", ps)
	}

	// MaxMissedProbes 1 is the old rule: the first unanswered check drops.
	r = newTestRegistry(t, Config{MaxMissedProbes: 1})
	register(t, r, t0, a)
	r.Heartbeat(hb, a, q3hb)
	runCheck(r, hb)
	if rem := r.Expire(hb.Add(DefaultChallengeLifetime), nil); len(rem) != 1 || rem[0].Reason != ReasonProbesUnanswered {
		t.Fatalf("MaxMissedProbes 1: removed %v", rem)
	}
}

// Removal stays fast after a shutdown: a flatline, or ioquake3's two
// heartbeats back to back, makes the check in flight decide at once; a
// live server answers it and stays (a spoofed pair cannot delist it).
func TestReprobe_ShutdownHeartbeatsStillRemoveAtOnce(t *testing.T) {
	a := ap("198.51.100.81:27960")
	hb := t0.Add(time.Minute)
	for _, c := range []struct {
		name   string
		second func(r *Registry, at time.Time) Reason
	}{
		{"double heartbeat", func(r *Registry, at time.Time) Reason { _, why := r.Heartbeat(at, a, q3hb); return why }},
		{"flatline", func(r *Registry, at time.Time) Reason { _, why := r.Flatline(at, a); return why }},
	} {
		r := newTestRegistry(t, Config{})
		register(t, r, t0, a)
		r.Heartbeat(hb, a, q3hb)
		if why := c.second(r, hb.Add(time.Millisecond)); why != ReasonProbeOutstanding {
			t.Fatalf("%s: %v", c.name, why)
		}
		runCheck(r, hb)
		if rem := r.Expire(hb.Add(DefaultChallengeLifetime-time.Nanosecond), nil); len(rem) != 0 {
			t.Fatalf("%s: removed early %v", c.name, rem)
		}
		rem := r.Expire(hb.Add(DefaultChallengeLifetime), nil)
		if len(rem) != 1 || rem[0].Reason != ReasonCheckUnanswered {
			t.Errorf("%s: removed %v, want at once with %v", c.name, rem, ReasonCheckUnanswered)
		}

		// Live: it answers the check and stays.
		r = newTestRegistry(t, Config{})
		register(t, r, t0, a)
		p, _ := r.Heartbeat(hb, a, q3hb)
		c.second(r, hb.Add(time.Millisecond))
		if _, _, why := r.Verify(hb.Add(time.Second), a, infoReply(p.Challenge.Text)); why != OK {
			t.Fatalf("%s: %v", c.name, why)
		}
		if rem := r.Expire(hb.Add(time.Hour/4-time.Second), nil); len(rem) != 0 {
			t.Errorf("%s: a live server removed %v", c.name, rem)
		}
	}
	// One heartbeat during a re-probe's check is a server's periodic one,
	// not a shutdown: the check keeps the re-probe rule.
	r := newTestRegistry(t, Config{})
	register(t, r, t0, a)
	due := t0.Add(game.Q3AReprobeInterval)
	r.DueProbes(due, nil, 0)
	r.Heartbeat(due.Add(time.Second), a, q3hb)
	runCheck(r, due.Add(time.Second))
	if rem := r.Expire(due.Add(DefaultChallengeLifetime), nil); len(rem) != 0 {
		t.Errorf("a heartbeat during a re-probe made it a flatline: %v", rem)
	}
}

// lossWorld drives a registry as a master would (a Tick each second) for
// live Quake III servers that heartbeat every 5 minutes and answer every
// probe, with each packet lost with probability loss each way, from a
// fixed seed. It returns how many live servers the master removed.
func lossWorld(t *testing.T, cfg Config, servers int, loss float64, d time.Duration) int {
	t.Helper()
	r := newTestRegistry(t, cfg)
	rng := rand.New(rand.NewPCG(9, 5))
	lost := func() bool { return rng.Float64() < loss }
	addr := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}), 27960)
	}
	nextHB := make([]time.Time, servers)
	for i := range servers {
		register(t, r, t0, addr(i))
		nextHB[i] = t0.Add(time.Duration(rng.Int64N(int64(5 * time.Minute))))
	}
	answer := func(now time.Time, p Probe) {
		if reqLost, repLost := lost(), lost(); reqLost || repLost {
			return
		}
		rep := infoReply(p.Challenge.Text)
		if p.Requests&game.GetInfo == 0 {
			rep.Kind, rep.Players = ReplyStatus, 3
		}
		if _, _, why := r.Verify(now, p.To, rep); why != OK {
			t.Fatalf("%v: %v", p.To, why)
		}
	}
	removed := 0
	for now := t0; now.Before(t0.Add(d)); now = now.Add(time.Second) {
		for i := range servers {
			if now.Before(nextHB[i]) {
				continue
			}
			nextHB[i] = now.Add(5 * time.Minute)
			if lost() {
				continue
			}
			if p, why := r.Heartbeat(now, addr(i), q3hb); why == OK {
				answer(now, p)
			} else if why == ReasonNotListed || why == ReasonUnknownServer {
				t.Fatalf("heartbeat: %v", why)
			}
		}
		for _, rm := range r.Expire(now, nil) {
			if rm.Listed {
				removed++
			}
		}
		for _, p := range r.DueProbes(now, nil, 0) {
			answer(now, p)
		}
	}
	return removed
}

// At 5% loss each way, 1,000 live servers for an hour: the old rule (one
// unanswered check drops; MaxMissedProbes 1) delists some, the default
// none. Deterministic: a fixed seed, time passed in.
func TestReprobe_FivePercentLossKeepsLiveServers(t *testing.T) {
	if testing.Short() {
		t.Skip("an hour of 1,000 servers, simulated")
	}
	old := lossWorld(t, Config{MaxMissedProbes: 1, MaxServersPerAddress: -1}, 1000, 0.05, time.Hour)
	now := lossWorld(t, Config{MaxServersPerAddress: -1}, 1000, 0.05, time.Hour)
	t.Logf("live servers removed at 5%% loss in an hour: %d with MaxMissedProbes 1, %d with the default", old, now)
	if old == 0 {
		t.Errorf("the old rule removed no live server: the world does not exercise the rule")
	}
	if now != 0 {
		t.Errorf("%d live servers removed", now)
	}
}

// TestReprobe_HeartbeatChecksDoNotPostponeIt: a server that heartbeats as
// often as it is re-probed (Quake III: both every 5 minutes) is still
// re-probed on time: a heartbeat's check verifies it but leaves the
// re-probe's schedule, which collects the player list, alone.
func TestReprobe_HeartbeatChecksDoNotPostponeIt(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	due := t0.Add(game.Q3AReprobeInterval)
	// A heartbeat and its check, verified, a minute before the re-probe.
	hbAt := due.Add(-time.Minute)
	p, why := r.Heartbeat(hbAt, a, Heartbeat{Family: game.FamilyQ3, Tag: "QuakeArena-1"})
	if why != OK || p.Cause != CauseHeartbeat {
		t.Fatalf("heartbeat: %v %+v", why, p)
	}
	if _, _, why := r.Verify(hbAt.Add(time.Millisecond), a, infoReply(p.Challenge.Text)); why != OK {
		t.Fatalf("verify: %v", why)
	}
	got := r.DueProbes(due, nil, 0)
	if len(got) != 1 || got[0].Cause != CauseReprobe || got[0].Requests != game.GetStatus {
		t.Fatalf("re-probe at %v: %+v, want the getstatus re-probe on its schedule", due.Sub(t0), got)
	}
}
