package capture

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"
)

// pcapng block types.
const (
	blockSHB = 0x0A0D0D0A // section header
	blockIDB = 1          // interface description
	blockOPB = 2          // packet (obsolete)
	blockSPB = 3          // simple packet
	blockEPB = 6          // enhanced packet

	blockMinLen    = 12         // type, length, trailing length
	shbMinLen      = 28         // + byte-order magic, version, section length
	byteOrderMagic = 0x1A2B3C4D // as written in the writer's byte order

	optEndOfOpt = 0
	optTSResol  = 9  // if_tsresol: 1 byte
	optTSOffset = 14 // if_tsoffset: 8 bytes, seconds

	// MaxInterfaces is how many interfaces one pcapng section may describe.
	MaxInterfaces = 1024
)

// ngInterface is what an interface description block says about the
// packets captured on its interface.
type ngInterface struct {
	link    Link
	snaplen uint32
	resol   uint8 // if_tsresol: high bit clear: 10^-resol s; set: 2^-(resol&0x7f) s
	offset  int64 // if_tsoffset, seconds
}

// parsePCAPNG reads a pcapng file: blocks of a 4-byte type, a 4-byte total
// length, a body and the total length again, all in the byte order the
// section header block (which begins each section) declares. Interface
// description blocks give each interface's link type and timestamp unit;
// enhanced, simple and obsolete packet blocks carry frames. Other blocks are
// skipped and counted.
func parsePCAPNG(b []byte, o *out) error {
	var (
		bo     binary.ByteOrder
		ifaces []ngInterface
		n      int // packet blocks so far, 1-based in Source
	)
	for blk := 1; len(b) > 0; blk++ {
		if len(b) < blockMinLen {
			return fmt.Errorf("%w: pcapng block %d header: %d of %d bytes", ErrTruncated, blk, len(b), blockMinLen)
		}
		if binary.LittleEndian.Uint32(b) == blockSHB {
			// The byte order is not known until the magic is read.
			switch binary.LittleEndian.Uint32(b[8:]) {
			case byteOrderMagic:
				bo = binary.LittleEndian
			case bits.ReverseBytes32(byteOrderMagic):
				bo = binary.BigEndian
			default:
				return fmt.Errorf("%w: pcapng block %d: byte-order magic %x", ErrMalformed, blk, b[8:12])
			}
			ifaces = ifaces[:0]
		} else if bo == nil {
			return fmt.Errorf("%w: pcapng file does not begin with a section header block", ErrFormat)
		}
		typ, total := bo.Uint32(b), bo.Uint32(b[4:])
		switch {
		case total > MaxBlock:
			return fmt.Errorf("%w: pcapng block %d: %d bytes, more than MaxBlock (%d)", ErrTooLarge, blk, total, MaxBlock)
		case total < blockMinLen || total%4 != 0:
			return fmt.Errorf("%w: pcapng block %d: length %d", ErrMalformed, blk, total)
		case int(total) > len(b):
			return fmt.Errorf("%w: pcapng block %d: %d of %d bytes", ErrTruncated, blk, len(b), total)
		case bo.Uint32(b[total-4:]) != total:
			return fmt.Errorf("%w: pcapng block %d: trailing length %d, leading %d", ErrMalformed, blk, bo.Uint32(b[total-4:]), total)
		}
		body := b[8 : total-4]
		b = b[total:]
		switch typ {
		case blockSHB:
			if total < shbMinLen {
				return fmt.Errorf("%w: pcapng section header block %d: length %d", ErrMalformed, blk, total)
			}
			if major := bo.Uint16(body[4:]); major != 1 {
				return fmt.Errorf("%w: pcapng version %d", ErrFormat, major)
			}
		case blockIDB:
			if len(ifaces) >= MaxInterfaces {
				return fmt.Errorf("%w: more than %d pcapng interfaces", ErrTooLarge, MaxInterfaces)
			}
			ifc, err := parseIDB(bo, body)
			if err != nil {
				return fmt.Errorf("pcapng block %d: %w", blk, err)
			}
			ifaces = append(ifaces, ifc)
		case blockEPB, blockOPB, blockSPB:
			n++
			o.stats.Records++
			source := fmt.Sprintf("pcapng packet %d", n)
			if !packetBlock(bo, typ, body, ifaces, o, source) {
				return nil
			}
		default:
			o.stats.Blocks++
		}
	}
	return nil
}

