package capture

import (
	"bytes"
	"encoding/hex"
	"fmt"
)

// Text-dump limits.
const (
	// maxOffsetDigits is the widest offset column (xxd and hexdump -C use 8).
	maxOffsetDigits = 8
	// minOffsetDigits is the narrowest (Wireshark and tshark use 4).
	minOffsetDigits = 4
)

// detectText tells xxd output, offset dumps and plain hex apart.
func detectText(b []byte) Format {
	for _, l := range lines(b) {
		if dl, ok := parseDumpLine(l, true); ok && dl.offset == 0 && len(dl.data) > 0 {
			if dl.colon {
				return XXD
			}
			return Dump
		}
	}
	for _, l := range lines(b) {
		if _, err := hexLine(l); err != nil {
			return Raw
		}
	}
	return Hex
}

// parseHex reads plain hex: packets separated by blank lines.
func parseHex(b []byte, o *out) error {
	var (
		cur   []byte
		first int // line number where cur began
	)
	flush := func(last int) bool {
		if len(cur) == 0 {
			return true
		}
		o.stats.Records++
		src := fmt.Sprintf("hex lines %d-%d", first, last)
		if first == last {
			src = fmt.Sprintf("hex line %d", first)
		}
		ok := o.guessed(cur, src, nil)
		cur = nil
		return ok
	}
	ls := lines(b)
	for i, l := range ls {
		data, err := hexLine(l)
		if err != nil {
			return fmt.Errorf("hex line %d: %w", i+1, err)
		}
		if len(bytes.TrimSpace(l)) == 0 || (len(data) == 0 && !isComment(l)) {
			if !flush(i) {
				return nil
			}
			continue
		}
		if len(cur) == 0 {
			first = i + 1
		}
		if len(cur)+len(data) > MaxRecord {
			return fmt.Errorf("%w: hex packet from line %d exceeds MaxRecord (%d bytes)", ErrTooLarge, first, MaxRecord)
		}
		cur = append(cur, data...)
	}
	flush(len(ls))
	return o.firstErrIfEmpty()
}

func isComment(l []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(l), []byte("#"))
}

// hexLine decodes one line of plain hex. Bytes may be separated by spaces,
// tabs or commas and prefixed with 0x or \x; # starts a comment.
func hexLine(l []byte) ([]byte, error) {
	if i := bytes.IndexByte(l, '#'); i >= 0 {
		l = l[:i]
	}
	var out []byte
	for _, tok := range bytes.FieldsFunc(l, func(r rune) bool {
		return r == ' ' || r == '\t' || r == ',' || r == '\f'
	}) {
		tok = bytes.TrimPrefix(tok, []byte("0x"))
		tok = bytes.TrimPrefix(tok, []byte("0X"))
		tok = bytes.ReplaceAll(tok, []byte(`\x`), nil)
		if len(tok)%2 != 0 {
			return nil, fmt.Errorf("%w: odd number of hex digits in %q", ErrMalformed, tok)
		}
		n := len(out)
		out = append(out, make([]byte, len(tok)/2)...)
		if _, err := hex.Decode(out[n:], tok); err != nil {
			return nil, fmt.Errorf("%w: %q is not hex", ErrMalformed, tok)
		}
	}
	return out, nil
}

// dumpLine is one line of an offset dump.
type dumpLine struct {
	offset int
	data   []byte
	colon  bool // the offset ended in ':' (xxd)
	midGap bool // two spaces separated the 8th and 9th bytes (hexdump -C)
}

