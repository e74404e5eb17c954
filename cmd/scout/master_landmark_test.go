package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
)

func TestParseLandmarkPlace(t *testing.T) {
	for _, c := range []struct {
		in        string
		place     string
		lat, lon  float64
		wantError bool
	}{
		{in: "Frankfurt", place: "Frankfurt", lat: 50.1, lon: 8.7},
		{in: "frankfurt", place: "Frankfurt", lat: 50.1, lon: 8.7},
		{in: "47.37,8.54", lat: 47.37, lon: 8.54},
		{in: "lab:47.37, 8.54", place: "lab", lat: 47.37, lon: 8.54},
		{in: "Atlantis", wantError: true},
		{in: "91,0", wantError: true},
		{in: "0,181", wantError: true},
		{in: "NaN,0", wantError: true},
		{in: "lab:", wantError: true},
		{in: "", wantError: true},
	} {
		lm, err := parseLandmarkPlace(c.in)
		if (err != nil) != c.wantError {
			t.Errorf("%q: err %v", c.in, err)
			continue
		}
		if err != nil {
			continue
		}
		if lm.Place != c.place || lm.Lat == nil || lm.Lon == nil || abs(*lm.Lat-c.lat) > 0.1 || abs(*lm.Lon-c.lon) > 0.1 {
			t.Errorf("%q: %q %v,%v", c.in, lm.Place, *lm.Lat, *lm.Lon)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func FuzzParseLandmarkPlace(f *testing.F) {
	for _, s := range []string{"Frankfurt", "47.37,8.54", "lab:1,2", ":,", "a:b:c,d", "1e400,0", "-0,-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lm, err := parseLandmarkPlace(s)
		if err != nil {
			return
		}
		if lm.Lat == nil || lm.Lon == nil || *lm.Lat < -90 || *lm.Lat > 90 || *lm.Lon < -180 || *lm.Lon > 180 {
			t.Fatalf("%q accepted as %+v", s, lm)
		}
	})
}

// --landmark-place and --landmark-id make the master a landmark; the id
// defaults to the fleet id (masterd.Config.Landmark: then the address).
func TestMasterSettings_Landmark(t *testing.T) {
	for _, c := range []struct {
		args    []string
		id      string
		address string
		place   string
		hasErr  bool
	}{
		{args: []string{"--landmark-place", "Tokyo", "--fleet-id", "tyo-1"}, id: "tyo-1", place: "Tokyo"},
		{args: []string{"--landmark-place", "47.37,8.54", "-l", "127.0.0.1:27950"}, address: "127.0.0.1:27950"},
		{args: []string{"--landmark-id", "lab"}, id: "lab"},
		{args: []string{"--landmark-id", "bad id"}, hasErr: true},
		{args: []string{"--fleet-id", "x"}},
	} {
		s, err := parseMaster(t.Context(), c.args)
		if (err != nil) != c.hasErr {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		lm := s.Config.Landmark
		switch {
		case err != nil:
		case c.id == "" && c.address == "":
			if lm != nil {
				t.Errorf("%q: a landmark %+v", c.args, lm)
			}
		case lm == nil || lm.ID != c.id || lm.Address != c.address || lm.Place != c.place:
			t.Errorf("%q: landmark %+v", c.args, lm)
		}
	}
}

// A landmark's id reaches the handler (getserversExt ... landmarks) and
// the JSON API; without one the first -l address names it.
func TestMaster_LandmarkIDReachesHandlerAndAPI(t *testing.T) {
	for _, c := range []struct {
		args []string
		id   string
	}{
		{[]string{"--landmark-id", "lab"}, "lab"},
		{[]string{"--landmark-place", "Tokyo", "-l", "127.0.0.1:0"}, "127.0.0.1:0"},
	} {
		s, err := parseMaster(t.Context(), c.args)
		if err != nil {
			t.Fatal(err)
		}
		s.Config.Listen = []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}
		m, err := masterd.NewMaster(time.Now(), s.Config, masterd.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		m.API.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/landmarks", nil))
		if got := m.Handler.Deps().Landmark; got != c.id || !strings.Contains(rec.Body.String(), `"id":"`+c.id+`"`) {
			t.Errorf("%q: handler's landmark %q, API %s", c.args, got, rec.Body)
		}
	}
}

// In a fleet a landmark is named by its instance's id: --landmark-id and
// a different --fleet-id are refused before anything starts.
func TestMaster_FleetLandmarkIDIsTheFleetID(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"master", "--store", "redis://127.0.0.1:1/0", "-l", "127.0.0.1:0",
		"--landmark-place", "Tokyo", "--landmark-id", "tyo-1", "--fleet-id", "other"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "in a fleet the landmark's id is its --fleet-id") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// --landmark-peer names the other landmark masters a landmark alone
// pings ([ID=]ADDR:PORT, the id by default the address), and
// --landmark-address where it is reached; both are refused where they
// cannot apply or do not parse.
func TestMasterSettings_LandmarkPeers(t *testing.T) {
	s, err := parseMaster(t.Context(), []string{"--landmark-place", "Frankfurt", "-l", "0.0.0.0:27950", "--landmark-address", "192.0.2.1:27950",
		"--landmark-peer", "nyc=198.51.100.7:27950", "--landmark-peer", "203.0.113.9:27950"})
	if err != nil {
		t.Fatal(err)
	}
	want := []master.LandmarkPeer{{ID: "nyc", Addr: netip.MustParseAddrPort("198.51.100.7:27950")},
		{ID: "203.0.113.9:27950", Addr: netip.MustParseAddrPort("203.0.113.9:27950")}}
	if fmt.Sprint(s.Config.LandmarkPeers) != fmt.Sprint(want) || s.Config.Landmark.Address != "192.0.2.1:27950" {
		t.Errorf("peers %v, address %q", s.Config.LandmarkPeers, s.Config.Landmark.Address)
	}
	for _, args := range [][]string{
		{"--landmark-peer", "nyc=198.51.100.7:27950"},                                                          // not a landmark
		{"--landmark-address", "192.0.2.1:27950"},                                                              // not a landmark
		{"--landmark-place", "Tokyo", "--landmark-peer", "198.51.100.7"},                                       // no port
		{"--landmark-place", "Tokyo", "--landmark-peer", "bad id=198.51.100.7:1"},                              // id
		{"--landmark-place", "Tokyo", "--landmark-peer", "0.0.0.0:27950"},                                      // unspecified
		{"--landmark-place", "Tokyo", "--landmark-address", "192.0.2.1:0"},                                     // port 0
		{"--landmark-place", "Tokyo", "--store", "redis://127.0.0.1:1/0", "--landmark-peer", "198.51.100.7:1"}, // a fleet pings its own
	} {
		if _, err := parseMaster(t.Context(), args); !errors.Is(err, errMasterUsage) {
			t.Errorf("%q: err %v, want a usage error", args, err)
		}
	}
}
