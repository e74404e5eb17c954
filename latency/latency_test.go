package latency

import (
	"testing"
	"time"
)

func city(t *testing.T, name string) City {
	t.Helper()
	for _, c := range Cities() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no city %s", name)
	return City{}
}

func TestCityRTT_GrowsWithDistance(t *testing.T) {
	mel, tok, zrh := city(t, "Melbourne"), city(t, "Tokyo"), city(t, "Zurich")
	self, near, far := CityRTT(mel, mel), CityRTT(tok, mel), CityRTT(zrh, mel)
	if !(self < near && near < far) {
		t.Fatalf("Melbourne->Melbourne %v, Tokyo %v, Zurich %v: want increasing", self, near, far)
	}
	if far < 200*time.Millisecond || far > 400*time.Millisecond {
		t.Fatalf("Melbourne-Zurich %v, want 200-400 ms (WonderProxy measured about 264 ms)", far)
	}
}

// TestRegion_EveryCity: every city of the model is in a region, so no pair
// falls back to a factor of 1 for want of one.
func TestRegion_EveryCity(t *testing.T) {
	for _, c := range Cities() {
		if Region(c.Country) == "" {
			t.Errorf("%s (%s) has no region", c.Name, c.Country)
		}
	}
}
