//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/scout-discovery/scout/lab/loadgen"
	"github.com/scout-discovery/scout/protocol/q3"
)

// SwarmOptions are a swarm registration's: the swarm, the heartbeats per
// second offered, how long registration may take, and the master's
// /metrics URL (its count of listed servers), if any.
type SwarmOptions struct {
	Swarm    loadgen.SwarmConfig
	Rate     int
	Deadline time.Duration
	Metrics  string
}

// ErrNotListed reports that the master did not list every server of the
// swarm, or that registration failed (stderr says how).
var ErrNotListed = errors.New("the master does not list every server of the swarm")

// masterListed reads scout_master_servers_listed from a master's
// /metrics.
func masterListed(ctx context.Context, url string) (int64, error) {
	v, err := metric(ctx, url, "scout_master_servers_listed")
	return int64(v), err
}

// runSwarm registers a swarm with one master and reports how fast the
// master took it: servers answered per second of wall time, the master's
// CPU per registration, its VmRSS per server, and the lists it then gives
// of each game (read whole, and the swarm's servers counted in them).
func runSwarm(ctx context.Context, stdout, stderr io.Writer, t *Target, so SwarmOptions) error {
	s, err := loadgen.NewSwarm(so.Swarm)
	if err != nil {
		return err
	}
	serveCtx, stop := context.WithCancel(ctx)
	s.Serve(serveCtx)
	defer func() { stop(); s.Close() }()
	sw := &swarmRun{s: s, t: t, so: so, stdout: stdout, master6: netip.AddrPortFrom(netip.IPv6Loopback(), t.Addr.Port())}
	fmt.Fprintf(stdout, "swarm: %d IPv4 servers from %v on %d ports, %d IPv6 on ::1 (ports %d-%d); offering %d heartbeats/s to %v and %v\n",
		so.Swarm.Servers, s.Addr(0).Addr(), max(so.Swarm.Sockets, loadgen.DefaultSwarmSockets)*min(so.Swarm.Servers, 1), so.Swarm.IPv6,
		portOr(s, so.Swarm.Servers), portOr(s, s.Len()-1), so.Rate, t.Addr, sw.master6)
	rss0, _ := loadgen.ProcRSS(t.PID)
	sw.cpu0, sw.self0 = sw.cpu(), selfCPU()
	sampled := make(chan struct{})
	sampleCtx, stopSample := context.WithCancel(ctx)
	sw.start = time.Now()
	go func() { defer close(sampled); sw.sample(sampleCtx) }()
	r, rounds, err := sw.register(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab load: registration: %v\n", err)
	}
	stopSample()
	<-sampled
	sw.report(r, rounds)
	total, err2 := sw.lists(ctx)
	if t.PID != 0 {
		rss1, _ := loadgen.ProcRSS(t.PID)
		fmt.Fprintf(stdout, "master VmRSS: %d MB before, %d MB after: %.0f B per listed server\n",
			rss0>>20, rss1>>20, float64(rss1-rss0)/float64(max(total, 1)))
	}
	if total < s.Len() || err != nil || err2 != nil {
		return ErrNotListed
	}
	return nil
}

// swarmRun is one swarm registration's state: the figures the sampler
// and the registration share.
type swarmRun struct {
	s            *loadgen.Swarm
	t            *Target
	so           SwarmOptions
	stdout       io.Writer
	master6      netip.AddrPort
	start        time.Time
	cpu0, self0  time.Duration
	mu           sync.Mutex    // guards the three below
	cpuAtLast    time.Duration // the master's CPU at the last sample with a new server
	allListed    time.Duration // when the master's count reached every server; 0 not yet
	cpuAllListed time.Duration // the master's CPU then
}

// cpu is the master's CPU time (0 without its PID).
func (sw *swarmRun) cpu() time.Duration {
	if sw.t.PID == 0 {
		return 0
	}
	c, _ := loadgen.ProcCPU(sw.t.PID)
	return c
}

// sample prints a line a second until ctx ends: servers answered, listed
// by the master (with Metrics), and the CPU of both.
func (sw *swarmRun) sample(ctx context.Context) {
	s, stdout := sw.s, sw.stdout
	sw.cpuAtLast = sw.cpu0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	fmt.Fprintf(stdout, "%6s %9s %9s %7s %9s %9s %7s\n", "t s", "answered", "listed", "per s", "master %", "swarm %", "sends")
	last, lastListed, lastCPU, lastSelf := int64(0), int64(0), sw.cpu0, sw.self0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st, c, me := s.Stats(), sw.cpu(), selfCPU()
		listed, per := int64(-1), st.Answered-last
		if sw.so.Metrics != "" {
			if n, err := masterListed(ctx, sw.so.Metrics); err == nil {
				listed, per = n, n-lastListed
				lastListed = n
			}
		}
		fmt.Fprintf(stdout, "%6.0f %9d %9d %7d %9.0f %9.0f %7d\n", time.Since(sw.start).Seconds(), st.Answered, listed, per,
			100*(c-lastCPU).Seconds(), 100*(me-lastSelf).Seconds(), st.Heartbeats)
		sw.mu.Lock()
		if st.Answered != last {
			sw.cpuAtLast = c
		}
		if listed >= int64(s.Len()) && sw.allListed == 0 {
			sw.allListed, sw.cpuAllListed = time.Since(sw.start), c
		}
		sw.mu.Unlock()
		last, lastCPU, lastSelf = st.Answered, c, me
	}
}

