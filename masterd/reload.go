package masterd

import (
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/scout-discovery/scout/master"
)

// Reload applies cfg to the running master, as a SIGHUP does: the fields of
// Reloadable that the running parts can take are applied without losing a
// listed server (the registry's limits, games, policy, address map and
// expiry; the handler's packet layout, MOTD, peers and upstreams; the flood
// protections on heartbeats and queries; the outbound budget; the landmark
// peers). It returns the fields it changed and those that differ but need a
// restart (the sockets, the HTTP address, the state file's interval, the
// challenge lifetime, switching between the defences on queries, the
// response limiter's figures, the JSON API's limits). A cfg the master
// cannot run with is refused whole: nothing is applied.
func (m *Master) Reload(now time.Time, cfg Config) (changed, restart []string, err error) {
	cfg = cfg.withDefaults()
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	old := m.running

	// What only a restart changes.
	restart = diff("", reflect.ValueOf(withoutReloadable(m.Config)), reflect.ValueOf(withoutReloadable(cfg)))
	next := old
	reg := cfg.Registry
	if reg.ChallengeLifetime != old.Registry.ChallengeLifetime || reg.LandmarkPingInterval != old.Registry.LandmarkPingInterval {
		restart = append(restart, "Registry.ChallengeLifetime/LandmarkPingInterval")
		reg.ChallengeLifetime, reg.LandmarkPingInterval = old.Registry.ChallengeLifetime, old.Registry.LandmarkPingInterval
	}
	for _, f := range []struct {
		name    string
		changed bool
	}{
		{"NoQueryLimit", cfg.NoQueryLimit != old.NoQueryLimit},
		{"SourceThrottle", cfg.SourceThrottle != old.SourceThrottle},
		{"Responses", !reflect.DeepEqual(cfg.Responses, old.Responses)},
		{"API", !reflect.DeepEqual(cfg.API, old.API)},
	} {
		if f.changed {
			restart = append(restart, f.name)
		}
	}

	// Check everything before applying anything.
	chal, err := master.NewChallenger(max(m.Config.ChallengeRotation, reg.ChallengeLifetime), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if _, err := master.NewRegistry(reg, chal); err != nil {
		return nil, nil, err
	}
	if _, err := master.NewHandler(cfg.Handler, master.HandlerDeps{Registry: m.Registry}); err != nil {
		return nil, nil, err
	}
	if _, err := master.NewSourceLimiter(cfg.Heartbeats.Throttle, cfg.Heartbeats.Decay, cfg.MaxSources); err != nil {
		return nil, nil, err
	}
	if _, err := master.NewSourceLimiter(cfg.Queries.Throttle, cfg.Queries.Decay, cfg.MaxSources); err != nil {
		return nil, nil, err
	}
	if _, err := master.NewByteBudget(cfg.OutRate, cfg.OutBurst); err != nil {
		return nil, nil, err
	}
	peersChanged := !reflect.DeepEqual(cfg.LandmarkPeers, old.LandmarkPeers)
	if peersChanged && (m.Config.Landmark == nil || m.deps.Fleet != nil) {
		return nil, nil, errors.New("masterd: landmark peers are for a landmark master alone")
	}

	// Apply.
	deps := m.Handler.Deps()
	if c := diff("Registry.", reflect.ValueOf(old.Registry), reflect.ValueOf(reg)); len(c) > 0 {
		if err := m.Registry.SetConfig(reg); err != nil {
			return nil, nil, err
		}
		next.Registry, changed = reg, append(changed, c...)
	}
	if c := diff("Handler.", reflect.ValueOf(old.Handler), reflect.ValueOf(cfg.Handler)); len(c) > 0 {
		if err := m.Handler.SetConfig(cfg.Handler); err != nil {
			return changed, restart, err
		}
		next.Handler, changed = cfg.Handler, append(changed, c...)
	}
	if cfg.Heartbeats != old.Heartbeats || cfg.MaxSources != old.MaxSources {
		if deps.Heartbeats != nil {
			deps.Heartbeats.SetLimits(cfg.Heartbeats.Throttle, cfg.Heartbeats.Decay, cfg.MaxSources)
		}
		next.Heartbeats, changed = cfg.Heartbeats, append(changed, "Heartbeats")
	}
	if cfg.Queries != old.Queries || cfg.MaxSources != old.MaxSources {
		if deps.Queries != nil {
			deps.Queries.SetLimits(cfg.Queries.Throttle, cfg.Queries.Decay, cfg.MaxSources)
		}
		next.Queries, changed = cfg.Queries, append(changed, "Queries")
	}
	if cfg.MaxSources != old.MaxSources {
		next.MaxSources, changed = cfg.MaxSources, append(changed, "MaxSources")
	}
	if cfg.OutRate != old.OutRate || cfg.OutBurst != old.OutBurst {
		if deps.Budget != nil {
			deps.Budget.SetLimits(cfg.OutRate, cfg.OutBurst)
		}
		next.OutRate, next.OutBurst, changed = cfg.OutRate, cfg.OutBurst, append(changed, "OutRate/OutBurst")
	}
	if peersChanged {
		if n := m.Registry.Mesh().SetPeers(now, cfg.LandmarkPeers); n != len(cfg.LandmarkPeers) {
			return changed, restart, fmt.Errorf("masterd: %d of %d landmark peers kept", n, len(cfg.LandmarkPeers))
		}
		next.LandmarkPeers, changed = cfg.LandmarkPeers, append(changed, "LandmarkPeers")
	}
	m.running = next
	return changed, restart, nil
}

// withoutReloadable is c with its run-time part zeroed, to compare the rest.
func withoutReloadable(c Config) Config {
	c.Reloadable = Reloadable{}
	return c
}

// diff names the fields of two values of one struct type that differ
// (prefix + field name), comparing each field whole.
func diff(prefix string, a, b reflect.Value) []string {
	var out []string
	for i := range a.NumField() {
		f := a.Type().Field(i)
		if f.IsExported() && !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			out = append(out, prefix+f.Name)
		}
	}
	return out
}
