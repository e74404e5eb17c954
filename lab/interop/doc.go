// Package interop holds scout's tests against real third-party programs:
// an OpenArena dedicated server, qstat and gamedig (see internal/peer).
// It has no non-test code.
package interop
