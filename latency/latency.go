// Package latency is the model of round-trip times between cities that the
// server browser estimates a player's ping from: RTT = a + b·km·f, with a
// and b fitted to WonderProxy's city-to-city matrix of July 2020 and f a
// factor per pair of regions (model_gen.go), between the WonderProxy cities
// (cities_gen.go), and each country stood for by its main city.
//
// The lab's population package builds its worlds on the same model and adds
// what the browser leaves out: a residual per city pair, the servers' own
// networks, jitter. Both generated files are written by
// lab/population/internal/gen from ../shared/data (the matrix itself is not
// shipped: it carries no licence).
//
// Pure: no I/O, no clock.
package latency

import (
	"math"
	"sync"
	"time"
)

// City is a place where game servers and clients sit.
type City struct {
	Name    string
	Country string // ISO 3166 alpha-2
	Lat     float64
	Lon     float64
}

// Cities returns the cities the model knows: the WonderProxy nodes of
// 2020-07-19.
func Cities() []City { return cityTable() }

// CityRTT is the fitted model's RTT between two cities, without residual.
func CityRTT(a, b City) time.Duration {
	km := GreatCircleKm(a.Lat, a.Lon, b.Lat, b.Lon)
	ms := fitBaseMs + fitMsPerKm*km*regionFactor(Region(a.Country), Region(b.Country))
	return time.Duration(ms * float64(time.Millisecond))
}

var mainCities = sync.OnceValue(func() map[string]City {
	out := map[string]City{}
	for _, c := range cityTable() {
		if mainCityName(c.Country) == c.Name {
			out[c.Country] = c
		}
	}
	return out
})

// MainCity returns the city the model stands a country for: the one of its
// cities where most of its game servers are hosted (mainCityName), or false
// for a country without a city in the model.
func MainCity(cc string) (City, bool) {
	c, ok := mainCities()[cc]
	return c, ok
}

// Region returns the region the model uses for a country: AF, AS, EU, NA,
// OC or SA, "" for a country it does not place.
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
