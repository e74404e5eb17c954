package world

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestBottleneck_QueueAndTailDrop drives the model with time passed in:
// datagrams leave one transmission time apart, back to back while the
// queue holds them, and one that does not fit the queue is dropped while
// a later one that fits is taken.
func TestBottleneck_QueueAndTailDrop(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := Bottleneck{Rate: 8000, Limit: 3000} // 1,000 bytes a second
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	steps := []struct {
		at, size  int
		leave     int // ms after t0; -1 for a drop
		backlogIn int // bytes in the link just before
	}{
		{0, 1000, 1000, 0},
		{0, 1000, 2000, 1000},
		{0, 1000, 3000, 2000},
		{0, 1, -1, 3000},         // full: 3000 + 1 > 3000
		{1500, 1000, 4000, 1500}, // 1.5 s drained: room again
		{10000, 500, 10500, 0},   // idle link: only its own transmission
	}
	for i, s := range steps {
		if got := b.Backlog(at(s.at)); got != s.backlogIn {
			t.Errorf("step %d: backlog %d, want %d", i, got, s.backlogIn)
		}
		leave, dropped := b.Admit(at(s.at), s.size)
		switch {
		case s.leave < 0 && !dropped:
			t.Errorf("step %d: admitted to leave at %v, want a drop", i, leave.Sub(t0))
		case s.leave >= 0 && (dropped || !leave.Equal(at(s.leave))):
			t.Errorf("step %d: leaves at %v (dropped %v), want %d ms", i, leave.Sub(t0), dropped, s.leave)
		}
	}
	if d := b.Delay(at(10000)); d != 500*time.Millisecond {
		t.Errorf("queueing delay %v, want 500ms", d)
	}
}

// TestAccessLink_QueueDelayLimit: a queue given in time holds what the
// link sends in that time.
func TestAccessLink_QueueDelayLimit(t *testing.T) {
	b, ok := AccessLink{Rate: 10e6, QueueDelay: 250 * time.Millisecond}.bottleneck(10e6)
	if !ok || b.Limit != 312500 || b.Rate != 10e6 {
		t.Errorf("10 Mbit/s with 250 ms: %+v %v, want a limit of 312,500 bytes", b, ok)
	}
	if _, ok := (AccessLink{}).bottleneck(0); ok {
		t.Error("no rate shapes")
	}
	for _, bad := range []AccessLink{{Rate: 1}, {Rate: 1e12}, {Rate: 1e6, QueueDelay: -1}, {Rate: 1e6, QueueDelay: time.Hour}, {UpRate: 5}, {Rate: MinAccessRate, QueueBytes: 1 << 30}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := (AccessLink{Rate: 10e6, QueueDelay: 250 * time.Millisecond}).Validate(); err != nil {
		t.Error(err)
	}
}

// TestAccessLinks_PerClient: every client has its own link, and the state
// of idle clients is forgotten when the table is full.
func TestAccessLinks_PerClient(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := newAccessLinks(AccessLink{Rate: 8e6, QueueBytes: 1 << 20}, 8e6) // a byte a microsecond
	c1 := netip.MustParseAddrPort("127.0.0.1:1000")
	c2 := netip.MustParseAddrPort("127.0.0.1:1001")
	size := 1000 - WireOverhead
	l1, _, v := a.admit(c1, t0, size)
	l1b, wait, _ := a.admit(c1, t0, size)
	l2, _, _ := a.admit(c2, t0, size)
	if v != linkShaped || l1.Sub(t0) != time.Millisecond || l1b.Sub(t0) != 2*time.Millisecond || wait != time.Millisecond || l2.Sub(t0) != time.Millisecond {
		t.Errorf("leave %v, %v (waited %v), other client %v; want 1ms, 2ms (1ms), 1ms", l1.Sub(t0), l1b.Sub(t0), wait, l2.Sub(t0))
	}
	for i := range MaxAccessClients - 2 {
		a.admit(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), uint16(i+1)), t0, size)
	}
	if _, _, v := a.admit(netip.MustParseAddrPort("127.0.0.3:1"), t0, size); v != linkUnshaped {
		t.Errorf("a client past MaxAccessClients with every link busy: %v, want unshaped", v)
	}
	later := t0.Add(IdleAccessLink + time.Second)
	if _, _, v := a.admit(netip.MustParseAddrPort("127.0.0.3:1"), later, size); v != linkShaped || len(a.links) != 1 {
		t.Errorf("after the others went idle: %v with %d links, want shaped with 1", v, len(a.links))
	}
	if _, _, v := newAccessLinks(AccessLink{}, 0).admit(c1, t0, size); v != linkPass {
		t.Errorf("no link: %v", v)
	}
}

