package population

import (
	"math"
	"net/netip"
)

// City is a place where game servers and clients sit.
type City struct {
	Name    string
	Country string // ISO 3166 alpha-2
	Lat     float64
	Lon     float64
}

// Cities returns the cities the latency model knows: the WonderProxy nodes
// of 2020-07-19.
func Cities() []City { return cityTable() }

// Region returns the region the latency model uses for a country: AF, AS,
// EU, NA, OC or SA, "" for a country it does not place.
func Region(cc string) string {
	switch cc {
	case "AE", "BD", "CN", "HK", "ID", "IL", "IN", "JP", "KH", "KR", "KZ", "LB", "MY", "PH", "PK", "SA", "SG", "TH", "TW", "VN":
		return "AS"
	case "AL", "AT", "BE", "BG", "CH", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GB", "GE", "GR", "HR", "HU", "IE", "IM", "IS", "IT", "LT", "LU", "LV", "MD", "MT", "NL", "NO", "PL", "PT", "RO", "RS", "RU", "SE", "SI", "SK", "TR", "UA", "XK":
		return "EU"
	case "CA", "CR", "GT", "HN", "MX", "PA", "PR", "US":
		return "NA"
	case "AR", "BR", "CL", "CO", "EC", "PE", "SR", "UY", "VE":
		return "SA"
	case "DZ", "EG", "GH", "KE", "MA", "NG", "TN", "TZ", "UG", "ZA":
		return "AF"
	case "AU", "NZ":
		return "OC"
	}
	return ""
}

// GreatCircleKm is the haversine distance between two points on a sphere
// of the Earth's mean radius, in kilometres.
func GreatCircleKm(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0
	rad := math.Pi / 180
	dlat := (lat2 - lat1) * rad
	dlon := (lon2 - lon1) * rad
	h := math.Sin(dlat/2)*math.Sin(dlat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dlon/2)*math.Sin(dlon/2)
	return 2 * r * math.Asin(math.Min(1, math.Sqrt(h)))
}

// reservedBlocks returns the IPv4 blocks no game server is placed in (RFC 6890 and
// the multicast and future-use space).
func reservedBlocks() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.0.0.0/24"),
		netip.MustParsePrefix("192.0.2.0/24"),
		netip.MustParsePrefix("192.88.99.0/24"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("224.0.0.0/3"),
	}
}

// Reserved reports whether a lies in a private, shared, loopback,
// link-local, documentation, benchmarking, multicast or future-use IPv4
// block, or is not IPv4.
func Reserved(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() {
		return true
	}
	for _, p := range reservedBlocks() {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
