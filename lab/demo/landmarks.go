package demo

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/lab/population"
	"github.com/scout-discovery/scout/lab/world"
	"github.com/scout-discovery/scout/latency"
	"github.com/scout-discovery/scout/master"
)

// Landmarks. The demo's masters are landmarks placed in cities
// (Config.Landmarks; Frankfurt, New York and Tokyo by default), each on a
// loopback IP of its own (127.0.1.k), to which the world gives the RTTs
// its place implies (world.Config.Requesters: the same latency model as
// the player's, from the landmark's city, with no access delay, as
// WonderProxy's datacentre nodes measured the mesh); every server
// heartbeats to each, so each measures its RTT to every server when it
// verifies it. The first also lists the world for the other runs. Each
// master is reached through a path of its own (RelayWith,
// LandmarkMaster.Path) that delays its replies by the sender's RTT to its
// city in the same model: for the other masters, which ping it as their
// peer (master.Mesh, every MeshInterval), the model's RTT between the two
// cities; for the player, the place's access delay plus the model's RTT
// from the place's city. Discovery begins once every master has measured
// its RTT to every other (waitMesh). The landmark run asks all of them
// with getserversExt ... landmarks landmarkpeers through their paths, so
// the client's own RTT to each landmark is what its place implies and the
// landmarks' RTTs to each other are the ones the masters measured and
// published, and orders and stops with scout servers --order landmarks'
// plan (Config.LandmarkRun, landmarkPlan).

// DefaultLandmarks are the landmark masters' cities: the real-mesh
// evaluation's three hubs (EVALUATION.md, "Landmarks").
var DefaultLandmarks = []string{"Frankfurt", "NewYork", "Tokyo"}

// landmarkPlan is the landmark run's strategy: scout servers --order
// landmarks' plan (discover.PlanDefault with the masters' landmark RTTs:
// the site check and group probing) from the targets and the landmark
// masters' reports, auto-stopping at stopRTT, with the client's memory
// prior and the groups it has seen, known (nil for a first run); it says
// which landmarks' RTTs to each other the planner was given, measured by
// the masters or derived.
func landmarkPlan(ts []adaptive.Target, reps []discover.MasterReport, stopRTT time.Duration, seed uint64, prior map[netip.Prefix]adaptive.Prior, known map[netip.Prefix]bool) (adaptive.Strategy, LandmarkMatrix, error) {
	pl, err := discover.PlanDefault(ts, reps, discover.PlanOptions{AutoStop: stopRTT, Seed: seed, Landmarks: true, Prior: prior, Known: known})
	var m LandmarkMatrix
	if lp := pl.Landmark; lp != nil {
		m = LandmarkMatrix{Landmarks: lp.Landmarks, Derived: lp.Input.LandmarksDerived}
		for _, row := range lp.Input.Landmarks {
			var r []time.Duration
			for _, v := range row {
				d := time.Duration(-1) // unknown
				if !math.IsNaN(v) {
					d = time.Duration(v * float64(time.Millisecond))
				}
				r = append(r, d)
			}
			m.RTTs = append(m.RTTs, r)
		}
	}
	if err != nil {
		return nil, m, err
	}
	return pl.Strategy(), m, nil
}

// LandmarkMatrix is the landmarks' RTTs to each other a landmark run used.
type LandmarkMatrix struct {
	// Landmarks are the landmarks' ids, in the matrix's order.
	Landmarks []string
	// RTTs[j][k] is landmark j's RTT to landmark k (0 on the diagonal,
	// negative where unknown).
	RTTs [][]time.Duration
	// Derived reports that some pair was not measured by the masters and
	// was bounded from the servers' vectors instead.
	Derived bool
}

// LandmarkMaster is one of the demo's masters.
type LandmarkMaster struct {
	City latency.City
	Addr netip.AddrPort // its own (loopback) socket
	// Path is where the player and the other masters reach it: a
	// RelayWith giving each its RTT to City.
	Path netip.AddrPort
	// ClientRTT is the player's RTT to it: its path's delay for the
	// player.
	ClientRTT time.Duration
	// PeerRTTs are its RTTs to the other masters when discovery began,
	// as it measured them through their paths (master.Mesh.Own).
	PeerRTTs []master.LandmarkRTT
}

// landmarkCities returns the cities of names.
func landmarkCities(names []string) ([]latency.City, error) {
	var out []latency.City
	for _, n := range names {
		found := false
		for _, c := range latency.Cities() {
			if c.Name == n {
				out = append(out, c)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("demo: landmark %q is not a city of the latency model", n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("demo: no landmark master")
	}
	return out, nil
}

// landmarkHost is the k-th landmark master's loopback IP, 127.0.1.k+1.
func landmarkHost(k int) netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 1, byte(k + 1)}) }

