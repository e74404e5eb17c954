package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"

	"github.com/scout-discovery/scout/game"
)

// PeerPath is where a scout master publishes its verified list for its
// peers (package web serves it; the shell fetches Source.URL + PeerPath).
const PeerPath = "/api/v1/verified"

// PeerList is the body of GET /api/v1/verified: the servers a scout
// master lists and verified itself since it started (restored servers it
// has not verified again are left out), each with the family and game it
// lists it under, so that a peer knows how to verify it.
//
//	{"version": 1234, "servers": [{"address": "1.2.3.4:27960", "family": "q3", "game": "Quake3Arena"}, ...]}
type PeerList struct {
	Version uint64           `json:"version"`
	Servers []PeerListServer `json:"servers"`
}

// PeerListServer is one server of a PeerList.
type PeerListServer struct {
	Address string `json:"address"`
	Family  string `json:"family"` // game.Family's String: "q3" or "doom3"
	Game    string `json:"game"`
}

// MaxPeerGameLen bounds a game name in a peer's list (dpmaster's bound on
// a gamename).
const MaxPeerGameLen = 63

// ErrPeerList is wrapped by every error of ParsePeerList.
var ErrPeerList = errors.New("upstream: peer list")

// ParsePeerList reads a peer's list. Lenient where one server is bad (an
// address that does not parse, a family without master lists, a game name
// too long: that entry alone is dropped and counted in bad), strict on
// the whole (a body that is not the JSON object above is an error). At
// most max servers are returned; the rest are counted in bad too.
func ParsePeerList(b []byte, max int) (servers []PeerServer, bad int, err error) {
	var pl PeerList
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&pl); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrPeerList, err)
	}
	if dec.More() {
		return nil, 0, fmt.Errorf("%w: data after the object", ErrPeerList)
	}
	if pl.Servers == nil {
		return nil, 0, fmt.Errorf("%w: no \"servers\" array", ErrPeerList)
	}
	servers = make([]PeerServer, 0, min(len(pl.Servers), max))
	for _, s := range pl.Servers {
		if len(servers) >= max {
			bad++
			continue
		}
		ap, err := netip.ParseAddrPort(s.Address)
		var f game.Family
		switch s.Family {
		case game.FamilyQ3.String():
			f = game.FamilyQ3
		case game.FamilyDoom3.String():
			f = game.FamilyDoom3
		}
		if err != nil || f == game.FamilyUnknown || len(s.Game) > MaxPeerGameLen || ap.Addr().Zone() != "" {
			bad++
			continue
		}
		servers = append(servers, PeerServer{Addr: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), Family: f, Game: s.Game})
	}
	return servers, bad, nil
}
