package geo_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/geo"
)

func openTables(t *testing.T, gz bool) *geo.DB {
	t.Helper()
	cc, as := filepath.Join("testdata", "country.csv"), filepath.Join("testdata", "ipasn.dat")
	if gz {
		cc, as = gzipFile(t, cc), gzipFile(t, as)
	}
	countries, err := geo.OpenCountryCSV(cc)
	if err != nil {
		t.Fatal(err)
	}
	ases, err := geo.OpenPyASN(as)
	if err != nil {
		t.Fatal(err)
	}
	return geo.Stack(countries, ases)
}

func gzipFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	out := filepath.Join(t.TempDir(), filepath.Base(path)+".gz")
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTables_Lookup(t *testing.T) {
	for _, gz := range []bool{false, true} {
		db := openTables(t, gz)
		for _, tc := range []struct {
			addr string
			want geo.Info
			ok   bool
		}{
			{"1.0.0.1", geo.Info{Country: "AU", ASN: 15169, Prefix: pfx("1.0.0.0/24")}, true},
			{"1.0.2.1", geo.Info{Country: "CN", Prefix: pfx("1.0.2.0/23")}, true},
			// 24/8 is AS 7843, but 24.64/13 is AS 6327 except for 24.70/16.
			{"24.1.2.3", geo.Info{Country: "CA", ASN: 7843, Prefix: pfx("24.0.0.0/10")}, true},
			{"24.64.16.1", geo.Info{Country: "CA", ASN: 6327, Prefix: pfx("24.64.0.0/14")}, true},
			{"24.70.9.9", geo.Info{Country: "CA", ASN: 7018, Prefix: pfx("24.70.0.0/16")}, true},
			{"24.71.0.1", geo.Info{Country: "CA", ASN: 6327, Prefix: pfx("24.71.0.0/16")}, true},
			{"24.72.0.1", geo.Info{Country: "CA", ASN: 7843, Prefix: pfx("24.72.0.0/13")}, true},
			{"130.0.2.0", geo.Info{Country: "SE", Prefix: pfx("130.0.0.0/22")}, true},
			{"::ffff:130.0.2.0", geo.Info{Country: "SE", Prefix: pfx("130.0.0.0/22")}, true},
			// In no table: the gap between 130.0.3.255 and the end.
			{"130.0.4.0", geo.Info{Prefix: pfx("130.0.4.0/22")}, false},
			// The gap runs to 255.255.255.255; the widest prefix in it,
			// 192.0.0.0/2, is narrowed until clear of reserved blocks.
			{"200.1.1.1", geo.Info{Prefix: pfx("200.0.0.0/7")}, false},
			{"2001:200:1::1", geo.Info{Country: "JP", ASN: 2500, Prefix: pfx("2001:200::/32")}, true},
			// Both tables carry 10/8; it is still never geolocated.
			{"10.29.246.49", geo.Info{Prefix: pfx("10.0.0.0/8")}, false},
		} {
			got, ok := db.Lookup(netip.MustParseAddr(tc.addr))
			if ok != tc.ok || got != tc.want {
				t.Errorf("gz %v: Lookup(%s) = %+v, %v; want %+v, %v", gz, tc.addr, got, ok, tc.want, tc.ok)
			}
		}
	}
}

func TestTables_Malformed(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		read     func(r *strings.Reader) (*geo.DB, error)
	}{
		{"csv-two-fields", "1.0.0.0,AU\n", csv},
		{"csv-bad-address", "1.0.0.x,1.0.0.255,AU\n", csv},
		{"csv-reversed", "1.0.0.255,1.0.0.0,AU\n", csv},
		{"csv-mixed-families", "1.0.0.0,::1,AU\n", csv},
		{"csv-long-country", "1.0.0.0,1.0.0.255,AUS\n", csv},
		{"csv-header-not-first", "1.0.0.0,1.0.0.255,AU\nstart,end,cc\n", csv},
		{"csv-overlap", "1.0.0.0,1.0.0.255,AU\n1.0.0.128,1.0.1.255,CN\n", csv},
		{"csv-long-line", "1.0.0.0,1.0.0.255," + strings.Repeat("A", geo.MaxTableLine) + "\n", csv},
		{"pyasn-no-tab", "1.0.0.0/24 15169\n", pyasn},
		{"pyasn-host-bits", "1.0.0.1/24\t15169\n", pyasn},
		{"pyasn-bad-asn", "1.0.0.0/24\tAS15169\n", pyasn},
		{"pyasn-asn-too-big", "1.0.0.0/24\t4294967296\n", pyasn},
	} {
		_, err := tc.read(strings.NewReader(tc.in))
		if !errors.Is(err, geo.ErrTable) {
			t.Errorf("%s: err = %v, want ErrTable", tc.name, err)
		}
	}
}

