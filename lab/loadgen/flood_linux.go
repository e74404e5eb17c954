//go:build linux

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scout-discovery/scout/protocol/q3"
)

// Flood defaults.
const (
	// DefaultFloodRate is the spoofed requests per second of a flood: 300,
	// a small botnet's worth.
	DefaultFloodRate = 300
	// DefaultRefresh is the real client's refresh interval.
	DefaultRefresh = 2 * time.Second
	// DefaultFloodLinger is how long a fresh-port socket of the flood
	// stays open for the replies to its one request.
	DefaultFloodLinger = time.Second
	// MaxFloodPorts bounds FloodConfig.Ports (sockets held open at once).
	MaxFloodPorts = 4096
	// IPv4Overhead is the IPv4 and UDP header bytes of a datagram, counted
	// for the wire amplification.
	IPv4Overhead = 28
)

// Spread is how a flood picks the addresses it spoofs.
type Spread uint8

const (
	SpreadAddress Spread = iota // the victim's address alone
	Spread24                    // the addresses of the victim's /24
	Spread16                    // the addresses of the victim's /16
	SpreadRandom4               // any address of 127.0.0.0/8 (65,536 /24s)
	SpreadRandom6               // any address of FloodConfig.Prefix6
)

// ParseSpread reads "address", "24", "16", "random4" or "random6".
func ParseSpread(s string) (Spread, error) {
	for i, n := range spreadNames {
		if s == n {
			return Spread(i), nil
		}
	}
	return 0, fmt.Errorf("loadgen: spread %q: want one of %s", s, strings.Join(spreadNames[:], ", "))
}

var spreadNames = [...]string{"address", "24", "16", "random4", "random6"}

func (s Spread) String() string {
	if int(s) < len(spreadNames) {
		return spreadNames[s]
	}
	return fmt.Sprintf("spread(%d)", uint8(s))
}

// NextVictim is the victim of the run after one on v: the next address,
// /24 or /16 of the spread, so that no run inherits a budget the one
// before spent.
func (s Spread) NextVictim(v netip.Addr) netip.Addr {
	if !v.Is4() {
		return v
	}
	b := v.As4()
	switch s {
	case Spread24:
		b[2]++
	case Spread16:
		b[1]++
	case SpreadAddress:
		return v.Next()
	}
	return netip.AddrFrom4(b)
}

// FloodConfig is a reflection attack on loopback, aimed at one victim
// address or spread over its network: requests "spoofed" with the
// victim's addresses are sent from sockets bound to them (on loopback the
// kernel lets a process send from any 127.0.0.0/8 address it binds; an
// IPv6 prefix needs a local route, "ip -6 route add local PREFIX dev lo",
// and the sockets bind with IPV6_FREEBIND), so the replies they cause
// arrive there and are counted, while a real client on the victim's
// address refreshes its list every Refresh.
type FloodConfig struct {
	Master netip.AddrPort
	Victim netip.Addr // a 127.0.0.0/8 address, or one of Prefix6
	Query  []byte     // the list request, flood and client alike
	Expect int        // servers in a complete answer
	// Spread is how the spoofed addresses are picked (SpreadAddress: the
	// victim's alone).
	Spread Spread
	// Prefix6 is where SpreadRandom6 picks its addresses; the victim is
	// in it.
	Prefix6 netip.Prefix
	// Cookie makes the refreshing client scout's own: it asks for a
	// cookie and echoes it (protocol/q3's cookie extension), and asks at
	// once again with it when the master says the list did not go.
	Cookie bool
	// Rate is the spoofed requests per second; 0 means
	// DefaultFloodRate, negative no flood (the client alone).
	Rate float64
	// Ports is how many source ports the flood uses in turn, each a
	// socket held open for the whole run; 0 sends each request from a
	// fresh socket (a new ephemeral port, as spoofing tools randomise
	// the source port), open for Linger.
	Ports   int
	Linger  time.Duration // 0 means DefaultFloodLinger
	Refresh time.Duration // 0 means DefaultRefresh
	// Lead is how long the client refreshes before the flood begins (a
	// player who was using the master when the attack came); 0 means
	// Refresh/2, negative none. A client that first asks during a flood
	// finds the victim's budget taken (master.ResponseLimiter).
	Lead     time.Duration
	Duration time.Duration // 0 means DefaultDuration
	// Timeout is how long the client waits for each refresh's answer; 0
	// means DefaultAnswerTimeout.
	Timeout time.Duration
}

