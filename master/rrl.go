package master

import (
	"cmp"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Response rate limiting defaults: the master's default defence against
// being used as an amplifier (see ResponseLimiter). Byte figures are
// counted bytes (UDP payload plus DatagramCost4 or DatagramCost6 per
// datagram). A full answer of 5,000 IPv4 servers (getservers ... empty
// full) is 26 datagrams, 35,754 bytes of payload, 36,482 counted; a
// refresh of it every 2 s needs 18.3 KB/s.
const (
	// DefaultVictimBurst is an address's open lane's bucket: what the
	// master sends at once to an address (IPv4, IPv6 /64) it has not
	// answered recently, 21 full lists of 5,000 servers (twelve players
	// behind one NAT address asking at once).
	DefaultVictimBurst = 768 << 10
	// DefaultVictimRate is the address's open lane's refill, per second.
	DefaultVictimRate = 16 << 10
	// DefaultReturnBurst is an address's return lane's bucket.
	DefaultReturnBurst = 128 << 10
	// DefaultReturnRate is the address's return lane's refill, per
	// second. A flood aimed at one address gets at most DefaultVictimRate
	// + DefaultReturnRate (48 KiB/s) once both bursts are spent.
	DefaultReturnRate = 32 << 10

	// DefaultNetBits4 and DefaultNetBits6 are the network each address
	// belongs to for the network budgets: an IPv4 /24, an IPv6 /56 (one
	// site's, as DNS Response Rate Limiting keys them by default in
	// BIND and NSD).
	DefaultNetBits4 = 24
	DefaultNetBits6 = 56
	// DefaultNetBurst and DefaultNetRate are a network's open lane: what
	// the master sends to all the addresses of one /24 (/56) together
	// that it has not answered there recently. A flood spread over the
	// network's addresses gets at most DefaultNetBurst +
	// DefaultNetReturnBurst and then DefaultNetRate + DefaultNetReturnRate
	// (96 KiB/s, 0.8 Mbit/s), however it is spread.
	DefaultNetBurst = 1 << 20
	DefaultNetRate  = 32 << 10
	// DefaultNetReturnBurst and DefaultNetReturnRate are a network's
	// return lane (the ports its addresses were answered on before): 3.5
	// players of one /24 refreshing a 5,000-server list every 2 s.
	DefaultNetReturnBurst = 256 << 10
	DefaultNetReturnRate  = 64 << 10
	// DefaultWideBits4 and DefaultWideBits6 are the wider network, an
	// IPv4 /16 and an IPv6 /48 (one organisation's), with budgets of
	// their own over all its networks.
	DefaultWideBits4 = 16
	DefaultWideBits6 = 48
	// DefaultWideBurst, DefaultWideRate, DefaultWideReturnBurst and
	// DefaultWideReturnRate are the wider network's lanes: a flood spread
	// over a /16 gets at most 2.5 MiB and then 192 KiB/s (1.6 Mbit/s).
	DefaultWideBurst       = 2 << 20
	DefaultWideRate        = 64 << 10
	DefaultWideReturnBurst = 512 << 10
	DefaultWideReturnRate  = 128 << 10

	// DefaultMaxPace is how long a reply larger than a lane's burst may
	// take: such a reply is never sent at once, it is paced at the lanes'
	// rates, its datagrams spread out (Pace), and it is taken only if its
	// last datagram can go within DefaultMaxPace. A list of 160,000
	// servers (1.15 MB counted) goes to a new address in about 24 s at
	// the address's open lane, and again to a client that refreshes from
	// its port in about 33 s at its return lane; a list of 1,000,000
	// (7 MB) cannot go to an address that has not proven it asked (a
	// cookie: CookieBurst).
	DefaultMaxPace = time.Minute

	// DefaultCookieBurst and DefaultCookieRate are the lane of an address
	// that proved it receives at its address (a cookie the master gave
	// it, echoed: cookie.go), per address: a whole list of 1,000,000
	// servers at once, and a refresh of it every 7 s. No spoofed request
	// can use it: it is no reflection, and the global budget bounds it.
	DefaultCookieBurst = 8 << 20
	DefaultCookieRate  = 1 << 20

	// DefaultReturnPorts is how many source ports of an address the
	// return lanes remember.
	DefaultReturnPorts = 16
	// DefaultReturnInterval is the least time between two answers to one
	// remembered port from the return lanes.
	DefaultReturnInterval = time.Second
	// DefaultReturnAsks is how many requests in a row a remembered port
	// may send and still use the return lanes; after them its requests
	// must come ReturnInterval apart (a client refreshing every 2 s always
	// does). A flood that reuses a few ports asks from each many times a
	// second, so its ports never use the return lanes, and the player's
	// port keeps them.
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
	// DefaultMaxVictims is the most addresses the limiter tracks, and the
	// most networks (both sizes together: twice as many), and the most
	// addresses with a cookie's lane. An address is about 150 bytes with
	// the map's overhead, plus 32 bytes per remembered port (at most 16),
	// a network 80: at most about 17 MB in all, 5 MB when each address
	// has one client port.
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
// bytes: UDP payload plus DatagramCost4 or DatagramCost6 per datagram;
// rates are per second. The zero value of a field means its default.
type ResponseLimits struct {
	// An address's lanes (IPv4, IPv6 /64).
	VictimBurst, VictimRate int // open lane
	ReturnBurst, ReturnRate int // return lane
	// The network an address belongs to: NetBits4 (IPv4, 24) and NetBits6
	// (IPv6, 56) long, more than the wide network's and at most 32 (64).
	NetBits4, NetBits6            int
	NetBurst, NetRate             int
	NetReturnBurst, NetReturnRate int
	// The wider network: WideBits4 (16), WideBits6 (48), at least 8 (16).
	WideBits4, WideBits6            int
	WideBurst, WideRate             int
	WideReturnBurst, WideReturnRate int
	// MaxPace is the longest a paced reply may take (DefaultMaxPace).
	MaxPace time.Duration
	// CookieBurst and CookieRate are the lane of an address that proved
	// its return path (Handler, cookie.go).
	CookieBurst, CookieRate int

	ReturnPorts    int // ports remembered per address, at most MaxReturnPorts
	ReturnInterval time.Duration
	ReturnAsks     int
	ReturnTTL      time.Duration
	ReturnTrial    time.Duration
	ReturnHold     time.Duration
	MaxVictims     int // addresses tracked; networks, twice
}

func (c ResponseLimits) withDefaults() ResponseLimits {
	c.VictimBurst = cmp.Or(c.VictimBurst, DefaultVictimBurst)
	c.VictimRate = cmp.Or(c.VictimRate, DefaultVictimRate)
	c.ReturnBurst = cmp.Or(c.ReturnBurst, DefaultReturnBurst)
	c.ReturnRate = cmp.Or(c.ReturnRate, DefaultReturnRate)
	c.NetBits4 = cmp.Or(c.NetBits4, DefaultNetBits4)
	c.NetBits6 = cmp.Or(c.NetBits6, DefaultNetBits6)
	c.NetBurst = cmp.Or(c.NetBurst, DefaultNetBurst)
	c.NetRate = cmp.Or(c.NetRate, DefaultNetRate)
	c.NetReturnBurst = cmp.Or(c.NetReturnBurst, DefaultNetReturnBurst)
	c.NetReturnRate = cmp.Or(c.NetReturnRate, DefaultNetReturnRate)
	c.WideBits4 = cmp.Or(c.WideBits4, DefaultWideBits4)
	c.WideBits6 = cmp.Or(c.WideBits6, DefaultWideBits6)
	c.WideBurst = cmp.Or(c.WideBurst, DefaultWideBurst)
	c.WideRate = cmp.Or(c.WideRate, DefaultWideRate)
	c.WideReturnBurst = cmp.Or(c.WideReturnBurst, DefaultWideReturnBurst)
	c.WideReturnRate = cmp.Or(c.WideReturnRate, DefaultWideReturnRate)
	c.MaxPace = cmp.Or(c.MaxPace, DefaultMaxPace)
	c.CookieBurst = cmp.Or(c.CookieBurst, DefaultCookieBurst)
	c.CookieRate = cmp.Or(c.CookieRate, DefaultCookieRate)
	c.ReturnPorts = cmp.Or(c.ReturnPorts, DefaultReturnPorts)
	c.ReturnAsks = cmp.Or(c.ReturnAsks, DefaultReturnAsks)
	c.MaxVictims = cmp.Or(c.MaxVictims, DefaultMaxVictims)
	c.ReturnInterval = cmp.Or(c.ReturnInterval, DefaultReturnInterval)
	c.ReturnTTL = cmp.Or(c.ReturnTTL, DefaultReturnTTL)
	c.ReturnTrial = cmp.Or(c.ReturnTrial, DefaultReturnTrial)
	c.ReturnHold = cmp.Or(c.ReturnHold, DefaultReturnHold)
	return c
}

func (c ResponseLimits) check() error {
	for _, v := range []int{c.VictimBurst, c.VictimRate, c.ReturnBurst, c.ReturnRate, c.NetBurst, c.NetRate, c.NetReturnBurst,
		c.NetReturnRate, c.WideBurst, c.WideRate, c.WideReturnBurst, c.WideReturnRate, c.CookieBurst, c.CookieRate, c.MaxVictims, c.ReturnAsks} {
		if v < 0 {
			return fmt.Errorf("master: response limits: %d: every figure must be positive", v)
		}
	}
	for _, d := range []time.Duration{c.MaxPace, c.ReturnInterval, c.ReturnTTL, c.ReturnTrial, c.ReturnHold} {
		if d < 0 {
			return fmt.Errorf("master: response limits: %v: every duration must be positive", d)
		}
	}
	switch {
	case c.ReturnPorts < 0 || c.ReturnPorts > MaxReturnPorts:
		return fmt.Errorf("master: response limits: %d return ports, want 1 to %d", c.ReturnPorts, MaxReturnPorts)
	case c.WideBits4 < 8 || c.WideBits4 >= c.NetBits4 || c.NetBits4 > 32:
		return fmt.Errorf("master: response limits: IPv4 networks /%d within /%d: want 8 <= wide < net <= 32", c.NetBits4, c.WideBits4)
	case c.WideBits6 < 16 || c.WideBits6 >= c.NetBits6 || c.NetBits6 > 64:
		return fmt.Errorf("master: response limits: IPv6 networks /%d within /%d: want 16 <= wide < net <= 64", c.NetBits6, c.WideBits6)
	}
	return nil
}

// FloodBound returns the most counted bytes a ResponseLimiter with these
// limits sends to one address over d, whatever the number of source ports
// and requests: both of its bursts, plus both rates times d.
func (c ResponseLimits) FloodBound(d time.Duration) int64 {
	c = c.withDefaults()
	return bound(c.VictimBurst+c.ReturnBurst, c.VictimRate+c.ReturnRate, d)
}

// NetFloodBound is FloodBound for one network (NetBits4, NetBits6): what a
// flood spread over its addresses gets over d.
func (c ResponseLimits) NetFloodBound(d time.Duration) int64 {
	c = c.withDefaults()
	return bound(c.NetBurst+c.NetReturnBurst, c.NetRate+c.NetReturnRate, d)
}

// WideFloodBound is FloodBound for one wider network (WideBits4,
// WideBits6).
func (c ResponseLimits) WideFloodBound(d time.Duration) int64 {
	c = c.withDefaults()
	return bound(c.WideBurst+c.WideReturnBurst, c.WideRate+c.WideReturnRate, d)
}

func bound(burst, rate int, d time.Duration) int64 {
	return int64(burst) + int64(float64(rate)*d.Seconds())
}

// ResponseLimiter is the master's default defence against reflection, in
// the manner of DNS Response Rate Limiting: it does not limit how often a
// client may ask, it limits what the master sends to each victim,
// counted in bytes on the wire, whatever the source port, at three
// nested levels: the address (an IPv4 address, an IPv6 /64), its network
// (a /24, a /56) and its wider network (a /16, a /48). A reply must fit
// every level's budget, so however a spoofed flood is spread, over the
// ports of one address, over a network's addresses or over a wider
// network's, what reaches any one of them is bounded (FloodBound,
// NetFloodBound, WideFloodBound); across networks the global outbound
// budget (ByteBudget) bounds the total.
//
// Each level has two token buckets over counted bytes, kept as GCRA
// timestamps:
//
//   - the open lane (VictimBurst and VictimRate at the address, NetBurst
//     and NetRate at the network, WideBurst and WideRate at the wider
//     network) answers anyone: a burst of list requests (12 players
//     behind one NAT address refreshing at once), a new client;
//   - the return lane (ReturnBurst, ReturnRate; NetReturn...;
//     WideReturn...) answers only the source ports the address was
//     answered on before, each at most once per ReturnInterval.
//     ReturnPorts ports are remembered per address: a port answered once
//     for ReturnTrial, one that came back for ReturnTTL after its last
//     answer. A new port takes a free or expired slot, else the slot of
//     the oldest port that has not come back and was answered more than
//     ReturnHold ago, else it is not remembered. A player refreshing
//     from one port keeps being answered while a spoofed flood from many
//     ports of its address, or of its network, drains the open lanes,
//     because the flood's ports, which do not come back, cannot push the
//     player's port out and never use the return lanes. A remembered
//     port that asks more often than once per ReturnInterval (after
//     ReturnAsks requests in a row) does not use the return lanes: a
//     flood that reuses a few ports asks from each many times a second,
//     a player refreshing does not.
//
// A reply is taken from the return lanes of the three levels when its
// port may use them, else from the open lanes, all or nothing. A reply
// that fits a lane's burst is sent at once or refused; a reply larger
// than a lane's burst is paced (Pace): its datagrams spread out at the
// lanes' rates, taken if the last can go within MaxPace. While a paced
// reply to a remembered port is going, that port's further requests are
// refused (ReasonReplyInProgress): a client that refreshes every 2 s
// gets the list it is being sent, not a second one on top. A refused
// reply costs nothing (as dpmaster's throttle). There is no "slip"
// (RRL's small truncated reply instead of the answer): the smallest
// server-list reply a client would read is no smaller than the request,
// so it would still reflect.
//
// The trade-off. A plain getservers cannot be validated: a game client
// sends one small datagram and expects the whole list, and a flood
// spoofed with its network's addresses looks the same. So a legacy client
// inside a network being flooded shares that network's lanes with the
// flood: it keeps the return lanes while it refreshes from one port
// (measured in BENCHMARKS.md, "Flood defence"), and a client that first
// asks during the flood may find the open lanes empty. scout's own client
// proves its return path with a cookie (cookie.go) and is served from a
// lane of its own per address (CookieBurst, CookieRate), which a spoofed
// request cannot reach.
//
// What it does not do: a flood that spreads over enough ports that each
// asks no more than a client (one request per ReturnInterval from each
// of hundreds of ports) can get remembered ports onto the return lanes
// and share them with the player; both stay within the bounds. The
// return lane is no authentication.
//
// Memory is bounded: at most MaxVictims addresses, 2×MaxVictims
// networks and MaxVictims cookie lanes. When a table is full, only
// entries whose lanes are full again are evicted: such an entry is
// exactly a fresh one, so evicting it gives back nothing, and a flood of
// new addresses cannot reset a victim's budget. If no entry can go, a
// reply to a new address or network is refused (ReasonVictimTableFull):
// the master fails closed rather than become an amplifier.
//
// mu guards the fields below it; methods are safe for concurrent use.
type ResponseLimiter struct {
	lim                 ResponseLimits
	lanes               [levels][2]lane // [level][open, return]
	cookie              lane
	maxPace             int64
	askTol              int64 // (ReturnAsks-1) ReturnIntervals
	retInterval, retTTL int64
	retTrial, retHold   int64
	max                 int

	mu          sync.Mutex
	victims     map[netip.Addr]*victim // key: the address's masked address (victimKey)
	nets        map[netip.Prefix]*netLanes
	cookies     map[netip.Addr]int64 // key: victimKey; value: the cookie lane's GCRA time
	nextSweep   int64                // no address can be evicted before this time
	nextNet     int64                // nor a network
	nextCookies int64                // nor a cookie lane
}

// The levels of a ResponseLimiter.
const (
	levelAddr = iota
	levelNet
	levelWide
	levels
)

// The lanes of a level.
const (
	laneOpen = iota
	laneReturn
)

// lane is one GCRA bucket's figures: nanoseconds per counted byte and
// the burst, in nanoseconds.
type lane struct {
	per float64
	tol int64
}

func newLane(burst, rate int) lane {
	l := lane{per: 1e9 / float64(rate)}
	l.tol = int64(float64(burst) * l.per)
	return l
}

// victim is one address's account: times are Unix nanoseconds.
type victim struct {
	lanes [2]int64 // GCRA theoretical arrival times of the open and return lanes
	ports []returnPort
}

// netLanes is one network's account.
type netLanes struct{ lanes [2]int64 }

type returnPort struct {
	port     uint16
	returned bool  // answered more than once
	last     int64 // last answer on this port
	asks     int64 // pace of its requests (see pace)
	busy     int64 // the last datagram of its paced reply goes then
}

// NewResponseLimiter returns a limiter with lim (zero fields take their
// defaults).
func NewResponseLimiter(lim ResponseLimits) (*ResponseLimiter, error) {
	lim = lim.withDefaults()
	if err := lim.check(); err != nil {
		return nil, err
	}
	l := &ResponseLimiter{
		lim:         lim,
		cookie:      newLane(lim.CookieBurst, lim.CookieRate),
		maxPace:     int64(lim.MaxPace),
		retInterval: int64(lim.ReturnInterval),
		retTTL:      int64(lim.ReturnTTL),
		retTrial:    int64(lim.ReturnTrial),
		retHold:     int64(lim.ReturnHold),
		max:         lim.MaxVictims,
		victims:     make(map[netip.Addr]*victim),
		nets:        make(map[netip.Prefix]*netLanes),
		cookies:     make(map[netip.Addr]int64),
	}
	l.lanes[levelAddr] = [2]lane{newLane(lim.VictimBurst, lim.VictimRate), newLane(lim.ReturnBurst, lim.ReturnRate)}
	l.lanes[levelNet] = [2]lane{newLane(lim.NetBurst, lim.NetRate), newLane(lim.NetReturnBurst, lim.NetReturnRate)}
	l.lanes[levelWide] = [2]lane{newLane(lim.WideBurst, lim.WideRate), newLane(lim.WideReturnBurst, lim.WideReturnRate)}
	l.askTol = int64(lim.ReturnAsks-1) * l.retInterval
	return l, nil
}

// Limits returns the limiter's configuration with its defaults filled in.
func (l *ResponseLimiter) Limits() ResponseLimits { return l.lim }

// Cost returns the counted bytes of a reply to to of payload bytes in
// datagrams datagrams.
func Cost(to netip.Addr, payload, datagrams int) int {
	return payload + datagrams*DatagramCost(to)
}

// DatagramCost is what a datagram to to costs on top of its payload.
func DatagramCost(to netip.Addr) int {
	if to.Unmap().Is4() {
		return DatagramCost4
	}
	return DatagramCost6
}

// Allow is Reserve for a reply that has not proven its return path, for
// callers that send it whole at once: a reply it would pace is refused
// (ReasonResponseLimited) and charged nothing.
func (l *ResponseLimiter) Allow(now time.Time, to netip.AddrPort, cost int) Reason {
	p, why := l.reserve(now, to, cost, false, false)
	if why == OK && p.Paced() {
		return ReasonResponseLimited
	}
	return why
}

// Reserve decides whether a reply of cost counted bytes (see Cost) may go
// to to at now, and charges it if so: OK with the reply's Pace,
// ReasonResponseLimited, ReasonReplyInProgress or ReasonVictimTableFull.
// A reply whose address proved its return path (cookie) is charged to
// that address's cookie lane only; any other to the lanes of its address,
// network and wider network.
func (l *ResponseLimiter) Reserve(now time.Time, to netip.AddrPort, cost int, cookie bool) (Pace, Reason) {
	return l.reserve(now, to, cost, cookie, true)
}

func (l *ResponseLimiter) reserve(now time.Time, to netip.AddrPort, cost int, cookie, paced bool) (Pace, Reason) {
	t := now.UnixNano()
	p := Pace{now: t}
	a := to.Addr().Unmap()
	k := victimKey(a)
	l.mu.Lock()
	defer l.mu.Unlock()
	if cookie {
		tat, ok := l.cookies[k]
		if !ok {
			if len(l.cookies) >= l.max && !l.sweepCookiesLocked(t) {
				return p, ReasonVictimTableFull
			}
			tat = t
		}
		ln, ok := admit(tat, t, cost, l.cookie, l.horizon(paced))
		if !ok {
			return p, ReasonResponseLimited
		}
		l.cookies[k] = ln.start + int64(float64(cost)*l.cookie.per)
		p.add(ln)
		p.finish(cost)
		return p, OK
	}
	v, ok := l.victims[k]
	if !ok {
		if len(l.victims) >= l.max && !l.sweepLocked(t) {
			return p, ReasonVictimTableFull
		}
		v = &victim{lanes: [2]int64{t, t}}
	}
	var ns [levels]*netLanes
	bits4 := [levels]int{32, l.lim.NetBits4, l.lim.WideBits4}
	bits6 := [levels]int{64, l.lim.NetBits6, l.lim.WideBits6}
	for lv := levelNet; lv < levels; lv++ {
		bits := bits4[lv]
		if a.Is6() {
			bits = bits6[lv]
		}
		pk, _ := a.Prefix(bits)
		n, ok := l.nets[pk]
		if !ok {
			if len(l.nets) >= 2*l.max && !l.sweepNetsLocked(t) {
				return p, ReasonVictimTableFull
			}
			n = &netLanes{lanes: [2]int64{t, t}}
			l.nets[pk] = n
		}
		ns[lv] = n
	}
	port := to.Port()
	i := v.portIndex(port, l.expired(t))
	if i >= 0 && v.ports[i].busy > t {
		return p, ReasonReplyInProgress
	}
	tats := func(ln int) [levels]*int64 {
		return [levels]*int64{&v.lanes[ln], &ns[levelNet].lanes[ln], &ns[levelWide].lanes[ln]}
	}
	horizon := l.horizon(paced)
	try := func(ln int) bool {
		var lines [levels]paceLine
		for lv, tat := range tats(ln) {
			var ok bool
			if lines[lv], ok = admit(*tat, t, cost, l.lanes[lv][ln], horizon); !ok {
				return false
			}
		}
		for lv, tat := range tats(ln) {
			*tat = lines[lv].start + int64(float64(cost)*l.lanes[lv][ln].per)
			p.add(lines[lv])
		}
		p.finish(cost)
		return true
	}
	onReturn := i >= 0 && pace(&v.ports[i].asks, t, l.retInterval, l.askTol, l.retTTL) && t-v.ports[i].last >= l.retInterval
	if !(onReturn && try(laneReturn)) && !try(laneOpen) {
		return p, ReasonResponseLimited
	}
	i = v.remember(i, port, t, l.retInterval, l.lim.ReturnPorts, l.expired(t), t-l.retHold)
	if i >= 0 && p.Paced() {
		v.ports[i].busy = p.end
	}
	l.victims[k] = v
	return p, OK
}

// horizon is how far ahead a reply's last datagram may be scheduled: 0
// for a caller that sends at once, else MaxPace.
func (l *ResponseLimiter) horizon(paced bool) int64 {
	if paced {
		return l.maxPace
	}
	return 0
}

// admit decides a reply of cost on a lane whose GCRA time is tat at now:
// one that fits the lane's burst must fit at once; a larger one is paced
// and must end within horizon. It returns the reply's pace line.
func admit(tat, now int64, cost int, ln lane, horizon int64) (paceLine, bool) {
	s := max(tat, now)
	c := int64(float64(cost) * ln.per)
	end := s + c - ln.tol
	if c > ln.tol {
		return paceLine{start: s, per: ln.per, tol: ln.tol}, end <= now+horizon
	}
	return paceLine{start: s, per: ln.per, tol: ln.tol}, end <= now
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
		if p.busy > now {
			return false
		}
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
// port that has not come back and was answered before held. It returns
// the port's slot, or -1 if it has none.
func (v *victim) remember(i int, port uint16, now, interval int64, n int, expired func(returnPort) bool, held int64) int {
	if i >= 0 {
		v.ports[i].returned, v.ports[i].last = true, now
		return i
	}
	p := returnPort{port: port, last: now, asks: now + interval}
	for j := range v.ports {
		if expired(v.ports[j]) {
			v.ports[j] = p
			return j
		}
	}
	if len(v.ports) < n {
		v.ports = append(v.ports, p)
		return len(v.ports) - 1
	}
	old := -1
	for j, q := range v.ports {
		if !q.returned && q.busy <= now && q.last < held && (old < 0 || q.last < v.ports[old].last) {
			old = j
		}
	}
	if old >= 0 {
		v.ports[old] = p
	}
	return old
}

// sweepLocked evicts the addresses whose lanes are full again and
// reports whether there is room. A sweep that frees nothing records when
// the first entry will be full again, so a flood of new addresses costs
// one sweep per such time, not one per packet.
func (l *ResponseLimiter) sweepLocked(now int64) bool {
	if now < l.nextSweep {
		return false
	}
	earliest := int64(-1)
	for k, v := range l.victims {
		full := max(v.lanes[laneOpen], v.lanes[laneReturn])
		for _, p := range v.ports {
			full = max(full, p.busy)
		}
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

// sweepNetsLocked is sweepLocked for the networks.
func (l *ResponseLimiter) sweepNetsLocked(now int64) bool {
	if now < l.nextNet {
		return false
	}
	earliest := int64(-1)
	for k, n := range l.nets {
		full := max(n.lanes[laneOpen], n.lanes[laneReturn])
		if full <= now {
			delete(l.nets, k)
		} else if earliest < 0 || full < earliest {
			earliest = full
		}
	}
	if len(l.nets) < 2*l.max {
		return true
	}
	l.nextNet = earliest
	return false
}

// sweepCookiesLocked is sweepLocked for the cookie lanes.
func (l *ResponseLimiter) sweepCookiesLocked(now int64) bool {
	if now < l.nextCookies {
		return false
	}
	earliest := int64(-1)
	for k, tat := range l.cookies {
		if tat <= now {
			delete(l.cookies, k)
		} else if earliest < 0 || tat < earliest {
			earliest = tat
		}
	}
	if len(l.cookies) < l.max {
		return true
	}
	l.nextCookies = earliest
	return false
}

// Len returns the number of addresses tracked.
func (l *ResponseLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.victims)
}

// victimKey is the masked address of a's address level: the IPv4
// address, or the IPv6 /64.
func victimKey(a netip.Addr) netip.Addr {
	return sourceKey(a).Addr()
}
