package a2s

import (
	"bytes"
	"fmt"
)

// Split-reply limits.
const (
	// MaxSplitPackets bounds the packets of one split reply. The total is a
	// byte on the wire; a 1248-byte packet (the default split size) times
	// 32 holds any A2S_RULES or A2S_PLAYER reply seen in practice.
	MaxSplitPackets = 32
	// DefaultSplitSize is the Size field Source servers send by default.
	DefaultSplitSize = 1248
)

// SplitPacket is one packet of a Source split reply:
//
//	FE FF FF FF <id:4> <total:1> <number:1> <size:2> [<decompressed size:4> <crc32:4>] <payload>
//
// The payloads of packets 0..total-1 joined form the whole reply,
// including its FF FF FF FF header. Engines before the Orange Box omit the
// size field; this package decodes the Orange Box and later layout only.
type SplitPacket struct {
	// ID identifies the reply; the high bit marks bzip2 compression.
	ID     uint32 `json:"id"`
	Total  uint8  `json:"total"`
	Number uint8  `json:"number"`
	// Size is the server's split size in bytes (1248 by default).
	Size uint16 `json:"size"`
	// DecompressedSize and CRC32 are present in packet 0 of a compressed
	// reply only.
	DecompressedSize uint32 `json:"decompressed_size,omitempty"`
	CRC32            uint32 `json:"crc32,omitempty"`
	Payload          []byte `json:"payload"`
}

// Compressed reports whether the reply is bzip2-compressed.
func (p SplitPacket) Compressed() bool { return p.ID&0x80000000 != 0 }

// ParseSplitPacket decodes one packet of a split reply.
func ParseSplitPacket(b []byte) (SplitPacket, error) {
	if !bytes.HasPrefix([]byte{0xFE, 0xFF, 0xFF, 0xFF}, b[:min(len(b), 4)]) {
		return SplitPacket{}, fmt.Errorf("%w: not a split packet", ErrNotA2S)
	}
	r := reader{b: b[min(len(b), 4):]}
	if len(b) < 4 {
		r.fail("split header")
	}
	var p SplitPacket
	p.ID = r.u32("split id")
	p.Total = r.u8("split total")
	p.Number = r.u8("split number")
	p.Size = r.u16("split size")
	if p.Compressed() && p.Number == 0 {
		p.DecompressedSize = r.u32("decompressed size")
		p.CRC32 = r.u32("crc32")
	}
	if r.err != nil {
		return SplitPacket{}, r.err
	}
	if p.Total == 0 || p.Number >= p.Total {
		return SplitPacket{}, fmt.Errorf("%w: packet %d of %d", ErrSplit, p.Number, p.Total)
	}
	p.Payload = bytes.Clone(r.b)
	return p, nil
}

// AppendBinary appends the packet.
func (p SplitPacket) AppendBinary(b []byte) ([]byte, error) {
	if p.Total == 0 || p.Number >= p.Total {
		return b, fmt.Errorf("%w: packet %d of %d", ErrBadField, p.Number, p.Total)
	}
	if !(p.Compressed() && p.Number == 0) && (p.DecompressedSize != 0 || p.CRC32 != 0) {
		return b, fmt.Errorf("%w: DecompressedSize/CRC32 outside packet 0 of a compressed reply", ErrBadField)
	}
	w := writer{b: b}
	w.u32(headerSplit)
	w.u32(p.ID)
	w.u8(p.Total)
	w.u8(p.Number)
	w.u16(p.Size)
	if p.Compressed() && p.Number == 0 {
		w.u32(p.DecompressedSize)
		w.u32(p.CRC32)
	}
	w.b = append(w.b, p.Payload...)
	return w.b, nil
}

// Reassembler joins the packets of one split reply. The zero value is
// ready; it takes the id of the first packet added. Not safe for
// concurrent use.
type Reassembler struct {
	id    uint32
	total int
	parts [][]byte // indexed by number; nil until received
	count int
}

// Add stores one packet. When the reply is complete it returns the joined
// payload (a whole FF FF FF FF packet, ready for [Parse]). A duplicate is
// ignored; a packet of another reply or with another total is [ErrSplit];
// a compressed reply is [ErrCompressed].
func (r *Reassembler) Add(p SplitPacket) (reply []byte, err error) {
	if p.Compressed() {
		return nil, fmt.Errorf("%w: reply %#08x", ErrCompressed, p.ID)
	}
	if int(p.Total) > MaxSplitPackets {
		return nil, fmt.Errorf("%w: %d packets, limit %d", ErrSplit, p.Total, MaxSplitPackets)
	}
	if p.Total == 0 || p.Number >= p.Total {
		return nil, fmt.Errorf("%w: packet %d of %d", ErrSplit, p.Number, p.Total)
	}
	if r.parts == nil {
		r.id, r.total = p.ID, int(p.Total)
		r.parts = make([][]byte, r.total) // bounded by MaxSplitPackets
	} else if p.ID != r.id || int(p.Total) != r.total {
		return nil, fmt.Errorf("%w: packet of reply %#08x/%d, collecting %#08x/%d", ErrSplit, p.ID, p.Total, r.id, r.total)
	}
	if old := r.parts[p.Number]; old != nil {
		if !bytes.Equal(old, p.Payload) {
			return nil, fmt.Errorf("%w: two different packets numbered %d", ErrSplit, p.Number)
		}
	} else {
		r.parts[p.Number] = bytes.Clone(p.Payload)
		if r.parts[p.Number] == nil {
			r.parts[p.Number] = []byte{}
		}
		r.count++
	}
	if r.count < r.total {
		return nil, nil
	}
	return bytes.Join(r.parts, nil), nil
}

// Missing returns the numbers of the packets not yet received, or an
// error wrapping [ErrIncomplete] when no packet has arrived at all.
func (r *Reassembler) Missing() ([]int, error) {
	if r.parts == nil {
		return nil, fmt.Errorf("%w: no packets", ErrIncomplete)
	}
	var out []int
	for i, p := range r.parts {
		if p == nil {
			out = append(out, i)
		}
	}
	return out, nil
}

// Split cuts a whole reply into split packets of at most size payload
// bytes each, with the given id (its high bit must be clear: scout does not
// compress).
func Split(reply []byte, id uint32, size int) ([]SplitPacket, error) {
	if id&0x80000000 != 0 {
		return nil, fmt.Errorf("%w: id %#08x has the compression bit", ErrBadField, id)
	}
	if size <= 0 || size > 0xFFFF {
		return nil, fmt.Errorf("%w: size %d", ErrBadField, size)
	}
	n := (len(reply) + size - 1) / size
	if n < 1 || n > MaxSplitPackets {
		return nil, fmt.Errorf("%w: %d packets, limit %d", ErrBadField, n, MaxSplitPackets)
	}
	out := make([]SplitPacket, 0, n)
	for i := 0; i < n; i++ {
		chunk := reply[i*size : min((i+1)*size, len(reply))]
		out = append(out, SplitPacket{ID: id, Total: uint8(n), Number: uint8(i), Size: uint16(size), Payload: bytes.Clone(chunk)})
	}
	return out, nil
}
