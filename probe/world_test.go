package probe

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/scout-discovery/scout/loopnat"
	"github.com/scout-discovery/scout/world"
)

// TestA2S_AgainstWorldEmulator queries an emulated Counter-Strike: Source
// server of package world through its loopback translation: the challenge
// round trip, A2S_INFO, A2S_PLAYER and A2S_RULES as world's responder
// writes them, so the two packages agree on the layouts.
func TestA2S_AgainstWorldEmulator(t *testing.T) {
	srv := world.Server{
		Public:   netip.MustParseAddrPort("81.169.1.7:27015"), // reached on loopback only, through loopnat
		Loopback: netip.MustParseAddrPort("127.1.0.7:0"),
		Game:     world.CSS, Hostname: "Emulated CSS", Map: "de_nuke", GameType: "casual", MaxClients: 16,
		Players: []world.Player{{Name: "Alice", Score: 3}, {Name: "Bob", Score: 1}},
	}
	w := world.World{Version: world.FormatVersion, Servers: []world.Server{srv}}
	e, err := world.Listen(w, world.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("emulator: %v", err)
		}
		e.Close()
	})
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var r Result
	counts, err := (&Prober{}).Run(t.Context(), loopnat.Wrap(c, e.Table()), []Target{{srv.Public, A2S}},
		func(_ int, res Result) { r = res })
	if err != nil {
		t.Fatal(err)
	}
	if r.Err != nil || r.Name != srv.Hostname || r.Map != srv.Map || r.NumPlayers != 2 || r.MaxPlayers != 16 {
		t.Fatalf("result %+v", r)
	}
	if len(r.Players) != 2 || r.Players[0].Name != "Alice" || r.Players[1].Score != 1 {
		t.Errorf("players %+v", r.Players)
	}
	// world/respond.go's rules, in its order.
	if v, ok := r.Rules.Get("sv_gravity"); !ok || v != "800" || len(r.Rules) != 4 || r.Rules[0].Key != "mp_friendlyfire" {
		t.Errorf("rules %v", r.Rules)
	}
	if counts.Garbled+counts.Unknown+counts.Late != 0 {
		t.Errorf("counts %+v", counts)
	}
}
