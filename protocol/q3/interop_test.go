package q3_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// Interop tests run quakestat and gamedig (internal/peer: skipped when
// missing, failed under CI) against packets served on loopback.

// lenientStatus is a statusResponse of ten player lines, one with a stray
// quote in the name and, with broken, one without quotes.
func lenientStatus(challenge string, broken bool) []byte {
	b := []byte(q3.Prefix + "statusResponse\n\\sv_hostname\\lenient\\mapname\\q3dm17\\sv_maxclients\\16\\g_gametype\\0\\protocol\\68")
	if challenge != "" {
		b = append(b, "\\challenge\\"+challenge...)
	}
	b = append(b, '\n')
	for i := range 10 {
		switch i {
		case 3:
			if broken {
				b = append(b, "7 50 broken name\n"...)
			} else {
				b = append(b, fmt.Sprintf("%d %d \"player%d\"\n", i, 10*i, i)...)
			}
		case 6:
			b = append(b, "6 60 \"stray\"quote\"\n"...)
		default:
			b = append(b, fmt.Sprintf("%d %d \"player%d\"\n", i, 10*i, i)...)
		}
	}
	return b
}

func serveLenient(t *testing.T, broken bool) netip.AddrPort {
	return peer.ServeUDP(t, func(pkt []byte) [][]byte {
		m, err := q3.Parse(pkt)
		if err != nil {
			return nil
		}
		switch m := m.(type) {
		case q3.GetStatus:
			return [][]byte{lenientStatus(m.Challenge, broken)}
		case q3.GetInfo:
			info := infostring.Info{{Key: "hostname", Value: "lenient"}, {Key: "mapname", Value: "q3dm17"},
				{Key: "sv_maxclients", Value: "16"}, {Key: "clients", Value: "9"}, {Key: "challenge", Value: m.Challenge}}
			b, _ := q3.InfoResponse{Info: info}.AppendBinary(nil)
			return [][]byte{b}
		}
		return nil
	})
}

func ourPlayers(t *testing.T, broken bool) []string {
	m, err := q3.Parse(lenientStatus("", broken))
	if err != nil {
		t.Fatal(err)
	}
	r := m.(q3.StatusResponse)
	if broken != (len(r.BadLines) == 1) {
		t.Fatalf("bad lines %q", r.BadLines)
	}
	var names []string
	for _, p := range r.Players {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// TestInterop_BadPlayerLineAsQuakestat: a stray quote in a name costs
// quakestat nothing, nor Parse; a line without quotes ends quakestat's
// list there, where Parse reads the players after it too.
func TestInterop_BadPlayerLineAsQuakestat(t *testing.T) {
	for _, broken := range []bool{false, true} {
		addr := serveLenient(t, broken)
		got := peer.RunQuakestat(t, "-q3s", addr.String(), "-P", "-R")
		if len(got) != 1 || got[0].Status != "online" {
			t.Fatalf("quakestat: %+v", got)
		}
		var names []string
		for _, p := range got[0].Players {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		ours := ourPlayers(t, broken)
		if !broken && len(names) != len(ours) || broken && len(names) >= len(ours) {
			t.Errorf("broken line %v: quakestat reads %d players %q, we read %d %q", broken, len(names), names, len(ours), ours)
		}
		for _, n := range names {
			if !slices.ContainsFunc(ours, func(o string) bool { return strings.HasPrefix(o, n) }) {
				t.Errorf("broken line %v: quakestat reads %q, we do not", broken, n)
			}
		}
	}
}

// TestInterop_BadPlayerLineAsGamedig: gamedig keeps the players around a
// bad line; so does Parse.
func TestInterop_BadPlayerLineAsGamedig(t *testing.T) {
	for _, broken := range []bool{false, true} {
		addr := serveLenient(t, broken)
		var got struct {
			Players []struct {
				Name string `json:"name"`
			} `json:"players"`
			Bots []struct {
				Name string `json:"name"`
			} `json:"bots"`
		}
		peer.QueryGamedig(t, &got, "q3a", addr)
		var names []string
		for _, p := range append(got.Players, got.Bots...) {
			names = append(names, p.Name)
		}
		ours := ourPlayers(t, broken)
		for _, n := range names {
			// gamedig reads a line without quotes as a player named by
			// its first word; Parse keeps that line in BadLines.
			if !slices.ContainsFunc(ours, func(o string) bool { return strings.HasPrefix(o, n) }) && !(broken && n == "broken") {
				t.Errorf("broken line %v: gamedig reads %q, we do not (we read %q)", broken, n, ours)
			}
		}
		if len(names) < len(ours) {
			t.Errorf("broken line %v: gamedig reads %d players, we %d", broken, len(names), len(ours))
		}
	}
}
