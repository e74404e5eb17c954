package geo_test

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/scout-discovery/scout/geo"
)

// Expected answers are the rows of the source CSVs of
// @ip-location-db/geo-whois-asn-country and @ip-location-db/asn
// 2.3.2026061719 that hold each address (quoted in the comments); the prefix
// is the widest one that lies within both rows.
var known = []struct {
	addr string
	want geo.Info
}{
	// 1.1.1.0,1.1.1.255,AU / 1.1.1.0,1.1.1.255,13335,"Cloudflare, Inc."
	{"1.1.1.1", geo.Info{Country: "AU", ASN: 13335, ASOrg: "Cloudflare, Inc.", Prefix: pfx("1.1.1.0/24")}},
	// 6.0.0.0,8.10.5.255,US / 8.8.8.0,8.8.8.255,15169,Google LLC
	{"8.8.8.8", geo.Info{Country: "US", ASN: 15169, ASOrg: "Google LLC", Prefix: pfx("8.8.8.0/24")}},
	// 8.236.0.0,9.128.255.255,US / 9.9.9.0,9.9.9.255,19281,Quad9
	{"9.9.9.9", geo.Info{Country: "US", ASN: 19281, ASOrg: "Quad9", Prefix: pfx("9.9.9.0/24")}},
	// 208.67.172.0,208.68.15.255,US / 208.67.216.0,208.67.223.255,36692,"Cisco OpenDNS, LLC"
	{"208.67.222.222", geo.Info{Country: "US", ASN: 36692, ASOrg: "Cisco OpenDNS, LLC", Prefix: pfx("208.67.216.0/21")}},
	// 17.253.123.0,17.253.223.255,US / 17.253.128.0,17.255.255.255,714,Apple Inc.
	// The country row ends before the AS row: the answer holds for a /18.
	{"17.253.144.10", geo.Info{Country: "US", ASN: 714, ASOrg: "Apple Inc.", Prefix: pfx("17.253.128.0/18")}},
	// k.root-servers.net. 193.0.0.0,193.0.23.255,NL / 193.0.14.0,193.0.17.255,25152,...
	{"193.0.14.129", geo.Info{Country: "NL", ASN: 25152, ASOrg: "Reseaux IP Europeens Network Coordination Centre (RIPE NCC)", Prefix: pfx("193.0.14.0/23")}},
	// m.root-servers.net. 202.12.26.0,202.12.28.255,JP / 202.12.27.0,202.12.27.255,7500,WIDE Project
	{"202.12.27.33", geo.Info{Country: "JP", ASN: 7500, ASOrg: "WIDE Project", Prefix: pfx("202.12.27.0/24")}},
	// 2606:4700::,2606:4700:ffff:...,US / 2606:4700:4700::,2606:4700:4700:ffff:...,13335,...
	{"2606:4700:4700::1111", geo.Info{Country: "US", ASN: 13335, ASOrg: "Cloudflare, Inc.", Prefix: pfx("2606:4700:4700::/48")}},
	// 2001:4860::,2001:4860:ffff:...,US / 2001:4860:480d::,2001:4860:ffff:...,15169,Google LLC
	{"2001:4860:4860::8888", geo.Info{Country: "US", ASN: 15169, ASOrg: "Google LLC", Prefix: pfx("2001:4860:4840::/42")}},
	// 2a00:1450::,2a00:1457:ffff:...,IE / 2a00:1450::,2a00:1450:ffff:...,15169,Google LLC
	{"2a00:1450:4001:800::200e", geo.Info{Country: "IE", ASN: 15169, ASOrg: "Google LLC", Prefix: pfx("2a00:1450::/32")}},
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func TestDefault_KnownAddresses(t *testing.T) {
	for _, tc := range known {
		got, ok := geo.Default().Lookup(netip.MustParseAddr(tc.addr))
		if !ok || got != tc.want {
			t.Errorf("Lookup(%s) = %+v, %v; want %+v, true", tc.addr, got, ok, tc.want)
		}
	}
}

func TestDefault_IPv4MappedIsUnmapped(t *testing.T) {
	for _, tc := range known {
		a := netip.MustParseAddr(tc.addr)
		if !a.Is4() {
			continue
		}
		mapped := netip.AddrFrom16(a.As16())
		got, ok := geo.Default().Lookup(mapped)
		if !ok || got != tc.want {
			t.Errorf("Lookup(%v) = %+v, %v; want %+v, true", mapped, got, ok, tc.want)
		}
	}
}

// The source tables map 192.168.0.0/16 to AU and 2001:db8::/32 to JP.
func TestDefault_ReservedNotGeolocated(t *testing.T) {
	for _, s := range []string{"192.168.1.1", "::ffff:192.168.1.1", "2001:db8::1", "10.1.2.3", "127.0.0.1", "::1", "fe80::1"} {
		a := netip.MustParseAddr(s)
		got, ok := geo.Default().Lookup(a)
		want, _ := geo.Reserved(a)
		if ok || got != (geo.Info{Prefix: want}) {
			t.Errorf("Lookup(%s) = %+v, %v; want only the reserved block %v", s, got, ok, want)
		}
	}
}

func TestLookup_ZeroAddr(t *testing.T) {
	if got, ok := geo.Default().Lookup(netip.Addr{}); ok || got != (geo.Info{}) {
		t.Errorf("Lookup(zero) = %+v, %v; want nothing", got, ok)
	}
}

func TestDefault_ConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, tc := range known {
				if got, _ := geo.Default().Lookup(netip.MustParseAddr(tc.addr)); got != tc.want {
					t.Errorf("Lookup(%s) = %+v, want %+v", tc.addr, got, tc.want)
				}
			}
		})
	}
	wg.Wait()
}