// FloodResult is what a flood cost the victim, and what its client got.
type FloodResult struct {
	Elapsed time.Duration
	// Spoofed requests sent and their UDP payload bytes.
	Spoofed      int   `json:"spoofed"`
	SpoofedBytes int64 `json:"spoofed_bytes"`
	// Datagrams and payload bytes the master sent to the flood's ports,
	// and how many spoofed requests got at least one datagram.
	FloodPackets  int   `json:"flood_packets"`
	FloodBytes    int64 `json:"flood_bytes"`
	FloodAnswered int   `json:"flood_answered"`
	// The real client's refreshes, those answered complete (every server,
	// end marker) within Timeout, and the datagrams and bytes it got.
	Refreshes     int   `json:"refreshes"`
	Complete      int   `json:"complete"`
	Missed        []int `json:"missed,omitempty"` // the refreshes not answered complete, from 1
	ClientPackets int   `json:"client_packets"`
	ClientBytes   int64 `json:"client_bytes"`
	// Cookies the client got, and how many told it to ask again.
	Cookies     int `json:"cookies,omitempty"`
	CookieAgain int `json:"cookie_again,omitempty"`
	// MaxNetBytes and MaxWideBytes are the most payload bytes that
	// reached any one /24 and /16 (IPv6: /56 and /48), flood and client
	// together: for a spread flood, what its worst-hit network got.
	MaxNetBytes  int64 `json:"max_net_bytes"`
	MaxWideBytes int64 `json:"max_wide_bytes"`
}

// VictimBytes is every payload byte the master sent to the victim address.
func (r FloodResult) VictimBytes() int64 { return r.FloodBytes + r.ClientBytes }

// Amplification is the victim's bytes over the spoofed requests' bytes,
// UDP payloads.
func (r FloodResult) Amplification() float64 {
	if r.SpoofedBytes == 0 {
		return 0
	}
	return float64(r.VictimBytes()) / float64(r.SpoofedBytes)
}

// WireAmplification is Amplification with IPv4Overhead counted for every
// datagram each way.
func (r FloodResult) WireAmplification() float64 {
	in := r.SpoofedBytes + int64(r.Spoofed)*IPv4Overhead
	if in == 0 {
		return 0
	}
	return float64(r.VictimBytes()+int64(r.FloodPackets+r.ClientPackets)*IPv4Overhead) / float64(in)
}

// VictimBytesPerSecond is the victim's bytes per second over the run
// (from the client's first refresh).
func (r FloodResult) VictimBytesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.VictimBytes()) / r.Elapsed.Seconds()
}

// MaxNetBytesPerSecond is MaxNetBytes over the run.
func (r FloodResult) MaxNetBytesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.MaxNetBytes) / r.Elapsed.Seconds()
}

// floodCount is the counters the flood's readers share; mu guards the
// bytes per network.
type floodCount struct {
	packets, answered atomic.Int64
	bytes             atomic.Int64

	mu   sync.Mutex
	net  map[netip.Prefix]int64
	wide map[netip.Prefix]int64
}

// netsOf returns the /24 and /16 (IPv6: /56 and /48) of a.
func netsOf(a netip.Addr) (netip.Prefix, netip.Prefix) {
	if a.Is4() {
		n, _ := a.Prefix(24)
		w, _ := a.Prefix(16)
		return n, w
	}
	n, _ := a.Prefix(56)
	w, _ := a.Prefix(48)
	return n, w
}

func (c *floodCount) add(a netip.Addr, n int) {
	nk, wk := netsOf(a)
	c.mu.Lock()
	c.net[nk] += int64(n)
	c.wide[wk] += int64(n)
	c.mu.Unlock()
}

// spoofed returns the next address the flood sends from.
func spoofed(cfg FloodConfig, rng *rand.Rand) netip.Addr {
	switch cfg.Spread {
	case Spread24, Spread16:
		b := cfg.Victim.As4()
		b[3] = byte(1 + rng.IntN(254))
		if cfg.Spread == Spread16 {
			b[2] = byte(rng.IntN(256))
		}
		return netip.AddrFrom4(b)
	case SpreadRandom4:
		return netip.AddrFrom4([4]byte{127, byte(rng.IntN(256)), byte(rng.IntN(256)), byte(1 + rng.IntN(254))})
	case SpreadRandom6:
		b := cfg.Prefix6.Addr().As16()
		for i := cfg.Prefix6.Bits() / 8; i < 16; i++ {
			r := byte(rng.IntN(256))
			if i == cfg.Prefix6.Bits()/8 && cfg.Prefix6.Bits()%8 != 0 {
				keep := byte(0xff) << (8 - cfg.Prefix6.Bits()%8)
				r = b[i]&keep | r&^keep
			}
			b[i] = r
		}
		return netip.AddrFrom16(b)
	}
	return cfg.Victim
}

