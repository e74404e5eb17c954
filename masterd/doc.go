// Package masterd runs scout's master server: the thin shell around the
// pure decision core in package master. It owns everything the core does
// not: the UDP sockets (one goroutine per socket, replies sent in one
// sendmmsg per reply with UDP segmentation offload on Linux; per socket,
// a sender goroutine for long replies and an encoder goroutine for the
// first reply of a large listing's query shape, so that neither holds up
// the socket loop, see DefaultDeferEncoding), the clock
// (each datagram is timestamped at the read; a ticker drives expiry and
// re-probes every TickInterval), the state writer that hands listing
// changes to a Store (master/store) off the packet path as a group commit
// (everything pending in one transaction, at most every
// Config.CommitInterval; master/store's doc states what survives a
// kill -9), with the player-count history (history.History, fed by the
// handler's verified replies) when the Store is a HistoryStore: its
// changed days go in the same commits, so a sample is on disk within the
// commit interval too, and it is read back at start; likewise the
// players' sightings (history.Sightings, fed by the registry's player
// lists) when the Store is a PlayerStore; the HTTP endpoints
// (the JSON API under /api/ and the page at /, package web; the legacy
// /servers; /healthz) and the Prometheus metrics (/metrics).
//
// With Deps.Fleet (package fleet) the registry is shared with other
// instances instead of kept in a Store: NewMaster joins the fleet (reads
// the shared registry), the handler hands its changes to the fleet, Run
// runs it, /metrics gains its scout_fleet_* figures and the legacy
// /servers reads the shared registry itself. When the fleet is a
// HistoryFleet (package fleet's is) the player history is kept there too:
// read back at NewMaster, its changed days written every
// FleetHistoryInterval. The players' sightings are each instance's own, in
// memory: player lists are not shared either.
//
// It is configured by one typed Config of plain values that library users
// fill directly (the demo, discobench, tests); every zero field is its
// default, and the embedded Reloadable is what may change while it runs.
// What it works with (state store, fleet, logger) is a Deps. dpmaster's
// command-line syntax is not here: scout master (cmd/scout) parses it and
// its --config file into a Config (docs/config.md).
//
//	m, err := masterd.NewMaster(time.Now(), masterd.Config{
//		Listen: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:27950")},
//	}, masterd.Deps{})
//	if err != nil { ... }
//	if err := m.Listen(); err != nil { ... }
//	err = m.Run(ctx) // until ctx ends; pending state is written before it returns
//
// A PacketServer can also be run on a socket of the caller's
// (PacketServer.Serve, PacketServer.Tick), as the demo does behind its
// address translation.
package masterd