// A row is one network of a fixture MaxMind DB.
type row struct {
	prefix string
	rec    mmdbtype.Map
}

// writeMMDB writes a MaxMind DB of the given type holding rows, inserted in
// order (a later row replaces an earlier one where they overlap), and
// returns its path. Reserved networks are allowed in, as in some free tables.
func writeMMDB(t testing.TB, dbType string, ipVersion int, rows []row) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            dbType,
		Description:             map[string]string{"en": "geo test fixture"},
		IPVersion:               ipVersion,
		RecordSize:              24,
		IncludeReservedNetworks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		_, n, err := net.ParseCIDR(r.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(n, r.rec); err != nil {
			t.Fatalf("insert %s: %v", r.prefix, err)
		}
	}
	path := filepath.Join(t.TempDir(), dbType+".mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func country(cc string) mmdbtype.Map {
	return mmdbtype.Map{
		"continent":          mmdbtype.Map{"code": mmdbtype.String("OC")},
		"country":            mmdbtype.Map{"iso_code": mmdbtype.String(cc), "names": mmdbtype.Map{"en": mmdbtype.String("Somewhere")}},
		"registered_country": mmdbtype.Map{"iso_code": mmdbtype.String(cc)},
	}
}

func asn(n uint32, org string) mmdbtype.Map {
	return mmdbtype.Map{
		"autonomous_system_number":       mmdbtype.Uint32(n),
		"autonomous_system_organization": mmdbtype.String(org),
	}
}

// A table that maps reserved blocks to a country must not place them, nor
// an answer for a public address next to them spill into them.
func TestLookup_ReservedNeverGeolocatedEvenIfDataSays(t *testing.T) {
	path := writeMMDB(t, "GeoLite2-Country", 6, []row{
		{"::/0", country("X1")},      // not a country code: ignored
		{"0.0.0.0/2", country("US")}, // covers 0/8, 10/8, 100.64/10, 127/8 and public space
		{"10.0.0.0/8", country("US")},
		{"192.168.0.0/16", country("AU")},
		{"100.64.0.0/10", country("US")},
		{"fc00::/7", country("DE")},
		{"2001:db8::/32", country("JP")},
	})
	db, err := geo.OpenMMDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{
		"10.0.0.0", "10.255.255.255", "::ffff:10.1.2.3", "192.168.7.7", "100.64.0.1",
		"100.127.255.255", "127.0.0.1", "0.1.2.3", "fd12:3456::1", "2001:db8::53",
	} {
		a := netip.MustParseAddr(s)
		got, ok := db.Lookup(a)
		block, _ := geo.Reserved(a)
		if ok || got != (geo.Info{Prefix: block}) || !block.IsValid() {
			t.Errorf("Lookup(%s) = %+v, %v; want only its reserved block %v", s, got, ok, block)
		}
	}
	// 11.0.0.0 is public; the file answers for 0.0.0.0/2, but the answer
	// only holds for the widest prefix around 11.0.0.0 clear of 10/8.
	got, ok := db.Lookup(netip.MustParseAddr("11.0.0.1"))
	if want := (geo.Info{Country: "US", Prefix: pfx("11.0.0.0/8")}); !ok || got != want {
		t.Errorf("Lookup(11.0.0.1) = %+v, %v; want %+v, true", got, ok, want)
	}
	got, ok = db.Lookup(netip.MustParseAddr("2a01::1"))
	if ok || got.Country != "" {
		t.Errorf("Lookup(2a01::1) = %+v, %v; want no country from an X1 record", got, ok)
	}
}

