package geo

import (
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"
)

// The embedded file must be whole: an empty, truncated or foreign file fails
// to open, has the wrong metadata, or holds far fewer networks. The numbers
// are those of the 2.3.2026061719 tables, with some slack for newer ones.
func TestEmbedded_OpensWithSaneContent(t *testing.T) {
	if n := len(embedded); n < 8<<20 || n > 24<<20 {
		t.Fatalf("embedded file is %d bytes, want 8 to 24 MiB", n)
	}
	r, err := maxminddb.OpenBytes(embedded)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md := r.Metadata
	if md.DatabaseType != "scout-geo" || md.IPVersion != 6 || md.RecordSize != 24 {
		t.Errorf("metadata: type %q, IP version %d, record size %d; want scout-geo, 6, 24",
			md.DatabaseType, md.IPVersion, md.RecordSize)
	}
	if md.NodeCount < 1_000_000 {
		t.Errorf("%d nodes, want at least a million", md.NodeCount)
	}

	var v4, v6, noCountry, noASN int
	for res := range r.Networks() {
		var rec record
		if err := res.Decode(&rec); err != nil {
			t.Fatalf("%v: %v", res.Prefix(), err)
		}
		p := res.Prefix()
		if p.Addr().Is4() {
			v4++
		} else {
			v6++
		}
		if rec.Country.ISOCode == "" {
			noCountry++
		} else if !validCountry(rec.Country.ISOCode) {
			t.Errorf("%v: country %q", p, rec.Country.ISOCode)
		}
		if rec.ASN == 0 {
			noASN++
		}
		for _, b := range reserved {
			if b.Prefix.Overlaps(p) {
				t.Errorf("network %v overlaps reserved %v (%s)", p, b.Prefix, b.Name)
			}
		}
	}
	t.Logf("%d IPv4 and %d IPv6 networks; %d without country, %d without AS", v4, v6, noCountry, noASN)
	if v4 < 400_000 || v6 < 400_000 {
		t.Errorf("%d IPv4 and %d IPv6 networks, want at least 400,000 of each", v4, v6)
	}
	if total := v4 + v6; noCountry > total/5 || noASN > total/2 {
		t.Errorf("of %d networks, %d lack a country and %d an AS", total, noCountry, noASN)
	}
}