// TestReleaser_AccessLink runs the releaser with a downstream link under
// synctest: replies to one client leave one transmission time apart in
// due order, a reply that finds the queue full is dropped, another
// client's link is its own, and heartbeats are not shaped.
func TestReleaser_AccessLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		// 10 Mbit/s: a 1,250-byte datagram takes 1 ms. The queue holds
		// two and a half of them.
		e := &Emulator{q: newQueue(), down: newAccessLinks(AccessLink{Rate: 10e6, QueueBytes: 3125}, 10e6)}
		type sent struct {
			at time.Duration
			to netip.AddrPort
		}
		got := make(chan sent, 16)
		r := &releaser{q: e.q, mode: WaitTimer, late: &e.late, link: e.shapeDown, send: func(p outPacket) {
			got <- sent{time.Since(start), p.to}
		}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.run(ctx); close(done) }()

		a := netip.MustParseAddrPort("127.0.0.1:1")
		b := netip.MustParseAddrPort("127.0.0.1:2")
		master := netip.MustParseAddrPort("127.0.0.1:3")
		body := make([]byte, 1250-WireOverhead)
		due := start.Add(100 * time.Millisecond)
		for _, to := range []netip.AddrPort{a, a, a, b} {
			e.q.push(outPacket{due: due, to: to, b: body, reply: true})
		}
		e.q.push(outPacket{due: due, to: master, b: body}) // a heartbeat
		want := []sent{{100 * time.Millisecond, master}, {101 * time.Millisecond, a}, {101 * time.Millisecond, b}, {102 * time.Millisecond, a}}
		for i, w := range want {
			if s := <-got; s != w {
				t.Errorf("datagram %d: %v to %v, want %v to %v", i, s.at, s.to, w.at, w.to)
			}
		}
		cancel()
		<-done
		st := e.Stats()
		if st.LinkDropped != 1 || st.LinkShaped != 3 || st.LinkWaitMax != time.Millisecond || len(got) != 0 {
			t.Errorf("stats %+v, %d more sent; want 1 dropped, 3 shaped, the longest wait 1ms", st, len(got))
		}
	})
}

// TestEmulator_AccessLinkOnSockets sends one getinfo to each of 20
// servers at once through a real socket: their replies, sent by the
// servers with no delay of their own, reach the client spread out by the
// access link, the last no sooner than all their bytes take to cross it
// (downstream: the replies' bytes; upstream: the requests').
func TestEmulator_AccessLinkOnSockets(t *testing.T) {
	t.Run("downstream", func(t *testing.T) { testAccessLinkOnSockets(t, false) })
	t.Run("upstream", func(t *testing.T) { testAccessLinkOnSockets(t, true) })
}

func testAccessLinkOnSockets(t *testing.T, up bool) {
	const n = 20
	w, err := Generate(Spec{Servers: n, Seed: 3, Games: Mix{{Game: OA, Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range w.Servers {
		w.Servers[i].Link = Link{}
	}
	const rate = 1e6
	link := AccessLink{Rate: rate, QueueDelay: time.Second}
	if up {
		link = AccessLink{UpRate: rate / 10, QueueDelay: time.Second}
	}
	e, stop := startWorld(t, w, Config{Access: link})
	defer stop()
	c := client(t, e.Table())
	req := []byte("\xff\xff\xff\xffgetinfo x")
	begin := time.Now()
	for _, s := range w.Servers {
		if _, err := c.WriteToUDPAddrPort(req, s.Public); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 4096)
	bytes := 0
	var last time.Time
	for range n {
		m, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		last = time.Now()
		bytes += m + WireOverhead
	}
	took := last.Sub(begin)
	bound := time.Duration(float64(bytes) * 8 / rate * float64(time.Second))
	if up {
		bound = time.Duration(float64(n*(len(req)+WireOverhead)) * 8 / (rate / 10) * float64(time.Second))
	}
	if took < bound || took > bound+time.Second {
		t.Errorf("%d exchanges took %v over the link, want at least %v", n, took, bound)
	}
	if st := e.Stats(); up != (st.LinkShaped == 0) || !up && st.LinkWaitMax < bound/2 {
		t.Errorf("stats %+v", st)
	}
}

// TestEmulator_MastersHaveNoAccessLink: a master verifies servers from
// elsewhere on the Internet, so its queries' replies cross no client's
// access link, however slow.
func TestEmulator_MastersHaveNoAccessLink(t *testing.T) {
	w, err := Generate(Spec{Servers: 20, Seed: 4, Games: Mix{{Game: OA, Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range w.Servers {
		w.Servers[i].Link = Link{}
	}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	master := c.LocalAddr().(*net.UDPAddr).AddrPort()
	e, stop := startWorld(t, w, Config{Masters: []netip.AddrPort{master}, Access: AccessLink{Rate: MinAccessRate, UpRate: MinAccessRate, QueueDelay: MaxAccessQueue}})
	defer stop()
	req := []byte("\xff\xff\xff\xffgetinfo x")
	for _, p := range e.Table().Pairs() {
		if _, err := c.WriteToUDPAddrPort(req, p.Loopback); err != nil {
			t.Fatal(err)
		}
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	for got := 0; got < len(w.Servers); {
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("%d of %d replies: %v", got, len(w.Servers), err)
		}
		if strings.HasPrefix(string(buf[:n]), "\xff\xff\xff\xffinfoResponse") {
			got++
		}
	}
	if st := e.Stats(); st.LinkShaped != 0 || st.LinkDropped != 0 || st.LinkUpDropped != 0 {
		t.Errorf("the master's exchanges crossed a link: %+v", st)
	}
}
