package population

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/scout-discovery/scout/latency"
)

func build(t *testing.T, g Game, n int, seed uint64) *World {
	t.Helper()
	w, err := Build(Fitted(g, n, seed))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Servers) < n*95/100 || len(w.Servers) > n {
		t.Fatalf("Build(%d servers) made %d", n, len(w.Servers))
	}
	return w
}

func TestBuild_SameSeedSameWorld(t *testing.T) {
	a, b := build(t, ET, 2000, 7), build(t, ET, 2000, 7)
	if !reflect.DeepEqual(a.Servers, b.Servers) {
		t.Fatal("two builds of one config differ")
	}
	p := Places()["AU"]
	if !reflect.DeepEqual(a.RTTs(p), b.RTTs(p)) {
		t.Fatal("RTTs of one config differ")
	}
	c := build(t, ET, 2000, 8)
	if reflect.DeepEqual(a.Servers, c.Servers) {
		t.Fatal("seeds 7 and 8 built the same world")
	}
}

func TestBuild_ServersSitInTheirASPrefixes(t *testing.T) {
	w := build(t, CSS, 3000, 1)
	tab, err := Prefixes2008()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[netip.AddrPort]bool{}
	for _, s := range w.Servers {
		if seen[s.Addr] {
			t.Fatalf("%v listed twice", s.Addr)
		}
		seen[s.Addr] = true
		if Reserved(s.Addr.Addr()) {
			t.Fatalf("%v is reserved", s.Addr)
		}
		ok := false
		for _, as := range tab.byCountry[s.Country] {
			if as.asn != s.ASN {
				continue
			}
			for _, p := range as.prefixes {
				if p.Contains(s.Addr.Addr()) {
					ok = true
				}
			}
		}
		if !ok {
			t.Fatalf("%v (%s AS%d) is in no prefix its AS announced in 2008", s.Addr, s.Country, s.ASN)
		}
		if s.Addr.Port() < 27015 || s.Addr.Port() > 27015+200 {
			t.Fatalf("%v: port outside the CS:S range", s.Addr)
		}
	}
}

// The fitted country mix holds the paper's country counts at the paper's
// sizes (Table 2: 50-52 for ET, 69-71 for CS:S), on average over seeds.
func TestBuild_CountryCountsOfTable2(t *testing.T) {
	for _, c := range []struct {
		g        Game
		n        int
		lo, hi   float64
		paperMid float64
	}{{ET, SizeET, 47, 55, 51}, {CSS, SizeCSS, 66, 71, 70}} {
		var sum float64
		const seeds = 4
		for s := uint64(1); s <= seeds; s++ {
			sum += float64(len(Measure(build(t, c.g, c.n, s).Sites()).Countries))
		}
		if m := sum / seeds; m < c.lo || m > c.hi {
			t.Errorf("%s: %.1f countries on average, want %v to %v (paper about %v)", c.g, m, c.lo, c.hi, c.paperMid)
		}
	}
}

// Servers concentrate in a few hosting networks, as the real lists do
// (SCUM 2024: 95 ASes and 160 /16s for 1,684 addresses; top 10 ASes 66%).
func TestBuild_Concentrated(t *testing.T) {
	w := build(t, ET, 2000, 3)
	st := Measure(w.Sites())
	var as []int
	for _, a := range st.ASes {
		as = append(as, a.Sites)
	}
	if top := TopShare(as, 10); top < 0.3 {
		t.Errorf("top 10 ASes hold %.0f%% of servers, want at least 30%%", 100*top)
	}
	if st.Slash16s*2 > st.Addrs { // spread evenly, nearly every address would have its own /16
		t.Errorf("%d /16s for %d addresses: servers are spread, not concentrated", st.Slash16s, st.Addrs)
	}
	// The hosting ASes per country follow the fitted law within a factor 2
	// for countries with enough addresses.
	addrs := map[string]map[netip.Addr]bool{}
	for _, s := range w.Servers {
		if addrs[s.Country] == nil {
			addrs[s.Country] = map[netip.Addr]bool{}
		}
		addrs[s.Country][s.Addr.Addr()] = true
	}
	for _, c := range st.Countries {
		n := float64(len(addrs[c.Country]))
		if n < 30 {
			continue
		}
		want := fitASPerCountryC * math.Pow(n, fitASPerCountryB)
		if got := float64(len(c.ASSites)); got < want/2 || got > want*2 {
			t.Errorf("%s: %v addresses in %v ASes, the law says %.1f", c.Country, n, got, want)
		}
	}
}