func TestReserved_Table(t *testing.T) {
	for _, r := range geo.ReservedPrefixes() {
		if r.Prefix != r.Prefix.Masked() || r.Name == "" {
			t.Errorf("table entry %v %q", r.Prefix, r.Name)
		}
		for _, a := range []netip.Addr{r.Prefix.Addr(), last(r.Prefix)} {
			if p, ok := geo.Reserved(a); !ok || p != r.Prefix {
				t.Errorf("Reserved(%v) = %v, %v; want %v", a, p, ok, r.Prefix)
			}
		}
	}
	for _, s := range []string{
		"9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "172.15.255.255",
		"172.32.0.0", "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0",
		"223.255.255.255", "1.1.1.1", "2000::", "2001:200::1", "2001:4860:4860::8888",
		"2a00:1450::1", "3ffe::", "3fff:1000::",
	} {
		if p, ok := geo.Reserved(netip.MustParseAddr(s)); ok {
			t.Errorf("Reserved(%s) = %v, true; want public", s, p)
		}
	}
	for _, s := range []string{
		"::", "::1", "::ffff:10.0.0.1", "64:ff9b::808:808", "100::1", "1fff:ffff::", "4000::",
		"fc00::", "fdff::1", "fe80::1", "ff02::1", "2001:2::1", "2001::1", "2002:c000:0204::1",
		"255.255.255.255", "240.0.0.1", "224.0.0.1", "198.18.0.1", "198.19.255.255",
	} {
		if _, ok := geo.Reserved(netip.MustParseAddr(s)); !ok {
			t.Errorf("Reserved(%s) = false; want reserved", s)
		}
	}
	// The result is a copy.
	geo.ReservedPrefixes()[0].Prefix = pfx("1.1.1.0/24")
	if _, ok := geo.Reserved(netip.MustParseAddr("1.1.1.1")); ok {
		t.Error("changing ReservedPrefixes' result changed the table")
	}
}

