package capture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"
	"unicode/utf8"
)

// Input limits.
const (
	// MaxInput is the largest input Read accepts, in bytes.
	MaxInput = 64 << 20
	// MaxRecord is the largest frame a capture record (or a text dump) may
	// hold: libpcap's largest snap length.
	MaxRecord = 262144
	// MaxBlock is the largest pcapng block: a MaxRecord frame plus room
	// for the block's fields and options.
	MaxBlock = MaxRecord + 64<<10
	// MaxPackets is how many packets one input may yield; Read stops with
	// ErrTooLarge after that many.
	MaxPackets = 1 << 18
)

// Errors. Each is wrapped with context; test with errors.Is.
var (
	// ErrTruncated: the input ends inside a header or record.
	ErrTruncated = errors.New("capture: truncated")
	// ErrMalformed: a length or field contradicts the format.
	ErrMalformed = errors.New("capture: malformed")
	// ErrTooLarge: the input exceeds MaxInput, a record MaxRecord or
	// MaxBlock, or the packets MaxPackets.
	ErrTooLarge = errors.New("capture: too large")
	// ErrNotUDP: a frame carries something other than UDP.
	ErrNotUDP = errors.New("capture: not UDP")
	// ErrFragment: an IP fragment other than the first.
	ErrFragment = errors.New("capture: IP fragment")
	// ErrUnsupportedLink: a link type this package does not decode.
	ErrUnsupportedLink = errors.New("capture: unsupported link type")
	// ErrFormat: the input is not in the format asked for.
	ErrFormat = errors.New("capture: unknown format")
)

// Format is an input format.
type Format int

const (
	// Auto asks Read to Detect the format.
	Auto Format = iota
	// Raw is one packet as binary bytes.
	Raw
	// Hex is hexadecimal text: whitespace and commas between bytes are
	// ignored, each byte may carry a 0x or \x prefix, # starts a comment,
	// and blank lines separate packets.
	Hex
	// XXD is the output of xxd: "00000000: ffff ffff 696e ...  ....info".
	XXD
	// Dump is an offset-column hex dump as printed by Wireshark, tshark -x,
	// hexdump -C or in papers: "0000  00 16 e6 8c ...  .....:".
	Dump
	// PCAP is a libpcap capture file.
	PCAP
	// PCAPNG is a pcapng capture file.
	PCAPNG
)

func (f Format) String() string {
	switch f {
	case Auto:
		return "auto"
	case Raw:
		return "raw"
	case Hex:
		return "hex"
	case XXD:
		return "xxd"
	case Dump:
		return "dump"
	case PCAP:
		return "pcap"
	case PCAPNG:
		return "pcapng"
	}
	return fmt.Sprintf("format(%d)", int(f))
}

// Piece is a run of present bytes of a packet's UDP payload.
type Piece struct {
	Offset int    // where Data starts in the UDP payload
	Data   []byte // the bytes
}

// Range is a half-open range [Start, End) of byte offsets in a UDP payload.
type Range struct{ Start, End int }

// Packet is one UDP payload read from the input, with what is known about
// it. Its byte slices alias the input.
type Packet struct {
	Index  int    // 0-based position among the packets of the input
	Source string // where it came from, for people: "pcap record 3" (1-based, as Wireshark numbers frames), "dump 2 (lines 5-9)"
	Format Format // the input format

	// Link is the link-layer header that was stripped, LinkNone when the
	// packet is the input bytes as they are (not a frame).
	Link     Link
	Src, Dst netip.AddrPort // zero when unknown
	Time     time.Time      // capture time; zero when unknown

	// Payload is the UDP payload present from its start: all of it when
	// the packet is complete, else the head up to the first missing byte.
	Payload []byte
	// Length is the payload length the headers declare; len(Payload) when
	// no header declares one.
	Length int
	// Rest lists the pieces present after the first gap (an elided dump),
	// in increasing order of Offset; nil when there is no such piece.
	Rest []Piece
	// Fragment reports a first IP fragment: the rest of the payload was
	// carried in other IP packets, which this package does not reassemble.
	Fragment bool
}

