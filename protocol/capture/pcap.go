package capture

import (
	"encoding/binary"
	"fmt"
	"time"
)

const (
	pcapHeaderLen = 24
	pcapRecordLen = 16
)

// parsePCAP reads a libpcap file: a 24-byte header whose magic number gives
// the byte order and the timestamp unit (0xa1b2c3d4 microseconds,
// 0xa1b23c4d nanoseconds), then records of a 16-byte header (seconds,
// fraction, captured length, original length) and the captured bytes.
func parsePCAP(b []byte, o *out) error {
	if len(b) < pcapHeaderLen {
		return fmt.Errorf("%w: pcap file header: %d of %d bytes", ErrTruncated, len(b), pcapHeaderLen)
	}
	var (
		bo   binary.ByteOrder
		nano bool
	)
	switch string(b[:4]) {
	case "\xd4\xc3\xb2\xa1":
		bo = binary.LittleEndian
	case "\xa1\xb2\xc3\xd4":
		bo = binary.BigEndian
	case "\x4d\x3c\xb2\xa1":
		bo, nano = binary.LittleEndian, true
	case "\xa1\xb2\x3c\x4d":
		bo, nano = binary.BigEndian, true
	default:
		return fmt.Errorf("%w: pcap magic %x", ErrFormat, b[:4])
	}
	// The link type is the low 16 bits; the high bits may say whether
	// frames end in a frame check sequence, which the UDP length excludes.
	link := Link(bo.Uint32(b[20:]) & 0xffff)
	if !link.supported() {
		return fmt.Errorf("%w: pcap file link type %d", ErrUnsupportedLink, link)
	}
	b = b[pcapHeaderLen:]
	for n := 1; len(b) > 0; n++ {
		if len(b) < pcapRecordLen {
			return fmt.Errorf("%w: pcap record %d header: %d of %d bytes", ErrTruncated, n, len(b), pcapRecordLen)
		}
		sec, frac := bo.Uint32(b[0:]), bo.Uint32(b[4:])
		incl := bo.Uint32(b[8:])
		if incl > MaxRecord {
			return fmt.Errorf("%w: pcap record %d: %d bytes, more than MaxRecord (%d)", ErrTooLarge, n, incl, MaxRecord)
		}
		b = b[pcapRecordLen:]
		if int(incl) > len(b) {
			return fmt.Errorf("%w: pcap record %d: %d of %d bytes", ErrTruncated, n, len(b), incl)
		}
		frame := b[:incl]
		b = b[incl:]
		ns := int64(frac) * 1000
		if nano {
			ns = int64(frac)
		}
		o.stats.Records++
		if !o.frame(link, frame, time.Unix(int64(sec), ns), fmt.Sprintf("pcap record %d", n)) {
			return nil
		}
	}
	return nil
}
