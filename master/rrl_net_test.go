package master

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// spread is how a spoofed flood picks its source addresses.
type spread struct {
	name string
	addr func(rng *rand.Rand) netip.Addr
	// in reports whether an address is in the network whose bytes are
	// bounded, and bound the bound over d.
	in    func(netip.Addr) bool
	bound func(ResponseLimits, time.Duration) int64
}

var victimAddr = netip.MustParseAddr("198.51.100.7")

func spreads() []spread {
	in24 := func(a netip.Addr) bool { p, _ := victimAddr.Prefix(24); return p.Contains(a) }
	in16 := func(a netip.Addr) bool { p, _ := victimAddr.Prefix(16); return p.Contains(a) }
	v6 := netip.MustParseAddr("2001:db8:aa:bb00::1")
	in56 := func(a netip.Addr) bool { p, _ := v6.Prefix(56); return p.Contains(a) }
	return []spread{
		{"one-address", func(*rand.Rand) netip.Addr { return victimAddr },
			func(a netip.Addr) bool { return a == victimAddr }, ResponseLimits.FloodBound},
		{"over-a-/24", func(r *rand.Rand) netip.Addr {
			b := victimAddr.As4()
			b[3] = byte(r.IntN(256))
			return netip.AddrFrom4(b)
		}, in24, ResponseLimits.NetFloodBound},
		{"over-a-/16", func(r *rand.Rand) netip.Addr {
			b := victimAddr.As4()
			b[2], b[3] = byte(r.IntN(256)), byte(r.IntN(256))
			return netip.AddrFrom4(b)
		}, in16, ResponseLimits.WideFloodBound},
		{"over-an-IPv6-/56", func(r *rand.Rand) netip.Addr {
			b := v6.As16()
			b[7] = byte(r.IntN(256))
			for i := 8; i < 16; i++ {
				b[i] = byte(r.IntN(256))
			}
			return netip.AddrFrom16(b)
		}, in56, ResponseLimits.NetFloodBound},
	}
}

// However a spoofed flood of list requests is spread (over the ports of
// one address, the addresses of a /24, of a /16, of an IPv6 /56), what
// the limiter lets reach that network in 60 s is within its bound, and
// the bound is what a flood gets: the open lanes' bursts and rates.
func TestResponseLimiter_FloodSpreadOverANetworkIsBounded(t *testing.T) {
	const rate, seconds = 300, 60
	for _, s := range spreads() {
		t.Run(s.name, func(t *testing.T) {
			lim := ResponseLimits{}
			l := newRRL(t, lim)
			rng := rand.New(rand.NewPCG(7, 9))
			var sent int64
			for i := range rate * seconds {
				now := t0.Add(time.Duration(i) * time.Second / rate)
				a := s.addr(rng)
				cost := Cost(a, 35_754, 26)
				if l.Allow(now, netip.AddrPortFrom(a, uint16(1024+rng.IntN(64000))), cost) == OK && s.in(a) {
					sent += int64(cost)
				}
			}
			bound := s.bound(lim, seconds*time.Second)
			if sent > bound {
				t.Errorf("%d bytes reached the network in %d s, bound %d", sent, seconds, bound)
			}
			if sent < bound/3 {
				t.Errorf("%d bytes in %d s: far below the bound %d (the test floods too little)", sent, seconds, bound)
			}
			t.Logf("%s: %d bytes in %d s (%.1f KB/s), bound %d", s.name, sent, seconds, float64(sent)/seconds/1000, bound)
		})
	}
}

// A player refreshing every 2 s from one port inside a /24 that a flood
// spoofs from random addresses and ports keeps being answered: its port
// comes back, the flood's do not, and the return lanes of its address,
// /24 and /16 are its own.
func TestResponseLimiter_PlayerInsideAFloodedNetwork(t *testing.T) {
	l := newRRL(t, ResponseLimits{})
	player := netip.AddrPortFrom(netip.MustParseAddr("198.51.100.42"), 27960)
	rng := rand.New(rand.NewPCG(3, 4))
	answered, refreshes := 0, 0
	for ms := int64(0); ms < 600_000; ms++ {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		if ms%2000 == 0 {
			refreshes++
			if l.Allow(now, player, fullList5000) == OK {
				answered++
			}
		}
		if ms >= 500 && ms%10 < 3 { // 300 requests/s over the /24
			b := player.Addr().As4()
			b[3] = byte(rng.IntN(256))
			l.Allow(now, netip.AddrPortFrom(netip.AddrFrom4(b), uint16(1024+rng.IntN(64000))), fullList5000)
		}
	}
	if answered != refreshes {
		t.Errorf("the player's refreshes: %d of %d answered", answered, refreshes)
	}
}

