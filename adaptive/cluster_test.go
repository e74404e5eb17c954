package adaptive

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TestAlgorithm1_Slash8Servers checks step 2(b)i at its boundary: a /8 with
// 10 servers is not "more than 10 game servers", one with 11 is.
func TestAlgorithm1_Slash8Servers(t *testing.T) {
	for _, tc := range []struct {
		inSlash8 int
		want     bool
	}{{10, false}, {11, true}} {
		t.Run(fmt.Sprint(tc.inSlash8), func(t *testing.T) {
			// The /8 holds far more than 10% of the country either way.
			ts := append(addrs("DE", 80, 1, tc.inSlash8), addrs("DE", 90, 1, 5)...)
			cs := live(newPlanner(t, ts, Paper(), 1).Clusters())
			c, ok := cs["DE 80.0.0.0/8"]
			if ok != tc.want {
				t.Fatalf("/8 cluster made = %v, want %v; clusters %v", ok, tc.want, ids(cs))
			}
			if ok && c.Size != tc.inSlash8 {
				t.Errorf("size %d, want %d", c.Size, tc.inSlash8)
			}
			rest := cs["DE"]
			wantRest := 5
			if !tc.want {
				wantRest += tc.inSlash8
			}
			if rest.Size != wantRest {
				t.Errorf("rest of DE: %d servers, want %d", rest.Size, wantRest)
			}
		})
	}
}

// TestAlgorithm1_Slash8Share checks step 2(b)ii at its boundary: 11 servers
// out of 110 is exactly 10%, not "more than 10%"; 11 of 109 is.
func TestAlgorithm1_Slash8Share(t *testing.T) {
	for _, tc := range []struct {
		country int
		want    bool
	}{{110, false}, {109, true}} {
		t.Run(fmt.Sprint(tc.country), func(t *testing.T) {
			ts := addrs("US", 12, 1, 11)
			// The rest of the country, spread over /8s that stay small.
			for i := range tc.country - 11 {
				ts = append(ts, tg(fmt.Sprintf("%d.0.0.1", 100+i), "US"))
			}
			cs := live(newPlanner(t, ts, Paper(), 1).Clusters())
			if _, ok := cs["US 12.0.0.0/8"]; ok != tc.want {
				t.Fatalf("/8 cluster made = %v, want %v (11 of %d)", ok, tc.want, tc.country)
			}
		})
	}
}

// TestAlgorithm1_Slash8PerCountry checks that the /8 rule counts within a
// country: a /8 shared by two countries is two clusters (or none).
func TestAlgorithm1_Slash8PerCountry(t *testing.T) {
	ts := append(addrs("FR", 62, 1, 12), addrs("NL", 62, 2, 12)...)
	ts = append(ts, addrs("FR", 91, 1, 3)...)
	ts = append(ts, tg("1.2.3.4", ""), tg("1.2.3.5", ""))
	cs := live(newPlanner(t, ts, Paper(), 1).Clusters())
	want := []string{"--", "FR", "FR 62.0.0.0/8", "NL 62.0.0.0/8"}
	if got := ids(cs); !slices.Equal(got, want) {
		t.Errorf("clusters %v, want %v", got, want)
	}
}

// TestPlanner_IPv6 checks that IPv6 servers use /32 and /48 and never share
// a prefix with IPv4 ones.
func TestPlanner_IPv6(t *testing.T) {
	var ts []Target
	for i := range 12 {
		ts = append(ts, Target{Addr: netip.MustParseAddrPort(fmt.Sprintf("[2001:4860:%x::1]:27960", i%3)), Country: "US"})
		ts[len(ts)-1].Addr = netip.AddrPortFrom(ts[len(ts)-1].Addr.Addr(), uint16(1000+i))
	}
	ts = append(ts, addrs("US", 32, 1, 3)...)
	pl := newPlanner(t, ts, Paper(), 1)
	cs := live(pl.Clusters())
	if got := ids(cs); !slices.Equal(got, []string{"US", "US 2001:4860::/32"}) {
		t.Fatalf("clusters %v", got)
	}
	cal := phases(drive(t, pl, byCountry(map[string]time.Duration{"US": ms(90)})), Calibrate)
	per := make(map[netip.Prefix]int)
	for _, p := range cal {
		if p.t.Addr.Addr().Is6() {
			pfx, _ := p.t.Addr.Addr().Prefix(48)
			per[pfx]++
		}
	}
	if len(per) != 3 { // Nsample = ceil(sqrt(12)) = 4 over three /48s
		t.Errorf("IPv6 samples by /48: %v", per)
	}
}

// TestByAS checks the AS groupings of section 5.2 and their fallback to the
// country for servers without an AS.
func TestByAS(t *testing.T) {
	ts := []Target{
		{Addr: ap("5.1.0.1"), Country: "DE", ASN: 16276},
		{Addr: ap("5.2.0.1"), Country: "FR", ASN: 16276},
		{Addr: ap("6.1.0.1"), Country: "DE", ASN: 24940},
		{Addr: ap("7.1.0.1"), Country: "DE"},
	}
	for _, tc := range []struct {
		key  Key
		want []string
	}{
		{ByCountry, []string{"DE", "FR"}},
		{ByAS, []string{"AS16276", "AS24940", "DE"}},
		{ByCountryAS, []string{"DE", "DE AS16276", "DE AS24940", "FR AS16276"}},
	} {
		p := Paper()
		p.ClusterBy = tc.key
		if got := ids(live(newPlanner(t, ts, p, 1).Clusters())); !slices.Equal(got, tc.want) {
			t.Errorf("%v: clusters %v, want %v", tc.key, got, tc.want)
		}
	}
}