// register registers the swarm. With Metrics it then waits for the
// master's own count to stop growing (the last checks may be its
// retries); servers that answered a getinfo and are not listed then
// (every answer lost) are found in the lists and heartbeated again.
func (sw *swarmRun) register(ctx context.Context) (loadgen.RegisterResult, []loadgen.Round, error) {
	s, t, so := sw.s, sw.t, sw.so
	r, err := s.Register(ctx, t.Addr, sw.master6, loadgen.RegisterConfig{Rate: so.Rate, Deadline: so.Deadline})
	rounds := r.Rounds
	for attempt := 1; so.Metrics != "" && err == nil && ctx.Err() == nil; attempt++ {
		n := settle(ctx, so.Metrics, int64(s.Len()))
		if n >= int64(s.Len()) {
			sw.mu.Lock()
			sw.allListed, sw.cpuAllListed = time.Since(sw.start), sw.cpu()
			sw.mu.Unlock()
			break
		}
		if attempt == 4 {
			break
		}
		listed := listUntil(ctx, sw.stdout, s, t.Addr, int(n), attempt)
		missing := 0
		for i, ok := range listed {
			if !ok {
				s.Reset(i)
				missing++
			}
		}
		var r2 loadgen.RegisterResult
		r2, err = s.Register(ctx, t.Addr, sw.master6, loadgen.RegisterConfig{Rate: so.Rate, Deadline: so.Deadline})
		rounds = append(rounds, r2.Rounds...)
		fmt.Fprintf(sw.stdout, "master lists %d: %d servers not in its lists heartbeated again, %d answered a getinfo\n", n, missing, r2.Answered-(s.Len()-missing))
	}
	return r, rounds, err
}

// report prints the registration's rounds, its rate and the master's CPU
// per registration.
func (sw *swarmRun) report(r loadgen.RegisterResult, rounds []loadgen.Round) {
	s, stdout := sw.s, sw.stdout
	self1 := selfCPU()
	st := s.Stats()
	for k, rd := range rounds {
		fmt.Fprintf(stdout, "round %d: %d heartbeats, %d servers answered a getinfo in %v: %.0f per second\n",
			k+1, rd.Sent, rd.Answered, rd.Elapsed.Round(time.Millisecond), float64(rd.Answered)/rd.Elapsed.Seconds())
	}
	fmt.Fprintf(stdout, "first registration: %d of %d servers answered the master's getinfo in %v: %.0f per second (%d rounds); %d heartbeats in all, %d send errors\n",
		r.Answered, s.Len(), r.Elapsed.Round(time.Millisecond), float64(r.Answered)/r.Elapsed.Seconds(), len(r.Rounds), st.Heartbeats, st.SendErrors)
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.allListed != 0 {
		fmt.Fprintf(stdout, "master's count: all %d listed %v after the first heartbeat: %.0f registrations per second\n",
			s.Len(), sw.allListed.Round(time.Millisecond), float64(s.Len())/sw.allListed.Seconds())
		if sw.t.PID != 0 {
			mc := sw.cpuAllListed - sw.cpu0
			fmt.Fprintf(stdout, "master CPU to then: %.1f s: %.1f µs per registration, %.0f registrations per CPU-second\n",
				mc.Seconds(), float64(mc.Microseconds())/float64(s.Len()), float64(s.Len())/mc.Seconds())
		}
	}
	if sw.t.PID != 0 {
		mc := sw.cpuAtLast - sw.cpu0
		fmt.Fprintf(stdout, "master CPU: %.1f s over the registration (to the last sample with a new server): %.1f µs per registration, %.0f registrations per CPU-second\n",
			mc.Seconds(), float64(mc.Microseconds())/float64(max(r.Answered, 1)), float64(r.Answered)/mc.Seconds())
	}
	fmt.Fprintf(stdout, "swarm CPU: %.1f s (this process, sampling included)\n", (self1 - sw.self0).Seconds())
}

