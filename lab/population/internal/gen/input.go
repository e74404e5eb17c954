package main

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
)

type rng4 struct{ start, end uint32 }

type geolite struct {
	r  []rng4
	cc []string
}

func (g *geolite) lookup(a uint32) string {
	i := sort.Search(len(g.r), func(i int) bool { return g.r[i].end >= a })
	if i < len(g.r) && g.r[i].start <= a {
		return g.cc[i]
	}
	return ""
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func openMaybeGz(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, nil
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{z, f}, nil
}

func readCSV(path string) ([][]string, error) {
	f, err := openMaybeGz(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows[1:], nil
}

func loadGeolite(path string) (*geolite, error) {
	rows, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	g := &geolite{}
	for _, r := range rows {
		s, err1 := netip.ParseAddr(r[0])
		e, err2 := netip.ParseAddr(r[1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad range %q-%q", path, r[0], r[1])
		}
		g.r = append(g.r, rng4{u32(s), u32(e)})
		g.cc = append(g.cc, r[2])
	}
	return g, nil
}

type pfxAS struct {
	p   netip.Prefix
	asn uint32
}

func loadPyASN(path string) ([]pfxAS, error) {
	f, err := openMaybeGz(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []pfxAS
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == ';' {
			continue
		}
		ps, as, ok := strings.Cut(l, "\t")
		if !ok {
			return nil, fmt.Errorf("%s: bad line %q", path, l)
		}
		p, err := netip.ParsePrefix(ps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(as), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, pfxAS{p.Masked(), uint32(n)})
	}
	return out, sc.Err()
}

// asTable is a longest-prefix-match table.
type asTable map[netip.Prefix]uint32

func (t asTable) lookup(a netip.Addr) uint32 {
	for l := 32; l >= 8; l-- {
		p, _ := a.Prefix(l)
		if as, ok := t[p]; ok {
			return as
		}
	}
	return 0
}
