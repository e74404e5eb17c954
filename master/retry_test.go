package master

import (
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

// probesUntil calls DueProbes every step from `from` (exclusive) to `to`
// (inclusive) and returns every probe it gave, in order.
func probesUntil(r *Registry, from, to time.Time, step time.Duration) []Probe {
	var out []Probe
	for now := from.Add(step); !now.After(to); now = now.Add(step) {
		out = r.DueProbes(now, out, 0)
	}
	return out
}

func TestRegistry_RetryListsAfterFirstReplyLost(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	p0, why := r.Heartbeat(t0, a, q3hb)
	if why != OK || p0.Try != 0 {
		t.Fatalf("heartbeat: %+v %v", p0, why)
	}
	// The reply to p0 is lost. Nothing is resent before the delay...
	if got := r.DueProbes(t0.Add(DefaultVerifyRetryDelay-time.Nanosecond), nil, 0); len(got) != 0 {
		t.Fatalf("retry before %v: %+v", DefaultVerifyRetryDelay, got)
	}
	// ...then the check goes again, to the same address, for the same reason.
	at := t0.Add(DefaultVerifyRetryDelay)
	got := r.DueProbes(at, nil, 0)
	if len(got) != 1 || got[0].To != a || got[0].Try != 1 || got[0].Cause != CauseHeartbeat || got[0].Requests != game.GetInfo {
		t.Fatalf("retry = %+v", got)
	}
	// A heartbeat meanwhile sends nothing more.
	if _, why := r.Heartbeat(at, a, q3hb); why != ReasonProbeOutstanding {
		t.Fatalf("heartbeat during the check: %v", why)
	}
	if r.VerifiedAfterRetry() != 0 {
		t.Fatal("counted before any verification")
	}
	s, ch, why := r.Verify(at.Add(50*time.Millisecond), a, infoReply(got[0].Challenge.Text))
	if why != OK || ch != ChangeListed || !s.Listed {
		t.Fatalf("reply to the retry: %v %v", ch, why)
	}
	if n := r.VerifiedAfterRetry(); n != 1 {
		t.Errorf("VerifiedAfterRetry = %d, want 1", n)
	}
	// The check is over: no more retries, nothing removed.
	if got := probesUntil(r, at, t0.Add(DefaultChallengeLifetime), 100*time.Millisecond); len(got) != 0 {
		t.Errorf("probes after verification: %+v", got)
	}
	if rem := r.Expire(t0.Add(DefaultChallengeLifetime), nil); len(rem) != 0 {
		t.Errorf("removed %v", rem)
	}
}

func TestRegistry_RetryAllLost(t *testing.T) {
	for _, retries := range []int{-1, 1, 2} {
		r := newTestRegistry(t, Config{VerifyRetries: retries})
		a := ap("198.51.100.7:27960")
		if _, why := r.Heartbeat(t0, a, q3hb); why != OK {
			t.Fatal(why)
		}
		end := t0.Add(DefaultChallengeLifetime)
		got := probesUntil(r, t0, end.Add(10*time.Second), 10*time.Millisecond)
		want := max(retries, 0)
		if len(got) != want {
			t.Fatalf("retries %d: %d retries sent, want %d: %+v", retries, len(got), want, got)
		}
		for k, p := range got {
			if p.Try != k+1 || p.To != a {
				t.Errorf("retry %d: %+v", k, p)
			}
			// Due at 1 s, 3 s after the first try (10 ms steps: on time).
			if off := retryOffset(DefaultVerifyRetryDelay, k+1); off >= DefaultChallengeLifetime {
				t.Errorf("retry %d due at %v, after the check's end", k+1, off)
			}
		}
		// Re-run with Expire: the server goes at the check's end, unlisted.
		r = newTestRegistry(t, Config{VerifyRetries: retries})
		r.Heartbeat(t0, a, q3hb)
		probesUntil(r, t0, end.Add(-time.Nanosecond), 10*time.Millisecond)
		if rem := r.Expire(end.Add(-time.Nanosecond), nil); len(rem) != 0 {
			t.Errorf("removed early: %v", rem)
		}
		rem := r.Expire(end, nil)
		if len(rem) != 1 || rem[0].Reason != ReasonChallengeTimedOut || rem[0].Listed {
			t.Errorf("removal = %v", rem)
		}
		if l, p := r.Counts(); l != 0 || p != 0 {
			t.Errorf("counts %d listed, %d pending", l, p)
		}
	}
}

func TestRegistry_RetryChallenges(t *testing.T) {
	a := ap("198.51.100.7:27960")
	// A check whose retry falls in the next challenge epoch: the reply to
	// either try is valid.
	for _, answer := range []int{0, 1} {
		r := newTestRegistry(t, Config{})
		first := t0.Add(-DefaultVerifyRetryDelay / 2) // t0 is epoch-aligned
		p0, _ := r.Heartbeat(first, a, q3hb)
		p1 := r.DueProbes(first.Add(DefaultVerifyRetryDelay), nil, 0)
		if len(p1) != 1 || p1[0].Challenge == p0.Challenge {
			t.Fatalf("retry %+v: want a new epoch's challenge", p1)
		}
		c := []string{p0.Challenge.Text, p1[0].Challenge.Text}[answer]
		if _, _, why := r.Verify(first.Add(2*DefaultVerifyRetryDelay), a, infoReply(c)); why != OK {
			t.Errorf("reply to try %d: %v", answer, why)
		}
	}
	// A challenge of an earlier check, still a valid HMAC for this
	// address (previous epoch), is stale for the check in flight.
	r := newTestRegistry(t, Config{})
	old, _ := r.Heartbeat(t0.Add(-30*time.Second), a, q3hb)
	if _, _, why := r.Verify(t0.Add(-30*time.Second), a, infoReply(old.Challenge.Text)); why != OK {
		t.Fatal(why)
	}
	now := t0.Add(10 * time.Second)
	if _, why := r.Heartbeat(now, a, q3hb); why != OK {
		t.Fatal(why)
	}
	if why := r.chal.Check(now, a, old.Challenge.Text); why != OK {
		t.Fatalf("test premise: the old challenge is no longer an HMAC the challenger accepts (%v)", why)
	}
	if _, _, why := r.Verify(now, a, infoReply(old.Challenge.Text)); why != ReasonChallengeExpired {
		t.Errorf("stale challenge: %v, want %v", why, ReasonChallengeExpired)
	}
	// After the check's end, a reply to any of its tries is refused.
	p := r.DueProbes(now.Add(DefaultVerifyRetryDelay), nil, 0)
	if len(p) != 1 {
		t.Fatalf("retry %+v", p)
	}
	if _, _, why := r.Verify(now.Add(DefaultChallengeLifetime), a, infoReply(p[0].Challenge.Text)); why != ReasonChallengeExpired {
		t.Errorf("reply after the check's end: %v", why)
	}
}

// A listed server is not dropped on one lost reply, to a heartbeat check,
// a flatline check or a re-probe.
func TestRegistry_RetryKeepsListedServer(t *testing.T) {
	a := ap("198.51.100.7:27960")
	et := Heartbeat{Family: game.FamilyQ3, Tag: "EnemyTerritory-1"}
	for _, c := range []struct {
		name  string
		start func(r *Registry, now time.Time) Probe
		cause ProbeCause
	}{
		{"heartbeat", func(r *Registry, now time.Time) Probe { p, _ := r.Heartbeat(now, a, et); return p }, CauseHeartbeat},
		{"flatline", func(r *Registry, now time.Time) Probe { p, _ := r.Flatline(now, a); return p }, CauseFlatline},
		{"reprobe", func(r *Registry, now time.Time) Probe {
			p := r.DueProbes(now, nil, 0)
			if len(p) != 1 {
				return Probe{}
			}
			return p[0]
		}, CauseReprobe},
	} {
		r := newTestRegistry(t, Config{MaxMissedProbes: 1})
		p, _ := r.Heartbeat(t0, a, et)
		if _, _, why := r.Verify(t0, a, infoReply(p.Challenge.Text, "gamename", "et", "protocol", "84")); why != OK {
			t.Fatal(why)
		}
		now := t0.Add(game.ETReprobeInterval)
		p = c.start(r, now)
		if p.Cause != c.cause || p.Try != 0 {
			t.Fatalf("%s: check %+v", c.name, p)
		}
		retry := r.DueProbes(now.Add(DefaultVerifyRetryDelay), nil, 0)
		if len(retry) != 1 || retry[0].Cause != c.cause || retry[0].Requests != p.Requests {
			t.Fatalf("%s: retry %+v, want the check's requests again", c.name, retry)
		}
		rep := infoReply(retry[0].Challenge.Text, "gamename", "et", "protocol", "84")
		if _, ch, why := r.Verify(now.Add(DefaultVerifyRetryDelay), a, rep); why != OK || ch == ChangeNone {
			t.Errorf("%s: %v %v", c.name, ch, why)
		}
		if rem := r.Expire(now.Add(DefaultChallengeLifetime), nil); len(rem) != 0 {
			t.Errorf("%s: removed %v", c.name, rem)
		}
	}
}

func TestRegistry_RetryConfig(t *testing.T) {
	ch, _ := NewChallenger(DefaultRotationPeriod, &countRand{})
	for _, c := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{VerifyRetries: -1}, true},
		{Config{VerifyRetries: MaxVerifyRetries + 1}, false},
		// 1 s, 3 s, 7 s: the third retry falls after the 5 s lifetime.
		{Config{VerifyRetries: 3}, false},
		{Config{VerifyRetries: 3, VerifyRetryDelay: 500 * time.Millisecond}, true},
		{Config{VerifyRetries: 2, VerifyRetryDelay: 2 * time.Second}, false},
		{Config{VerifyRetryDelay: -time.Second}, false},
	} {
		_, err := NewRegistry(c.cfg, ch)
		if (err == nil) != c.ok {
			t.Errorf("%+v: err %v", c.cfg, err)
		}
	}
}

