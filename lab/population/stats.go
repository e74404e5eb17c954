package population

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
)

// Site is one entry of a server population, for Measure: a game server (or,
// for lists keyed by address, an address) with its country and origin AS.
type Site struct {
	Addr    netip.Addr
	Country string // "" when unknown
	ASN     uint32 // 0 when unknown
}

// Stats describes how concentrated a population is.
type Stats struct {
	Sites      int
	Addrs      int            // distinct addresses
	PerCountry map[string]int // sites per country
	Countries  []CountryStats // by sites, largest first
	ASes       []ASStats      // by sites, largest first
	Slash16s   int            // distinct /16s
	Slash8s    int            // distinct /8s
	// Slash8Clusters counts the /8s that Algorithm 1 step 2(b) of the paper
	// makes clusters of: more than 10 sites and more than 10% of their
	// country's sites.
	Slash8Clusters int
	// CountryRests counts the countries with sites outside their /8
	// clusters (step 2(d)'s per-country clusters): Slash8Clusters +
	// CountryRests is the number of clusters step 3 starts from.
	CountryRests int
	// InitialProbes estimates Algorithm 1's calibration probes before any
	// split: for each cluster (a /8 cluster or the rest of a country),
	// round(sqrt(n)) probes, at most one per /16 of the cluster.
	InitialProbes int
}

// CountryStats is one country of a population.
type CountryStats struct {
	Country string
	Sites   int
	ASSites []int // sites per AS, largest first
	Slash8s int
}

// ASStats is one (country, AS) network of a population.
type ASStats struct {
	Country      string
	ASN          uint32
	Sites        int
	Slash16Sites []int // sites per /16, largest first
}

// Measure computes the concentration statistics of sites. Sites with an
// unknown country are counted in a country "".
func Measure(sites []Site) Stats {
	type asKey struct {
		cc  string
		asn uint32
	}
	st := Stats{Sites: len(sites), PerCountry: map[string]int{}}
	addrs := map[netip.Addr]bool{}
	s16 := map[uint32]bool{}
	s8 := map[uint32]bool{}
	perAS := map[asKey]map[uint32]int{}
	perCC8 := map[string]map[uint32]int{}
	perCluster16 := map[string]map[uint32]bool{} // cluster id -> /16s
	for _, s := range sites {
		a := s.Addr.Unmap().As4()
		v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
		addrs[s.Addr] = true
		s16[v>>16] = true
		s8[v>>24] = true
		st.PerCountry[s.Country]++
		k := asKey{s.Country, s.ASN}
		if perAS[k] == nil {
			perAS[k] = map[uint32]int{}
		}
		perAS[k][v>>16]++
		if perCC8[s.Country] == nil {
			perCC8[s.Country] = map[uint32]int{}
		}
		perCC8[s.Country][v>>24]++
	}
	st.Addrs, st.Slash16s, st.Slash8s = len(addrs), len(s16), len(s8)
	clusterOf := func(s Site, v uint32) string {
		n8 := perCC8[s.Country][v>>24]
		if n8 > 10 && float64(n8) > 0.1*float64(st.PerCountry[s.Country]) {
			return fmt.Sprintf("%s/%d", s.Country, v>>24)
		}
		return s.Country
	}
	clusterN := map[string]int{}
	rests := map[string]bool{}
	for _, s := range sites {
		a := s.Addr.Unmap().As4()
		v := uint32(a[0])<<24 | uint32(a[1])<<16
		id := clusterOf(s, v)
		if id == s.Country {
			rests[s.Country] = true
		}
		clusterN[id]++
		if perCluster16[id] == nil {
			perCluster16[id] = map[uint32]bool{}
		}
		perCluster16[id][v>>16] = true
	}
	st.CountryRests = len(rests)
	for id, n := range clusterN {
		st.InitialProbes += min(int(math.Round(math.Sqrt(float64(n)))), len(perCluster16[id]))
	}
	for cc, m := range perCC8 {
		for _, n := range m {
			if n > 10 && float64(n) > 0.1*float64(st.PerCountry[cc]) {
				st.Slash8Clusters++
			}
		}
	}
	ccAS := map[string][]int{}
	for k, m := range perAS {
		as := ASStats{Country: k.cc, ASN: k.asn}
		for _, n := range m {
			as.Sites += n
			as.Slash16Sites = append(as.Slash16Sites, n)
		}
		sort.Sort(sort.Reverse(sort.IntSlice(as.Slash16Sites)))
		st.ASes = append(st.ASes, as)
		ccAS[k.cc] = append(ccAS[k.cc], as.Sites)
	}
	sort.Slice(st.ASes, func(i, j int) bool {
		a, b := st.ASes[i], st.ASes[j]
		if a.Sites != b.Sites {
			return a.Sites > b.Sites
		}
		if a.Country != b.Country {
			return a.Country < b.Country
		}
		return a.ASN < b.ASN
	})
	for cc, n := range st.PerCountry {
		c := CountryStats{Country: cc, Sites: n, ASSites: ccAS[cc], Slash8s: len(perCC8[cc])}
		sort.Sort(sort.Reverse(sort.IntSlice(c.ASSites)))
		st.Countries = append(st.Countries, c)
	}
	sort.Slice(st.Countries, func(i, j int) bool {
		a, b := st.Countries[i], st.Countries[j]
		if a.Sites != b.Sites {
			return a.Sites > b.Sites
		}
		return a.Country < b.Country
	})
	return st
}

// TopShare is the share of sites in the largest k entries of counts (which
// must be sorted, largest first).
func TopShare(counts []int, k int) float64 {
	var top, all int
	for i, n := range counts {
		if i < k {
			top += n
		}
		all += n
	}
	if all == 0 {
		return 0
	}
	return float64(top) / float64(all)
}

// String summarises the statistics on one line.
func (st Stats) String() string {
	var as []int
	for _, a := range st.ASes {
		as = append(as, a.Sites)
	}
	return fmt.Sprintf("%d sites, %d addresses, %d countries, %d ASes, %d /16s, %d /8s, %d /8 clusters, ~%d initial probes; top AS %.0f%%, top 10 ASes %.0f%%",
		st.Sites, st.Addrs, len(st.Countries), len(st.ASes), st.Slash16s, st.Slash8s, st.Slash8Clusters, st.InitialProbes,
		100*TopShare(as, 1), 100*TopShare(as, 10))
}
