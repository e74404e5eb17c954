//go:build !linux

package masterd

const gsoSupported = false

const gsoMaxSegments = 1

func appendUDPSegment(oob []byte, size int) []byte { return oob }
