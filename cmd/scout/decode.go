package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/protocol/capture"
	"github.com/scout-discovery/scout/protocol/dissect"
)

func init() {
	register(cli.Command{Name: "decode", Summary: "tell what game-protocol packets are and print them as JSON", Run: runDecode})
}

const decodeAbout = `Reads UDP payloads from each FILE ("-" or none: standard input) and prints
one JSON object per packet, saying which protocol family it speaks (q3, q4,
gs4, a2s, steammaster), which message it is, and every field.

Inputs are raw bytes (one packet), hex, xxd dumps, offset dumps as printed by
Wireshark or in papers (an elided "[...]" line leaves a gap), pcap or pcapng
captures; the format is detected unless --format names it. Ethernet, IP and
UDP headers are stripped, and their addresses reported.

Each line of output is one object with these keys (absent when empty):
  index     packet number, from 0, across all inputs
  input     the file name ("-" for standard input)
  source    where in the input: "pcap record 3", "dump 1 (lines 1-11)", ...
  src, dst  the datagram's addresses, from a frame's IP and UDP headers
  time      capture time, RFC 3339
  length    the UDP payload length (as declared, for a cut capture)
  family    q3, q4, gs4, a2s or steammaster
  message   the message as its protocol names it: infoResponse, servers, ...
  fields    the decoded message, every field
  error     why it did not decode, or the defect that stopped a partial decode
  missing   [{start,end}] payload byte ranges absent from the capture
  lost      {start,end}: with missing bytes, the range whose whole units
            (server entries, info keys) "fields" lacks: the head's units and
            the tail's are joined around it
  tail      {offset,fields,error}: what the bytes after the last gap decode
            to on their own, realigned on a unit at payload offset "offset"

A packet with bytes missing from the capture still decodes (exit 0) when its
message could be told. Exit status: 0 when every packet decoded, 1 when one
did not (each is reported in its object and on standard error, and the rest
are decoded), 2 for bad usage.`

func runDecode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return decodeMain(ctx, args, os.Stdin, stdout, stderr)
}

// decodeOptions are the flags of scout decode.
type decodeOptions struct {
	format capture.Format
	hint   dissect.Hint
	pretty bool
}

func decodeMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("decode", "[flags] [FILE...]", decodeAbout, stderr)
	format := fs.String("format", "auto", "input format: auto, raw, hex, xxd, dump, pcap or pcapng")
	proto := fs.String("proto", "auto", "decode every packet as this family: auto, q3, q4, gs4, a2s or steammaster")
	pretty := fs.Bool("pretty", false, "indent the JSON")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	var opts decodeOptions
	var err error
	if opts.format, err = parseFormat(*format); err != nil {
		return cli.UsageError(fs, "%v", err)
	}
	if opts.hint.Family, err = dissect.ParseFamily(*proto); err != nil {
		return cli.UsageError(fs, "%v", err)
	}
	opts.pretty = *pretty

	files := fs.Args()
	if len(files) == 0 {
		files = []string{"-"}
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if opts.pretty {
		enc.SetIndent("", "  ")
	}
	d := decoder{opts: opts, enc: enc, stderr: stderr}
	for _, name := range files {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "scout decode: %v\n", ctx.Err())
			return 1
		}
		d.input(ctx, name, stdin)
	}
	if d.failed {
		return 1
	}
	return 0
}

// parseFormat reads a --format value.
func parseFormat(s string) (capture.Format, error) {
	for _, f := range []capture.Format{capture.Auto, capture.Raw, capture.Hex, capture.XXD, capture.Dump, capture.PCAP, capture.PCAPNG} {
		if s == f.String() {
			return f, nil
		}
	}
	return capture.Auto, fmt.Errorf("unknown --format %q (want auto, raw, hex, xxd, dump, pcap or pcapng)", s)
}

// decoder prints the packets of the inputs of one run.
type decoder struct {
	opts   decodeOptions
	enc    *json.Encoder
	stderr io.Writer
	index  int  // of the next packet, across inputs
	failed bool // a packet or an input did not decode
}

// fail reports a problem on standard error and marks the run failed.
func (d *decoder) fail(format string, args ...any) {
	d.failed = true
	fmt.Fprintf(d.stderr, "scout decode: "+format+"\n", args...)
}

