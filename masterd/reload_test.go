package masterd

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestMaster_ReloadAppliesOrNamesARestart: Reload applies the run-time
// fields, names those that need a restart, and refuses a configuration it
// cannot run with whole, applying none of it.
func TestMaster_ReloadAppliesOrNamesARestart(t *testing.T) {
	cfg := Config{Listen: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}}
	m, err := NewMaster(time.Now(), cfg, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	next := cfg
	next.Registry.MaxServers = 10
	next.Handler.MOTD = "hello"
	next.OutRate = 1_000_000
	next.HTTP = "127.0.0.1:0"
	next.Responses.VictimRate = 1000
	changed, restart, err := m.Reload(time.Now(), next)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Registry.MaxServers", "Handler.MOTD", "OutRate/OutBurst"} {
		if !slices.Contains(changed, want) {
			t.Errorf("changed %v lacks %s", changed, want)
		}
	}
	for _, want := range []string{"HTTP", "Responses"} {
		if !slices.Contains(restart, want) {
			t.Errorf("restart %v lacks %s", restart, want)
		}
	}
	if m.Registry.Config().MaxServers != 10 || m.Handler.Config().MOTD != "hello" {
		t.Fatalf("not applied: MaxServers %d, MOTD %q", m.Registry.Config().MaxServers, m.Handler.Config().MOTD)
	}

	// Again: nothing more changes.
	if changed, _, err := m.Reload(time.Now(), next); err != nil || len(changed) != 0 {
		t.Fatalf("the same configuration again: changed %v, %v", changed, err)
	}

	bad := next
	bad.Registry.MaxServers = 20
	bad.Heartbeats.Throttle = 1 // below dpmaster's bound
	if _, _, err := m.Reload(time.Now(), bad); err == nil {
		t.Fatal("a heartbeat throttle of 1 was accepted")
	}
	if got := m.Registry.Config().MaxServers; got != 10 {
		t.Fatalf("a refused reload changed MaxServers to %d", got)
	}
}