// Complete reports whether the whole declared payload is present.
func (p *Packet) Complete() bool { return len(p.Payload) == p.Length && len(p.Rest) == 0 }

// Pieces returns the present parts of the payload in order: the head (even
// when empty) and then Rest.
func (p *Packet) Pieces() []Piece {
	return append([]Piece{{Offset: 0, Data: p.Payload}}, p.Rest...)
}

// Gaps returns the missing byte ranges of the payload, in order.
func (p *Packet) Gaps() []Range {
	var gaps []Range
	at := len(p.Payload)
	for _, pc := range p.Rest {
		if pc.Offset > at {
			gaps = append(gaps, Range{at, pc.Offset})
		}
		at = max(at, pc.Offset+len(pc.Data))
	}
	if at < p.Length {
		gaps = append(gaps, Range{at, p.Length})
	}
	return gaps
}

// Stats counts what an input held, by outcome.
type Stats struct {
	Records    int // capture records (pcap records, pcapng packet blocks) or text dumps read
	Packets    int // packets returned
	Incomplete int // packets returned with missing bytes (see Packet.Gaps)
	NotUDP     int // frames skipped: not UDP (ARP, TCP, ICMP, ...)
	Fragments  int // frames skipped: IP fragments other than the first
	Malformed  int // frames skipped: headers cut short or inconsistent
	Unknown    int // frames skipped: on a link type this package does not decode
	Blocks     int // pcapng blocks skipped: types this package does not use
}

// Detect guesses the format of an input from its content: capture files by
// their magic numbers, then text (xxd before offset dumps before plain hex),
// and Raw for anything else.
func Detect(b []byte) Format {
	if len(b) >= 4 {
		switch string(b[:4]) {
		case "\xd4\xc3\xb2\xa1", "\xa1\xb2\xc3\xd4", "\x4d\x3c\xb2\xa1", "\xa1\xb2\x3c\x4d":
			return PCAP
		case "\x0a\x0d\x0d\x0a":
			return PCAPNG
		}
	}
	if !isText(b) {
		return Raw
	}
	return detectText(b)
}

// isText reports whether b is UTF-8 text without control characters other
// than whitespace.
func isText(b []byte) bool {
	if len(b) == 0 || !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' {
			return false
		}
		if c == 0x7f {
			return false
		}
	}
	return true
}

// Read reads an input of format f (Auto: Detect it) of at most MaxInput
// bytes and returns its UDP payloads. Frames that yield none are counted in
// the Stats. On an error it returns the packets read before it.
//
// Capture files say which link layer their frames have. Raw, hex and text
// dumps do not: a packet in those is taken as a frame when it looks like
// one (an Ethernet header with EtherType 0x0800, 0x86DD or a VLAN tag in
// bytes 12-13 before a sane IP header, or a sane IPv4 or IPv6 header at
// byte 0), and otherwise as a UDP payload.
func Read(r io.Reader, f Format) ([]Packet, Stats, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, Stats{}, err
	}
	if len(b) > MaxInput {
		return nil, Stats{}, fmt.Errorf("%w: input exceeds %d bytes", ErrTooLarge, MaxInput)
	}
	return Parse(b, f)
}

// Parse is Read on an input already in memory. The packets alias b.
func Parse(b []byte, f Format) ([]Packet, Stats, error) {
	if len(b) > MaxInput {
		return nil, Stats{}, fmt.Errorf("%w: input exceeds %d bytes", ErrTooLarge, MaxInput)
	}
	if f == Auto {
		f = Detect(b)
	}
	var o out
	o.format = f
	var err error
	switch f {
	case Raw:
		if len(b) > 0 {
			o.stats.Records++
			o.guessed(b, "raw input", nil)
			err = o.firstErrIfEmpty()
		}
	case Hex:
		err = parseHex(b, &o)
	case XXD, Dump:
		err = parseDump(b, &o)
	case PCAP:
		err = parsePCAP(b, &o)
	case PCAPNG:
		err = parsePCAPNG(b, &o)
	default:
		err = fmt.Errorf("%w: %v", ErrFormat, f)
	}
	if err == nil && o.full {
		err = fmt.Errorf("%w: more than %d packets", ErrTooLarge, MaxPackets)
	}
	return o.pkts, o.stats, err
}

