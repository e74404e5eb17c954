package population

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
)

//go:embed data/prefixes2008.tsv.gz
var prefixes2008 []byte

// Prefix is one announced IPv4 prefix with its origin AS and country.
type Prefix struct {
	Prefix  netip.Prefix
	ASN     uint32
	Country string
}

// Table holds announced prefixes indexed by country and AS. It is not
// modified after it is made and is safe for concurrent use.
type Table struct {
	byCountry map[string][]asPrefixes // ASes in ascending ASN order
}

type asPrefixes struct {
	asn      uint32
	prefixes []netip.Prefix
}

// Prefixes2008 returns the embedded table: every /8 to /24 prefix of the
// RouteViews RIB of 2008-05-01 (pyasn), with its origin AS and its GeoLite
// Country (2019-12-24) country, for the countries the latency model places.
var Prefixes2008 = sync.OnceValues(func() (*Table, error) {
	z, err := gzip.NewReader(bytes.NewReader(prefixes2008))
	if err != nil {
		return nil, fmt.Errorf("population: embedded prefixes: %w", err)
	}
	var ps []Prefix
	sc := bufio.NewScanner(z)
	for line := 1; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("population: embedded prefixes line %d: %d fields", line, len(f))
		}
		p, err := netip.ParsePrefix(f[0])
		if err != nil {
			return nil, fmt.Errorf("population: embedded prefixes line %d: %w", line, err)
		}
		as, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("population: embedded prefixes line %d: %w", line, err)
		}
		ps = append(ps, Prefix{p, uint32(as), f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("population: embedded prefixes: %w", err)
	}
	return NewTable(ps), nil
})

// NewTable indexes prefixes by country and AS. Reserved prefixes are left
// out.
func NewTable(ps []Prefix) *Table {
	idx := map[string]map[uint32][]netip.Prefix{}
	for _, p := range ps {
		if Reserved(p.Prefix.Addr()) || !p.Prefix.Addr().Is4() {
			continue
		}
		if idx[p.Country] == nil {
			idx[p.Country] = map[uint32][]netip.Prefix{}
		}
		idx[p.Country][p.ASN] = append(idx[p.Country][p.ASN], p.Prefix.Masked())
	}
	t := &Table{byCountry: map[string][]asPrefixes{}}
	for cc, m := range idx {
		var as []asPrefixes
		for asn, p := range m {
			sort.Slice(p, func(i, j int) bool {
				if c := p[i].Addr().Compare(p[j].Addr()); c != 0 {
					return c < 0
				}
				return p[i].Bits() < p[j].Bits()
			})
			as = append(as, asPrefixes{asn, p})
		}
		sort.Slice(as, func(i, j int) bool { return as[i].asn < as[j].asn })
		t.byCountry[cc] = as
	}
	return t
}

// ASes returns how many origin ASes announce prefixes in country cc.
func (t *Table) ASes(cc string) int { return len(t.byCountry[cc]) }
