package world

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/loopnat"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

func TestHeartbeats_PerGame(t *testing.T) {
	q3hb := func(tag string) string { b, _ := q3.Heartbeat{Tag: tag}.AppendBinary(nil); return string(b) }
	q4hb, _ := (&q4.Heartbeat{}).AppendBinary(nil)
	for _, c := range []struct {
		g    Game
		r    Reason
		want []string
	}{
		{Q3A, ReasonStart, []string{"\xff\xff\xff\xffheartbeat QuakeArena-1\n"}},
		{OA, ReasonEmptied, []string{q3hb(q3.TagQuakeArena)}},
		{OA, ReasonStop, []string{q3hb(q3.TagQuakeArena), q3hb(q3.TagQuakeArena)}},
		{Q3A, ReasonStop, []string{q3hb(q3.TagQuakeArena), q3hb(q3.TagQuakeArena)}},
		{ET, ReasonPeriodic, []string{"\xff\xff\xff\xffheartbeat EnemyTerritory-1\n"}},
		{ET, ReasonStop, []string{"\xff\xff\xff\xffheartbeat ETFlatline-1\n"}},
		{RTCW, ReasonMapChange, []string{q3hb(q3.TagWolfenstein)}},
		{RTCW, ReasonStop, []string{q3hb(q3.TagWolfFlatline)}},
		{Q4, ReasonStart, []string{string(q4hb)}},
		{Q4, ReasonMapChange, []string{string(q4hb)}},
		{Q4, ReasonStop, nil},
		{Q4, ReasonEmptied, nil},
		{UT3, ReasonStart, nil},
		{CSS, ReasonStop, nil},
	} {
		got := heartbeats(c.g, c.r)
		if len(got) != len(c.want) {
			t.Errorf("%s reason %d: %d datagrams, want %d", c.g, c.r, len(got), len(c.want))
			continue
		}
		for i := range got {
			if string(got[i]) != c.want[i] {
				t.Errorf("%s reason %d: %q, want %q", c.g, c.r, got[i], c.want[i])
			}
		}
	}
}

// TestEmulator_HeartbeatSequence runs one server of each game against a
// test master (through loopnat, so it sees public addresses) and checks
// what each sends: one heartbeat at start, one per interval, and the
// game's shutdown sequence when the world stops.
func TestEmulator_HeartbeatSequence(t *testing.T) {
	mconn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer mconn.Close()
	masterAddr := mconn.LocalAddr().(*net.UDPAddr).AddrPort()

	var servers []Server
	for i, g := range Games {
		s := *testServer(g)
		s.Public = netip.AddrPortFrom(netip.AddrFrom4([4]byte{81, 169, 13, byte(1 + i)}), 27960)
		s.Loopback = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, 201, byte(1 + i)}), 0)
		s.Link.RTT = Duration(20 * time.Millisecond)
		servers = append(servers, s)
	}
	const interval = 400 * time.Millisecond
	e, err := Listen(World{Version: FormatVersion, Servers: servers}, Config{Masters: []netip.AddrPort{masterAddr}, HeartbeatInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	master := loopnat.Wrap(mconn, e.Table())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()

	type beat struct {
		from netip.AddrPort
		b    string
	}
	read := func(deadline time.Time) (beat, bool) {
		master.SetReadDeadline(deadline)
		buf := make([]byte, 512)
		n, from, err := master.ReadFromUDPAddrPort(buf)
		if err != nil {
			return beat{}, false
		}
		return beat{from, string(buf[:n])}, true
	}
	game := map[netip.AddrPort]Game{}
	for _, s := range servers {
		game[s.Public] = s.Game
	}
	// Start-up and one periodic round: two heartbeats from each of the
	// five Q3-family and Quake 4 servers.
	count := map[Game]int{}
	deadline := time.Now().Add(10 * time.Second)
	for total := 0; total < 10; total++ {
		b, ok := read(deadline)
		if !ok {
			t.Fatalf("heartbeats before the deadline: %v", count)
		}
		g, known := game[b.from]
		if !known {
			t.Fatalf("heartbeat from %v, not a public address of the world", b.from)
		}
		if want := heartbeats(g, ReasonStart)[0]; b.b != string(want) {
			t.Errorf("%s sent %q, want %q", g, b.b, want)
		}
		count[g]++
	}
	for _, g := range []Game{Q3A, ET, RTCW, OA, Q4} {
		if count[g] != 2 {
			t.Errorf("%s: %d heartbeats in the first round and interval, want 2", g, count[g])
		}
	}

	// Shut down; Run returns once the shutdown heartbeats are sent.
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done <- nil
	stops := map[Game][]string{}
	for {
		b, ok := read(time.Now().Add(500 * time.Millisecond))
		if !ok {
			break
		}
		if b.b == string(heartbeats(game[b.from], ReasonStart)[0]) && game[b.from] != Q3A && game[b.from] != OA {
			continue // a periodic heartbeat that left before the stop
		}
		stops[game[b.from]] = append(stops[game[b.from]], b.b)
	}
	for _, g := range []Game{ET, RTCW, Q4} {
		want := heartbeats(g, ReasonStop)
		if len(stops[g]) != len(want) || (len(want) > 0 && stops[g][0] != string(want[0])) {
			t.Errorf("%s at shutdown: %q, want %q", g, stops[g], want)
		}
	}
	for _, g := range []Game{Q3A, OA} { // two, possibly after a late periodic one
		if n := len(stops[g]); n < 2 || n > 3 {
			t.Errorf("%s at shutdown: %q, want the pair", g, stops[g])
		}
	}
}
