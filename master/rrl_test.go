package master

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// fullList5000 is the counted cost of a full answer of 5,000 IPv4 servers
// (BENCHMARKS.md: 26 datagrams, 35,754 bytes of payload).
var fullList5000 = Cost(netip.MustParseAddr("192.0.2.1"), 35_754, 26)

func newRRL(t testing.TB, lim ResponseLimits) *ResponseLimiter {
	t.Helper()
	l, err := NewResponseLimiter(lim)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestResponseLimiter_BurstOf20Answered(t *testing.T) {
	l := newRRL(t, ResponseLimits{})
	answered := 0
	for i := range 40 {
		// 40 players behind one NAT address, each from its own port.
		if l.Allow(t0, netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), uint16(30000+i)), fullList5000) == OK {
			answered++
		} else if i < 20 {
			t.Fatalf("request %d of a burst refused", i+1)
		}
	}
	if want := DefaultVictimBurst / fullList5000; answered != want {
		t.Fatalf("answered %d of 40 at once, want the open burst's %d", answered, want)
	}
}

// A player refreshing every 2 s from one port is answered every time,
// for ten minutes, with no flood and with one.
func TestResponseLimiter_RefreshEvery2s(t *testing.T) {
	for _, flood := range []bool{false, true} {
		l := newRRL(t, ResponseLimits{})
		player := ap("192.0.2.1:27960")
		rng := rand.New(rand.NewPCG(1, 2))
		next := t0
		for ms := int64(0); ms < 600_000; ms++ {
			now := t0.Add(time.Duration(ms) * time.Millisecond)
			if !now.Before(next) {
				if why := l.Allow(now, player, fullList5000); why != OK {
					t.Fatalf("flood %v: refresh at %v refused: %v", flood, now.Sub(t0), why)
				}
				next = next.Add(2 * time.Second)
			}
			if flood && ms >= 500 && ms%10 < 3 { // 300 requests/s from random ports
				l.Allow(now, netip.AddrPortFrom(player.Addr(), uint16(1024+rng.IntN(64512))), fullList5000)
			}
		}
	}
}

// A flood spoofed from every source port of one victim gets at most the
// stated bytes, and gets close to them (the bound is what it is).
func TestResponseLimiter_FloodCapped(t *testing.T) {
	lim := ResponseLimits{}
	l := newRRL(t, lim)
	victim := netip.MustParseAddr("192.0.2.1")
	rng := rand.New(rand.NewPCG(3, 4))
	const seconds = 120
	sent := int64(0)
	for ms := range int64(seconds * 1000) {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		for range 3 { // 3,000 requests per second
			if l.Allow(now, netip.AddrPortFrom(victim, uint16(1+rng.IntN(65535))), fullList5000) == OK {
				sent += int64(fullList5000)
			}
		}
	}
	bound := lim.FloodBound(seconds * time.Second)
	if sent > bound {
		t.Fatalf("flood got %d bytes in %d s, bound %d", sent, seconds, bound)
	}
	// It gets at least the open lane: the bound is not loose.
	if min := int64(DefaultVictimBurst) + DefaultVictimRate*seconds - 2*int64(fullList5000); sent < min {
		t.Fatalf("flood got %d bytes, less than the open lane's %d", sent, min)
	}
	t.Logf("%d bytes in %d s (%.0f B/s), bound %d", sent, seconds, float64(sent)/seconds, bound)
}

// A flood that reuses a few ports asks from each far more often than a
// client: its ports never use the return lane, which stays the player's,
// answered every 2 s, and the flood gets no more than the open lane.
func TestResponseLimiter_FloodFewPorts(t *testing.T) {
	lim := ResponseLimits{}
	l := newRRL(t, lim)
	const seconds = 120
	victim := netip.MustParseAddr("192.0.2.1")
	player := netip.AddrPortFrom(victim, 27960)
	if l.Allow(t0, player, fullList5000) != OK {
		t.Fatal("player's first refresh")
	}
	sent := int64(0)
	for ms := int64(1); ms < seconds*1000; ms++ {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		if ms%2000 == 0 {
			if why := l.Allow(now, player, fullList5000); why != OK {
				t.Fatalf("refresh at %v: %v", now.Sub(t0), why)
			}
		}
		// 300 requests a second from 4 ports.
		if ms%10 < 3 && l.Allow(now, netip.AddrPortFrom(victim, uint16(40000+ms%4)), fullList5000) == OK {
			sent += int64(fullList5000)
		}
	}
	if open := int64(DefaultVictimBurst) + DefaultVictimRate*seconds; sent > open {
		t.Fatalf("flood got %d bytes, more than the open lane's %d", sent, open)
	}
}

