// Package freeport gives a test a fixed port that no other process on the
// machine holds: a port drawn at random below the kernel's ephemeral range,
// drawn again while binding it fails because it is in use.
//
// Most tests bind port 0 and read back the port the kernel chose. Some
// cannot: an emulated fleet of game servers takes consecutive ports from
// a first one on each of its loopback addresses (loadgen.Layout), and the
// commands under test take that first port as a flag. A fixed first port
// let two copies of such a test collide whenever two test processes ran
// on the machine at once (go test -count, two worktrees, CI beside a
// developer): "bind 127.93.0.1:29100: address already in use". It is a
// test helper, with no place in production code.
package freeport

import (
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"
)

// The range drawn from: [Low, High), below Linux's default ephemeral range
// (32768-60999), so a port the kernel hands out to a socket bound to port
// 0 is never drawn, and above the game servers' usual ports (27950-27970,
// which some tests bind on purpose) by a margin a fleet's consecutive ports
// keep.
const (
	Low  = 28000
	High = 32000
)

// Attempts bounds the draws of Retry: a collision is rare (another process
// holding one of the few ports of a fleet among 4,000), so two in a row
// already say something else is wrong.
const Attempts = 20

// ErrInUse is what a bind function returns when it learned that the port
// is in use from a command's output rather than from an error value.
var ErrInUse = errors.New("freeport: address already in use")

// InUse reports whether err says that the port was in use.
func InUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, ErrInUse)
}

// Retry calls bind with a port drawn from [Low, High-span) (span: the
// ports above it that bind also takes) until bind returns nil or an error
// that is not InUse, and returns that error; after Attempts draws it fails
// the test.
func Retry(t testing.TB, span int, bind func(port uint16) error) error {
	t.Helper()
	if span < 0 || span >= High-Low {
		t.Fatalf("freeport: span %d", span)
	}
	var err error
	for range Attempts {
		port := uint16(Low + rand.IntN(High-Low-span))
		if err = bind(port); !InUse(err) {
			return err
		}
		t.Logf("port %d: %v; drawing another", port, err)
	}
	t.Fatalf("freeport: %d draws, every port in use: %v", Attempts, err)
	return err // not reached: Fatalf ends the test's goroutine
}