// ClientReadBuffer is the receive buffer of the flood's client: a list of
// a million servers (7 MB) at once.
const ClientReadBuffer = 16 << 20

// bigReadBuffer gives c a receive buffer of n bytes: past
// net.core.rmem_max where the process may (SO_RCVBUFFORCE, as root), else
// up to it.
func bigReadBuffer(c *net.UDPConn, n int) {
	forced := false
	if rc, err := c.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			forced = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n) == nil
		})
	}
	if !forced {
		c.SetReadBuffer(n)
	}
}

// listenUDP opens a socket on a, an IPv6 one with IPV6_FREEBIND (an
// address of a locally routed prefix, configured on no interface).
func listenUDP(a netip.Addr) (*net.UDPConn, error) {
	if a.Is4() {
		return net.ListenUDP("udp4", &net.UDPAddr{IP: a.AsSlice()})
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) { err = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_FREEBIND, 1) })
		return err
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp6", netip.AddrPortFrom(a, 0).String())
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// Flood runs cfg and returns what the victim received.
func Flood(ctx context.Context, cfg FloodConfig) (FloodResult, error) {
	switch {
	case cfg.Spread == SpreadRandom6:
		if !cfg.Prefix6.IsValid() || !cfg.Prefix6.Addr().Is6() || !cfg.Prefix6.Contains(cfg.Victim) || !cfg.Master.Addr().Unmap().IsLoopback() {
			return FloodResult{}, errors.New("loadgen: a random IPv6 flood needs a victim in its IPv6 prefix and a loopback master")
		}
		// The master listens on [::1] at its port too.
		cfg.Master = netip.AddrPortFrom(netip.IPv6Loopback(), cfg.Master.Port())
	case !cfg.Victim.Is4() || !cfg.Victim.IsLoopback() || !cfg.Master.Addr().Unmap().IsLoopback():
		return FloodResult{}, errors.New("loadgen: a flood's victim and master must be IPv4 loopback addresses")
	}
	if cfg.Ports < 0 || cfg.Ports > MaxFloodPorts || len(cfg.Query) == 0 || cfg.Expect <= 0 || (cfg.Ports > 0 && cfg.Spread != SpreadAddress) {
		return FloodResult{}, fmt.Errorf("loadgen: flood: ports %d (0-%d; a spread flood uses fresh ones), query of %d bytes, %d servers", cfg.Ports, MaxFloodPorts, len(cfg.Query), cfg.Expect)
	}
	if cfg.Rate == 0 {
		cfg.Rate = DefaultFloodRate
	}
	if cfg.Linger == 0 {
		cfg.Linger = DefaultFloodLinger
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = DefaultRefresh
	}
	switch {
	case cfg.Lead == 0:
		cfg.Lead = cfg.Refresh / 2
	case cfg.Lead < 0:
		cfg.Lead = 0
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultAnswerTimeout
	}
	master := net.UDPAddrFromAddrPort(cfg.Master)
	cnt := floodCount{net: map[netip.Prefix]int64{}, wide: map[netip.Prefix]int64{}}
	var wg sync.WaitGroup
	// read counts what one flood socket receives until it is closed. A
	// socket of one request (perRequest) also counts as answered on its
	// first reply; replies to a fixed port are counted per datagram only,
	// "answered" per request is not known for them.
	read := func(c *net.UDPConn, perRequest bool) {
		defer wg.Done()
		buf := make([]byte, 65536)
		got := !perRequest
		a := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			cnt.packets.Add(1)
			cnt.bytes.Add(int64(n))
			cnt.add(a, n)
			if !got {
				got = true
				cnt.answered.Add(1)
			}
		}
	}
	var fixed []*net.UDPConn
	defer func() {
		for _, c := range fixed {
			c.Close()
		}
	}()
	for range cfg.Ports {
		c, err := listenUDP(cfg.Victim)
		if err != nil {
			return FloodResult{}, fmt.Errorf("loadgen: flood socket: %w", err)
		}
		fixed = append(fixed, c)
		wg.Add(1)
		go read(c, false)
	}
	client, err := listenUDP(cfg.Victim)
	if err != nil {
		return FloodResult{}, fmt.Errorf("loadgen: client socket: %w", err)
	}
	defer client.Close()
	// A whole list arrives at once on loopback, where on a real link it
	// comes at the link's pace: room for the largest.
	bigReadBuffer(client, ClientReadBuffer)

	var res FloodResult
	clientStart := time.Now()
	start := clientStart.Add(cfg.Lead)
	end := start.Add(cfg.Duration)
	clientDone := make(chan struct{})
	go func() {
		defer close(clientDone)
		refreshLoop(ctx, client, master, cfg, end, &res)
	}()
	time.Sleep(cfg.Lead)

	rng := rand.New(rand.NewPCG(uint64(clientStart.UnixNano()), 7))
	interval := time.Duration(float64(time.Second) / max(cfg.Rate, 1))
	next := start
	for i := 0; cfg.Rate > 0; i++ {
		now := time.Now()
		if !now.Before(end) || ctx.Err() != nil {
			break
		}
		if d := next.Sub(now); d > 0 {
			time.Sleep(d)
		}
		next = next.Add(interval)
		var c *net.UDPConn
		if cfg.Ports > 0 {
			c = fixed[i%cfg.Ports]
		} else {
			c, err = listenUDP(spoofed(cfg, rng))
			if err != nil {
				return res, fmt.Errorf("loadgen: flood socket: %w", err)
			}
			c.SetReadDeadline(time.Now().Add(cfg.Linger))
			wg.Add(1)
			go func() {
				defer c.Close()
				read(c, true)
			}()
		}
		if _, err := c.WriteToUDP(cfg.Query, master); err != nil {
			return res, fmt.Errorf("loadgen: flood send: %w", err)
		}
		res.Spoofed++
		res.SpoofedBytes += int64(len(cfg.Query))
	}
	<-clientDone
	// Replies still on their way get the linger time to arrive.
	time.Sleep(min(cfg.Linger, cfg.Timeout))
	for _, c := range fixed {
		c.Close()
	}
	wg.Wait()
	res.Elapsed = time.Since(clientStart)
	res.FloodPackets = int(cnt.packets.Load())
	res.FloodBytes = cnt.bytes.Load()
	res.FloodAnswered = int(cnt.answered.Load())
	cnt.add(cfg.Victim, int(res.ClientBytes))
	for _, n := range cnt.net {
		res.MaxNetBytes = max(res.MaxNetBytes, n)
	}
	for _, n := range cnt.wide {
		res.MaxWideBytes = max(res.MaxWideBytes, n)
	}
	return res, ctx.Err()
}

