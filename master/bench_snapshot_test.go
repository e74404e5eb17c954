package master

import (
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

// BenchmarkRefresh_OneChange1M: a registry of 1,000,000 listed servers
// (restored; 70 % Quake3Arena 68, 15 % OpenArena 71, 15 % Xonotic 3, one
// in four IPv6, as masterd's million-server benchmark) whose full
// Quake3Arena 68 answer (700,000 servers) is cached. Each iteration one
// server changes (another instance's record: empty if it was not, not
// if it was) and Refresh brings the snapshot and its cached answers up to date:
// large, a server of the 700,000; small, a Nexuiz 3 server, the only one
// of its game. The time per iteration is the build's, off the socket
// loop (BENCHMARKS.md, "A million servers").
//
//	go test -run '^$' -bench Refresh_OneChange1M -benchtime 20x ./master
func BenchmarkRefresh_OneChange1M(b *testing.B) {
	const n = 1_000_000
	r := newTestRegistry(b, Config{MaxServers: n + 1024, MaxServersPerAddress: -1})
	servers := make([]Server, n)
	for i := range servers {
		name, proto := "Quake3Arena", 68
		switch i % 20 {
		case 14, 15, 16:
			name, proto = "OpenArena", 71
		case 17, 18, 19:
			name, proto = "Xonotic", 3
		}
		a := netip.AddrFrom4([4]byte{23, byte(i >> 16), byte(i >> 8), byte(i)})
		if i%4 == 3 {
			a = netip.AddrFrom16([16]byte{0x2a, 0x0f, 0x5c, 0x0a, 0, byte(i >> 16), byte(i >> 8), byte(i), 15: 1})
		}
		servers[i] = Server{Addr: netip.AddrPortFrom(a, 27960), Listed: true, Family: game.FamilyQ3, Game: name, Protocol: proto,
			Gametype: "0", Clients: 1 + i%15, MaxClients: 16}
	}
	if got, skipped := r.Restore(t0, servers); got != n {
		b.Fatalf("restored %d, skipped %d", got, len(skipped))
	}
	h, err := NewHandler(HandlerConfig{}, HandlerDeps{Registry: r})
	if err != nil {
		b.Fatal(err)
	}
	r.Refresh(t0)
	if out := h.HandlePacket(t0, client, oob("getserversExt Quake3Arena 68 empty full ipv4 ipv6"), nil); len(out) < 4000 {
		b.Fatalf("the full answer: %d datagrams", len(out))
	}
	nexuiz := Server{Addr: ap("198.51.100.3:26000"), Family: game.FamilyQ3, Game: "Nexuiz", Protocol: 3, Gametype: "dm", Clients: 1, MaxClients: 8}
	r.Apply(t0, nexuiz)
	r.Refresh(t0)
	now, i := t0, 0
	for _, c := range []struct {
		name string
		s    func(i int) Server
	}{
		{"large", func(i int) Server { return servers[(i*20+40)%n] }},
		{"small", func(int) Server { return nexuiz }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for ; b.Loop(); i++ {
				now = now.Add(time.Millisecond)
				s := c.s(i)
				s.Clients = 0 // empty, or not if it was
				if cur, _ := r.Lookup(s.Addr); cur.Clients == 0 {
					s.Clients = 3
				}
				s.LastVerified = now
				if ch, why := r.Apply(now, s); why != OK || ch == ChangeNone {
					b.Fatalf("Apply: %v %v", ch, why)
				}
				if !r.Refresh(now) {
					b.Fatal("Refresh did not build")
				}
			}
		})
	}
}