// A reply larger than a lane's burst is paced, not refused: its datagrams
// are spread so that no window of time holds more than the slowest
// lane's burst plus its rate over the window; the port it goes to asks
// again meanwhile and is told a reply is in progress; after it, the
// port's next refresh is answered. A reply that would take longer than
// MaxPace is refused.
func TestResponseLimiter_LargeReplyPaced(t *testing.T) {
	lim := ResponseLimits{}.withDefaults()
	l := newRRL(t, lim)
	client := netip.AddrPortFrom(netip.MustParseAddr("192.0.2.9"), 27960)
	// A list of 160,000 IPv4 servers: 806 datagrams of 1,387 bytes.
	const datagrams, size = 806, 1387
	cost := Cost(client.Addr(), datagrams*size, datagrams)
	p, why := l.Reserve(t0, client, cost, false)
	if why != OK || !p.Paced() {
		t.Fatalf("160,000 servers: %v, paced %v", why, p.Paced())
	}
	// The open lanes: the address's is the slowest, 768 KiB then 16 KiB/s.
	want := time.Duration(float64(cost-lim.VictimBurst) / float64(lim.VictimRate) * float64(time.Second))
	if d := p.End() - want; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("the last datagram goes after %v, want %v", p.End(), want)
	}
	var at []time.Duration
	for i := 1; i <= datagrams; i++ {
		at = append(at, p.Delay(i*(size+DatagramCost4)))
	}
	for w := time.Second; w <= 8*time.Second; w *= 2 {
		for i := range at {
			j, bytes := i, 0
			for ; j < len(at) && at[j]-at[i] <= w; j++ {
				bytes += size + DatagramCost4
			}
			if max := lim.VictimBurst + int(float64(lim.VictimRate)*w.Seconds()) + size + DatagramCost4; bytes > max {
				t.Fatalf("%d bytes within %v from datagram %d, more than the burst and the rate allow (%d)", bytes, w, i, max)
			}
		}
	}
	if _, why := l.Reserve(t0.Add(2*time.Second), client, fullList5000, false); why != ReasonReplyInProgress {
		t.Errorf("a refresh while the reply goes: %v, want %v", why, ReasonReplyInProgress)
	}
	// Once it is sent, the port's refreshes are answered (from its return
	// lanes, paced again for a list this long).
	after := t0.Add(p.End() + time.Second)
	if p2, why := l.Reserve(after, client, cost, false); why != OK {
		t.Errorf("the refresh after it: %v", why)
	} else {
		t.Logf("second list paced over %v", p2.End())
	}
	// A million servers (7 MB) would take minutes at an address's rates:
	// refused, unless the address proved its return path (a cookie).
	big := Cost(client.Addr(), 7_000_000, 5050)
	other := netip.AddrPortFrom(netip.MustParseAddr("192.0.2.10"), 27960)
	if _, why := l.Reserve(t0, other, big, false); why != ReasonResponseLimited {
		t.Errorf("a million servers without a cookie: %v", why)
	}
	if p, why := l.Reserve(t0, other, big, true); why != OK || p.Paced() {
		t.Errorf("a million servers with a cookie: %v, paced over %v", why, p.End())
	}
}

// The cookie lane is the address's own: a flood of the address's network
// spends the legacy lanes and leaves it whole; it has a burst and a rate
// of its own.
func TestResponseLimiter_CookieLane(t *testing.T) {
	lim := ResponseLimits{}.withDefaults()
	l := newRRL(t, lim)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 3000 {
		b := victimAddr.As4()
		b[3] = byte(rng.IntN(256))
		l.Allow(t0.Add(time.Duration(i)*time.Millisecond), netip.AddrPortFrom(netip.AddrFrom4(b), uint16(1024+i)), fullList5000)
	}
	now := t0.Add(3 * time.Second)
	newcomer := netip.AddrPortFrom(victimAddr, 40000)
	if why := l.Allow(now, newcomer, fullList5000); why == OK {
		t.Fatal("the flooded /24's open lanes still answer a newcomer")
	}
	n := 0
	for ; n < 1000; n++ {
		if _, why := l.Reserve(now, newcomer, fullList5000, true); why != OK {
			break
		}
	}
	if want := lim.CookieBurst / fullList5000; n != want {
		t.Errorf("with a cookie: %d lists at once, want the cookie burst's %d", n, want)
	}
}

func TestResponseLimiter_NetworkBitsChecked(t *testing.T) {
	for _, c := range []ResponseLimits{{NetBits4: 16, WideBits4: 16}, {NetBits4: 33}, {WideBits4: 4}, {NetBits6: 65}, {WideBits6: 60, NetBits6: 56}, {MaxPace: -1}, {CookieRate: -1}} {
		if _, err := NewResponseLimiter(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
