package master

import (
	"cmp"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Response rate limiting defaults: the master's default defence against
// being used as an amplifier (see ResponseLimiter). The figures are sized
// for a full answer of 5,000 IPv4 servers (getservers ... empty full:
// 26 datagrams, 35,754 bytes of payload, 36,482 bytes counted with
// DatagramCost4): a burst of 21 such answers fits the open lane, a refresh
// every 2 s needs 18.3 KB/s of the return lane. For a larger listing raise
// them (ResponseLimits); a reply larger than a lane's burst never passes
// that lane.
const (
	// DefaultVictimBurst is the open lane's bucket, in counted bytes: what
	// the master sends at once to a prefix it has not answered recently.
	DefaultVictimBurst = 768 << 10
	// DefaultVictimRate is the open lane's refill, in counted bytes per
	// second.
	DefaultVictimRate = 16 << 10
	// DefaultReturnBurst is the return lane's bucket, in counted bytes.
	DefaultReturnBurst = 128 << 10
	// DefaultReturnRate is the return lane's refill, in counted bytes per
	// second. A flood aimed at one prefix gets at most DefaultVictimRate +
	// DefaultReturnRate (48 KiB/s) once both bursts are spent.
	DefaultReturnRate = 32 << 10
	// DefaultReturnPorts is how many source ports of a prefix the return
	// lane remembers.
	DefaultReturnPorts = 16
	// DefaultReturnInterval is the least time between two answers to one
	// remembered port from the return lane.
	DefaultReturnInterval = time.Second
	// DefaultReturnAsks is how many requests in a row a remembered port
	// may send and still use the return lane; after them its requests
	// must come ReturnInterval apart (a client refreshing every 2 s always
	// does). A flood that reuses a few ports asks from each many times a
	// second, so its ports never use the return lane, and the player's
	// port keeps it.
	DefaultReturnAsks = 3
	// DefaultReturnTTL is how long a port that came back stays remembered
	// after its last answer.
	DefaultReturnTTL = 5 * time.Minute
	// DefaultReturnTrial is how long a port answered once is remembered,
	// waiting for it to come back.
	DefaultReturnTrial = 30 * time.Second
	// DefaultReturnHold is how long a port answered once holds its slot
	// whatever comes after it: a flood's ports answered later cannot push
	// a client's port out before it comes back (a refresh every 2 s);
	// after it, when every slot is taken, the oldest port that has not
	// come back gives its slot to a new one.
	DefaultReturnHold = 5 * time.Second
	// DefaultMaxVictims is the most prefixes the limiter tracks. An
	// entry is about 150 bytes with the map's overhead, plus 24 bytes per
	// remembered port (at most 16: about 9 MB in all, 2.5 MB when each
	// prefix has one client port).
	DefaultMaxVictims = 16384
	// MaxReturnPorts bounds ResponseLimits.ReturnPorts (the ports of an
	// entry are searched linearly).
	MaxReturnPorts = 64

	// DatagramCost4 is what each IPv4 datagram costs on top of its UDP
	// payload: the IPv4 and UDP headers, so that many small replies are
	// counted as what they cost the victim's link.
	DatagramCost4 = 20 + 8
	// DatagramCost6 is the same for IPv6.
	DatagramCost6 = 40 + 8
)

// ResponseLimits configures a ResponseLimiter. Byte figures are counted
// bytes: UDP payload plus DatagramCost4 or DatagramCost6 per datagram.
// The zero value of a field means its default.
type ResponseLimits struct {
	VictimBurst, VictimRate int // open lane: bytes, bytes per second
	ReturnBurst, ReturnRate int // return lane: bytes, bytes per second
	ReturnPorts             int // ports remembered per prefix, at most MaxReturnPorts
	ReturnInterval          time.Duration
	ReturnAsks              int
	ReturnTTL               time.Duration
	ReturnTrial             time.Duration
	ReturnHold              time.Duration
	MaxVictims              int // prefixes tracked
}

func (c ResponseLimits) withDefaults() ResponseLimits {
	c.VictimBurst = cmp.Or(c.VictimBurst, DefaultVictimBurst)
	c.VictimRate = cmp.Or(c.VictimRate, DefaultVictimRate)
	c.ReturnBurst = cmp.Or(c.ReturnBurst, DefaultReturnBurst)
	c.ReturnRate = cmp.Or(c.ReturnRate, DefaultReturnRate)
	c.ReturnPorts = cmp.Or(c.ReturnPorts, DefaultReturnPorts)
	c.ReturnAsks = cmp.Or(c.ReturnAsks, DefaultReturnAsks)
	c.MaxVictims = cmp.Or(c.MaxVictims, DefaultMaxVictims)
	c.ReturnInterval = cmp.Or(c.ReturnInterval, DefaultReturnInterval)
	c.ReturnTTL = cmp.Or(c.ReturnTTL, DefaultReturnTTL)
	c.ReturnTrial = cmp.Or(c.ReturnTrial, DefaultReturnTrial)
	c.ReturnHold = cmp.Or(c.ReturnHold, DefaultReturnHold)
	return c
}

// FloodBound returns the most counted bytes a ResponseLimiter with these
// limits sends to one prefix over d, whatever the number of source ports
// and requests: both bursts, plus both rates times d.
func (c ResponseLimits) FloodBound(d time.Duration) int64 {
	c = c.withDefaults()
	return int64(c.VictimBurst+c.ReturnBurst) + int64(float64(c.VictimRate+c.ReturnRate)*d.Seconds())
}

// ResponseLimiter is the master's default defence against reflection, in
// the manner of DNS Response Rate Limiting: it does not limit how often a
// client may ask, it limits what the master sends to each victim prefix
// (an IPv4 address, or an IPv6 /64, whatever the source port), counted in
// bytes on the wire, so a flood of requests spoofed with a victim's
// address gets it at most ResponseLimits.FloodBound bytes, however many
// source ports the flood uses.
//
// Each prefix has two token buckets over counted bytes, kept as GCRA
// timestamps:
//
//   - the open lane (VictimBurst, VictimRate) answers anyone at that
//     prefix: a burst of list requests (12 players behind one NAT
//     refreshing at once), a new client;
//   - the return lane (ReturnBurst, ReturnRate) answers only the source
//     ports the prefix was answered on before, each at most once per
//     ReturnInterval. ReturnPorts ports are remembered per prefix: a port
//     answered once for ReturnTrial, one that came back for ReturnTTL
//     after its last answer. A new port takes a free or expired slot, else
//     the slot of the oldest port that has not come back and was answered
//     more than ReturnHold ago, else it is not remembered. A player
//     refreshing from one port keeps being answered while a spoofed flood
//     from many ports of its address drains the open lane, because the
//     flood's ports, which do not come back, cannot push the player's
//     port out. A remembered port that asks more often than once per
//     ReturnInterval (after ReturnAsks requests in a row) does not use
//     the return lane: a flood that reuses a few ports asks from each
//     many times a second, a player refreshing does not.
//
// A reply is taken from the return lane when its port may use it, else
// from the open lane, all or nothing. A refused reply costs nothing (as
// dpmaster's throttle). There is no "slip" (RRL's small truncated reply
// instead of the answer): the smallest server-list reply a client would
// read is no smaller than the request, so it would still reflect.
//
// What it does not do: a flood that spreads over enough ports that each
// asks no more than a client (one request per ReturnInterval from each of
// hundreds of ports) can get remembered ports onto the return lane and
// share it with the player, and a client that first asks during a flood
// finds the open lane empty; both stay within the bound. The return lane
// is no authentication.
//
// Memory is bounded: at most MaxVictims prefixes. When the table is full,
// only entries whose two lanes are full again are evicted: such an entry
// is exactly a fresh one, so evicting it gives back nothing, and a flood
// of new prefixes cannot reset a victim's budget. If no entry can go, a
// reply to a new prefix is refused (ReasonVictimTableFull): the master
// fails closed rather than become an amplifier.
//
// mu guards the fields below it; methods are safe for concurrent use.
type ResponseLimiter struct {
	lim                 ResponseLimits
	openPer, retPer     float64 // nanoseconds per byte
	openTol, retTol     int64   // burst in nanoseconds
	askTol              int64   // (ReturnAsks-1) ReturnIntervals
	retInterval, retTTL int64
	retTrial, retHold   int64
	max                 int

	mu        sync.Mutex
	victims   map[netip.Addr]*victim // key: the prefix's masked address
	nextSweep int64                  // no entry can be evicted before this time
}

// victim is one prefix's account: times are Unix nanoseconds.
type victim struct {
	open, ret int64 // GCRA theoretical arrival times of the two lanes
	ports     []returnPort
}

type returnPort struct {
	port     uint16
	returned bool  // answered more than once
	last     int64 // last answer on this port
	asks     int64 // pace of its requests (see pace)
}

// NewResponseLimiter returns a limiter with lim (zero fields take their
// defaults).
func NewResponseLimiter(lim ResponseLimits) (*ResponseLimiter, error) {
	lim = lim.withDefaults()
	if lim.VictimBurst < 0 || lim.VictimRate < 0 || lim.ReturnBurst < 0 || lim.ReturnRate < 0 ||
		lim.MaxVictims < 0 || lim.ReturnInterval < 0 || lim.ReturnTTL < 0 || lim.ReturnTrial < 0 || lim.ReturnHold < 0 ||
		lim.ReturnPorts < 0 || lim.ReturnPorts > MaxReturnPorts || lim.ReturnAsks < 0 {
		return nil, fmt.Errorf("master: response limits %+v: every figure must be positive, at most %d return ports", lim, MaxReturnPorts)
	}
	l := &ResponseLimiter{
		lim:         lim,
		openPer:     1e9 / float64(lim.VictimRate),
		retPer:      1e9 / float64(lim.ReturnRate),
		retInterval: int64(lim.ReturnInterval),
		retTTL:      int64(lim.ReturnTTL),
		retTrial:    int64(lim.ReturnTrial),
		retHold:     int64(lim.ReturnHold),
		max:         lim.MaxVictims,
		victims:     make(map[netip.Addr]*victim),
	}
	l.openTol = int64(float64(lim.VictimBurst) * l.openPer)
	l.retTol = int64(float64(lim.ReturnBurst) * l.retPer)
	l.askTol = int64(lim.ReturnAsks-1) * l.retInterval
	return l, nil
}

// Limits returns the limiter's configuration with its defaults filled in.
func (l *ResponseLimiter) Limits() ResponseLimits { return l.lim }

// Cost returns the counted bytes of a reply to to of payload bytes in
// datagrams datagrams.
func Cost(to netip.Addr, payload, datagrams int) int {
	if to.Unmap().Is4() {
		return payload + datagrams*DatagramCost4
	}
	return payload + datagrams*DatagramCost6
}

// Allow decides whether a reply of cost counted bytes (see Cost) may go to
// to at now, and charges it to to's prefix if so: OK,
// ReasonResponseLimited, or ReasonVictimTableFull.
func (l *ResponseLimiter) Allow(now time.Time, to netip.AddrPort, cost int) Reason {
	k := victimKey(to.Addr())
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.victims[k]
	if !ok {
		if len(l.victims) >= l.max && !l.sweepLocked(t) {
			return ReasonVictimTableFull
		}
		v = &victim{open: t, ret: t}
	}
	port := to.Port()
	i := v.portIndex(port, l.expired(t))
	paced := i >= 0 && pace(&v.ports[i].asks, t, l.retInterval, l.askTol, l.retTTL)
	switch {
	case paced && t-v.ports[i].last >= l.retInterval && take(&v.ret, t, int64(float64(cost)*l.retPer), l.retTol):
	case take(&v.open, t, int64(float64(cost)*l.openPer), l.openTol):
	default:
		return ReasonResponseLimited
	}
	v.remember(i, port, t, l.retInterval, l.lim.ReturnPorts, l.expired(t), t-l.retHold)
	l.victims[k] = v
	return OK
}

// take charges c nanoseconds to the GCRA bucket tat at now if the bucket,
// of tolerance tol, holds them.
func take(tat *int64, now, c, tol int64) bool {
	s := max(*tat, now)
	if s+c-now > tol {
		return false
	}
	*tat = s + c
	return true
}

// expired returns the test of a remembered port's expiry at now.
func (l *ResponseLimiter) expired(now int64) func(returnPort) bool {
	return func(p returnPort) bool {
		if p.returned {
			return now-p.last >= l.retTTL
		}
		return now-p.last >= l.retTrial
	}
}

// pace counts a request of a remembered port at now against its pace
// (asks, a GCRA time: one request per interval, tol of backlog allowed)
// and reports whether it kept to it. Every request counts, kept to or not,
// up to a backlog of most: a port that keeps asking faster than a client
// stays off the return lane until it has been quiet that long.
func pace(asks *int64, now, interval, tol, most int64) bool {
	s := max(*asks, now)
	*asks = min(s+interval, now+most)
	return s-now <= tol
}

// portIndex returns the index of port if it is remembered and has not
// expired, or -1.
func (v *victim) portIndex(port uint16, expired func(returnPort) bool) int {
	for i, p := range v.ports {
		if p.port == port && !expired(p) {
			return i
		}
	}
	return -1
}

// remember records an answer on port at now: in place when i >= 0 (the
// port came back), else in a free or expired slot, else over the oldest
// port that has not come back and was answered before held.
func (v *victim) remember(i int, port uint16, now, interval int64, n int, expired func(returnPort) bool, held int64) {
	if i >= 0 {
		v.ports[i].returned, v.ports[i].last = true, now
		return
	}
	p := returnPort{port: port, last: now, asks: now + interval}
	for j := range v.ports {
		if expired(v.ports[j]) {
			v.ports[j] = p
			return
		}
	}
	if len(v.ports) < n {
		v.ports = append(v.ports, p)
		return
	}
	old := -1
	for j, q := range v.ports {
		if !q.returned && q.last < held && (old < 0 || q.last < v.ports[old].last) {
			old = j
		}
	}
	if old >= 0 {
		v.ports[old] = p
	}
}

// sweepLocked evicts the entries whose two lanes are full again and
// reports whether there is room. A sweep that frees nothing records when
// the first entry will be full again, so a flood of new prefixes costs one
// sweep per such time, not one per packet.
func (l *ResponseLimiter) sweepLocked(now int64) bool {
	if now < l.nextSweep {
		return false
	}
	earliest := int64(-1)
	for k, v := range l.victims {
		full := max(v.open, v.ret)
		if full <= now {
			delete(l.victims, k)
		} else if earliest < 0 || full < earliest {
			earliest = full
		}
	}
	if len(l.victims) < l.max {
		return true
	}
	l.nextSweep = earliest
	return false
}

// Len returns the number of prefixes tracked.
func (l *ResponseLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.victims)
}

// victimKey is the masked address of a's prefix: the IPv4 address, or the
// IPv6 /64.
func victimKey(a netip.Addr) netip.Addr {
	return sourceKey(a).Addr()
}
