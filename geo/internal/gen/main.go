// Command gen builds scout's embedded geolocation database,
// geo/data/scout-geo.mmdb, from the CSV tables of two npm packages pinned in
// package.json and package-lock.json next to this file:
//
//   - @ip-location-db/geo-whois-asn-country: IP range -> ISO 3166-1 country
//     code (CC0-1.0; built from RIR data of the NRO, CC BY 4.0);
//   - @ip-location-db/asn: IP range -> autonomous system number and
//     organisation (CC BY 4.0: RouteViews, DB-IP.com, NRO).
//
// Run it from the geo package with go generate (see geo/doc.go):
//
//	go generate ./geo
//
// which installs the pinned packages with npm ci into a temporary directory
// and writes the file. With -src it reads an existing node_modules directory
// instead and needs no network.
//
// The output is a MaxMind DB (IPv6 tree, IPv4 under ::/96, no aliases) whose
// records use the key names of MaxMind's GeoLite2-Country and GeoLite2-ASN
// databases, so one decoder reads it and MaxMind's files alike:
//
//	{"country": {"iso_code": "AU"},
//	 "autonomous_system_number": 13335,
//	 "autonomous_system_organization": "Cloudflare, Inc."}
//
// Blocks that are never geolocated (geo.ReservedPrefixes) are cut out of
// every range before it is inserted; the tables do map some of them (for
// example 192.168.0.0/16 to AU and 2001:db8::/32 to JP). The same inputs give
// the same bytes: the build time in the metadata is taken from the packages'
// version (2.3.YYYYMMDDHH), not from the clock.
package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/inserter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/scout-discovery/scout/geo"
)

const (
	countryPkg = "@ip-location-db/geo-whois-asn-country"
	asnPkg     = "@ip-location-db/asn"

	// databaseType is the metadata database_type of the generated file.
	databaseType = "scout-geo"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	npmDir := flag.String("npm", "internal/gen", "`dir`ectory holding package.json and package-lock.json; npm ci runs on a copy of them in a temporary directory")
	src := flag.String("src", "", "read the packages from this node_modules `dir`ectory instead of running npm ci")
	out := flag.String("out", "data/scout-geo.mmdb", "output `file`")
	flag.Parse()
	if err := run(*npmDir, *src, *out); err != nil {
		log.Fatal(err)
	}
}

func run(npmDir, src, out string) error {
	if src == "" {
		tmp, err := os.MkdirTemp("", "scout-geo-gen-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if err := npmCI(npmDir, tmp); err != nil {
			return err
		}
		src = filepath.Join(tmp, "node_modules")
	}
	countryVer, err := packageVersion(src, countryPkg)
	if err != nil {
		return err
	}
	asnVer, err := packageVersion(src, asnPkg)
	if err != nil {
		return err
	}
	epoch, err := versionTime(countryVer)
	if err != nil {
		return err
	}
	if t, err := versionTime(asnVer); err != nil {
		return err
	} else if t.After(epoch) {
		epoch = t
	}

	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: databaseType,
		Description: map[string]string{"en": fmt.Sprintf(
			"scout geolocation: country from %s %s (CC0-1.0; RIR data (c) NRO, CC BY 4.0), "+
				"AS number and organisation from %s %s (CC BY 4.0: RouteViews, DB-IP.com, NRO); "+
				"reserved blocks left out",
			countryPkg, countryVer, asnPkg, asnVer)},
		BuildEpoch:              epoch.Unix(),
		DisableIPv4Aliasing:     true,
		IncludeReservedNetworks: true, // scout's own table (geo.ReservedPrefixes) is applied here instead
		RecordSize:              24,
	})
	if err != nil {
		return err
	}
	g := &generator{tree: tree, holes: holes()}
	for _, f := range []struct {
		pkg, file string
		row       func([]string) (mmdbtype.Map, error)
	}{
		{countryPkg, "geo-whois-asn-country-ipv4.csv", countryRow},
		{countryPkg, "geo-whois-asn-country-ipv6.csv", countryRow},
		{asnPkg, "asn-ipv4.csv", g.asnRow},
		{asnPkg, "asn-ipv6.csv", g.asnRow},
	} {
		path := filepath.Join(src, f.pkg, f.file)
		if err := g.insertFile(path, f.row); err != nil {
			return err
		}
	}
	log.Printf("inserted %d ranges, skipped %d reserved (wholly or in part)", g.inserted, g.clipped)

	tmp := out + ".tmp"
	w, err := os.Create(tmp)
	if err != nil {
		return err
	}
	n, err := tree.WriteTo(w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	log.Printf("wrote %s: %d bytes", out, n)
	return nil
}

// npmCI installs the packages pinned in dir's package-lock.json into
// tmp/node_modules.
func npmCI(dir, tmp string) error {
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return err
		}
	}
	cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci: %w", err)
	}
	return nil
}