func TestMeasure_Slash8Rule(t *testing.T) {
	var ss []Site
	add := func(cc string, a8, n int) {
		for i := range n {
			ss = append(ss, Site{Addr: netip.AddrFrom4([4]byte{byte(a8), byte(i), 0, 1}), Country: cc, ASN: 1})
		}
	}
	add("DE", 80, 11) // 11 servers, 11% of 100: a cluster
	add("DE", 81, 10) // 10 servers: not ("more than 10")
	add("DE", 82, 79)
	add("AU", 1, 11) // 11 servers but 11/111 = 9.9%: not
	add("AU", 2, 100)
	st := Measure(ss)
	if st.Slash8Clusters != 3 { // DE 80, DE 82, AU 2
		t.Fatalf("Slash8Clusters = %d, want 3", st.Slash8Clusters)
	}
	if st.CountryRests != 2 { // DE 81 and AU 1 stay in their countries' clusters
		t.Fatalf("CountryRests = %d, want 2", st.CountryRests)
	}
	if len(st.Countries) != 2 || st.Countries[0].Country != "AU" || st.Sites != 211 {
		t.Fatalf("countries %+v", st.Countries)
	}
}

func TestBuild_RefusesBadConfig(t *testing.T) {
	for _, c := range []Config{
		Fitted("quake", 10, 1),
		Fitted(ET, 0, 1),
		Fitted(ET, MaxServers+1, 1),
		func() Config { c := Fitted(ET, 10, 1); c.Countries = 0; return c }(),
	} {
		if _, err := Build(c); !errors.Is(err, ErrConfig) {
			t.Errorf("Build(%+v) = %v, want ErrConfig", c, err)
		}
	}
}

func TestReserved(t *testing.T) {
	for a, want := range map[string]bool{"10.1.2.3": true, "192.168.0.1": true, "100.64.0.1": true, "224.0.0.1": true, "8.8.8.8": false, "::1": true, "203.0.113.9": true, "203.1.0.1": false} {
		if got := Reserved(netip.MustParseAddr(a)); got != want {
			t.Errorf("Reserved(%s) = %v, want %v", a, got, want)
		}
	}
}

func ExampleMeasure() {
	w, _ := Build(Fitted(ET, 500, 1))
	st := Measure(w.Sites())
	fmt.Println(st.Sites)
	// Output: 500
}

func TestBuild_BigASesSitInHubs(t *testing.T) {
	w := build(t, ET, 2000, 3)
	addrs := map[string]map[netip.Addr]bool{} // country/AS -> addresses
	city := map[string]string{}
	for _, s := range w.Servers {
		k := fmt.Sprintf("%s/%d", s.Country, s.ASN)
		if addrs[k] == nil {
			addrs[k] = map[netip.Addr]bool{}
		}
		addrs[k][s.Addr.Addr()] = true
		city[k] = s.City
	}
	var big int
	for k, as := range addrs {
		cc := k[:2]
		hubs := false
		for _, c := range latency.Cities() {
			hubs = hubs || c.Country == cc && hubWeight(cc, c.Name) > 0
		}
		if len(as) < calHubAddrs || !hubs {
			continue
		}
		big++
		if hubWeight(cc, city[k]) == 0 {
			t.Errorf("AS %s of %d addresses sits in %s, not a hub", k, len(as), city[k])
		}
	}
	if big == 0 {
		t.Fatal("no AS of hub size in the world")
	}
}