// parseDumpLine parses "OFFSET[:]  HEX HEX ...  ASCII". The offset is 4 to 8
// hex digits followed by a colon, two spaces or a tab (a single space would
// make plain hex such as "0000 ffff" look like a dump). Byte groups are runs
// of an even number of hex digits separated by single spaces; the first
// wider gap, or anything that is not a group followed by a space or the end
// of line, ends the bytes. So the ASCII column is never read as bytes,
// however hex-like it looks, as long as two spaces precede it, which every
// dumper does. When allowMid is set, two spaces after exactly eight bytes
// are taken as the middle gap of hexdump -C and Wireshark, unless the rest
// of the line is those eight bytes rendered as ASCII (a lone 8-byte line).
func parseDumpLine(l []byte, allowMid bool) (dumpLine, bool) {
	var dl dumpLine
	i := 0
	for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	start := i
	for i < len(l) && isHexDigit(l[i]) {
		i++
	}
	if n := i - start; n < minOffsetDigits || n > maxOffsetDigits {
		return dumpLine{}, false
	}
	var off int
	for _, c := range l[start:i] {
		off = off<<4 | int(unhex(c))
	}
	dl.offset = off
	if i < len(l) && l[i] == ':' {
		dl.colon = true
		i++
	}
	if i == len(l) {
		return dl, true // an offset alone: hexdump -C ends with the length
	}
	switch {
	case l[i] == '\t':
	case dl.colon && l[i] == ' ':
	case len(l) > i+1 && l[i] == ' ' && l[i+1] == ' ':
	default:
		return dumpLine{}, false
	}
	for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	for i < len(l) {
		j := i
		for j < len(l) && isHexDigit(l[j]) {
			j++
		}
		if n := j - i; n == 0 || n%2 != 0 || (j < len(l) && l[j] != ' ' && l[j] != '\t') {
			break // not a byte group: the ASCII column
		}
		for k := i; k < j; k += 2 {
			dl.data = append(dl.data, unhex(l[k])<<4|unhex(l[k+1]))
		}
		if j == len(l) {
			break
		}
		switch {
		case l[j] == ' ' && (j+1 == len(l) || l[j+1] != ' ' && l[j+1] != '\t'):
			i = j + 1
		case allowMid && len(dl.data) == 8 && j+2 < len(l) && l[j+1] == ' ' && isHexDigit(l[j+2]) &&
			!bytes.Equal(bytes.TrimRight(l[j+2:], " \t"), printable(dl.data)):
			// Two spaces after eight bytes: the middle gap, unless what
			// follows is exactly those eight bytes as ASCII.
			dl.midGap = true
			i = j + 2
		default:
			i = len(l) // the ASCII column follows
		}
	}
	return dl, true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// dump is one offset dump being assembled.
type dump struct {
	pieces    []Piece // frame coordinates
	end       int     // offset after the last byte
	firstLine int
	lastLine  int
	lastData  []byte // the previous line's bytes, for '*' lines
	repeat    bool   // a '*' line: lastData repeats up to the next offset
	skipped   bool   // a line that is not part of the dump was seen since the last dump line
	mid       int    // 0 unknown, 1 lines use the middle gap, -1 they do not
}

// parseDump reads offset dumps (xxd, Wireshark, tshark -x, hexdump -C and
// the figures of papers). Each dump whose offsets restart at zero is a
// packet. Lines that are not dump lines (prose, "[...lines elided...]",
// code fences) are skipped. A jump in the offsets after such a line is a
// gap: the packet is reported incomplete, never glued together. A jump
// without one, or an offset that goes back, means a line's byte count does
// not match the offsets, and is an error.
func parseDump(b []byte, o *out) error {
	var (
		d        *dump
		expanded int // bytes added by '*' lines, bounded by MaxInput
	)
	fill := func(end, ln int) error {
		expanded += end - d.end
		if expanded > MaxInput {
			return fmt.Errorf("%w: line %d: '*' lines expand to more than %d bytes", ErrTooLarge, ln, MaxInput)
		}
		return d.fill(end, ln)
	}
	flush := func() bool { // adds the dump d as a packet
		if d == nil {
			return true
		}
		o.stats.Records++
		name := "dump"
		if o.format == XXD {
			name = "xxd dump"
		}
		src := fmt.Sprintf("%s %d (lines %d-%d)", name, o.stats.Records, d.firstLine, d.lastLine)
		var head []byte
		rest := d.pieces
		if len(rest) > 0 && rest[0].Offset == 0 {
			head, rest = rest[0].Data, rest[1:]
		}
		if len(rest) == 0 {
			rest = nil
		}
		d = nil
		return o.guessed(head, src, rest)
	}
	for i, l := range lines(b) {
		ln := i + 1
		if d != nil && bytes.Equal(bytes.TrimSpace(l), []byte("*")) {
			d.repeat, d.skipped = true, false
			continue
		}
		dl, ok := parseDumpLine(l, d == nil || d.mid >= 0)
		switch {
		case !ok:
			if d != nil {
				d.skipped = true
			}
			continue
		case len(dl.data) == 0:
			// An offset alone is hexdump -C's closing length; anything
			// else is prose that happens to start with hex digits.
			switch {
			case d == nil:
			case dl.offset == d.end:
				d.lastLine = ln
			case dl.offset > d.end && d.repeat && dl.offset <= MaxRecord:
				if err := fill(dl.offset, ln); err != nil {
					return err
				}
				d.lastLine, d.repeat = ln, false
			default:
				d.skipped = true
			}
			continue
		case dl.offset == 0:
			if !flush() {
				return nil
			}
			d = &dump{firstLine: ln}
		case d == nil:
			return fmt.Errorf("%w: line %d: dump starts at offset %#x, not 0", ErrMalformed, ln, dl.offset)
		case dl.offset < d.end:
			return fmt.Errorf("%w: line %d: offset %#x, but the lines before it end at %#x", ErrMalformed, ln, dl.offset, d.end)
		case dl.offset > MaxRecord:
			return fmt.Errorf("%w: line %d: offset %#x exceeds MaxRecord (%d)", ErrTooLarge, ln, dl.offset, MaxRecord)
		case dl.offset > d.end && d.repeat:
			if err := fill(dl.offset, ln); err != nil {
				return err
			}
		case dl.offset > d.end && !d.skipped:
			return fmt.Errorf("%w: line %d: offset %#x, but line %d ends at %#x: its byte count does not match the offsets", ErrMalformed, ln, dl.offset, d.lastLine, d.end)
		}
		if dl.offset+len(dl.data) > MaxRecord {
			return fmt.Errorf("%w: line %d: dump exceeds MaxRecord (%d bytes)", ErrTooLarge, ln, MaxRecord)
		}
		if d.mid == 0 && len(dl.data) > 8 {
			d.mid = -1
			if dl.midGap {
				d.mid = 1
			}
		}
		d.appendAt(dl.offset, dl.data)
		d.lastLine, d.lastData, d.repeat, d.skipped = ln, dl.data, false, false
	}
	flush()
	return o.firstErrIfEmpty()
}

// appendAt adds data at frame offset off (>= d.end), extending the last
// piece when it is contiguous.
func (d *dump) appendAt(off int, data []byte) {
	if n := len(d.pieces); n > 0 && off == d.end {
		d.pieces[n-1].Data = append(d.pieces[n-1].Data, data...)
	} else {
		d.pieces = append(d.pieces, Piece{Offset: off, Data: append([]byte(nil), data...)})
	}
	d.end = off + len(data)
}

// fill repeats the last line's bytes up to offset end (<= MaxRecord): hexdump
// -C and xxd -a print '*' for lines that repeat the one before (xxd: lines of
// zeros).
func (d *dump) fill(end, ln int) error {
	if len(d.lastData) == 0 {
		return fmt.Errorf("%w: line %d: '*' after no bytes", ErrMalformed, ln)
	}
	fill := make([]byte, 0, end-d.end)
	for len(fill) < end-d.end {
		fill = append(fill, d.lastData[:min(len(d.lastData), end-d.end-len(fill))]...)
	}
	d.appendAt(d.end, fill)
	return nil
}

// printable renders b as a dump's ASCII column does: printable ASCII as
// itself, anything else as '.'.
func printable(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = '.'
		if 0x20 <= c && c < 0x7f {
			out[i] = c
		}
	}
	return out
}