// out collects the packets of one input.
type out struct {
	format   Format
	pkts     []Packet
	stats    Stats
	firstErr error // the first frame error, for inputs that yield nothing
	full     bool  // MaxPackets reached
}

// add appends p unless MaxPackets is reached; it reports whether to go on.
func (o *out) add(p Packet) bool {
	if len(o.pkts) >= MaxPackets {
		o.full = true
		return false
	}
	p.Index = len(o.pkts)
	p.Format = o.format
	o.pkts = append(o.pkts, p)
	o.stats.Packets++
	if !p.Complete() {
		o.stats.Incomplete++
	}
	return true
}

// skip counts a frame that yields no packet.
func (o *out) skip(source string, err error) {
	switch {
	case errors.Is(err, ErrNotUDP):
		o.stats.NotUDP++
	case errors.Is(err, ErrFragment):
		o.stats.Fragments++
	case errors.Is(err, ErrUnsupportedLink):
		o.stats.Unknown++
	default:
		o.stats.Malformed++
	}
	if o.firstErr == nil {
		o.firstErr = fmt.Errorf("%s: %w", source, err)
	}
}

// firstErrIfEmpty returns the first frame error when nothing was found.
func (o *out) firstErrIfEmpty() error {
	if len(o.pkts) == 0 {
		return o.firstErr
	}
	return nil
}

// frame adds the UDP payload of a frame on a known link.
func (o *out) frame(link Link, b []byte, t time.Time, source string) bool {
	d, err := UDP(link, b)
	if err != nil {
		o.skip(source, err)
		return true
	}
	return o.add(Packet{
		Source: source, Link: link, Src: d.Src, Dst: d.Dst, Time: t,
		Payload: d.Payload, Length: d.Length, Fragment: d.Fragment,
	})
}

// guessed adds a packet from an input that does not name its link layer.
// head holds the bytes from offset 0 up to the first gap; rest holds the
// pieces after gaps, at their offsets in the input's coordinates.
func (o *out) guessed(head []byte, source string, rest []Piece) bool {
	link, ok := guessLink(head)
	if !ok {
		return o.add(Packet{Source: source, Link: LinkNone, Payload: head, Length: pieceEnd(head, rest), Rest: rest})
	}
	d, err := UDP(link, head)
	if err != nil {
		o.skip(source, err)
		return true
	}
	p := Packet{
		Source: source, Link: link, Src: d.Src, Dst: d.Dst,
		Payload: d.Payload, Length: d.Length, Fragment: d.Fragment,
	}
	for _, pc := range rest {
		// Move to payload coordinates; drop bytes outside the payload
		// (the headers, padding, a frame check sequence).
		start, data := pc.Offset-d.Offset, pc.Data
		if start < 0 {
			if -start >= len(data) {
				continue
			}
			data, start = data[-start:], 0
		}
		if start >= d.Length {
			continue
		}
		if len(data) > d.Length-start {
			data = data[:d.Length-start]
		}
		p.Rest = append(p.Rest, Piece{Offset: start, Data: data})
	}
	return o.add(p)
}

// pieceEnd is the end offset of the last present byte.
func pieceEnd(head []byte, rest []Piece) int {
	end := len(head)
	for _, pc := range rest {
		end = max(end, pc.Offset+len(pc.Data))
	}
	return end
}

// lines splits text into lines without their line terminators.
func lines(b []byte) [][]byte {
	ls := bytes.Split(b, []byte("\n"))
	for i, l := range ls {
		ls[i] = bytes.TrimSuffix(l, []byte("\r"))
	}
	return ls
}