func packageVersion(src, pkg string) (string, error) {
	b, err := os.ReadFile(filepath.Join(src, pkg, "package.json"))
	if err != nil {
		return "", err
	}
	var p struct{ Version string }
	if err := json.Unmarshal(b, &p); err != nil {
		return "", fmt.Errorf("%s: %w", pkg, err)
	}
	return p.Version, nil
}

// versionTime reads the hour a package was published from its version,
// major.minor.YYYYMMDDHH.
func versionTime(v string) (time.Time, error) {
	i := strings.LastIndexByte(v, '.')
	t, err := time.Parse("2006010215", v[i+1:])
	if err != nil {
		return time.Time{}, fmt.Errorf("version %q is not major.minor.YYYYMMDDHH", v)
	}
	return t, nil
}

type generator struct {
	tree     *mmdbwriter.Tree
	holes    []span                  // reserved blocks, sorted, disjoint
	asns     map[string]mmdbtype.Map // one value per AS number and organisation
	inserted int
	clipped  int
}

// A span is an inclusive range of addresses of one family.
type span struct{ lo, hi netip.Addr }

func holes() []span {
	var hs []span
	for _, r := range geo.ReservedPrefixes() {
		hs = append(hs, span{r.Prefix.Addr(), lastAddr(r.Prefix)})
	}
	slices.SortFunc(hs, func(a, b span) int { return a.lo.Compare(b.lo) })
	for i := 1; i < len(hs); i++ {
		if hs[i].lo.Is4() == hs[i-1].hi.Is4() && hs[i].lo.Compare(hs[i-1].hi) <= 0 {
			panic(fmt.Sprintf("reserved blocks overlap at %v", hs[i].lo))
		}
	}
	return hs
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// cut returns the parts of s outside every reserved block.
func (g *generator) cut(s span) []span {
	var out []span
	for _, h := range g.holes {
		if h.lo.Is4() != s.lo.Is4() || h.hi.Less(s.lo) || s.hi.Less(h.lo) {
			continue
		}
		if s.lo.Less(h.lo) {
			out = append(out, span{s.lo, h.lo.Prev()})
		}
		if !h.hi.Less(s.hi) {
			return out
		}
		s.lo = h.hi.Next()
	}
	return append(out, s)
}

func (g *generator) insertFile(path string, row func([]string) (mmdbtype.Map, error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	for line := 1; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		s, err := parseSpan(rec)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		v, err := row(rec)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if v == nil {
			continue
		}
		parts := g.cut(s)
		if len(parts) != 1 || parts[0] != s {
			g.clipped++
		}
		for _, p := range parts {
			err := g.tree.InsertRangeFunc(net.IP(p.lo.AsSlice()), net.IP(p.hi.AsSlice()), inserter.TopLevelMergeWith(v))
			if err != nil {
				return fmt.Errorf("%s:%d: %w", path, line, err)
			}
		}
		g.inserted++
	}
}

func parseSpan(rec []string) (span, error) {
	if len(rec) < 3 {
		return span{}, fmt.Errorf("%d fields, want at least 3", len(rec))
	}
	lo, err := netip.ParseAddr(rec[0])
	if err != nil {
		return span{}, err
	}
	hi, err := netip.ParseAddr(rec[1])
	if err != nil {
		return span{}, err
	}
	if lo.Is4() != hi.Is4() || hi.Less(lo) || lo.Zone() != "" || hi.Zone() != "" {
		return span{}, fmt.Errorf("bad range %v-%v", lo, hi)
	}
	return span{lo, hi}, nil
}

// countryRow reads start,end,cc.
func countryRow(rec []string) (mmdbtype.Map, error) {
	if len(rec) != 3 {
		return nil, fmt.Errorf("%d fields, want 3", len(rec))
	}
	cc := rec[2]
	if len(cc) != 2 || cc[0] < 'A' || cc[0] > 'Z' || cc[1] < 'A' || cc[1] > 'Z' {
		return nil, fmt.Errorf("country code %q", cc)
	}
	return mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String(cc)}}, nil
}

// asnRow reads start,end,asn,organisation. AS number 0 means "not routed"
// and is left out.
func (g *generator) asnRow(rec []string) (mmdbtype.Map, error) {
	if len(rec) != 4 {
		return nil, fmt.Errorf("%d fields, want 4", len(rec))
	}
	n, err := strconv.ParseUint(rec[2], 10, 32)
	if err != nil {
		return nil, fmt.Errorf("AS number: %w", err)
	}
	if n == 0 {
		return nil, nil
	}
	key := rec[2] + "\x00" + rec[3]
	if v, ok := g.asns[key]; ok {
		return v, nil
	}
	v := mmdbtype.Map{"autonomous_system_number": mmdbtype.Uint32(n)}
	if org := strings.TrimSpace(rec[3]); org != "" {
		v["autonomous_system_organization"] = mmdbtype.String(org)
	}
	if g.asns == nil {
		g.asns = make(map[string]mmdbtype.Map)
	}
	g.asns[key] = v
	return v, nil
}
