//go:build linux

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/scout-discovery/scout/protocol/infostring"
)

// Swarm defaults.
const (
	// DefaultSwarmSockets is how many IPv4 sockets carry the IPv4
	// servers: each has a sender and a reader goroutine.
	DefaultSwarmSockets = 4
	// DefaultSwarmRate is heartbeats per second offered while
	// registering: twice the 10,000 registrations per second a master is
	// sized for.
	DefaultSwarmRate = 20000
	// DefaultSwarmPort6 is the first port tried for the IPv6 servers on
	// ::1; ports in use are skipped.
	DefaultSwarmPort6 = 2000
	// MaxSwarmPort6 is the last: the IPv6 servers stay below the
	// ephemeral port range (32768-60999 by default), so other programs'
	// sockets on port 0 are not starved while a swarm runs.
	MaxSwarmPort6 = 32767
	// swarmBatch is datagrams per sendmmsg or recvmmsg.
	swarmBatch = 64
	// swarmRecvBuffer is each swarm socket's receive buffer.
	swarmRecvBuffer = 4 << 20
)

// DefaultSwarmBase is the swarm's first IPv4 address: 1,000,000 servers
// at 254 per /24 reach 127.215.x.y, away from the fleet's and the query
// sources' addresses.
var DefaultSwarmBase = netip.AddrFrom4([4]byte{127, 200, 0, 1})

// SwarmConfig describes a swarm. Zero fields take the defaults above.
type SwarmConfig struct {
	// Servers is the IPv4 servers: server i is address Base+i, skipping
	// the .0 and .255 of each /24, all in 127.0.0.0/8.
	Servers int
	Base    netip.Addr
	// Sockets is the IPv4 sockets; server i uses socket i%Sockets's port.
	Sockets int
	// IPv6 is the servers on ::1, each a socket on its own port from
	// Port6 up to MaxSwarmPort6.
	IPv6  int
	Port6 uint16
}

// SwarmGame is server i's game, protocol and heartbeat tag, as
// masterd's million-server benchmark lays them out: 70 % Quake3Arena 68,
// 15 % OpenArena 71, 15 % Xonotic 3.
func SwarmGame(i int) (name string, protocol int, tag string) {
	switch i % 20 {
	case 14, 15, 16:
		return "OpenArena", 71, "DarkPlaces"
	case 17, 18, 19:
		return "Xonotic", 3, "DarkPlaces"
	}
	return "Quake3Arena", 68, "QuakeArena-1"
}

// Swarm is many emulated Quake III servers on few sockets, to register
// them with a master faster than one socket per server allows. The IPv4
// servers share a few sockets bound to 0.0.0.0, one port each: a
// heartbeat leaves with the server's own 127.x.y.z address as its source
// (IP_PKTINFO), the master's getinfo to that address arrives at the port's
// socket with its destination (IP_PKTINFO again), and the infoResponse
// goes back from it; heartbeats and answers leave in batches (sendmmsg)
// and getinfos are read in batches (recvmmsg), through
// golang.org/x/net/ipv4. Loopback has one IPv6 address, so the IPv6
// servers are one socket each on ::1, served through epoll.
//
// A server counts as answered once it has answered a getinfo from the
// master: the master lists it when that answer arrives.
type Swarm struct {
	cfg   SwarmConfig
	base  uint32 // the /24 of Base, as a number
	first int    // Base's offset in it
	conns []*net.UDPConn
	pcs   []*ipv4.PacketConn
	ports []uint16
	set6  *udpSet // nil without IPv6

	answered                             []atomic.Bool // by server: IPv4 first, then IPv6
	count                                atomic.Int64  // servers answered
	getinfo, other, heartbeats, sendErrs atomic.Uint64
	lastAnswer                           atomic.Int64 // UnixNano of the last server's first answer

	closing atomic.Bool
	wg      sync.WaitGroup
}

// SwarmStats counts what a swarm sent and received.
type SwarmStats struct {
	Answered   int64  // servers that answered a getinfo
	GetInfo    uint64 // getinfos answered (retries included)
	Other      uint64 // datagrams ignored
	Heartbeats uint64 // heartbeats sent
	SendErrors uint64 // datagrams the kernel refused
}

