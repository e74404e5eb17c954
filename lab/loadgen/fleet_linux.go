//go:build linux

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
)

// Fleet defaults.
const (
	// DefaultServers is the fleet size of the master's throughput benchmark,
	// the list size dpmaster is compared at.
	DefaultServers = 5000
	// DefaultPerAddr is how many servers share one loopback address, well
	// under both masters' per-address limit (32).
	DefaultPerAddr = 4
	// DefaultFleetPort is the first port on each address (Quake III's).
	DefaultFleetPort = 27960
	// DefaultProtocol is Quake III 1.32's, which dpmaster maps to
	// Quake3Arena for anonymous getservers.
	DefaultProtocol = 68
	// DefaultTag is Quake III's heartbeat tag.
	DefaultTag = "QuakeArena-1"
	// DefaultMaxClients is the emulated servers' sv_maxclients.
	DefaultMaxClients = 16
	// DefaultHeartbeatRate is heartbeats per second per master: slow
	// enough for a master's receive queue and its pending-challenge table.
	DefaultHeartbeatRate = 2000
)

// DefaultFleetBase is the first address of the fleet.
var DefaultFleetBase = netip.AddrFrom4([4]byte{127, 16, 0, 1})

// FleetConfig describes the emulated game servers. Zero fields take the
// defaults above.
type FleetConfig struct {
	Servers    int        // emulated servers; default DefaultServers
	PerAddr    int        // servers per address; default DefaultPerAddr
	Base       netip.Addr // first address; default DefaultFleetBase
	Port       uint16     // first port on each address; default DefaultFleetPort
	Protocol   int        // protocol in the infoResponse; default DefaultProtocol
	Tag        string     // heartbeat tag; default DefaultTag
	MaxClients int        // sv_maxclients; default DefaultMaxClients
}

func (c *FleetConfig) setDefaults() {
	if c.Servers == 0 {
		c.Servers = DefaultServers
	}
	if c.PerAddr == 0 {
		c.PerAddr = DefaultPerAddr
	}
	if !c.Base.IsValid() {
		c.Base = DefaultFleetBase
	}
	if c.Port == 0 {
		c.Port = DefaultFleetPort
	}
	if c.Protocol == 0 {
		c.Protocol = DefaultProtocol
	}
	if c.Tag == "" {
		c.Tag = DefaultTag
	}
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
}

// FleetStats counts what the fleet received and sent.
type FleetStats struct {
	GetInfo    uint64 // getinfo answered
	GetStatus  uint64 // getstatus answered
	Other      uint64 // datagrams that were neither (ignored)
	Heartbeats uint64 // heartbeats sent
	SendErrors uint64 // sends refused by the kernel (full buffer)
}

// Fleet is N emulated Quake III servers, each a UDP socket on its own
// loopback address and port, served by one goroutine (Serve).
//
// mu guards replied and changed; the counters are atomic.
type Fleet struct {
	cfg   FleetConfig
	set   *udpSet
	index map[netip.AddrPort]int

	getinfo, getstatus, other, heartbeats, sendErrs atomic.Uint64

	mu      sync.Mutex
	replied map[netip.AddrPort]*replySet // per master: servers that answered its getinfo
	changed chan struct{}                // closed and replaced when replied grows
}

type replySet struct {
	done  []bool
	count int
}

// NewFleet opens the fleet's sockets, raising the open-file limit as
// needed. The fleet does nothing until Serve and Heartbeat are called.
func NewFleet(cfg FleetConfig) (*Fleet, error) {
	cfg.setDefaults()
	if cfg.Servers < 1 || cfg.MaxClients < 1 || cfg.Protocol < 0 {
		return nil, fmt.Errorf("loadgen: fleet of %d servers, sv_maxclients %d, protocol %d", cfg.Servers, cfg.MaxClients, cfg.Protocol)
	}
	if _, err := (q3.Heartbeat{Tag: cfg.Tag}).AppendBinary(nil); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	addrs, err := Layout(cfg.Base, cfg.Port, cfg.Servers, cfg.PerAddr)
	if err != nil {
		return nil, err
	}
	if _, err := raiseOpenFiles(uint64(cfg.Servers) + 1024); err != nil {
		return nil, fmt.Errorf("loadgen: open-file limit: %w", err)
	}
	set, err := openUDPSet(addrs, 0)
	if err != nil {
		return nil, err
	}
	f := &Fleet{
		cfg:     cfg,
		set:     set,
		index:   make(map[netip.AddrPort]int, len(addrs)),
		replied: make(map[netip.AddrPort]*replySet),
		changed: make(chan struct{}),
	}
	for i, a := range set.local {
		f.index[a] = i
	}
	return f, nil
}

