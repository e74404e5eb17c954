package master

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
)

// The tallies kept as the listing changes equal a count of the listed
// servers after every step of a random mix of registrations,
// re-verifications that change game, protocol or gametype, fleet records,
// fleet removals, restores and expiry.
func TestRegistry_TalliesFollowTheListing(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			r := newTestRegistry(t, Config{AllowLoopback: true, MaxServersPerAddress: -1})
			now := t0
			addr := func() netip.AddrPort {
				return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(rng.IntN(40))}), 27960)
			}
			names := []string{"Quake3Arena", "OpenArena"}
			record := func(a netip.AddrPort) Server {
				return Server{Addr: a, Listed: true, Game: names[rng.IntN(2)], Family: game.FamilyQ3,
					Protocol: 67 + rng.IntN(3), Gametype: fmt.Sprint(rng.IntN(3)), Clients: rng.IntN(4),
					MaxClients: 8, FirstSeen: t0, LastVerified: now}
			}
			for step := range 400 {
				now = now.Add(time.Duration(rng.IntN(40)) * time.Second)
				switch a := addr(); rng.IntN(6) {
				case 0, 1: // heartbeat and reply, listing or changing it
					if p, why := r.Heartbeat(now, a, q3hb); why == OK && p.Challenge.Text != "" {
						r.Verify(now, a, infoReply(p.Challenge.Text, "gametype", fmt.Sprint(rng.IntN(3)),
							"protocol", fmt.Sprint(67+rng.IntN(3)), "gamename", names[rng.IntN(2)]))
					}
				case 2:
					r.Apply(now, record(a))
				case 3:
					r.ApplyRemoval(a, now)
				case 4:
					r.Restore(now, []Server{record(a), record(addr())})
				case 5:
					r.Expire(now.Add(time.Duration(rng.IntN(600))*time.Second), nil)
				}
				want := map[Tally]int{}
				for _, s := range r.Servers(nil) {
					want[Tally{Game: s.Game, Protocol: s.Protocol, Gametype: s.Gametype}]++
				}
				got := map[Tally]int{}
				for _, k := range r.Tallies(nil) {
					n := k.Servers
					k.Servers = 0
					got[k] = n
				}
				if !maps.Equal(got, want) {
					t.Fatalf("step %d: tallies %v, counted %v", step, got, want)
				}
			}
			if l, _ := r.Counts(); l == 0 {
				t.Fatal("nothing listed: the test exercised nothing")
			}
		})
	}
}
