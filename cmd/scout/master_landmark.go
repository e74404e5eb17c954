package main

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"github.com/scout-discovery/scout/latency"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/q3"
)

// maxLandmarkPlace bounds --landmark-place's text.
const maxLandmarkPlace = 64

// parseLandmarkPlace reads --landmark-place: a city the latency model
// knows (latency.Cities, case-insensitive, spaces ignored: "Frankfurt",
// "new york") or LAT,LON in degrees, optionally after a name and a colon
// ("lab:47.37,8.54").
func parseLandmarkPlace(v string) (master.Landmark, error) {
	var lm master.Landmark
	if v == "" || len(v) > maxLandmarkPlace {
		return lm, fmt.Errorf("want a city or LAT,LON of at most %d bytes, got %q", maxLandmarkPlace, v)
	}
	name, coords := "", v
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		name, coords = v[:i], v[i+1:]
	}
	if la, lo, ok := strings.Cut(coords, ","); ok {
		lat, err1 := strconv.ParseFloat(strings.TrimSpace(la), 64)
		lon, err2 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
		if err1 != nil || err2 != nil || math.IsNaN(lat) || math.IsNaN(lon) || lat < -90 || lat > 90 || lon < -180 || lon > 180 {
			return lm, fmt.Errorf("want LAT,LON in degrees (-90..90, -180..180), got %q", coords)
		}
		lm.Place, lm.Lat, lm.Lon = name, &lat, &lon
		return lm, nil
	}
	if name != "" {
		return lm, fmt.Errorf("want NAME:LAT,LON, got %q", v)
	}
	key := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "")) }
	for _, c := range latency.Cities() {
		if key(c.Name) == key(v) {
			lat, lon := c.Lat, c.Lon
			lm.Place, lm.Lat, lm.Lon = c.Name, &lat, &lon
			return lm, nil
		}
	}
	return lm, fmt.Errorf("%q: not a city the latency model knows (a WonderProxy node: Frankfurt, NewYork, Tokyo, ...); give LAT,LON", v)
}

// parseLandmarkAddress reads --landmark-address: an address and port a
// peer can send to.
func parseLandmarkAddress(v string) (netip.AddrPort, bool) {
	a, err := netip.ParseAddrPort(v)
	return a, err == nil && a.Port() != 0 && !a.Addr().IsUnspecified() && !a.Addr().IsMulticast()
}

// parseLandmarkPeer reads --landmark-peer [ID=]ADDR:PORT; without ID the
// peer's id is its address as given, which is a standalone landmark's
// default id (its first -l address).
func parseLandmarkPeer(v string) (master.LandmarkPeer, error) {
	id, addr, ok := strings.Cut(v, "=")
	if !ok {
		id, addr = v, v
	}
	a, good := parseLandmarkAddress(addr)
	if !good {
		return master.LandmarkPeer{}, fmt.Errorf("want [ID=]ADDR:PORT of another landmark master, got %q", v)
	}
	if _, err := q3.EncodeLandmarksResponses(id, nil, 0); err != nil {
		return master.LandmarkPeer{}, fmt.Errorf("%q: the landmark id must be 1 to %d letters, digits or ._:-[]", v, q3.MaxLandmarkIDLen)
	}
	return master.LandmarkPeer{ID: id, Addr: a}, nil
}