func TestCountryRank2007_MovesAustraliaOnly(t *testing.T) {
	m, r := CountryRank(), CountryRank2007()
	if len(m) != len(r) || r[calAURank-1] != "AU" {
		t.Fatalf("AU at %d of %v", calAURank, r)
	}
	var a, b []string
	for _, cc := range m {
		if cc != "AU" {
			a = append(a, cc)
		}
	}
	for _, cc := range r {
		if cc != "AU" {
			b = append(b, cc)
		}
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("CountryRank2007 reorders more than Australia")
	}
	if m[4] != "AU" || CountryRank()[4] != "AU" {
		t.Fatal("CountryRank2007 changed CountryRank")
	}
}

// TestLatency_VantageResidual checks the per-vantage residual fit: every
// client city has one for every region, and from Frankfurt, whose measured
// paths to North America are shorter and less spread than the global fit
// says, fewer US servers are over 200 ms than with the global residual.
func TestLatency_VantageResidual(t *testing.T) {
	for name, p := range Places() {
		for _, r := range []string{"AF", "AS", "EU", "NA", "OC", "SA"} {
			if _, s, ok := vantageResidual(p.City.Name, r); !ok || !(s > 0) {
				t.Errorf("%s (%s) to %s: no residual fit", name, p.City.Name, r)
			}
		}
	}
	over := func(cfg Config) (n, us int) {
		w, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range w.RTTs(Places()["DE"]) {
			if w.Servers[i].Country == "US" {
				us++
				if d >= 200*time.Millisecond {
					n++
				}
			}
		}
		return n, us
	}
	var vant, glob, us int
	for seed := uint64(1); seed <= 6; seed++ {
		v, u := over(FittedVantage(CSS, 5000, seed))
		g, _ := over(Fitted(CSS, 5000, seed))
		vant, glob, us = vant+v, glob+g, us+u
	}
	t.Logf("seeds 1-6: %d of %d US servers over 200 ms from Frankfurt with the vantage fit, %d with the global residual", vant, us, glob)
	if us < 1000 || vant >= glob {
		t.Errorf("%d of %d US servers over 200 ms from Frankfurt with the vantage fit, %d with the global residual; want fewer", vant, us, glob)
	}
}

// TestWorld_Churned: a churned world keeps the servers that stay (address,
// network, city), replaces the share asked with servers of another draw,
// lists no address twice and keeps every remaining server's RTT.
func TestWorld_Churned(t *testing.T) {
	w, err := Build(FittedVantage(ET, 800, 3))
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.Churned(0.25, 99)
	if err != nil {
		t.Fatal(err)
	}
	before := map[netip.AddrPort]Server{}
	for _, s := range w.Servers {
		before[s.Addr] = s
	}
	p := Places()["AU"]
	rw := map[netip.AddrPort]time.Duration{}
	for i, d := range w.RTTs(p) {
		rw[w.Servers[i].Addr] = d
	}
	kept, seen := 0, map[netip.AddrPort]bool{}
	for i, d := range c.RTTs(p) {
		s := c.Servers[i]
		if seen[s.Addr] {
			t.Fatalf("%v listed twice", s.Addr)
		}
		seen[s.Addr] = true
		if old, ok := before[s.Addr]; ok {
			kept++
			if old != s || rw[s.Addr] != d {
				t.Errorf("%v changed: %+v %v, was %+v %v", s.Addr, s, d, old, rw[s.Addr])
			}
		}
	}
	if kept != 600 || len(c.Servers) < 780 {
		t.Errorf("kept %d of 800 (want 600), %d servers in all", kept, len(c.Servers))
	}
	if _, err := w.Churned(1.5, 1); !errors.Is(err, ErrConfig) {
		t.Errorf("churn 1.5: %v", err)
	}
}
