package dissect

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Limits of DecodePieces.
const (
	// MaxPieces bounds the pieces of one payload; a capture with more is
	// decoded from its head alone.
	MaxPieces = 64
	// MaxRealign bounds how far into the bytes after a gap DecodePieces
	// looks for the start of a whole unit (an address entry, a key). Each
	// candidate start costs one parse of the rest, so this bounds the work
	// to MaxRealign parses of at most a payload each.
	MaxRealign = 512
)

// Tail is what the bytes after the last gap of a payload decode to.
//
// The decoder cannot start in the middle of a unit, so the bytes from
// Offset on are decoded after the message's own header, copied from the
// head: for a Quake 4 servers list, the command word; for an infoResponse,
// the command word, challenge and protocol. Offset is the first start at
// which that parses without error; the bytes of the tail before it are
// reported as Skipped.
type Tail struct {
	// Offset is where in the payload the decoded bytes start.
	Offset int
	// Skipped is the range of present bytes between the gap and Offset
	// that belong to a unit cut by the gap.
	Skipped Range
	// Msg is the message the header and the bytes from Offset decode to.
	Msg any
	// Err is nil when they decode cleanly; otherwise the error of the
	// first candidate start, and Msg is what it decoded (if anything).
	Err error
}

// DecodePieces decodes a payload of which a capture kept only pieces (an
// elided dump, a frame cut by the snap length): length is the payload
// length the headers declare, and pieces are the runs of bytes present, at
// their offsets. The head (the piece at offset 0) decides the family and
// message and decodes as far as it goes; the last piece after a gap is
// realigned and decoded as [Result.Tail]; the gaps are [Result.Missing],
// and Err wraps [ErrIncomplete] whenever bytes are missing.
//
// A complete payload (one piece covering [0, length)) is the same as
// [Decode].
func DecodePieces(pieces []Piece, length int, h Hint) Result {
	ps, missing, err := layout(pieces, length)
	if err != nil {
		return Result{Length: length, Err: err}
	}
	var head []byte
	if len(ps) > 0 && ps[0].Offset == 0 {
		head = ps[0].Data
	}
	if len(missing) == 0 {
		return Decode(head, h)
	}
	r := decode(head, h)
	r.Length = length
	r.Missing = missing
	what := describeMissing(missing, length)
	switch {
	case len(head) == 0:
		r.Err = fmt.Errorf("%w: %s; no head to decode", ErrIncomplete, what)
	case r.Err != nil:
		r.Err = fmt.Errorf("%w: %s; the %d-byte head: %w", ErrIncomplete, what, len(head), r.Err)
	default:
		r.Err = fmt.Errorf("%w: %s", ErrIncomplete, what)
	}
	last := ps[len(ps)-1]
	if last.Offset == 0 || len(head) == 0 || r.Family == Unknown {
		return r
	}
	u := unitOf(r.Family, r.Message, head)
	r.Tail = u.realign(r.Family, r.Message, head, last)
	if r.Tail == nil || r.Tail.Err != nil || len(ps) != 2 {
		return r
	}
	// Join the head's whole units to the tail's and decode them as one
	// message: only the units the gap touched are lost.
	if m, end, ok := u.join(r.Family, r.Message, head, last.Data[r.Tail.Offset-last.Offset:]); ok {
		r.Msg = m
		r.Lost = &Range{end, r.Tail.Offset}
	}
	return r
}

// layout checks pieces against length and returns them in order with the
// missing ranges.
func layout(pieces []Piece, length int) ([]Piece, []Range, error) {
	if len(pieces) > MaxPieces {
		return nil, nil, fmt.Errorf("%w: %d pieces, limit %d", ErrIncomplete, len(pieces), MaxPieces)
	}
	ps := make([]Piece, 0, len(pieces))
	for _, p := range pieces {
		if p.Offset < 0 || p.Offset > length || len(p.Data) > length-p.Offset {
			return nil, nil, fmt.Errorf("dissect: piece [%d, %d) outside the %d-byte payload", p.Offset, p.Offset+len(p.Data), length)
		}
		if len(p.Data) > 0 {
			ps = append(ps, p)
		}
	}
	slices.SortStableFunc(ps, func(a, b Piece) int { return cmp.Compare(a.Offset, b.Offset) })
	var missing []Range
	at := 0
	merged := ps[:0:0]
	for i, p := range ps {
		if p.Offset < at {
			return nil, nil, fmt.Errorf("dissect: pieces %d and %d overlap at offset %d", i-1, i, p.Offset)
		}
		if p.Offset > at || len(merged) == 0 {
			if p.Offset > at {
				missing = append(missing, Range{at, p.Offset})
			}
			merged = append(merged, p)
		} else {
			// Adjacent pieces are one run of bytes.
			last := &merged[len(merged)-1]
			last.Data = append(bytes.Clone(last.Data), p.Data...)
		}
		at = p.Offset + len(p.Data)
	}
	ps = merged
	if at < length {
		missing = append(missing, Range{at, length})
	}
	return ps, missing, nil
}