func csv(r *strings.Reader) (*geo.DB, error)   { return geo.ReadCountryCSV(r) }
func pyasn(r *strings.Reader) (*geo.DB, error) { return geo.ReadPyASN(r) }

// refEntry is one prefix of a pyasn table, for the slow reference below.
type refEntry struct {
	p   netip.Prefix
	asn uint32
}

// refLookup is the longest-prefix match by brute force, the last of equal
// prefixes winning.
func refLookup(es []refEntry, a netip.Addr) uint32 {
	best, bits := uint32(0), -1
	for _, e := range es {
		if e.p.Contains(a) && e.p.Bits() >= bits {
			best, bits = e.asn, e.p.Bits()
		}
	}
	return best
}

// The flattened table answers as the longest-prefix match does, and every
// address of the returned prefix gets the same answer.
func TestPyASN_MatchesLongestPrefixReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		var es []refEntry
		var text strings.Builder
		for range 40 {
			// Prefixes within 24.0.0.0/8, nested often.
			a := netip.AddrFrom4([4]byte{24, byte(rng.IntN(4)), byte(rng.IntN(256)), 0})
			p := netip.PrefixFrom(a, 8+rng.IntN(17)).Masked()
			n := uint32(1 + rng.IntN(5))
			es = append(es, refEntry{p, n})
			fmt.Fprintf(&text, "%v\t%d\n", p, n)
		}
		db, err := geo.ReadPyASN(strings.NewReader(text.String()))
		if err != nil {
			t.Fatal(err)
		}
		for range 300 {
			a := netip.AddrFrom4([4]byte{24, byte(rng.IntN(5)), byte(rng.IntN(256)), byte(rng.IntN(256))})
			got, _ := db.Lookup(a)
			if want := refLookup(es, a); got.ASN != want {
				t.Fatalf("round %d: Lookup(%v).ASN = %d, want %d; table:\n%s", round, a, got.ASN, want, text.String())
			}
			if !got.Prefix.Contains(a) {
				t.Fatalf("round %d: Lookup(%v).Prefix = %v does not contain it", round, a, got.Prefix)
			}
			// Its ends and a random address of it answer the same.
			first, lastA := got.Prefix.Addr(), last(got.Prefix)
			mid := first
			if got.Prefix.Bits() < 32 {
				b := first.As4()
				off := rng.Uint32N(uint32(1) << (32 - got.Prefix.Bits()))
				v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) + off
				mid = netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
			}
			for _, x := range []netip.Addr{first, lastA, mid} {
				if want := refLookup(es, x); want != got.ASN {
					t.Fatalf("round %d: %v is in %v (AS %d) but has AS %d", round, x, got.Prefix, got.ASN, want)
				}
			}
			// And it is the widest such prefix: its parent holds another answer.
			if got.Prefix.Bits() > 0 {
				parent := netip.PrefixFrom(a, got.Prefix.Bits()-1).Masked()
				if same(es, parent, got.ASN) {
					t.Fatalf("round %d: %v is not the widest prefix: %v answers AS %d too", round, got.Prefix, parent, got.ASN)
				}
			}
		}
	}
}

// same reports whether every address of p answers asn, checking each prefix
// of the table that could split p.
func same(es []refEntry, p netip.Prefix, asn uint32) bool {
	if refLookup(es, p.Addr()) != asn || refLookup(es, last(p)) != asn {
		return false
	}
	for _, e := range es {
		if p.Overlaps(e.p) && e.p.Bits() > p.Bits() {
			if refLookup(es, e.p.Addr()) != asn || refLookup(es, last(e.p)) != asn {
				return false
			}
			if a := last(e.p).Next(); p.Contains(a) && refLookup(es, a) != asn {
				return false
			}
			if a := e.p.Addr().Prev(); p.Contains(a) && refLookup(es, a) != asn {
				return false
			}
		}
	}
	return true
}
