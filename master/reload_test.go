package master

import (
	"testing"
	"time"
)

// TestRegistry_SetConfigKeepsTheList reloads the registry's configuration
// with fewer servers allowed, then a game rejected: the listed servers stay
// listed, and new heartbeats meet the new limits.
func TestRegistry_SetConfigKeepsTheList(t *testing.T) {
	r := newTestRegistry(t, Config{})
	now := t0
	a, b := ap("203.0.113.1:27960"), ap("203.0.113.2:27960")
	register(t, r, now, a)
	register(t, r, now, b)

	cfg := r.Config()
	cfg.MaxServers = 2
	cfg.ChallengeLifetime = time.Hour // cannot change: tied to the challenger
	if err := r.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if got := r.Config(); got.MaxServers != 2 || got.ChallengeLifetime != DefaultChallengeLifetime {
		t.Fatalf("config after SetConfig: MaxServers %d, ChallengeLifetime %v", got.MaxServers, got.ChallengeLifetime)
	}
	if got := len(r.Servers(nil)); got != 2 {
		t.Fatalf("%d servers listed after the reload, want both kept", got)
	}
	if _, why := r.Heartbeat(now, ap("203.0.113.3:27960"), q3hb); why != ReasonServerListFull {
		t.Fatalf("a third server: %v, want %v", why, ReasonServerListFull)
	}
	cfg.MaxServers = 10
	cfg.Policy = mustPolicy(t, "reject", "Quake3Arena")
	if err := r.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if _, why := r.Heartbeat(now, ap("203.0.113.3:27960"), q3hb); why != ReasonGamePolicy {
		t.Fatalf("a rejected game's heartbeat: %v, want %v", why, ReasonGamePolicy)
	}
	cfg.MaxServers = -1
	if err := r.SetConfig(cfg); err == nil {
		t.Fatal("a negative limit was accepted")
	}
	if r.Config().MaxServers != 10 {
		t.Fatal("a refused configuration replaced the one in force")
	}
}