func describeMissing(missing []Range, length int) string {
	var b strings.Builder
	n := 0
	for i, m := range missing {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "[%d, %d)", m.Start, m.End)
		n += m.End - m.Start
	}
	return fmt.Sprintf("%d of %d payload bytes missing at %s", n, length, b.String())
}

// unit describes how the bytes after a gap can be realigned for one
// message: the header to copy from the head, and where a whole unit may
// start.
type unit struct {
	// header is the length of the message header the tail is decoded
	// after (0: the message cannot be realigned).
	header int
	// size is the size of fixed-size entries that start at header and run
	// to the end of the payload; 0 for variable-size units.
	size int
	// starts reports whether a unit may start at offset i of the piece p
	// (0 <= i <= len(p)), for variable-size units.
	starts func(p []byte, i int) bool
}

// unitOf returns the realignment rule for a message whose head is head.
func unitOf(f Family, message string, head []byte) unit {
	afterNUL := func(p []byte, i int) bool { return i > 0 && i <= len(p) && p[i-1] == 0 }
	switch {
	case f == Q4 && message == "servers":
		// FF FF "servers" 00, then 6-byte entries (4-byte address, 16-bit
		// port) to the end of the payload.
		return unit{header: len("\xff\xffservers\x00"), size: 6}
	case f == Q4 && message == "infoResponse":
		// FF FF "infoResponse" 00 <challenge:4> <protocol:4>, then
		// key 00 value 00 pairs: a key starts after a NUL.
		return unit{header: len("\xff\xffinfoResponse\x00") + 8, starts: afterNUL}
	case f == Q3 && message == "getserversResponse":
		// FF FF FF FF "getserversResponse", then '\' + 6-byte entries.
		return unit{header: len("\xff\xff\xff\xffgetserversResponse"), starts: byteAt('\\')}
	case f == Q3 && message == "getserversExtResponse":
		return unit{header: len("\xff\xff\xff\xffgetserversExtResponse"), starts: byteAt('\\', '/')}
	case f == Q3 && (message == "infoResponse" || message == "statusResponse"):
		// The header runs to the LF after the command word; then
		// \key\value pairs.
		nl := bytes.IndexByte(head, '\n')
		if nl < 0 {
			return unit{}
		}
		return unit{header: nl + 1, starts: byteAt('\\')}
	}
	return unit{}
}

// byteAt returns a unit-start rule: a unit starts with one of cs.
func byteAt(cs ...byte) func(p []byte, i int) bool {
	return func(p []byte, i int) bool { return i < len(p) && bytes.IndexByte(cs, p[i]) >= 0 }
}

// join decodes head's whole units followed by tail, which starts with a
// whole unit, as one message. It tries the unit boundaries of head from its
// end back, at most MaxRealign bytes, and returns the first message that
// decodes cleanly and where head's part of it ends.
func (u unit) join(f Family, message string, head, tail []byte) (any, int, bool) {
	if u.header == 0 || len(head) < u.header {
		return nil, 0, false
	}
	var cands []int
	if u.size > 0 {
		cands = append(cands, u.header+(len(head)-u.header)/u.size*u.size)
	} else {
		for j := len(head); j >= u.header && len(head)-j <= MaxRealign; j-- {
			if u.starts(head, j) {
				cands = append(cands, j)
			}
		}
	}
	for _, j := range cands {
		buf := append(append(make([]byte, 0, j+len(tail)), head[:j]...), tail...)
		if r := decodeAs(f, buf); r.Err == nil && r.Message == message {
			return r.Msg, j, true
		}
	}
	return nil, 0, false
}

// realign decodes the tail piece after the header of head.
func (u unit) realign(f Family, message string, head []byte, tail Piece) *Tail {
	if u.header == 0 || len(head) < u.header || tail.Offset < u.header {
		return nil
	}
	var cands []int
	if u.size > 0 {
		i := (u.size - (tail.Offset-u.header)%u.size) % u.size
		if i < len(tail.Data) {
			cands = append(cands, i)
		}
	} else {
		for i := 0; i < len(tail.Data) && i < MaxRealign; i++ {
			if u.starts(tail.Data, i) {
				cands = append(cands, i)
			}
		}
	}
	var first *Tail
	buf := make([]byte, 0, u.header+len(tail.Data))
	for _, i := range cands {
		buf = append(append(buf[:0], head[:u.header]...), tail.Data[i:]...)
		// The decoded message may alias buf, so each candidate gets its own.
		r := decodeAs(f, bytes.Clone(buf))
		t := &Tail{
			Offset:  tail.Offset + i,
			Skipped: Range{tail.Offset, tail.Offset + i},
			Msg:     r.Msg,
			Err:     r.Err,
		}
		if r.Err == nil && r.Message == message {
			return t
		}
		if first == nil {
			first = t
		}
	}
	return first
}
