package probe

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/loopnat"
	"github.com/scout-discovery/scout/lab/world"
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
	_, conn := runWorld(t, w, world.Config{})
	var r Result
	counts, err := (&Prober{}).Run(t.Context(), conn, []Target{{srv.Public, A2S}},
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
	// lab/world/respond.go's rules, in its order.
	if v, ok := r.Rules.Get("sv_gravity"); !ok || v != "800" || len(r.Rules) != 4 || r.Rules[0].Key != "mp_friendlyfire" {
		t.Errorf("rules %v", r.Rules)
	}
	if counts.Garbled+counts.Unknown+counts.Late != 0 {
		t.Errorf("counts %+v", counts)
	}
}

// TestPacer_TrainsOverTheEmulatedLink: a paced run of 400 OpenArena
// servers of package world (real UDP on loopback, 10-60 ms away) behind
// an emulated 2 Mbit/s access link with a 250 ms queue: the first 6
// getinfo requests go as trains of 8 (42 extra sends), every server
// answers and the link's queue drops nothing, and the trains measure the
// link's replies per second within 40%. That last is a measurement on
// the real clock: a run whose reader the machine held up (the emulator
// and the reader share its cores) can miss it, so up to three runs, each
// on a fresh emulator, are given to it; the other checks hold for every
// run. Each run is a subtest, so that its emulator stops before the next.
func TestPacer_TrainsOverTheEmulatedLink(t *testing.T) {
	w, err := world.Generate(world.Spec{Servers: 400, Games: world.Mix{{Game: world.OA, Weight: 1}},
		RTTMin: 10 * time.Millisecond, RTTMax: 60 * time.Millisecond, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	const rate = 2e6
	targets := make([]Target, len(w.Servers))
	for i, s := range w.Servers {
		targets[i] = Target{s.Public, Q3Info}
	}
	var measured []string
	for attempt := 1; attempt <= 3; attempt++ {
		var got, want float64
		t.Run(fmt.Sprintf("run%d", attempt), func(t *testing.T) { got, want = trainsOverLink(t, w, targets, rate) })
		if t.Failed() {
			return
		}
		if r := got / want; r >= 0.6 && r <= 1.4 {
			return
		}
		measured = append(measured, fmt.Sprintf("%.0f", got))
		t.Logf("run %d: the trains measured %.0f probes/s, the link carries %.0f replies/s", attempt, got, want)
	}
	t.Errorf("in 3 runs the trains measured %s probes/s, never within 40%% of the link's replies/s", strings.Join(measured, ", "))
}

// trainsOverLink runs the paced probe of targets once over a fresh
// emulator of w behind a link of rate bits/s, checks what holds for every
// run, and returns the trains' rate and the link's replies per second.
func trainsOverLink(t *testing.T, w world.World, targets []Target, rate float64) (got, want float64) {
	t.Helper()
	e, conn := runWorld(t, w, world.Config{Access: world.AccessLink{Rate: rate, QueueDelay: 250 * time.Millisecond}})
	answered := 0
	counts, err := (&Prober{Timeout: time.Second, Pace: &Pace{}}).Run(t.Context(), conn, targets,
		func(_ int, r Result) {
			if r.Answered() {
				answered++
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	wire := float64(counts.BytesIn)/float64(counts.Received) + UDPOverhead
	want = rate / 8 / wire // replies per second
	st := e.Stats()
	t.Logf("trains measured %.0f probes/s, the link carries %.0f replies/s (%.0f bytes each); %d sends, %d train sends, %d dropped by the link, queueing mean %v max %v",
		counts.PaceTrainRate, want, wire, counts.Sent, counts.PaceTrainSends, st.LinkDropped, st.LinkWaitMean, st.LinkWaitMax)
	if answered != len(targets) || counts.PaceTrainSends != paceTrains*(paceTrainProbes-1) || st.LinkDropped != 0 {
		t.Fatalf("%d of %d answered, %d train sends, %d dropped by the link; want all, %d, none", answered, len(targets), counts.PaceTrainSends, st.LinkDropped, paceTrains*(paceTrainProbes-1))
	}
	return counts.PaceTrainRate, want
}

// runWorld starts w's emulator with cfg until the test ends and returns it
// with a loopback UDP socket that reaches its servers' public addresses
// through the emulator's translation table.
func runWorld(t *testing.T, w world.World, cfg world.Config) (*world.Emulator, *loopnat.Conn) {
	t.Helper()
	e, err := world.Listen(w, cfg)
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
	t.Cleanup(func() { c.Close() })
	return e, loopnat.Wrap(c, e.Table())
}
