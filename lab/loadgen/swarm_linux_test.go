//go:build linux

package loadgen

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/masterd"
)

func TestSwarm_AddrIndexRoundTrip(t *testing.T) {
	s, err := NewSwarm(SwarmConfig{Servers: 2000, Sockets: 3, Base: netip.MustParseAddr("127.200.0.250"), IPv6: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := map[netip.AddrPort]bool{}
	for i := range s.Len() {
		a := s.Addr(i)
		if seen[a] {
			t.Fatalf("server %d: %v given twice", i, a)
		}
		seen[a] = true
		if b := a.Addr().As16(); a.Addr().Is4() && (b[15] == 0 || b[15] == 255) {
			t.Fatalf("server %d: %v", i, a)
		}
		if j, ok := s.Index(a); !ok || j != i {
			t.Fatalf("Index(Addr(%d) = %v) = %d, %v", i, a, j, ok)
		}
	}
	for _, a := range []string{"127.200.0.249:1", "127.200.1.0:1", "[::2]:2000", "10.0.0.1:1"} {
		if j, ok := s.Index(netip.MustParseAddrPort(a)); ok {
			t.Errorf("Index(%s) = %d, want none", a, j)
		}
	}
	if _, err := NewSwarm(SwarmConfig{Servers: 1, Base: netip.MustParseAddr("10.0.0.1")}); err == nil {
		t.Error("a base outside 127.0.0.0/8 was accepted")
	}
	if _, err := NewSwarm(SwarmConfig{Servers: 1 << 24, Base: netip.MustParseAddr("127.200.0.1")}); err == nil {
		t.Error("a swarm leaving 127.0.0.0/8 was accepted")
	}
}

// TestSwarm_RegistersWithARealMaster: a real master (masterd, on
// 127.0.0.1 and ::1) lists every server of a swarm of IPv4 servers on
// shared sockets and IPv6 servers on ::1, in the three games, each at the
// address the swarm gives it.
func TestSwarm_RegistersWithARealMaster(t *testing.T) {
	const n4, n6 = 3000, 200
	m, err := masterd.NewMaster(time.Now(), masterd.Config{
		Listen: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0"), netip.MustParseAddrPort("[::1]:0")},
		// Every IPv6 server shares ::1: no per-address limit, and a
		// heartbeat throttle above their number.
		Reloadable: masterd.Reloadable{
			Registry:   master.Config{MaxServers: n4 + n6, MaxServersPerAddress: -1, AllowLoopback: true},
			Heartbeats: masterd.Limit{Throttle: 2 * n6},
		},
	}, masterd.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Listen(); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	defer func() { cancel(); <-ran; m.Close() }()
	a4, a6 := m.Addrs()[0], m.Addrs()[1]

	s, err := NewSwarm(SwarmConfig{Servers: n4, Sockets: 2, IPv6: n6})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	s.Serve(sctx)
	defer func() { stop(); s.Close() }()

	r, err := s.Register(ctx, a4, a6, RegisterConfig{Rate: 20000, Deadline: time.Minute})
	if err != nil || r.Answered != n4+n6 {
		t.Fatalf("Register: %+v, %v", r, err)
	}
	// A server answered the master's getinfo, but its infoResponse can
	// still be lost at the master's socket (3,200 at 20,000 a second on a
	// loaded machine: 98 and 414 once each): as a real server does at its
	// next heartbeat, and as scout-lab load --swarm does, the servers the
	// master does not list are heartbeated again, until it lists them all
	// or the test's deadline is near. Each round waits for the master to
	// stop listing more (Register's own Idle).
	for round := 1; ; round++ {
		listed := map[int]bool{}
		for _, srv := range m.Handler.Registry().Servers(nil) {
			if i, ok := s.Index(srv.Addr); ok && srv.Listed {
				listed[i] = true
			}
		}
		if len(listed) == s.Len() {
			break
		}
		if d, ok := t.Deadline(); round > 20 || ok && time.Until(d) < 30*time.Second {
			t.Fatalf("after %d rounds the master lists %d of %d", round, len(listed), s.Len())
		}
		for i := range s.Len() {
			if !listed[i] {
				s.Reset(i)
			}
		}
		t.Logf("round %d: %d of %d listed; heartbeating the others again", round, len(listed), s.Len())
		if _, err := s.Register(ctx, a4, a6, RegisterConfig{Rate: 20000, Deadline: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	games := map[string]int{}
	for _, srv := range m.Handler.Registry().Servers(nil) {
		i, ok := s.Index(srv.Addr)
		if !ok || !srv.Listed {
			t.Fatalf("%v listed=%v: not a swarm server", srv.Addr, srv.Listed)
		}
		name, proto, _ := SwarmGame(i)
		if srv.Game != name || srv.Protocol != proto {
			t.Fatalf("server %d %v: %s %d, want %s %d", i, srv.Addr, srv.Game, srv.Protocol, name, proto)
		}
		games[srv.Game]++
	}
	if l, _ := m.Handler.Registry().Counts(); l != n4+n6 || len(games) != 3 {
		t.Fatalf("%d listed, games %v", l, games)
	}
}
