package master

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// TestSnapshot_ConcurrentBuilds: changes, queries (which build the
// snapshot of a small listing, and apply a few changes of a large one)
// and Refresh run at once from several goroutines, as the socket loops,
// the fleet's follower and the refresher do; once they are done, one
// Refresh leaves the snapshot equal to one built from scratch. Run with
// -race, it also checks that builds touch the entries only under the
// registry's lock.
func TestSnapshot_ConcurrentBuilds(t *testing.T) {
	for _, large := range []bool{false, true} {
		t.Run(fmt.Sprint("large=", large), func(t *testing.T) {
			m := newSnapModelForTest(t, 1, large)
			var wg, queriers sync.WaitGroup
			stop := make(chan struct{})
			for w := range 3 { // writers, each on its own addresses
				wg.Go(func() {
					rnd := rand.New(rand.NewPCG(uint64(w), 11))
					for i := range 3000 {
						a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, byte(113 + w), byte(i % 50)}), 27960)
						k := snapKinds[rnd.IntN(len(snapKinds))]
						proto := k.protos[rnd.IntN(len(k.protos))]
						switch rnd.IntN(4) {
						case 0:
							m.r.ApplyRemoval(a, m.now)
						default:
							m.r.Apply(m.now, Server{Addr: a, Game: k.game, Protocol: proto, Gametype: "0",
								Clients: rnd.IntN(9), MaxClients: 8, LastVerified: m.now.Add(-time.Duration(rnd.IntN(1000)) * time.Millisecond)})
						}
					}
				})
			}
			for range 2 {
				queriers.Go(func() {
					form := replyForm{split: q3.SplitOptions{Ext: true, End: q3.EndEOT, MaxBytes: 100}}
					for {
						select {
						case <-stop:
							return
						default:
						}
						for _, k := range snapKinds {
							f, why := m.r.resolve(Query{Family: 1, Game: k.game, Protocol: k.protos[0], Empty: true, Full: true}, m.r.current(m.now))
							if why == OK {
								if _, err := m.r.answer(m.now, f, form, true); err != nil {
									t.Error(err)
								}
							}
						}
					}
				})
			}
			refresher := make(chan struct{})
			go func() {
				defer close(refresher)
				for {
					select {
					case <-stop:
						return
					default:
						m.r.Refresh(m.now)
					}
				}
			}()
			wg.Wait()
			close(stop)
			queriers.Wait()
			<-refresher
			m.r.Refresh(m.now)
			m.r.current(m.now)
			m.compare(0)
		})
	}
}