func TestResponseLimiter_IPv6SharesSlash64(t *testing.T) {
	l := newRRL(t, ResponseLimits{VictimBurst: 1000, ReturnPorts: 1})
	if l.Allow(t0, ap("[2001:db8:0:1::1]:1"), 1000) != OK {
		t.Fatal("first")
	}
	if got := l.Allow(t0, ap("[2001:db8:0:1:ffff::2]:2"), 1); got != ReasonResponseLimited {
		t.Errorf("same /64: %v", got)
	}
	if got := l.Allow(t0, ap("[2001:db8:0:2::1]:1"), 1000); got != OK {
		t.Errorf("other /64: %v", got)
	}
	if got := l.Allow(t0, ap("192.0.2.1:1"), 1000); got != OK {
		t.Errorf("IPv4: %v", got)
	}
	if got := l.Allow(t0, ap("192.0.2.1:2"), 1); got != ReasonResponseLimited {
		t.Errorf("IPv4 /32 other port: %v", got)
	}
	if got := l.Allow(t0, ap("192.0.2.2:2"), 1); got != OK {
		t.Errorf("next IPv4 address: %v", got)
	}
	if got := l.Allow(t0, ap("[::ffff:192.0.2.1]:3"), 1); got != ReasonResponseLimited {
		t.Errorf("IPv4-mapped form of a limited address: %v", got)
	}
}

// A flood of new prefixes cannot evict a victim whose budget is spent:
// only entries full again (as good as new) are evicted, and while none is,
// new prefixes are refused.
func TestResponseLimiter_EvictionCannotReset(t *testing.T) {
	const rate, burst = 1000, 1000 // 1 ms per byte
	l := newRRL(t, ResponseLimits{VictimBurst: burst, VictimRate: rate, ReturnBurst: burst, ReturnRate: rate, MaxVictims: 4})
	victim := ap("192.0.2.1:1")
	if l.Allow(t0, victim, burst) != OK {
		t.Fatal("victim's first")
	}
	for i := range 3 {
		if l.Allow(t0, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), 1), 10) != OK {
			t.Fatal(i)
		}
	}
	if got := l.Allow(t0, ap("203.0.113.1:1"), 1); got != ReasonVictimTableFull {
		t.Fatalf("full table: %v", got)
	}
	// 10 ms later the three small entries are full again and evictable;
	// the victim owes 990 ms and stays.
	now := t0.Add(10 * time.Millisecond)
	for i := range 200 {
		why := l.Allow(now, netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), 1), 10)
		if i < 3 && why != OK {
			t.Fatalf("new prefix %d after the others refilled: %v", i, why)
		}
		if i >= 3 && why != ReasonVictimTableFull {
			t.Fatalf("new prefix %d with no room: %v", i, why)
		}
	}
	if l.Len() != 4 {
		t.Fatalf("table holds %d", l.Len())
	}
	if got := l.Allow(now, ap("192.0.2.1:2"), 20); got != ReasonResponseLimited {
		t.Fatalf("victim after the flood of prefixes: %v (its budget was reset)", got)
	}
	if got := l.Allow(now, ap("192.0.2.1:2"), 10); got != OK {
		t.Fatalf("victim's 10 ms of refill: %v", got)
	}
	// Once the victim's lanes are full again its entry may go, and a new
	// prefix takes the room.
	now = t0.Add(2 * time.Second)
	if got := l.Allow(now, ap("203.0.113.250:1"), 10); got != OK {
		t.Fatalf("after every entry refilled: %v", got)
	}
}