// NewSwarm opens the swarm's sockets. Serve, then Heartbeat.
func NewSwarm(cfg SwarmConfig) (*Swarm, error) {
	cfg.Sockets = max(cfg.Sockets, 0)
	if cfg.Sockets == 0 {
		cfg.Sockets = DefaultSwarmSockets
	}
	if !cfg.Base.IsValid() {
		cfg.Base = DefaultSwarmBase
	}
	if cfg.Port6 == 0 {
		cfg.Port6 = DefaultSwarmPort6
	}
	if cfg.Servers < 0 || cfg.IPv6 < 0 || cfg.Servers+cfg.IPv6 == 0 {
		return nil, fmt.Errorf("loadgen: swarm of %d IPv4 and %d IPv6 servers", cfg.Servers, cfg.IPv6)
	}
	b := cfg.Base.As4()
	if !cfg.Base.Is4() || b[0] != 127 || b[3] == 0 || b[3] == 255 {
		return nil, fmt.Errorf("loadgen: swarm base %v: want an address of 127.0.0.0/8 not ending in .0 or .255", cfg.Base)
	}
	s := &Swarm{cfg: cfg, base: uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8, first: int(b[3]) - 1}
	if last := s.addr4(cfg.Servers - 1); cfg.Servers > 0 && last.As4()[0] != 127 {
		return nil, fmt.Errorf("loadgen: %d servers from %v leave 127.0.0.0/8", cfg.Servers, cfg.Base)
	}
	if int(MaxSwarmPort6)-int(cfg.Port6)+1 < cfg.IPv6 {
		return nil, fmt.Errorf("loadgen: %d IPv6 servers from port %d: at most %d below port %d", cfg.IPv6, cfg.Port6, MaxSwarmPort6-int(cfg.Port6)+1, MaxSwarmPort6+1)
	}
	if _, err := raiseOpenFiles(uint64(cfg.Sockets+cfg.IPv6) + 1024); err != nil {
		return nil, fmt.Errorf("loadgen: open-file limit: %w", err)
	}
	if cfg.Servers > 0 {
		for range cfg.Sockets {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("loadgen: swarm socket: %w", err)
			}
			s.conns = append(s.conns, c)
			_ = c.SetReadBuffer(swarmRecvBuffer)
			pc := ipv4.NewPacketConn(c)
			if err := pc.SetControlMessage(ipv4.FlagDst, true); err != nil {
				s.Close()
				return nil, fmt.Errorf("loadgen: swarm socket: IP_PKTINFO: %w", err)
			}
			s.pcs = append(s.pcs, pc)
			s.ports = append(s.ports, uint16(c.LocalAddr().(*net.UDPAddr).Port))
		}
	}
	if cfg.IPv6 > 0 {
		set, err := newUDPSet(cfg.IPv6)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.set6 = set
		for p := int(cfg.Port6); set.len() < cfg.IPv6; p++ {
			if p > MaxSwarmPort6 {
				s.Close()
				return nil, fmt.Errorf("loadgen: %d of %d IPv6 ports free on ::1 below %d", set.len(), cfg.IPv6, MaxSwarmPort6+1)
			}
			fd, local, err := openSocket(netip.AddrPortFrom(netip.IPv6Loopback(), uint16(p)), 0)
			if errors.Is(err, unix.EADDRINUSE) {
				continue
			}
			if err == nil {
				err = set.add(fd, local)
			}
			if err != nil {
				s.Close()
				return nil, err
			}
		}
	}
	s.answered = make([]atomic.Bool, cfg.Servers+cfg.IPv6)
	return s, nil
}

// Len returns the number of servers, IPv4 and IPv6.
func (s *Swarm) Len() int { return len(s.answered) }

// Addr returns server i's address: the IPv4 servers first, then the IPv6.
func (s *Swarm) Addr(i int) netip.AddrPort {
	if i < s.cfg.Servers {
		return netip.AddrPortFrom(s.addr4(i), s.ports[i%len(s.ports)])
	}
	return s.set6.local[i-s.cfg.Servers]
}