// Addrs returns the servers' addresses, in fleet order.
func (f *Fleet) Addrs() []netip.AddrPort { return f.set.local }

// Stats returns the fleet's counters.
func (f *Fleet) Stats() FleetStats {
	return FleetStats{
		GetInfo: f.getinfo.Load(), GetStatus: f.getstatus.Load(), Other: f.other.Load(),
		Heartbeats: f.heartbeats.Load(), SendErrors: f.sendErrs.Load(),
	}
}

// Close closes every socket. Serve must have returned.
func (f *Fleet) Close() error { return f.set.close() }

// info is server i's info string, with the challenge echoed first (as
// dpmaster's own test suite does) when there is one.
func (f *Fleet) info(i int, challenge string) infostring.Info {
	in := make(infostring.Info, 0, 8)
	if challenge != "" {
		in = append(in, infostring.Pair{Key: "challenge", Value: challenge})
	}
	return append(in,
		infostring.Pair{Key: "protocol", Value: strconv.Itoa(f.cfg.Protocol)},
		infostring.Pair{Key: "hostname", Value: "loadgen " + strconv.Itoa(i)},
		infostring.Pair{Key: "mapname", Value: "q3dm17"},
		// Every occupancy from empty to full, so "empty full" matters.
		infostring.Pair{Key: "clients", Value: strconv.Itoa(i % (f.cfg.MaxClients + 1))},
		infostring.Pair{Key: "sv_maxclients", Value: strconv.Itoa(f.cfg.MaxClients)},
		infostring.Pair{Key: "gametype", Value: "0"},
		infostring.Pair{Key: "pure", Value: "1"},
	)
}

// Serve answers getinfo and getstatus on every socket until ctx ends; it
// returns nil then. Anything else is counted and ignored.
func (f *Fleet) Serve(ctx context.Context) error {
	events := make([]unix.EpollEvent, 256)
	var ready []int
	b := newBatch(16, 2048)
	var out []byte
	for ctx.Err() == nil {
		var err error
		if ready, err = f.set.wait(events, ready, 50); err != nil {
			return err
		}
		for _, i := range ready {
			for {
				n, err := f.set.recv(i, b)
				if err != nil {
					return err
				}
				if n == 0 {
					break
				}
				for k := range n {
					p, from := b.datagram(k)
					out = f.answer(i, from, p, out[:0])
					if len(out) == 0 {
						continue
					}
					if f.set.send(i, out, from) != nil {
						f.sendErrs.Add(1)
					}
				}
			}
		}
	}
	return nil
}

// answer returns the reply of server i to datagram p from from, or
// nothing.
func (f *Fleet) answer(i int, from netip.AddrPort, p []byte, out []byte) []byte {
	reply, kind := appendQ3Reply(p, out, func(challenge string) infostring.Info { return f.info(i, challenge) })
	switch kind {
	case askedInfo:
		f.getinfo.Add(1)
		f.markReplied(from, i)
	case askedStatus:
		f.getstatus.Add(1)
	default:
		f.other.Add(1)
	}
	return reply
}

// asked is the request a loadgen server answered, for its counters.
type asked int

const (
	askedOther  asked = iota // anything else: not answered
	askedInfo                // getinfo, answered with infoResponse
	askedStatus              // getstatus, answered with statusResponse
)

