package population

import (
	"testing"

	"github.com/scout-discovery/scout/latency"
)

// TestMainCity_MostHubServers: the main city package latency stands a
// country for is, among the country's cities, the one with the greatest hub
// weight (the first listed on a tie), as the worlds place servers: the two
// generated tables agree.
func TestMainCity_MostHubServers(t *testing.T) {
	want := map[string]latency.City{}
	for _, c := range latency.Cities() {
		if w, ok := want[c.Country]; !ok || hubWeight(c.Country, c.Name) > hubWeight(w.Country, w.Name) {
			want[c.Country] = c
		}
	}
	for cc, w := range want {
		if got, ok := latency.MainCity(cc); !ok || got != w {
			t.Errorf("latency.MainCity(%s) = %+v, %v; want %+v", cc, got, ok, w)
		}
	}
}
