package masterd

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/store"
)

// timedStore records when each Apply of the real store began and ended.
type timedStore struct {
	Store
	mu    sync.Mutex
	spans [][2]time.Time
	n     int
}

func (s *timedStore) Apply(puts []master.Server, deletes []netip.AddrPort) error {
	t0 := time.Now()
	err := s.Store.Apply(puts, deletes)
	s.mu.Lock()
	s.spans = append(s.spans, [2]time.Time{t0, time.Now()})
	s.n += len(puts) + len(deletes)
	s.mu.Unlock()
	return err
}

// ioq3Server is server i with the info pairs of a real ioquake3
// infoResponse (about 400 bytes on disk).
func ioq3Server(i int, now time.Time) master.Server {
	return master.Server{
		Addr:   netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 27960),
		Listed: true, Game: "Quake3Arena", Family: game.FamilyQ3, Protocol: 68, Gametype: "0", Clients: i % 9, MaxClients: 16,
		Info: []master.Pair{
			{Key: "challenge", Value: fmt.Sprintf("%08x", uint32(i)*2654435761)},
			{Key: "version", Value: "ioq3 1.36_GIT_f2c61c14-2020-02-11 linux-x86_64 Feb 11 2020"},
			{Key: "protocol", Value: "68"}, {Key: "hostname", Value: fmt.Sprintf("^1Frag^7Fest #%d | CTF DM TDM", i)},
			{Key: "mapname", Value: "q3dm17"}, {Key: "clients", Value: fmt.Sprint(i % 9)},
			{Key: "g_humanplayers", Value: fmt.Sprint(i % 5)}, {Key: "sv_maxclients", Value: "16"},
			{Key: "gametype", Value: "0"}, {Key: "pure", Value: "1"}, {Key: "g_needpass", Value: "0"},
			{Key: "gamename", Value: "baseq3"},
		},
		FirstSeen: now, LastVerified: now,
	}
}

// BenchmarkStoreWriter_Sustained offers the state writer (default commit
// interval) and a real state file a steady stream of verified servers for
// 2 s at a given rate, over a full master's worth of addresses
// (master.DefaultMaxServers, 16,384: new servers first, then the same ones
// verified again), and reports what reached the disk per
// second (first change to last commit's end), the longest commit, and the
// longest a change can have waited (a commit's end minus the start of the
// commit before it, which had taken every change older than that).
//
//	go test -run '^$' -bench StoreWriter_Sustained -benchtime 1x ./masterd
func BenchmarkStoreWriter_Sustained(b *testing.B) {
	for _, rate := range []int{10_000, 20_000, 50_000, 100_000} {
		b.Run(fmt.Sprintf("%d/s", rate), func(b *testing.B) {
			servers := make([]master.Server, master.DefaultMaxServers)
			for i := range servers {
				servers[i] = ioq3Server(i, time.Now())
			}
			for b.Loop() {
				st, err := store.Open(filepath.Join(b.TempDir(), "state.db"), store.Options{Timeout: time.Second})
				if err != nil {
					b.Fatal(err)
				}
				ts := &timedStore{Store: st}
				w := newStoreWriter(ts, slog.New(slog.DiscardHandler), DefaultCommitInterval)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { w.run(ctx); close(done) }()

				const span = 2 * time.Second
				start := time.Now()
				sent := 0
				tick := time.NewTicker(time.Millisecond)
				for time.Since(start) < span {
					due := int(time.Since(start).Seconds() * float64(rate))
					for ; sent < due; sent++ {
						w.Put(servers[sent%len(servers)])
					}
					<-tick.C
				}
				tick.Stop()
				cancel()
				<-done
				st.Close()
				if want := min(sent, master.DefaultMaxServers); ts.n < want || ts.n > sent {
					b.Fatalf("%d changes written for %d made", ts.n, sent)
				}
				var maxCommit, maxWait time.Duration
				prev := start
				for _, s := range ts.spans {
					maxCommit = max(maxCommit, s[1].Sub(s[0]))
					maxWait = max(maxWait, s[1].Sub(prev))
					prev = s[0]
				}
				end := ts.spans[len(ts.spans)-1][1]
				b.ReportMetric(float64(sent)/end.Sub(start).Seconds(), "persisted/s")
				b.ReportMetric(float64(len(ts.spans)), "commits")
				b.ReportMetric(float64(maxCommit.Milliseconds()), "max-commit-ms")
				b.ReportMetric(float64(maxWait.Milliseconds()), "max-wait-ms")
			}
		})
	}
}