// appendQ3Reply appends a server's answer to datagram p to out: an
// infoResponse to getinfo and a statusResponse to getstatus, each
// carrying the info string info gives for the request's challenge. For
// anything else, or a challenge the info string cannot carry (a garbled
// request), it returns out unchanged and askedOther.
func appendQ3Reply(p, out []byte, info func(challenge string) infostring.Info) ([]byte, asked) {
	m, err := q3.Parse(p)
	if err != nil {
		return out, askedOther
	}
	var reply []byte
	var a asked
	switch m := m.(type) {
	case q3.GetInfo:
		reply, err = q3.InfoResponse{Info: info(m.Challenge)}.AppendBinary(out)
		a = askedInfo
	case q3.GetStatus:
		reply, err = q3.StatusResponse{Info: info(m.Challenge)}.AppendBinary(out)
		a = askedStatus
	default:
		return out, askedOther
	}
	if err != nil {
		return out, askedOther
	}
	return reply, a
}

func (f *Fleet) markReplied(master netip.AddrPort, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := f.replied[master]
	if rs == nil {
		rs = &replySet{done: make([]bool, f.set.len())}
		f.replied[master] = rs
	}
	if !rs.done[i] {
		rs.done[i] = true
		rs.count++
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// Replied returns how many servers have answered a getinfo from master, and
// a channel closed when that may have changed.
func (f *Fleet) Replied(master netip.AddrPort) (int, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	if rs := f.replied[master]; rs != nil {
		n = rs.count
	}
	return n, f.changed
}

// Heartbeat sends a heartbeat to master from each server in which (fleet
// indexes; nil means all), at most rate per second (0 means
// DefaultHeartbeatRate). It returns when all are sent or ctx ends.
func (f *Fleet) Heartbeat(ctx context.Context, master netip.AddrPort, which []int, rate int) error {
	if rate <= 0 {
		rate = DefaultHeartbeatRate
	}
	hb, err := q3.Heartbeat{Tag: f.cfg.Tag}.AppendBinary(nil)
	if err != nil {
		return err
	}
	if which == nil {
		which = make([]int, f.set.len())
		for i := range which {
			which[i] = i
		}
	}
	return pace(ctx, len(which), float64(rate), 5*time.Millisecond, func(from, to int) {
		for _, i := range which[from:to] {
			if f.set.send(i, hb, master) != nil {
				f.sendErrs.Add(1)
				continue
			}
			f.heartbeats.Add(1)
		}
	})
}

// PopulateConfig bounds Populate.
type PopulateConfig struct {
	// Query is the list request; default "getservers <protocol> empty full".
	Query []byte
	// Rate is heartbeats per second; default DefaultHeartbeatRate.
	Rate int
	// Deadline bounds the whole registration; default 60 s.
	Deadline time.Duration
	// Source is the first address the list queries come from (each round
	// uses the next one, so a master's flood protection does not throttle
	// them); default 127.15.0.1.
	Source netip.Addr
}

// ErrNotListed is returned when the deadline passes before the master
// lists every server of the fleet.
var ErrNotListed = errors.New("loadgen: master did not list the whole fleet")

// Populate registers the fleet with master: it heartbeats every server not
// yet listed, waits until they have answered the master's getinfo (or
// until no progress for a second), reads the master's list, and repeats
// for the servers missing from it. It returns how many of the fleet's
// servers the list holds. Serve must be running.
func Populate(ctx context.Context, f *Fleet, master netip.AddrPort, cfg PopulateConfig) (listed int, err error) {
	if cfg.Deadline <= 0 {
		cfg.Deadline = time.Minute
	}
	if !cfg.Source.IsValid() {
		cfg.Source = netip.AddrFrom4([4]byte{127, 15, 0, 1})
	}
	if cfg.Query == nil {
		if cfg.Query, err = (q3.GetServers{Protocol: f.cfg.Protocol, Empty: true, Full: true}).AppendBinary(nil); err != nil {
			return 0, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Deadline)
	defer cancel()
	n := f.set.len()
	var missing []int // nil: all
	src := cfg.Source
	for {
		if err := f.Heartbeat(ctx, master, missing, cfg.Rate); err != nil {
			return listed, fmt.Errorf("%w: %d of %d listed: %w", ErrNotListed, listed, n, err)
		}
		waitReplied(ctx, f, master, n)
		list, err := ListServers(ctx, master, netip.AddrPortFrom(src, 0), cfg.Query, 2*time.Second)
		src = src.Next()
		if err != nil && ctx.Err() != nil {
			return listed, fmt.Errorf("%w: %d of %d listed: %w", ErrNotListed, listed, n, err)
		}
		seen := make([]bool, n)
		listed = 0
		for _, a := range list {
			if i, ok := f.index[a]; ok && !seen[i] {
				seen[i] = true
				listed++
			}
		}
		if listed == n {
			return listed, nil
		}
		missing = missing[:0]
		for i, ok := range seen {
			if !ok {
				missing = append(missing, i)
			}
		}
	}
}

// waitReplied returns when want servers have answered master's getinfo,
// when a second passes without progress, or when ctx ends.
func waitReplied(ctx context.Context, f *Fleet, master netip.AddrPort, want int) {
	idle := time.NewTimer(time.Second)
	defer idle.Stop()
	last := -1
	for {
		n, changed := f.Replied(master)
		if n >= want {
			return
		}
		if n != last {
			last = n
			idle.Reset(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-idle.C:
			return
		case <-changed:
		}
	}
}

// listRecvBuffer is ListServers' socket receive buffer.
const listRecvBuffer = 64 << 20

// ListServers sends query to master from the address from and returns the
// servers of every getserversResponse received until one ends with EOT, or
// until timeout.
func ListServers(ctx context.Context, master, from netip.AddrPort, query []byte, timeout time.Duration) ([]netip.AddrPort, error) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		// Room for a full answer of a million servers (5 MB of payload
		// in 3,700 datagrams) arriving faster than it is read; forced
		// past net.core.rmem_max when privileged, else that maximum.
		return rc.Control(func(fd uintptr) {
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, listRecvBuffer) != nil {
				_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, listRecvBuffer)
			}
		})
	}}
	pc, err := lc.ListenPacket(ctx, "udp4", from.String())
	if err != nil {
		return nil, fmt.Errorf("loadgen: list: %w", err)
	}
	c := pc.(*net.UDPConn)
	defer c.Close()
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	// Asked as scout's client asks, with the cookie word (a master that
	// does not know it skips it): a scout master sends the whole list at
	// once to an address that echoes its cookie, where it would pace a
	// large one to an address that has not.
	if _, err := c.WriteToUDPAddrPort(append(slices.Clip(query), " "+q3.CookieKeyword...), master); err != nil {
		return nil, fmt.Errorf("loadgen: list: %w", err)
	}
	var list []netip.AddrPort
	buf := make([]byte, 65536)
	ended := false // an end marker came; the list closes after q3.EndGrace of silence
	for {
		n, src, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			var ne net.Error
			if ended && errors.As(err, &ne) && ne.Timeout() {
				return list, nil
			}
			return list, fmt.Errorf("loadgen: list from %v: %d servers before %w", master, len(list), err)
		}
		if src != master {
			continue
		}
		if ck, err := q3.ParseCookie(buf[:n]); err == nil {
			if ck.Again {
				if _, err := c.WriteToUDPAddrPort(append(slices.Clip(query), " "+q3.CookieWord(ck.Token)...), master); err != nil {
					return nil, fmt.Errorf("loadgen: list: %w", err)
				}
			}
			continue
		}
		m, err := q3.Parse(buf[:n])
		r, ok := m.(q3.ServersResponse)
		if !ok {
			continue
		}
		list = append(list, r.Servers...)
		if err != nil {
			return list, fmt.Errorf("loadgen: list from %v: %w", master, err)
		}
		// A master may end every packet with the marker (scout master,
		// id's, dpmaster before 2.0) or only the last (dpmaster 2.x): as
		// discover does, the list is complete once nothing follows a
		// marker within q3.EndGrace.
		if r.End != q3.EndNone {
			ended = true
			grace := time.Now().Add(q3.EndGrace)
			if grace.After(deadline) {
				grace = deadline
			}
			if err := c.SetReadDeadline(grace); err != nil {
				return list, err
			}
		}
	}
}
