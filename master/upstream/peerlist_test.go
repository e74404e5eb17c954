package upstream

import (
	"encoding/json"
	"errors"
	"net/netip"
	"testing"

	"github.com/scout-discovery/scout/game"
)

func TestParsePeerList(t *testing.T) {
	b := []byte(`{"version": 3, "servers": [
		{"address": "93.184.0.1:27960", "family": "q3", "game": "Quake3Arena"},
		{"address": "[2001:4860::1]:26000", "family": "q3", "game": "Xonotic"},
		{"address": "93.184.0.2:28004", "family": "doom3", "game": "Quake4"},
		{"address": "nonsense", "family": "q3", "game": "et"},
		{"address": "93.184.0.3:27015", "family": "source", "game": "cstrike"},
		{"address": "[::ffff:93.184.0.4]:27960", "family": "q3", "game": "et"}
	]}`)
	got, bad, err := ParsePeerList(b, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []PeerServer{
		{netip.MustParseAddrPort("93.184.0.1:27960"), game.FamilyQ3, "Quake3Arena"},
		{netip.MustParseAddrPort("[2001:4860::1]:26000"), game.FamilyQ3, "Xonotic"},
		{netip.MustParseAddrPort("93.184.0.2:28004"), game.FamilyDoom3, "Quake4"},
		{netip.MustParseAddrPort("93.184.0.4:27960"), game.FamilyQ3, "et"},
	}
	if bad != 2 || len(got) != len(want) {
		t.Fatalf("got %v, %d bad", got, bad)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("server %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, bad, _ := ParsePeerList(b, 2); len(got) != 2 || bad != 4 {
		t.Fatalf("max 2: %d servers, %d bad", len(got), bad)
	}
	for _, hostile := range []string{``, `[]`, `{}`, `{"servers": 3}`, `{"servers": []} {}`, `{"servers": [`, `null`} {
		if _, _, err := ParsePeerList([]byte(hostile), 10); !errors.Is(err, ErrPeerList) {
			t.Errorf("%q: err %v", hostile, err)
		}
	}
}

func FuzzParsePeerList(f *testing.F) {
	b, _ := json.Marshal(PeerList{Version: 1, Servers: []PeerListServer{{"93.184.0.1:27960", "q3", "et"}, {"[::1]:1", "doom3", "Quake4"}}})
	f.Add(b)
	f.Add([]byte(`{"servers":[{"address":"1.2.3.4:5","family":"q3","game":"x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, bad, err := ParsePeerList(b, 16)
		if err != nil {
			if !errors.Is(err, ErrPeerList) || got != nil {
				t.Fatalf("error %v with %d servers", err, len(got))
			}
			return
		}
		if len(got) > 16 || bad < 0 {
			t.Fatalf("%d servers, %d bad", len(got), bad)
		}
		for _, s := range got {
			if !s.Addr.IsValid() || s.Addr.Addr().Is4In6() || (s.Family != game.FamilyQ3 && s.Family != game.FamilyDoom3) {
				t.Fatalf("bad server kept: %+v", s)
			}
		}
	})
}
