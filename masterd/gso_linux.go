//go:build linux

package masterd

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// gsoSupported: Linux 4.18 and later segment a UDP send with a
// UDP_SEGMENT control message.
const gsoSupported = true

// gsoMaxSegments is the kernel's UDP_MAX_SEGMENTS (64 before Linux 6.12).
const gsoMaxSegments = 64

// appendUDPSegment appends the control message asking the kernel to cut
// the datagram into segments of size bytes of payload (the last may be
// shorter).
func appendUDPSegment(oob []byte, size int) []byte {
	n := len(oob)
	oob = append(oob, make([]byte, unix.CmsgSpace(2))...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[n]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(oob[n+unix.CmsgLen(0):], uint16(size))
	return oob
}
