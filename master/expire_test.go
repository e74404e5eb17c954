package master

import (
	"slices"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

func TestRegistry_HeartbeatAloneNeverExtends(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	// Heartbeats keep coming but the server never answers again.
	for m := time.Duration(1); m < 15; m++ {
		r.Heartbeat(t0.Add(m*time.Minute), a, q3hb)
		r.Expire(t0.Add(m*time.Minute+time.Second), nil) // unanswered checks
	}
	s, ok := r.Lookup(a)
	if ok && !s.LastVerified.Equal(t0) {
		t.Errorf("LastVerified moved to %v", s.LastVerified)
	}
	if ok {
		t.Errorf("server still registered after unanswered checks: %+v", s)
	}
}

func TestRegistry_HeartbeatNeverExtendsSilentExpiry(t *testing.T) {
	r := newTestRegistry(t, Config{MaxMissedProbes: 1000})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	for _, c := range []struct {
		at   time.Duration
		gone bool
	}{
		{DefaultTimeout - time.Nanosecond, false},
		{DefaultTimeout, true},
	} {
		rr := newTestRegistry(t, Config{MaxMissedProbes: 1000})
		register(t, rr, t0, a)
		// A heartbeat just before, without any reply.
		rr.Heartbeat(t0.Add(c.at-time.Nanosecond), a, q3hb)
		rem := rr.Expire(t0.Add(c.at), nil)
		gone := slices.ContainsFunc(rem, func(x Removal) bool { return x.Addr == a && x.Reason == ReasonSilent })
		if gone != c.gone {
			t.Errorf("at +%v: removed %v, want %v (%v)", c.at, gone, c.gone, rem)
		}
	}
}

func TestRegistry_FlatlineDoesNotDelistLiveServer(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	r.Heartbeat(t0, a, Heartbeat{Family: game.FamilyQ3, Tag: "EnemyTerritory-1"})
	p0, _ := r.Lookup(a)
	_ = p0
	// list an ET server
	r = newTestRegistry(t, Config{})
	et := Heartbeat{Family: game.FamilyQ3, Tag: "EnemyTerritory-1"}
	p, _ := r.Heartbeat(t0, a, et)
	if _, _, why := r.Verify(t0, a, infoReply(p.Challenge.Text, "gamename", "et", "protocol", "84")); why != OK {
		t.Fatal(why)
	}
	// A spoofed flatline: the master checks at once...
	fl := Heartbeat{Family: game.FamilyQ3, Tag: "ETFlatline-1"}
	p, why := r.Heartbeat(t0.Add(time.Minute), a, fl)
	if why != OK || p.Cause != CauseFlatline || p.To != a {
		t.Fatalf("flatline: %+v %v", p, why)
	}
	if rem := r.Expire(t0.Add(time.Minute), nil); len(rem) != 0 {
		t.Fatalf("flatline delisted at once: %v", rem)
	}
	// ...the live server answers, and stays listed.
	if _, _, why := r.Verify(t0.Add(time.Minute+time.Second), a, infoReply(p.Challenge.Text, "gamename", "et", "protocol", "84")); why != OK {
		t.Fatal(why)
	}
	if rem := r.Expire(t0.Add(2*time.Minute), nil); len(rem) != 0 {
		t.Errorf("removed %v", rem)
	}
	// A real shutdown: the check goes unanswered and the server goes, at
	// sentAt+ChallengeLifetime exactly.
	sent := t0.Add(3 * time.Minute)
	r.Heartbeat(sent, a, fl)
	if rem := r.Expire(sent.Add(DefaultChallengeLifetime-time.Nanosecond), nil); len(rem) != 0 {
		t.Errorf("removed early: %v", rem)
	}
	rem := r.Expire(sent.Add(DefaultChallengeLifetime), nil)
	if len(rem) != 1 || rem[0].Reason != ReasonCheckUnanswered || !rem[0].Listed {
		t.Errorf("removal = %v", rem)
	}
	// Its version in a fleet is the shutdown's check, newer than the
	// last verification: it undoes any check made before the shutdown.
	if len(rem) == 1 && (!rem[0].Shutdown.Equal(sent) || !rem[0].Version().Equal(sent) || !rem[0].LastVerified.Before(sent)) {
		t.Errorf("removal = %+v, want Shutdown and Version %v", rem[0], sent)
	}
}

func TestRegistry_PendingExpires(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	r.Heartbeat(t0, a, q3hb)
	if rem := r.Expire(t0.Add(DefaultChallengeLifetime-time.Nanosecond), nil); len(rem) != 0 {
		t.Errorf("early: %v", rem)
	}
	rem := r.Expire(t0.Add(DefaultChallengeLifetime), nil)
	if len(rem) != 1 || rem[0].Reason != ReasonChallengeTimedOut || rem[0].Listed {
		t.Errorf("got %v", rem)
	}
	if l, p := r.Counts(); l != 0 || p != 0 {
		t.Errorf("counts %d %d", l, p)
	}
}

func TestRegistry_ReprobeDue(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	due := t0.Add(game.Q3AReprobeInterval)
	if got := r.DueProbes(due.Add(-time.Nanosecond), nil, 0); len(got) != 0 {
		t.Errorf("early: %v", got)
	}
	got := r.DueProbes(due, nil, 0)
	if len(got) != 1 || got[0].Requests != game.GetStatus || got[0].Cause != CauseReprobe {
		t.Fatalf("got %+v", got)
	}
	// A statusResponse answers it; clients come from the player lines.
	rep := infoReply(got[0].Challenge.Text, "clients", "\x00delete")
	rep.Kind, rep.Players = ReplyStatus, 2
	s, ch, why := r.Verify(due.Add(time.Millisecond), a, rep)
	if why != OK || ch != ChangeUpdated || s.Clients != 2 {
		t.Errorf("%v %v %+v", why, ch, s)
	}
}

func TestRegistry_ETReprobe(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	p, _ := r.Heartbeat(t0, a, Heartbeat{Family: game.FamilyQ3, Tag: "EnemyTerritory-1"})
	r.Verify(t0, a, infoReply(p.Challenge.Text, "gamename", "et", "protocol", "84"))
	got := r.DueProbes(t0.Add(game.ETReprobeInterval), nil, 0)
	if len(got) != 1 || got[0].Requests != game.GetChallenge|game.GetStatus|game.GetInfo {
		t.Errorf("got %+v", got)
	}
}

func TestRegistry_MissedProbesDrop(t *testing.T) {
	r := newTestRegistry(t, Config{MaxMissedProbes: 2})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	now := t0
	var rem []Removal
	for i := 0; i < 2; i++ {
		now = now.Add(game.Q3AReprobeInterval)
		if len(r.DueProbes(now, nil, 0)) != 1 {
			t.Fatal("no probe")
		}
		rem = r.Expire(now.Add(DefaultChallengeLifetime), nil)
		if i == 0 && len(rem) != 0 {
			t.Fatalf("dropped after one miss: %v", rem)
		}
	}
	if len(rem) != 1 || rem[0].Reason != ReasonProbesUnanswered {
		t.Errorf("got %v", rem)
	}
}
