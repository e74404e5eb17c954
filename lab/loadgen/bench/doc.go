//go:build linux

// Package bench holds the master benchmarks of scout-lab load and
// scout-lab webload on top of package loadgen's generators: masters to
// measure (Target, started and stopped by the benchmark when it is given
// their command), a fleet that registers with each, runs taken in turn
// with their medians and ratios (Run), a reflection flood (Config.Flood),
// a swarm registration (Config.Swarm) and the JSON API under load (Web).
// Linux only, as loadgen is; traffic stays on loopback.
package bench