// lists reads every game's list, whole, from a fresh source each, and
// returns how many of the swarm's servers they hold. Above 65,536 servers
// a master answers from a snapshot its refresher brings up to date off
// the socket loop (within tens of milliseconds since the incremental
// snapshot, seconds before), so the lists are read again while they grow.
// A server that answered a getinfo and is still not listed then (its
// infoResponse lost, and the master's retries too) is heartbeated again.
func (sw *swarmRun) lists(ctx context.Context) (total int, err error) {
	s, t, so, stdout := sw.s, sw.t, sw.so, sw.stdout
	sw.mu.Lock()
	allListed := sw.allListed
	sw.mu.Unlock()
	src := netip.AddrFrom4([4]byte{127, 13, 0, 1})
	for pass, grew := 1, 0; pass <= 20 && ctx.Err() == nil; pass++ {
		listed := listSwarm(ctx, stdout, s, t.Addr, src)
		src = netip.AddrFrom4([4]byte{127, 13, byte(pass), 1})
		n := 0
		for _, ok := range listed {
			if ok {
				n++
			}
		}
		fmt.Fprintf(stdout, "listed: %d of %d swarm servers\n", n, s.Len())
		if n > total {
			grew = 0
		} else {
			grew++
		}
		total = n
		if total == s.Len() {
			break
		}
		if grew < 3 || allListed != 0 {
			// The master lists them all (its count says so) or its lists
			// still grow: wait a second for its snapshot and ask again.
			time.Sleep(time.Second)
			continue
		}
		for i, ok := range listed {
			if !ok {
				s.Reset(i)
			}
		}
		r2, err2 := s.Register(ctx, t.Addr, sw.master6, loadgen.RegisterConfig{Rate: so.Rate, Deadline: so.Deadline})
		fmt.Fprintf(stdout, "heartbeated again: %d servers not listed, %d answered a getinfo (%d rounds)\n", s.Len()-total, r2.Answered, len(r2.Rounds))
		if err2 != nil {
			err = err2
		}
		grew = 0
	}
	return total, err
}

// settle polls the master's listed count every 200 ms until it reaches
// want or has not grown for 6 s (a check's challenge lives 5 s), and
// returns it.
func settle(ctx context.Context, url string, want int64) int64 {
	var last int64 = -1
	grew := time.Now()
	for ctx.Err() == nil && time.Since(grew) < 6*time.Second {
		n, err := masterListed(ctx, url)
		if err == nil && n >= want {
			return n
		}
		if err == nil && n > last {
			last, grew = n, time.Now()
		}
		time.Sleep(200 * time.Millisecond) // a poll of the master's count
	}
	return last
}

// listUntil reads the master's lists until they hold want of the swarm's
// servers (at this size its answers come from a snapshot brought up to
// date off its socket loop) or stop growing, and returns which servers
// they hold.
func listUntil(ctx context.Context, stdout io.Writer, s *loadgen.Swarm, master netip.AddrPort, want, attempt int) []bool {
	var listed []bool
	best, still := -1, 0
	for pass := 0; pass < 30 && still < 3 && ctx.Err() == nil; pass++ {
		listed = listSwarm(ctx, stdout, s, master, netip.AddrFrom4([4]byte{127, 12, byte(attempt), byte(1 + pass)}))
		n := 0
		for _, ok := range listed {
			if ok {
				n++
			}
		}
		if n >= want {
			break
		}
		if n > best {
			best, still = n, 0
		} else {
			still++
		}
		time.Sleep(time.Second) // the snapshot's next build
	}
	return listed
}

// listSwarm asks master for each game's full list (getserversExt GAME
// PROTO empty full ipv4 ipv6) from sources from src on and reports which
// of the swarm's servers were in them.
func listSwarm(ctx context.Context, stdout io.Writer, s *loadgen.Swarm, master netip.AddrPort, src netip.Addr) []bool {
	listed := make([]bool, s.Len())
	for _, g := range []struct {
		name  string
		proto int
	}{{"Quake3Arena", 68}, {"OpenArena", 71}, {"Xonotic", 3}} {
		q, _ := q3.GetServers{Ext: true, GameName: g.name, Protocol: g.proto, Empty: true, Full: true, IPv4: true, IPv6: true}.AppendBinary(nil)
		began := time.Now()
		list, err := loadgen.ListServers(ctx, master, netip.AddrPortFrom(src, 0), q, time.Minute)
		took := time.Since(began) - q3.EndGrace
		// The next list asks from another /16: the master's response
		// limits count the bytes to each network.
		if src.Is4() {
			b := src.As4()
			b[1]++
			src = netip.AddrFrom4(b)
		} else {
			src = src.Next()
		}
		n := 0
		for _, a := range list {
			if i, ok := s.Index(a); ok && !listed[i] {
				listed[i] = true
				n++
			}
		}
		fmt.Fprintf(stdout, "list %s %d: %d entries, %d of the swarm's, last datagram %v after the request", g.name, g.proto, len(list), n, took.Round(time.Millisecond))
		if err != nil {
			fmt.Fprintf(stdout, " (%v)", err)
		}
		fmt.Fprintln(stdout)
	}
	return listed
}

func portOr(s *loadgen.Swarm, i int) uint16 {
	if i < 0 || i >= s.Len() {
		return 0
	}
	return s.Addr(i).Port()
}

func selfCPU() time.Duration {
	c, _ := loadgen.SelfCPU()
	return c
}