func last(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Files given to Open take precedence for the fields they provide; the
// embedded data fills in the rest.
func TestOpen_UserFilesTakePrecedence(t *testing.T) {
	countryFile := writeMMDB(t, "GeoLite2-Country", 6, []row{
		{"1.1.0.0/16", country("JP")},
		// An anycast network with only a registered country.
		{"9.9.9.0/24", mmdbtype.Map{"registered_country": mmdbtype.Map{"iso_code": mmdbtype.String("CH")}}},
	})
	asnFile := writeMMDB(t, "GeoLite2-ASN", 6, []row{
		{"1.1.1.0/25", asn(64500, "Example AS")},
		{"2606:4700:4700::/64", asn(64501, "Example v6")},
		{"2001:4860:4860::8888/128", asn(0, "no AS")},
	})
	cityFile := writeMMDB(t, "GeoLite2-City", 4, []row{
		{"8.8.8.0/24", mmdbtype.Map{
			"city":     mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String("Nowhere")}},
			"country":  mmdbtype.Map{"iso_code": mmdbtype.String("GB")},
			"location": mmdbtype.Map{"latitude": mmdbtype.Float64(51.5), "longitude": mmdbtype.Float64(-0.1)},
		}},
	})

	both, err := geo.Open(countryFile, asnFile, cityFile)
	if err != nil {
		t.Fatal(err)
	}
	defer both.Close()
	onlyCountry, err := geo.Open(countryFile)
	if err != nil {
		t.Fatal(err)
	}
	defer onlyCountry.Close()

	for _, tc := range []struct {
		db   *geo.DB
		name string
		addr string
		want geo.Info
	}{
		{both, "country and AS from the user", "1.1.1.1",
			geo.Info{Country: "JP", ASN: 64500, ASOrg: "Example AS", Prefix: pfx("1.1.1.0/25")}},
		{both, "user country, embedded AS", "1.1.1.200",
			geo.Info{Country: "JP", ASN: 13335, ASOrg: "Cloudflare, Inc.", Prefix: pfx("1.1.1.128/25")}},
		{onlyCountry, "user country, embedded AS", "1.1.1.1",
			geo.Info{Country: "JP", ASN: 13335, ASOrg: "Cloudflare, Inc.", Prefix: pfx("1.1.1.0/24")}},
		{both, "registered country when there is no country", "9.9.9.9",
			geo.Info{Country: "CH", ASN: 19281, ASOrg: "Quad9", Prefix: pfx("9.9.9.0/24")}},
		{both, "City schema", "8.8.8.8",
			geo.Info{Country: "GB", ASN: 15169, ASOrg: "Google LLC", Prefix: pfx("8.8.8.0/24")}},
		{both, "IPv6 AS from the user, IPv4-only file skipped", "2606:4700:4700::1111",
			geo.Info{Country: "US", ASN: 64501, ASOrg: "Example v6", Prefix: pfx("2606:4700:4700::/64")}},
		{both, "AS 0 is no answer", "2001:4860:4860::8888",
			geo.Info{Country: "US", ASN: 15169, ASOrg: "Google LLC", Prefix: pfx("2001:4860:4860::8888/128")}},
		{both, "nothing from the user", "208.67.222.222",
			geo.Info{Country: "US", ASN: 36692, ASOrg: "Cisco OpenDNS, LLC", Prefix: pfx("208.67.216.0/21")}},
	} {
		got, ok := tc.db.Lookup(netip.MustParseAddr(tc.addr))
		if !ok || got != tc.want {
			t.Errorf("%s: Lookup(%s) = %+v, %v; want %+v", tc.name, tc.addr, got, ok, tc.want)
		}
	}
	if err := both.Verify(); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if n := both.DecodeErrors(); n != 0 {
		t.Errorf("%d decode errors", n)
	}
}

func TestOpen_Errors(t *testing.T) {
	if _, err := geo.Open(filepath.Join(t.TempDir(), "missing.mmdb")); err == nil {
		t.Error("Open of a missing file succeeded")
	}
	junk := filepath.Join(t.TempDir(), "junk.mmdb")
	if err := os.WriteFile(junk, []byte("not a MaxMind DB"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := geo.Open(junk); err == nil {
		t.Error("Open of a junk file succeeded")
	}
}

// A record of the wrong shape counts as unknown in its layer, is counted,
// and the layers under it still answer.
func TestLookup_UndecodableRecordCounted(t *testing.T) {
	path := writeMMDB(t, "Weird", 6, []row{
		{"1.1.1.0/24", mmdbtype.Map{"country": mmdbtype.String("AU")}}, // a string, not a map
	})
	db, err := geo.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, ok := db.Lookup(netip.MustParseAddr("1.1.1.1"))
	want := geo.Info{Country: "AU", ASN: 13335, ASOrg: "Cloudflare, Inc.", Prefix: pfx("1.1.1.1/32")}
	if !ok || got != want {
		t.Errorf("Lookup = %+v, %v; want %+v", got, ok, want)
	}
	if n := db.DecodeErrors(); n != 1 {
		t.Errorf("DecodeErrors = %d, want 1", n)
	}
	if err := db.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

var sink geo.Info

func BenchmarkLookup(b *testing.B) {
	db := geo.Default()
	addrs := make([]netip.Addr, len(known))
	for i, tc := range known {
		addrs[i] = netip.MustParseAddr(tc.addr)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sink, _ = db.Lookup(addrs[i%len(addrs)])
	}
}

func BenchmarkLookupParallel(b *testing.B) {
	db := geo.Default()
	addr := netip.MustParseAddr("193.0.14.129")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := db.Lookup(addr); !ok {
				b.Error("not found")
			}
		}
	})
}
