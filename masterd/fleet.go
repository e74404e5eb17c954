package masterd

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scout-discovery/scout/master"
)

// FleetJoinTimeout bounds NewMaster's first read of a fleet's shared
// registry; a fleet that cannot be reached within it starts the
// instance empty and catches up later (see package fleet).
const FleetJoinTimeout = 30 * time.Second

// Fleet is a registry shared with other instances (package fleet
// implements it on Redis). NewMaster joins it and gives it to the
// handler as its Persister; Run runs it; /metrics exposes it; /servers
// lists its Servers, so that every instance serves the same list.
type Fleet interface {
	master.FleetPersister
	prometheus.Collector
	// Join reads the shared registry into reg and sets reg's share; obs
	// (nil: none) is told of every verification another instance made,
	// as the handler tells it of this one's.
	Join(ctx context.Context, reg *master.Registry, obs master.Observer) error
	// Run follows the fleet until ctx ends, then writes what is queued.
	Run(ctx context.Context)
	// Servers reads the shared registry.
	Servers(ctx context.Context) ([]master.Server, error)
}
