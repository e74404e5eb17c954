//go:build !linux

package master

const gsoSupported = false

const gsoMaxSegments = 1

func appendUDPSegment(oob []byte, size int) []byte { return oob }
