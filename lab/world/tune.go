package world

import (
	"os"
	"runtime"
	"runtime/debug"
)

// Runtime settings that TuneRuntime applies.
const (
	// TunedProcs is the GOMAXPROCS TuneRuntime sets at least: more Ps than
	// cores, so that a goroutine that wakes up finds a free P even when
	// the threads holding the others have been descheduled by a loaded
	// kernel.
	TunedProcs = 8
	// TunedGCPercent makes collections rarer: each one stops the world
	// for a moment, and on a loaded machine that moment can last many
	// milliseconds, holding every due reply back. Measured with the
	// accuracy test: p99.9 lateness about 1 ms with GOGC=off, up to 8 ms
	// with the default 100.
	TunedGCPercent = 800
)

// TuneRuntime sets the Go runtime up for accurate delays in a process that
// runs an emulator (scout-lab world does this): GOMAXPROCS at least TunedProcs
// and the GC percent at TunedGCPercent, each unless the environment sets
// GOMAXPROCS or GOGC. It returns a function that restores the old values.
func TuneRuntime() (restore func()) {
	procs, gc := -1, -1
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < TunedProcs {
		procs = runtime.GOMAXPROCS(TunedProcs)
	}
	if os.Getenv("GOGC") == "" {
		gc = debug.SetGCPercent(TunedGCPercent)
	}
	return func() {
		if procs > 0 {
			runtime.GOMAXPROCS(procs)
		}
		if gc != -1 {
			debug.SetGCPercent(gc)
		}
	}
}