// refreshLoop is the real client: every cfg.Refresh until end (or as
// soon as its last answer is complete, if that took longer) it asks for
// the list and reads the answer until it is complete or cfg.Timeout. As
// scout's client (cfg.Cookie) it asks for a cookie, echoes the one it
// has, and asks again at once with it when told the list did not go.
func refreshLoop(ctx context.Context, c *net.UDPConn, master *net.UDPAddr, cfg FloodConfig, end time.Time, res *FloodResult) {
	buf := make([]byte, 65536)
	cookie := ""
	query := func() []byte {
		if !cfg.Cookie {
			return cfg.Query
		}
		w := q3.CookieKeyword
		if cookie != "" {
			w = q3.CookieWord(cookie)
		}
		return append(append(append([]byte(nil), cfg.Query...), ' '), w...)
	}
	for next := time.Now(); next.Before(end) && ctx.Err() == nil; next = next.Add(cfg.Refresh) {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		if _, err := c.WriteToUDP(query(), master); err != nil {
			return
		}
		res.Refreshes++
		entries, done, askedAgain := 0, false, false
		// A refused refresh gets nothing: it is given up after a refresh
		// interval (at least a second) without a datagram; an answer
		// that comes has until Timeout.
		c.SetReadDeadline(time.Now().Add(min(cfg.Timeout, max(cfg.Refresh, time.Second))))
		first := true
		for !done {
			n, err := c.Read(buf)
			if err != nil {
				break // timed out: this refresh is incomplete
			}
			if first {
				first = false
				c.SetReadDeadline(time.Now().Add(cfg.Timeout))
			}
			res.ClientPackets++
			res.ClientBytes += int64(n)
			if cfg.Cookie {
				if k, err := q3.ParseCookie(buf[:n]); err == nil {
					res.Cookies++
					cookie = k.Token
					if k.Again && !askedAgain {
						res.CookieAgain++
						askedAgain = true
						if _, err := c.WriteToUDP(query(), master); err != nil {
							return
						}
					}
					continue
				}
			}
			k, eot, err := countEntries(buf[:n])
			if err != nil {
				continue
			}
			entries += k
			done = eot && entries >= cfg.Expect
		}
		if done {
			res.Complete++
		} else {
			res.Missed = append(res.Missed, res.Refreshes)
		}
		if now := time.Now(); next.Before(now.Add(-cfg.Refresh)) {
			next = now.Add(-cfg.Refresh) // the answer took longer than a refresh
		}
	}
}
