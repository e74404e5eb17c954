package population

import "sync"

var mainCities = sync.OnceValue(func() map[string]City {
	out := map[string]City{}
	best := map[string]int{}
	for _, c := range cityTable() {
		w := hubWeight(c.Country, c.Name)
		if _, ok := out[c.Country]; !ok || w > best[c.Country] {
			out[c.Country], best[c.Country] = c, w
		}
	}
	return out
})

// MainCity returns the city the latency model stands a country for: the
// one of its cities where most of its game servers are hosted (hubWeight;
// the first listed on a tie or when none hosts any), or false for a
// country without a city in the model.
func MainCity(cc string) (City, bool) {
	c, ok := mainCities()[cc]
	return c, ok
}