// parseIDB reads an interface description block's body: link type (2),
// reserved (2), snap length (4), options.
func parseIDB(bo binary.ByteOrder, body []byte) (ngInterface, error) {
	if len(body) < 8 {
		return ngInterface{}, fmt.Errorf("%w: interface description: %d of 8 bytes", ErrMalformed, len(body))
	}
	ifc := ngInterface{link: Link(bo.Uint16(body)), snaplen: bo.Uint32(body[4:]), resol: 6}
	opts := body[8:]
	for len(opts) >= 4 {
		code, l := bo.Uint16(opts), int(bo.Uint16(opts[2:]))
		if code == optEndOfOpt {
			break
		}
		padded := (l + 3) &^ 3
		if len(opts) < 4+padded {
			return ngInterface{}, fmt.Errorf("%w: interface option %d: %d bytes declared, %d present", ErrMalformed, code, l, len(opts)-4)
		}
		v := opts[4 : 4+l]
		switch {
		case code == optTSResol && l == 1:
			ifc.resol = v[0]
			if (v[0]&0x80 == 0 && v[0] > maxDecimalResol) || (v[0]&0x80 != 0 && v[0]&0x7f > 63) {
				return ngInterface{}, fmt.Errorf("%w: if_tsresol %#x", ErrMalformed, v[0])
			}
		case code == optTSOffset && l == 8:
			ifc.offset = int64(bo.Uint64(v))
		}
		opts = opts[4+padded:]
	}
	return ifc, nil
}

// maxDecimalResol is the finest decimal if_tsresol a uint64 timestamp can
// hold a second of (10^19 < 2^64).
const maxDecimalResol = 19

// packetBlock adds the frame of an enhanced, simple or obsolete packet block.
func packetBlock(bo binary.ByteOrder, typ uint32, body []byte, ifaces []ngInterface, o *out, source string) bool {
	var (
		ifid          uint32
		ts            uint64
		hasTS         bool
		capLen, data  int
		fixed         int
		origLenOffset = -1
	)
	switch typ {
	case blockEPB: // interface (4), ts high (4), ts low (4), captured (4), original (4)
		fixed = 20
		if len(body) >= fixed {
			ifid = bo.Uint32(body)
			ts, hasTS = uint64(bo.Uint32(body[4:]))<<32|uint64(bo.Uint32(body[8:])), true
			capLen = int(bo.Uint32(body[12:]))
		}
	case blockOPB: // interface (2), drops (2), ts high (4), ts low (4), captured (4), original (4)
		fixed = 20
		if len(body) >= fixed {
			ifid = uint32(bo.Uint16(body))
			ts, hasTS = uint64(bo.Uint32(body[4:]))<<32|uint64(bo.Uint32(body[8:])), true
			capLen = int(bo.Uint32(body[12:]))
		}
	case blockSPB: // original (4); the captured length is what the block holds
		fixed, origLenOffset = 4, 0
	}
	if len(body) < fixed {
		o.skip(source, fmt.Errorf("%w: packet block: %d of %d bytes", ErrMalformed, len(body), fixed))
		return true
	}
	data = len(body) - fixed
	if origLenOffset >= 0 {
		capLen = min(int(bo.Uint32(body[origLenOffset:])), data)
	}
	if int(ifid) >= len(ifaces) {
		o.skip(source, fmt.Errorf("%w: interface %d not described", ErrMalformed, ifid))
		return true
	}
	ifc := ifaces[ifid]
	if typ == blockSPB && ifc.snaplen != 0 {
		capLen = min(capLen, int(ifc.snaplen))
	}
	if capLen > data {
		o.skip(source, fmt.Errorf("%w: captured length %d, block holds %d", ErrMalformed, capLen, data))
		return true
	}
	var t time.Time
	if hasTS {
		t = ifc.time(ts)
	}
	if !ifc.link.supported() {
		o.skip(source, fmt.Errorf("%w: %v", ErrUnsupportedLink, ifc.link))
		return true
	}
	return o.frame(ifc.link, body[fixed:fixed+capLen], t, source)
}

// time converts a timestamp in the interface's units to a time.
func (ifc ngInterface) time(ts uint64) time.Time {
	var sec, nsec uint64
	if ifc.resol&0x80 == 0 {
		unit := pow10(ifc.resol)
		sec, nsec = ts/unit, ts%unit
		if ifc.resol <= 9 {
			nsec *= pow10(9 - ifc.resol)
		} else {
			nsec /= pow10(ifc.resol - 9)
		}
	} else {
		shift := uint(ifc.resol & 0x7f)
		sec = ts >> shift
		frac := ts & (1<<shift - 1)
		hi, lo := bits.Mul64(frac, 1e9)
		nsec = hi<<(64-shift) | lo>>shift // (frac * 1e9) >> shift; shift <= 63
		if shift == 0 {
			nsec = 0
		}
	}
	return time.Unix(int64(sec)+ifc.offset, int64(nsec))
}

func pow10(n uint8) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}