// input decodes every packet of one input.
func (d *decoder) input(ctx context.Context, name string, stdin io.Reader) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			d.fail("%v", err)
			return
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, capture.MaxInput+1))
	if err != nil {
		d.fail("%s: %v", name, err)
		return
	}
	if len(bytes.TrimSpace(b)) == 0 {
		d.fail("%s: empty input: no packets", name)
		return
	}
	pkts, stats, err := capture.Parse(b, d.opts.format)
	if err != nil {
		d.fail("%s: %v", name, err) // the packets read before it are still decoded
	}
	if skipped := stats.NotUDP + stats.Fragments + stats.Malformed + stats.Unknown; skipped > 0 {
		fmt.Fprintf(d.stderr, "scout decode: %s: skipped %d frames (%d not UDP, %d IP fragments, %d malformed, %d unknown link)\n",
			name, skipped, stats.NotUDP, stats.Fragments, stats.Malformed, stats.Unknown)
	}
	if len(pkts) == 0 && err == nil {
		d.fail("%s: no UDP packets in the input", name)
	}
	for _, p := range pkts {
		if ctx.Err() != nil {
			return
		}
		d.packet(name, p)
	}
}

// decodeRecord is one line of output. See decodeAbout for the schema.
type decodeRecord struct {
	Index   int             `json:"index"`
	Input   string          `json:"input"`
	Source  string          `json:"source,omitempty"`
	Src     *netip.AddrPort `json:"src,omitempty"`
	Dst     *netip.AddrPort `json:"dst,omitempty"`
	Time    string          `json:"time,omitempty"`
	Length  int             `json:"length"`
	Family  dissect.Family  `json:"family,omitempty"`
	Message string          `json:"message,omitempty"`
	Fields  json.RawMessage `json:"fields,omitempty"`
	Error   string          `json:"error,omitempty"`
	Missing []dissect.Range `json:"missing,omitempty"`
	Lost    *dissect.Range  `json:"lost,omitempty"`
	Tail    *decodeTail     `json:"tail,omitempty"`
}

type decodeTail struct {
	Offset int             `json:"offset"`
	Fields json.RawMessage `json:"fields,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// packet decodes and prints one packet.
func (d *decoder) packet(name string, p capture.Packet) {
	h := d.opts.hint
	h.Src, h.Dst = p.Src, p.Dst
	var r dissect.Result
	if p.Complete() {
		r = dissect.Decode(p.Payload, h)
	} else {
		pcs := p.Pieces()
		ps := make([]dissect.Piece, 0, len(pcs))
		for _, pc := range pcs {
			ps = append(ps, dissect.Piece{Offset: pc.Offset, Data: pc.Data})
		}
		r = dissect.DecodePieces(ps, p.Length, h)
	}
	rec := decodeRecord{
		Index: d.index, Input: name, Source: p.Source, Length: r.Length,
		Family: r.Family, Message: r.Message, Missing: r.Missing, Lost: r.Lost,
	}
	d.index++
	if p.Src.IsValid() {
		rec.Src = &p.Src
	}
	if p.Dst.IsValid() {
		rec.Dst = &p.Dst
	}
	if !p.Time.IsZero() {
		rec.Time = p.Time.UTC().Format(time.RFC3339Nano)
	}
	errs := []error{r.Err}
	rec.Fields, errs[0] = fields(r.Msg, r.Err)
	if r.Tail != nil {
		t := &decodeTail{Offset: r.Tail.Offset}
		var err error
		t.Fields, err = fields(r.Tail.Msg, r.Tail.Err)
		if err != nil {
			t.Error = err.Error()
		}
		rec.Tail = t
	}
	if errs[0] != nil {
		rec.Error = errs[0].Error()
	}
	// A capture with bytes missing is not a failure of the packet when its
	// message could be told; anything else that is not a clean decode is.
	bad := rec.Fields == nil || (errs[0] != nil && !errors.Is(errs[0], dissect.ErrIncomplete))
	what := name
	if p.Source != "" {
		what += ": " + p.Source
	}
	switch {
	case bad:
		d.fail("%s: packet %d: %s", what, rec.Index, oneLine(rec.Error))
	case errs[0] != nil:
		fmt.Fprintf(d.stderr, "scout decode: %s: packet %d: %s\n", what, rec.Index, oneLine(rec.Error))
	}
	if err := d.enc.Encode(rec); err != nil {
		d.fail("writing output: %v", err)
	}
}

// fields marshals a decoded message; a message that does not marshal is
// reported as an error of its own, joined to err.
func fields(msg any, err error) (json.RawMessage, error) {
	if msg == nil {
		return nil, err
	}
	js, merr := json.Marshal(msg)
	if merr != nil {
		return nil, errors.Join(err, fmt.Errorf("the decoded message does not marshal to JSON: %w", merr))
	}
	return js, err
}

// oneLine keeps an error message on one line of standard error.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