// Index returns the server at a, if a is one of the swarm's.
func (s *Swarm) Index(a netip.AddrPort) (int, bool) {
	if a.Addr().Is6() && !a.Addr().Is4In6() {
		if s.set6 == nil || a.Addr() != netip.IPv6Loopback() {
			return 0, false
		}
		p := int(a.Port())
		// The ports are increasing from Port6: search.
		lo, hi := 0, s.set6.len()
		for lo < hi {
			m := (lo + hi) / 2
			if int(s.set6.local[m].Port()) < p {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < s.set6.len() && s.set6.local[lo].Port() == a.Port() {
			return s.cfg.Servers + lo, true
		}
		return 0, false
	}
	i, ok := s.index4(a.Addr().Unmap())
	if !ok || s.ports[i%len(s.ports)] != a.Port() {
		return 0, false
	}
	return i, true
}

func (s *Swarm) addr4(i int) netip.Addr {
	j := s.first + i
	n := s.base + uint32(j/254)<<8 + uint32(j%254+1)
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

func (s *Swarm) index4(a netip.Addr) (int, bool) {
	if !a.Is4() {
		return 0, false
	}
	b := a.As4()
	n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if n < s.base || b[3] == 0 || b[3] == 255 {
		return 0, false
	}
	d := n - s.base
	i := int(d>>8)*254 + int(d&255) - 1 - s.first
	if i < 0 || i >= s.cfg.Servers {
		return 0, false
	}
	return i, true
}

// Reset marks server i as not answered, so the next Register heartbeats
// it again (a server the master did not list after all).
func (s *Swarm) Reset(i int) {
	if s.answered[i].Swap(false) {
		s.count.Add(-1)
	}
}

// Stats returns the swarm's counters.
func (s *Swarm) Stats() SwarmStats {
	return SwarmStats{
		Answered: s.count.Load(), GetInfo: s.getinfo.Load(), Other: s.other.Load(),
		Heartbeats: s.heartbeats.Load(), SendErrors: s.sendErrs.Load(),
	}
}

// Answered reports whether server i has answered a getinfo.
func (s *Swarm) Answered(i int) bool { return s.answered[i].Load() }

// Serve answers getinfo and getstatus on every socket until ctx ends or
// Close; it returns at once, running a reader goroutine per IPv4 socket
// and one for the IPv6 sockets. Wait for them with Close.
func (s *Swarm) Serve(ctx context.Context) {
	for k := range s.pcs {
		s.wg.Go(func() { s.serve4(k) })
	}
	if s.set6 != nil {
		s.wg.Go(func() { s.serve6(ctx) })
	}
	go func() {
		<-ctx.Done()
		for _, c := range s.conns {
			c.SetReadDeadline(time.Now())
		}
	}()
}

// Close stops the readers and closes every socket.
func (s *Swarm) Close() error {
	for _, c := range s.conns {
		c.SetReadDeadline(time.Now())
	}
	s.closing.Store(true)
	s.wg.Wait()
	var first error
	for _, c := range s.conns {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	if s.set6 != nil {
		if err := s.set6.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// reply is the answer of server i to datagram p, appended to out, or out
// unchanged when p is neither getinfo nor getstatus.
func (s *Swarm) reply(i int, p, out []byte) []byte {
	name, proto, _ := SwarmGame(i)
	info := func(challenge string) infostring.Info {
		return infostring.Info{
			{Key: "challenge", Value: challenge}, {Key: "protocol", Value: strconv.Itoa(proto)}, {Key: "gamename", Value: name},
			{Key: "hostname", Value: "swarm " + strconv.Itoa(i)}, {Key: "mapname", Value: "q3dm17"},
			{Key: "clients", Value: strconv.Itoa(i % 17)}, {Key: "sv_maxclients", Value: "16"}, {Key: "gametype", Value: "0"},
		}
	}
	r, kind := appendQ3Reply(p, out, info)
	switch kind {
	case askedInfo:
		s.getinfo.Add(1)
		if !s.answered[i].Swap(true) {
			s.count.Add(1)
			s.lastAnswer.Store(time.Now().UnixNano())
		}
	case askedOther:
		s.other.Add(1)
	}
	return r
}
