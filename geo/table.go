package geo

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Older tables, for worlds of another era than the embedded data's: the
// simulator builds 2008-era worlds from a RouteViews prefix table of
// 2008-05-01 and a GeoLite country table of 2019. These functions read the
// formats of such tables from files or readers the caller passes; the
// package ships none of them.

// MaxTableLine bounds the length of one line of a table, in bytes.
const MaxTableLine = 4096

// ErrTable is wrapped by every error about the content of a table.
var ErrTable = errors.New("geo: bad table")

// ReadCountryCSV reads an IP range to country table, one range a line:
//
//	start,end,cc
//	1.0.0.0,1.0.0.255,AU
//
// with inclusive IPv4 or IPv6 bounds and an ISO 3166-1 alpha-2 code. A first
// line "start,end,cc" is a header and is skipped. Ranges must not overlap.
// This is the format of @ip-location-db's country CSVs and of a GeoLite
// Country table flattened to ranges.
func ReadCountryCSV(r io.Reader) (*DB, error) {
	var t table
	err := readLines(r, func(n int, line string) error {
		if n == 1 && line == "start,end,cc" {
			return nil
		}
		f := strings.Split(line, ",")
		if len(f) != 3 {
			return fmt.Errorf("%d fields, want start,end,cc", len(f))
		}
		lo, err1 := netip.ParseAddr(f[0])
		hi, err2 := netip.ParseAddr(f[1])
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		cc := strings.ToUpper(f[2])
		if !validCountry(cc) {
			return fmt.Errorf("country code %q", f[2])
		}
		return t.add(lo, hi, Info{Country: t.intern(cc)})
	})
	if err != nil {
		return nil, err
	}
	if err := t.sortDisjoint(); err != nil {
		return nil, err
	}
	return &DB{layers: []layer{&t}}, nil
}

// ReadPyASN reads a prefix to origin AS table in pyasn's IPASN format, one
// prefix a line, comments starting with ';':
//
//	; IP-ASN-DAT file
//	1.0.0.0/24	15169
//
// The longest matching prefix answers, as in pyasn. The table gives no
// organisation names. RouteViews RIB dumps (the source of pyasn's tables)
// carry some private prefixes; they are read, and refused at lookup like
// every reserved address.
func ReadPyASN(r io.Reader) (*DB, error) {
	var t table
	err := readLines(r, func(_ int, line string) error {
		if line == "" || line[0] == ';' {
			return nil
		}
		pfx, as, ok := strings.Cut(line, "\t")
		if !ok {
			return errors.New("want prefix<TAB>asn")
		}
		p, err := netip.ParsePrefix(pfx)
		if err != nil {
			return err
		}
		if p != p.Masked() {
			return fmt.Errorf("prefix %v has host bits set", p)
		}
		n, err := strconv.ParseUint(as, 10, 32)
		if err != nil {
			return fmt.Errorf("AS number: %w", err)
		}
		if n == 0 {
			return nil
		}
		return t.add(p.Addr(), lastAddr(p), Info{ASN: uint32(n)})
	})
	if err != nil {
		return nil, err
	}
	t.flatten()
	return &DB{layers: []layer{&t}}, nil
}

// OpenCountryCSV reads a file in the format of ReadCountryCSV, gzipped or
// not.
func OpenCountryCSV(path string) (*DB, error) { return readFile(path, ReadCountryCSV) }

// OpenPyASN reads a file in the format of ReadPyASN, gzipped or not.
func OpenPyASN(path string) (*DB, error) { return readFile(path, ReadPyASN) }

func readFile(path string, read func(io.Reader) (*DB, error)) (*DB, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	db, err := read(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return db, nil
}

// readLines calls fn with each line of r, numbered from 1, without its line
// ending. Errors from fn are wrapped with the line number and ErrTable.
func readLines(r io.Reader, fn func(n int, line string) error) error {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 512), MaxTableLine)
	n := 0
	for s.Scan() {
		n++
		line := strings.TrimSuffix(s.Text(), "\r")
		if err := fn(n, line); err != nil {
			return fmt.Errorf("%w: line %d: %w", ErrTable, n, err)
		}
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("%w: after line %d: %w", ErrTable, n, err)
	}
	return nil
}

// A table is a layer of inclusive address ranges, kept sorted and disjoint,
// one slice per address family so that gaps never span families.
type table struct {
	v4, v6  []span
	strings map[string]string // interned country codes
}

type span struct {
	lo, hi netip.Addr
	info   Info // without Prefix
}

func (t *table) intern(s string) string {
	if v, ok := t.strings[s]; ok {
		return v
	}
	if t.strings == nil {
		t.strings = make(map[string]string)
	}
	t.strings[s] = s
	return s
}

