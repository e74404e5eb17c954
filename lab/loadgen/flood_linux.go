//go:build linux

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
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

// FloodConfig is a reflection attack on loopback, aimed at one victim
// address: requests "spoofed" with the victim's address are sent from
// sockets bound to it (on loopback the kernel lets a process send from
// any 127.0.0.0/8 address it binds), so the replies they cause arrive at
// the victim's address and are counted there, while a real client on the
// same address refreshes its list every Refresh.
type FloodConfig struct {
	Master netip.AddrPort
	Victim netip.Addr // a 127.0.0.0/8 address
	Query  []byte     // the list request, flood and client alike
	Expect int        // servers in a complete answer
	// Rate is the spoofed requests per second; 0 means
	// DefaultFloodRate.
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

// floodCount is the counters the flood's readers share.
type floodCount struct {
	packets, answered atomic.Int64
	bytes             atomic.Int64
}

// Flood runs cfg and returns what the victim received.
func Flood(ctx context.Context, cfg FloodConfig) (FloodResult, error) {
	if !cfg.Victim.Is4() || !cfg.Victim.IsLoopback() || !cfg.Master.Addr().Unmap().IsLoopback() {
		return FloodResult{}, errors.New("loadgen: a flood's victim and master must be IPv4 loopback addresses")
	}
	if cfg.Ports < 0 || cfg.Ports > MaxFloodPorts || cfg.Rate < 0 || len(cfg.Query) == 0 || cfg.Expect <= 0 {
		return FloodResult{}, fmt.Errorf("loadgen: flood: ports %d (0-%d), rate %v, query of %d bytes, %d servers", cfg.Ports, MaxFloodPorts, cfg.Rate, len(cfg.Query), cfg.Expect)
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
	victim := &net.UDPAddr{IP: cfg.Victim.AsSlice()}
	var cnt floodCount
	var wg sync.WaitGroup
	// read counts what one flood socket receives until it is closed. A
	// socket of one request (perRequest) also counts as answered on its
	// first reply; replies to a fixed port are counted per datagram only,
	// "answered" per request is not known for them.
	read := func(c *net.UDPConn, perRequest bool) {
		defer wg.Done()
		buf := make([]byte, 65536)
		got := !perRequest
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			cnt.packets.Add(1)
			cnt.bytes.Add(int64(n))
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
		c, err := net.ListenUDP("udp4", victim)
		if err != nil {
			return FloodResult{}, fmt.Errorf("loadgen: flood socket: %w", err)
		}
		fixed = append(fixed, c)
		wg.Add(1)
		go read(c, false)
	}
	client, err := net.ListenUDP("udp4", victim)
	if err != nil {
		return FloodResult{}, fmt.Errorf("loadgen: client socket: %w", err)
	}
	defer client.Close()

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

	interval := time.Duration(float64(time.Second) / cfg.Rate)
	next := start
	for i := 0; ; i++ {
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
			c, err = net.ListenUDP("udp4", victim)
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
	return res, ctx.Err()
}

// refreshLoop is the real client: every cfg.Refresh until end it asks for
// the list and reads the answer until it is complete or cfg.Timeout.
func refreshLoop(ctx context.Context, c *net.UDPConn, master *net.UDPAddr, cfg FloodConfig, end time.Time, res *FloodResult) {
	buf := make([]byte, 65536)
	for next := time.Now(); next.Before(end) && ctx.Err() == nil; next = next.Add(cfg.Refresh) {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		if _, err := c.WriteToUDP(cfg.Query, master); err != nil {
			return
		}
		res.Refreshes++
		entries, done := 0, false
		c.SetReadDeadline(time.Now().Add(cfg.Timeout))
		for !done {
			n, err := c.Read(buf)
			if err != nil {
				break // timed out: this refresh is incomplete
			}
			res.ClientPackets++
			res.ClientBytes += int64(n)
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
	}
}
