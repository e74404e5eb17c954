package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/scout-discovery/scout/lab/population"
)

// writePrefixes writes data/prefixes2008.tsv.gz under out: every prefix of
// the RouteViews table of 2008-05-01 from /8 to /24, outside reserved space
// and private ASes, whose first address geolite places in a country of
// known. It returns each such country's routed space in /24 equivalents.
func writePrefixes(out string, p func(string) string, g *geolite, known map[string]bool) (map[string]float64, error) {
	p08, err := loadPyASN(p("ipasn_20080501_v12.dat.gz"))
	if err != nil {
		return nil, err
	}
	sort.Slice(p08, func(i, j int) bool {
		if c := p08[i].p.Addr().Compare(p08[j].p.Addr()); c != 0 {
			return c < 0
		}
		return p08[i].p.Bits() < p08[j].p.Bits()
	})
	space := map[string]float64{} // routed /24 equivalents per country
	var tsv strings.Builder
	kept := 0
	for _, e := range p08 {
		b := e.p.Bits()
		if b < 8 || b > 24 || population.Reserved(e.p.Addr()) || e.asn == 0 || e.asn >= 64512 && e.asn <= 65535 {
			continue
		}
		cc := g.lookup(u32(e.p.Addr()))
		if !known[cc] {
			continue
		}
		fmt.Fprintf(&tsv, "%s\t%d\t%s\n", e.p, e.asn, cc)
		space[cc] += math.Ldexp(1, 24-b)
		kept++
	}
	if err := writeGz(filepath.Join(out, "data", "prefixes2008.tsv.gz"), tsv.String()); err != nil {
		return nil, err
	}
	log.Printf("prefix table: %d of %d prefixes kept", kept, len(p08))
	return space, nil
}

func writeGz(path, s string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	z, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	if _, err := io.WriteString(z, s); err != nil {
		f.Close()
		return err
	}
	if err := z.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