func (t *table) add(lo, hi netip.Addr, info Info) error {
	if lo.Is4() != hi.Is4() || hi.Less(lo) || lo.Zone() != "" || hi.Zone() != "" {
		return fmt.Errorf("bad range %v-%v", lo, hi)
	}
	if lo.Is4In6() || hi.Is4In6() {
		return fmt.Errorf("IPv4-mapped range %v-%v", lo, hi)
	}
	s := span{lo, hi, info}
	if lo.Is4() {
		t.v4 = append(t.v4, s)
	} else {
		t.v6 = append(t.v6, s)
	}
	return nil
}

func byStart(a, b span) int {
	// Equal starts: the wider span first, so that it encloses the others.
	return cmp.Or(a.lo.Compare(b.lo), b.hi.Compare(a.hi))
}

// sortDisjoint sorts the spans and fails if two overlap.
func (t *table) sortDisjoint() error {
	for _, ss := range [][]span{t.v4, t.v6} {
		slices.SortFunc(ss, byStart)
		for i := 1; i < len(ss); i++ {
			if !ss[i-1].hi.Less(ss[i].lo) {
				return fmt.Errorf("%w: ranges %v-%v and %v-%v overlap", ErrTable, ss[i-1].lo, ss[i-1].hi, ss[i].lo, ss[i].hi)
			}
		}
	}
	return nil
}

// flatten turns nested prefixes into disjoint spans where the most specific
// prefix wins. Prefixes never partly overlap: two are disjoint or one holds
// the other.
func (t *table) flatten() {
	t.v4 = flattenSpans(t.v4)
	t.v6 = flattenSpans(t.v6)
}

func flattenSpans(in []span) []span {
	slices.SortStableFunc(in, byStart)
	out := make([]span, 0, len(in))
	var open []span    // enclosing spans, innermost last
	var pos netip.Addr // the first address not yet given out
	emit := func(hi netip.Addr, info Info) {
		if pos.IsValid() && !hi.Less(pos) {
			out = append(out, span{pos, hi, info})
		}
		pos = hi.Next() // invalid past the last address
	}
	for _, s := range in {
		for len(open) > 0 && open[len(open)-1].hi.Less(s.lo) {
			top := open[len(open)-1]
			emit(top.hi, top.info)
			open = open[:len(open)-1]
		}
		if len(open) > 0 {
			top := open[len(open)-1]
			emit(s.lo.Prev(), top.info)
		}
		pos = s.lo
		open = append(open, s)
	}
	for len(open) > 0 {
		top := open[len(open)-1]
		emit(top.hi, top.info)
		open = open[:len(open)-1]
	}
	// Neighbours with the same answer become one span.
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 && merged[n-1].info == s.info && merged[n-1].hi.Next() == s.lo {
			merged[n-1].hi = s.hi
			continue
		}
		merged = append(merged, s)
	}
	return slices.Clip(merged)
}

func (t *table) lookup(addr netip.Addr) (Info, error) {
	ss, lo, hi := t.v4, netip.IPv4Unspecified(), netip.AddrFrom4([4]byte{255, 255, 255, 255})
	if addr.Is6() {
		ss, lo, hi = t.v6, netip.IPv6Unspecified(), netip.AddrFrom16([16]byte{
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	}
	// i is the first span that ends at or after addr.
	i, _ := slices.BinarySearchFunc(ss, addr, func(s span, a netip.Addr) int { return s.hi.Compare(a) })
	var info Info
	switch {
	case i < len(ss) && !addr.Less(ss[i].lo):
		info = ss[i].info
		lo, hi = ss[i].lo, ss[i].hi
	default: // in the gap before span i
		if i > 0 {
			lo = ss[i-1].hi.Next()
		}
		if i < len(ss) {
			hi = ss[i].lo.Prev()
		}
	}
	info.Prefix = widestWithin(addr, lo, hi)
	return info, nil
}

// widestWithin returns the shortest prefix that contains addr and lies
// within [lo, hi], which contains addr.
func widestWithin(addr, lo, hi netip.Addr) netip.Prefix {
	for bits := 0; ; bits++ {
		p := netip.PrefixFrom(addr, bits).Masked()
		if !p.Addr().Less(lo) && !hi.Less(lastAddr(p)) {
			return p
		}
	}
}

// lastAddr returns the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	p = p.Masked()
	if p.Addr().Is4() {
		a := p.Addr().As4()
		for i := p.Bits(); i < 32; i++ {
			a[i/8] |= 0x80 >> (i % 8)
		}
		return netip.AddrFrom4(a)
	}
	a := p.Addr().As16()
	for i := p.Bits(); i < 128; i++ {
		a[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom16(a)
}