// The return lane answers a remembered port at most once per
// ReturnInterval, and forgets it after ReturnTTL.
func TestResponseLimiter_ReturnLane(t *testing.T) {
	l := newRRL(t, ResponseLimits{VictimBurst: 100, VictimRate: 1, ReturnBurst: 1000, ReturnRate: 1000, ReturnInterval: time.Second, ReturnTTL: time.Minute, ReturnTrial: time.Minute})
	p := ap("192.0.2.1:27960")
	if l.Allow(t0, p, 100) != OK {
		t.Fatal("open lane")
	}
	if got := l.Allow(t0.Add(time.Second-time.Nanosecond), p, 100); got != ReasonResponseLimited {
		t.Fatalf("before the interval: %v", got)
	}
	if got := l.Allow(t0.Add(time.Second), p, 100); got != OK {
		t.Fatalf("at the interval: %v", got)
	}
	if got := l.Allow(t0.Add(time.Second), ap("192.0.2.1:27961"), 2); got != ReasonResponseLimited {
		t.Fatalf("other port on the open lane: %v", got)
	}
	// Silent for more than the TTL: the port is forgotten, and the open
	// lane (1 B/s) has 61 bytes.
	if got := l.Allow(t0.Add(62*time.Second), p, 100); got != ReasonResponseLimited {
		t.Fatalf("after the TTL: %v", got)
	}
}

func TestResponseLimiter_BadConfig(t *testing.T) {
	for _, c := range []ResponseLimits{{VictimRate: -1}, {ReturnBurst: -1}, {MaxVictims: -1}, {ReturnPorts: MaxReturnPorts + 1}, {ReturnTTL: -time.Second}} {
		if _, err := NewResponseLimiter(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// Through the handler: 20 players behind one address ask for a list of
// 5,000 servers at once and all get all of it; the global budget stays.
func TestMaster_ResponseLimitBurstOf20(t *testing.T) {
	rl := newRRL(t, ResponseLimits{})
	budget, err := NewByteBudget(DefaultOutboundBytesPerSecond, DefaultOutboundBurst)
	if err != nil {
		t.Fatal(err)
	}
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, func(c *handlerSetup) { c.Responses, c.Budget = rl, budget })
	listMany(t, f, 5000)
	// The registrations' 5,000 checks took from the global budget at the
	// same instant; the players ask a second later.
	f.now = f.now.Add(time.Second)
	for i := range 20 {
		got, _, _ := f.query(t, netip.AddrPortFrom(client.Addr(), uint16(40000+i)), "getservers 71 empty full")
		if len(got) != 5000 {
			t.Fatalf("player %d got %d servers (drops %v)", i+1, len(got), f.dropSummary())
		}
	}
	// A spoofed flood from the same address is cut off.
	for i := range 300 {
		f.in(netip.AddrPortFrom(client.Addr(), uint16(1000+i)), oob("getservers 71 empty full"))
	}
	if f.h.Stats().Dropped(ReasonResponseLimited) < 290 {
		t.Fatalf("flood not limited: drops %v", f.dropSummary())
	}
}

// When every slot is taken, a new port takes the slot of the oldest port
// that never came back, once that one is older than ReturnHold; ports
// answered within ReturnHold, and ports that came back, keep theirs.
func TestResponseLimiter_ReturnSlots(t *testing.T) {
	l := newRRL(t, ResponseLimits{VictimBurst: 1 << 20, ReturnPorts: 2, ReturnHold: 5 * time.Second})
	at := func(d time.Duration, port uint16) Reason {
		return l.Allow(t0.Add(d), netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), port), 1)
	}
	known := func(d time.Duration, port uint16) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		v := l.victims[victimKey(netip.MustParseAddr("192.0.2.1"))]
		return v.portIndex(port, l.expired(t0.Add(d).UnixNano())) >= 0
	}
	at(0, 1)             // a client
	at(time.Second, 2)   // a flood port
	at(2*time.Second, 3) // another: no room, both held
	if !known(2*time.Second, 1) || !known(2*time.Second, 2) || known(2*time.Second, 3) {
		t.Fatal("a held port lost its slot")
	}
	at(2*time.Second, 1) // the client comes back: kept for ReturnTTL
	at(7*time.Second, 4) // port 2 is past its hold: 4 takes its slot
	if !known(7*time.Second, 1) || known(7*time.Second, 2) || !known(7*time.Second, 4) {
		t.Fatal("the oldest port that never came back kept its slot")
	}
	at(13*time.Second, 5) // 4 is past its hold; the client, who came back, stays
	if !known(13*time.Second, 1) || known(13*time.Second, 4) || !known(13*time.Second, 5) {
		t.Fatal("a port that came back lost its slot")
	}
}
