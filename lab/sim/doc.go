// Package sim is a discrete-event simulator of game-server discovery in
// virtual time: a client at a place probes a world of servers (package
// population) with a strategy (package adaptive: conventional discovery in
// master order, the paper's adaptive search and its options, the oracle),
// paced like real clients, and every reply arrives after the server's RTT.
// Nothing reads a clock or sleeps; a run is a function of its inputs and
// seed.
//
// # The model of a client
//
// Probes leave at a fixed rate, Pacing.Interval apart: a full ET discovery
// took about 70 s and a CS:S one about 200 s (Armitage, NETWORKING 2008,
// figures 2 and 3), so the interval is 70 s or 200 s divided by the number
// of servers. At most Pacing.Window probes are outstanding (16 for ET, as
// ioquake3-derived clients do; 0, unlimited, for CS:S); a send that would
// exceed it waits for the next reply or timeout. Each server is silent with
// probability Pacing.Loss (the same servers for every strategy of a run),
// and a probe to it is reported unanswered after Pacing.Timeout. An answered probe's RTT is the path's base RTT
// (population.World.RTTs) plus per-probe jitter (population.Jitter). When a
// strategy has nothing to send until outstanding probes come back (adaptive
// calibration), sending resumes at the next reply, no earlier than the
// pacing allows.
//
// # Measured RTTs and landmarks
//
// With Spec.Mesh the city-to-city part of every RTT is a measured mesh
// (population.MeshLatency: WonderProxy's, read at run time) and the row
// also runs discovery with landmarks (package landmark's Planner): K
// masters in K cities have measured every server (each entry the median of
// MeasureSamples probes, offsets included, as a master's own probes would
// be), the client its RTT to each master, and the planner orders and stops
// from those vectors. Their outcomes follow the variants' in Row.Variants,
// with the playable servers they missed and the unplayable ones they
// probed, by region.
//
// # Events
//
// The engine is a priority queue of events ordered by virtual time, then by
// the order they were scheduled (Queue); ties are therefore deterministic.
package sim