// landmarkLinks returns the world's link to each server as seen from
// city: the model's RTT from there (population.World.RTTs, no access
// delay), the same jitter rule and loss as the player's.
func landmarkLinks(pop *population.World, city latency.City, loss float64) []world.Link {
	rtts := pop.RTTs(population.Place{Name: "landmark/" + city.Country + "/" + city.Name, City: city})
	out := make([]world.Link, len(rtts))
	for i, d := range rtts {
		d = min(d, world.MaxRTT)
		out[i] = world.Link{RTT: world.Duration(d), Jitter: world.Duration(2 * (1100*time.Microsecond + d/200)), Loss: loss}
	}
	return out
}

// Relay stands for the network between hosts and a landmark master, a
// path per host, over real UDP on loopback: each client (by address and
// port) gets a socket of its own towards the master, so the master sees
// one source per client and its replies go back to the right one (a
// player's process may ask from more than one socket: the list on one, a
// name check on another). A client's datagrams go to the master at once;
// the master's go back after the path's delay, in the order they came, as
// a path with a fixed delay does. It serves until ctx ends; wg waits for
// its goroutines. (A timer per datagram let a busy machine send them back
// out of order: a fleet instance's landmark runs could reach the client
// with a peer's first, which the client takes for the instance's own.)
func Relay(ctx context.Context, wg *sync.WaitGroup, to netip.AddrPort, delay time.Duration) (netip.AddrPort, error) {
	return RelayWith(ctx, wg, to, RelayConfig{Delay: func(netip.AddrPort) time.Duration { return delay }})
}

// RelayConfig is a Relay's paths.
type RelayConfig struct {
	// Delay is the RTT of client's path: each of the master's datagrams
	// to client goes back that long after it came.
	Delay func(client netip.AddrPort) time.Duration
	// Extra, if not nil, is called with the client, the index (from 0,
	// per client) and the bytes of each of the master's datagrams and
	// returns a delay added to that one (a queue, a busy host: a sample inflated). The
	// datagrams still go back in the order they came, so the ones behind
	// an inflated datagram wait for it, as in a queue.
	Extra func(client netip.AddrPort, i int, pkt []byte) time.Duration
}

// RelayWith is Relay with the paths cfg. At most MaxRelayClients clients
// are served; datagrams from more are dropped.
func RelayWith(ctx context.Context, wg *sync.WaitGroup, to netip.AddrPort, cfg RelayConfig) (netip.AddrPort, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return netip.AddrPort{}, err
	}
	var mu sync.Mutex
	var ups []*net.UDPConn
	wg.Go(func() {
		<-ctx.Done()
		c.Close()
		mu.Lock()
		for _, u := range ups {
			u.Close()
		}
		mu.Unlock()
	})
	// upstream opens client's own socket towards the master, with its
	// reader and delay line; nil once ctx ended or the bound is reached.
	upstream := func(client netip.AddrPort) *net.UDPConn {
		u, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil
		}
		mu.Lock()
		if ctx.Err() != nil || len(ups) >= MaxRelayClients {
			mu.Unlock()
			u.Close()
			return nil
		}
		ups = append(ups, u)
		mu.Unlock()
		back := make(chan delayed, relayQueue)
		d := cfg.Delay(client)
		wg.Go(func() {
			defer close(back)
			buf := make([]byte, 65536)
			for i := 0; ; {
				n, from, err := u.ReadFromUDPAddrPort(buf)
				if err != nil {
					return
				}
				if from != to {
					continue
				}
				pkt := append([]byte(nil), buf[:n]...)
				due := time.Now().Add(d)
				if cfg.Extra != nil {
					due = due.Add(cfg.Extra(client, i, pkt))
				}
				i++
				select {
				case back <- delayed{pkt, client, due}:
				default: // the path's queue is full: lost, as on a real one
				}
			}
		})
		wg.Go(func() { delayLine(ctx, c, back) })
		return u
	}
	wg.Go(func() {
		clients := map[netip.AddrPort]*net.UDPConn{}
		buf := make([]byte, 65536)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			u, ok := clients[from]
			if !ok {
				u = upstream(from)
				clients[from] = u
			}
			if u != nil {
				u.WriteToUDPAddrPort(buf[:n], to)
			}
		}
	})
	return c.LocalAddr().(*net.UDPAddr).AddrPort(), nil
}

// delayed is a datagram on its way back through a relay.
type delayed struct {
	pkt []byte
	to  netip.AddrPort
	due time.Time
}

// delayLine writes each datagram of back from c when it is due, in the
// order they came, until back is closed (its reader's end).
func delayLine(ctx context.Context, c *net.UDPConn, back <-chan delayed) {
	tm := time.NewTimer(0)
	defer tm.Stop()
	for d := range back {
		if wait := time.Until(d.due); wait > 0 {
			tm.Reset(wait)
			select {
			case <-tm.C:
			case <-ctx.Done():
				continue // drain back until the reader closes it
			}
		}
		c.WriteToUDPAddrPort(d.pkt, d.to)
	}
}

// MaxRelayClients bounds the clients a Relay serves.
const MaxRelayClients = 64

// relayQueue bounds the datagrams a Relay holds on their way back.
const relayQueue = 4096

// landmarkID is city's name as a landmark id (q3.LandmarksResponse's
// characters).
func landmarkID(c latency.City) string {
	b := []byte(c.Name)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}
