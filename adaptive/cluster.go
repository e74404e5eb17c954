package adaptive

import (
	"net/netip"
	"slices"
	"strconv"
)

func (pl *Planner) prefix(a netip.Addr, fine bool) netip.Prefix {
	bits := pl.p.Coarse4
	switch {
	case a.Is4() && fine:
		bits = pl.p.Fine4
	case !a.Is4() && fine:
		bits = pl.p.Fine6
	case !a.Is4():
		bits = pl.p.Coarse6
	}
	pfx, _ := a.Prefix(bits) // bits is within range: Params.check
	return pfx
}

// cluster is step 2: groups (2a), /8 clusters (2b, 2c), the rest (2d).
func (pl *Planner) cluster() {
	type groupKey struct {
		country string
		asn     uint32
	}
	type coarseKey struct {
		group  int32
		prefix netip.Prefix
	}
	groupOf := make([]int32, len(pl.targets))
	groupIdx := make(map[groupKey]int32)
	var groupSize []int
	coarse := make(map[coarseKey]int)
	for i, t := range pl.targets {
		k := groupKey{country: t.Country}
		if k.country == "" {
			k.country = UnknownCountry
		}
		if t.ASN != 0 {
			switch pl.p.ClusterBy {
			case ByAS:
				k = groupKey{asn: t.ASN}
			case ByCountryAS:
				k.asn = t.ASN
			}
		}
		g, ok := groupIdx[k]
		if !ok {
			g = int32(len(pl.groups))
			groupIdx[k] = g
			name := k.country
			switch {
			case k.asn != 0 && k.country == "":
				name = "AS" + strconv.FormatUint(uint64(k.asn), 10)
			case k.asn != 0:
				name = k.country + " AS" + strconv.FormatUint(uint64(k.asn), 10)
			}
			pl.groups = append(pl.groups, name)
			groupSize = append(groupSize, 0)
		}
		groupOf[i] = g
		groupSize[g]++
		coarse[coarseKey{g, pl.prefix(t.Addr.Addr(), false)}]++
	}
	clusterIdx := make(map[coarseKey]int32)
	for i, t := range pl.targets {
		g := groupOf[i]
		k := coarseKey{g, pl.prefix(t.Addr.Addr(), false)}
		if n := coarse[k]; !(n > pl.p.Slash8Servers && share(n, groupSize[g]) > pl.p.Slash8Share) {
			k.prefix = netip.Prefix{} // step 2(d): the rest of the group
		}
		c, ok := clusterIdx[k]
		if !ok {
			c = int32(len(pl.cl))
			clusterIdx[k] = c
			pl.cl = append(pl.cl, cluster{group: g, prefix: k.prefix, parent: -1, heapAt: -1})
		}
		pl.cl[c].members = append(pl.cl[c].members, int32(i))
		pl.slots[i].cluster = c
	}
}

// share is n/total. Division is rounded to the nearest float64 like the
// literal 0.10 is, so exactly 10% compares equal to 0.10, not above it.
func share(n, total int) float64 { return float64(n) / float64(total) }

// byFine groups members by their /16, in the order each /16 first appears
// and in master order within one: grouped[bounds[b]:bounds[b+1]] is /16 b.
func (pl *Planner) byFine(members []int32, grouped []int32) ([]int32, []int32) {
	clear(pl.fine)
	bucketOf := pl.scratch[:0]
	var counts []int32
	for _, s := range members {
		f := pl.prefix(pl.targets[s].Addr.Addr(), true)
		b, ok := pl.fine[f]
		if !ok {
			b = int32(len(counts))
			pl.fine[f] = b
			counts = append(counts, 0)
		}
		counts[b]++
		bucketOf = append(bucketOf, b)
	}
	pl.scratch = bucketOf
	bounds := make([]int32, len(counts)+1)
	for b, n := range counts {
		bounds[b+1] = bounds[b] + n
	}
	next := slices.Clone(bounds[:len(counts)])
	grouped = slices.Grow(grouped[:0], len(members))[:len(members)]
	for i, s := range members {
		b := bucketOf[i]
		grouped[next[b]] = s
		next[b]++
	}
	return grouped, bounds
}
