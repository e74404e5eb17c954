package latency

import "testing"

func TestMainCity(t *testing.T) {
	for cc, want := range map[string]string{"AU": "Sydney", "DE": "Frankfurt", "US": "Dallas", "JP": "Tokyo", "GB": "London"} {
		if c, ok := MainCity(cc); !ok || c.Name != want || c.Country != cc {
			t.Errorf("MainCity(%s) = %+v, %v; want %s", cc, c, ok, want)
		}
	}
	if _, ok := MainCity("XX"); ok {
		t.Error("a city for XX")
	}
}