// Through the handler: packets out per heartbeat, with the first reply
// lost, and with every reply lost; the counters.
func TestMaster_VerifyRetries(t *testing.T) {
	srv := ap("203.0.113.9:27960")
	// run sends a heartbeat at f.now and ticks every 100 ms for 10 s,
	// answering the try numbered answer (none if negative). It returns
	// every getinfo sent.
	run := func(f *hfix, answer int) []Outgoing {
		start := f.now
		var sent []Outgoing
		take := func(out []Outgoing) {
			for _, o := range out {
				if o.To != srv || o.Kind != KindGetInfo {
					t.Fatalf("sent %v", o)
				}
				if len(sent) == answer {
					f.in(srv, oaInfo(challengeOf(t, []Outgoing{o}, KindGetInfo)))
				}
				sent = append(sent, o)
			}
		}
		take(f.in(srv, oaHeartbeat))
		for f.now.Before(start.Add(10 * time.Second)) {
			f.now = f.now.Add(100 * time.Millisecond)
			take(f.h.Tick(f.now, nil))
		}
		return sent
	}
	f := newHandlerFix(t, Config{}, nil)
	if sent := run(f, 1); len(sent) != 2 {
		t.Fatalf("first reply lost: %d getinfo sent, want 2", len(sent))
	}
	if s, ok := f.h.Registry().Lookup(srv); !ok || !s.Listed {
		t.Fatalf("not listed after the retry (drops %v)", f.dropSummary())
	}
	if n := f.h.Stats().Retries(CauseHeartbeat); n != 1 {
		t.Errorf("retries counted %d, want 1", n)
	}
	if n := f.h.Registry().VerifiedAfterRetry(); n != 1 {
		t.Errorf("verified after retry %d, want 1", n)
	}
	if n := f.h.Stats().Probes(CauseHeartbeat); n != 1 {
		t.Errorf("checks counted %d, want 1", n)
	}

	for _, retries := range []int{-1, 1, DefaultVerifyRetries} {
		g := newHandlerFix(t, Config{VerifyRetries: retries}, nil)
		sent := run(g, -1)
		if want := 1 + max(retries, 0); len(sent) != want {
			t.Errorf("retries %d, every reply lost: %d getinfo sent, want %d", retries, len(sent), want)
		}
		if _, ok := g.h.Registry().Lookup(srv); ok {
			t.Errorf("retries %d: a server that never answered is still known", retries)
		}
		if g.h.Stats().Removed(ReasonChallengeTimedOut) != 1 || g.h.Registry().VerifiedAfterRetry() != 0 {
			t.Errorf("retries %d: removed %d, verified after retry %d", retries,
				g.h.Stats().Removed(ReasonChallengeTimedOut), g.h.Registry().VerifiedAfterRetry())
		}
	}
}

// A spoofed heartbeat flood from one source is still cut by the heartbeat
// limiter: the victim gets at most 1+VerifyRetries getinfo per admitted
// heartbeat, and none for the refused ones.
func TestMaster_RetriesBoundedUnderHeartbeatFlood(t *testing.T) {
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, func(hc *handlerSetup) {
		hc.Heartbeats, _ = NewSourceLimiter(4, time.Second, 100)
	})
	victim := netip.MustParseAddr("203.0.113.9")
	toVictim, admitted := 0, 0
	for i := range 100 {
		out := f.in(netip.AddrPortFrom(victim, uint16(20000+i)), oaHeartbeat)
		admitted += len(out)
		toVictim += len(out)
	}
	end := f.now.Add(10 * time.Second)
	for f.now.Before(end) {
		f.now = f.now.Add(100 * time.Millisecond)
		toVictim += len(f.h.Tick(f.now, nil))
	}
	if admitted == 0 || admitted >= 100 {
		t.Fatalf("%d of 100 heartbeats admitted: the limiter is not in the way", admitted)
	}
	if want := admitted * (1 + DefaultVerifyRetries); toVictim != want {
		t.Errorf("%d packets to the victim for %d admitted heartbeats, want %d", toVictim, admitted, want)
	}
}
