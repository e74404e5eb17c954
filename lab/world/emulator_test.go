package world

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/lab/loopnat"
	"github.com/scout-discovery/scout/protocol/a2s"
	"github.com/scout-discovery/scout/protocol/gs4"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

// startWorld runs w until the test ends and returns the emulator and a
// function that stops it and waits for Run to return.
func startWorld(t testing.TB, w World, cfg Config) (*Emulator, func()) {
	t.Helper()
	e, err := Listen(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() { runErr = e.Run(ctx); close(done) }()
	stop := func() {
		cancel()
		select {
		case <-done:
			if runErr != nil {
				t.Errorf("Run: %v", runErr)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return within 30 s of cancel")
		}
	}
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return e, stop
}

// client is a wrapped loopback socket that sees the world's public
// addresses.
func client(t *testing.T, table *loopnat.Table) *loopnat.Conn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return loopnat.Wrap(c, table)
}

// exchange sends req to pub and returns the first reply from pub.
func exchange(t *testing.T, c *loopnat.Conn, pub netip.AddrPort, req []byte) []byte {
	t.Helper()
	if _, err := c.WriteToUDPAddrPort(req, pub); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("waiting for a reply from %v: %v", pub, err)
		}
		if from == pub {
			return append([]byte(nil), buf[:n]...)
		}
	}
}

// TestEmulator_World2000 starts a generated world of 2,000 servers of
// every game and checks that a sample of them answers, through the
// translation layer, with what the world says, decoded by scout's codecs.
func TestEmulator_World2000(t *testing.T) {
	t.Run("socket per server", func(t *testing.T) { testWorld2000(t, SocketsPerServer) })
	t.Run("socket per port", func(t *testing.T) { testWorld2000(t, SocketsPerPort) })
}

func testWorld2000(t *testing.T, mode SocketMode) {
	w, err := Generate(Spec{Servers: 2000, Seed: 42, Full: 0.3, Empty: 0.4, RTTMin: 0, RTTMax: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e, stop := startWorld(t, w, Config{Sockets: mode})
	st := e.Stats()
	if st.Addresses < 2000/MaxServersPerHost {
		t.Errorf("stats %+v", st)
	}
	if wantPerServer := mode == SocketsPerServer; wantPerServer != (st.Sockets == 2000) || st.Sockets < 1 {
		t.Errorf("%d sockets in mode %d", st.Sockets, mode)
	}
	c := client(t, e.Table())
	for i := 0; i < len(w.Servers); i += 97 {
		s := w.Servers[i]
		switch s.Game.family() {
		case familyQ3:
			b := exchange(t, c, s.Public, []byte("\xff\xff\xff\xffgetinfo xyz"))
			m, err := q3.Parse(b)
			ir, ok := m.(q3.InfoResponse)
			if err != nil || !ok {
				t.Fatalf("%v: %v %T", s.Public, err, m)
			}
			if v, _ := ir.Info.Get("hostname"); v != s.Hostname {
				t.Errorf("%v: hostname %q, want %q", s.Public, v, s.Hostname)
			}
			if v, _ := ir.Info.Get("challenge"); v != "xyz" {
				t.Errorf("%v: challenge %q", s.Public, v)
			}
		case familyQ4:
			b := exchange(t, c, s.Public, []byte("\xff\xffgetInfo\x00\x01\x02\x03\x04"))
			m, err := q4.ParseInfoResponse(b)
			if err != nil || m.Challenge != 0x04030201 || len(m.Players) != len(s.Players) {
				t.Errorf("%v: %+v %v", s.Public, m, err)
			}
		case familyA2S:
			b := exchange(t, c, s.Public, []byte("\xff\xff\xff\xffTSource Engine Query\x00"))
			ch, err := a2s.ParseChallenge(b)
			if err != nil {
				t.Fatalf("%v: %v", s.Public, err)
			}
			req, _ := a2s.InfoRequest{HasChallenge: true, Challenge: ch.Challenge}.AppendBinary(nil)
			info, err := a2s.ParseInfo(exchange(t, c, s.Public, req))
			if err != nil || info.Name != s.Hostname || int(info.Players) != len(s.Players) {
				t.Errorf("%v: %+v %v", s.Public, info, err)
			}
		case familyGS4:
			b := exchange(t, c, s.Public, []byte{0xfe, 0xfd, 0x09, 0, 0, 0, 1})
			ch, err := gs4.ParseChallengeReply(b)
			if err != nil {
				t.Fatalf("%v: %v", s.Public, err)
			}
			req, _ := gs4.InfoRequest{SessionID: 1, HasChallenge: true, Challenge: ch.Challenge, Rules: true, Players: true, Teams: true, Split: true}.AppendBinary(nil)
			p, err := gs4.ParseInfoPacket(exchange(t, c, s.Public, req))
			if err != nil || p.Number != 0 {
				t.Errorf("%v: %+v %v", s.Public, p, err)
			}
		}
	}
	stop()
	if st := e.Stats(); st.Outcomes["answered"] == 0 || st.Sent == 0 {
		t.Errorf("stats after stop: %+v", st)
	}
}

// quakeWorld is a generated world of n Quake III Arena servers, 20-30 ms
// away.
func quakeWorld(t *testing.T, n int) World {
	t.Helper()
	w, err := Generate(Spec{Servers: n, Seed: 7, RTTMin: 20 * time.Millisecond, RTTMax: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := range w.Servers {
		w.Servers[i].Game = Q3A
	}
	return w
}

// TestEmulator_LastReply: the emulator records when a server's last reply
// to a client was due (discobench's time to the last playable server),
// within the reply's injected RTT of the request, and nothing for a
// server no client asked.
func TestEmulator_LastReply(t *testing.T) {
	w := quakeWorld(t, 4)
	e, _ := startWorld(t, w, Config{})
	c := client(t, e.Table())
	asked, other := w.Servers[0], w.Servers[1]
	before := time.Now()
	exchange(t, c, asked.Public, []byte("\xff\xff\xff\xffgetinfo xyz"))
	after := time.Now()
	lo, _ := e.Table().Loopback(asked.Public)
	at, ok := e.LastReply(lo)
	if !ok || at.Before(before.Add(time.Duration(asked.Link.RTT))) || at.After(after) {
		t.Errorf("last reply %v (%v), want within %v-%v", at, ok, before.Add(time.Duration(asked.Link.RTT)), after)
	}
	lo, _ = e.Table().Loopback(other.Public)
	if at, ok := e.LastReply(lo); ok {
		t.Errorf("a server nobody asked has a last reply at %v", at)
	}
}

// TestEmulator_GoneServersAnswerTheirMastersOnly: a gone server answers
// its master's getinfo (so the master lists it) and nobody else's.
func TestEmulator_GoneServersAnswerTheirMastersOnly(t *testing.T) {
	w := quakeWorld(t, 2)
	w.Servers[0].Gone = true
	mc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	masterAddr := mc.LocalAddr().(*net.UDPAddr).AddrPort()
	e, _ := startWorld(t, w, Config{Masters: []netip.AddrPort{masterAddr}, HeartbeatInterval: time.Hour})
	mc.SetDeadline(time.Now().Add(20 * time.Second))
	master := loopnat.Wrap(mc, e.Table())
	gone, alive := w.Servers[0].Public, w.Servers[1].Public
	exchange(t, master, gone, []byte("\xff\xff\xff\xffgetinfo m")) // answers its master
	c := client(t, e.Table())
	if _, err := c.WriteToUDPAddrPort([]byte("\xff\xff\xff\xffgetinfo c"), gone); err != nil {
		t.Fatal(err)
	}
	// Asking the live server until the emulator has read the request to
	// the gone one is the signal that it was handled.
	deadline := time.Now().Add(20 * time.Second)
	for {
		exchange(t, c, alive, []byte("\xff\xff\xff\xffgetinfo c"))
		if e.Stats().Gone > 0 || time.Now().After(deadline) {
			break
		}
	}
	if n := e.Stats().Gone; n != 1 {
		t.Fatalf("gone counted %d requests, want 1", n)
	}
	// LastReply records the replies to clients, not to masters.
	goneLo, _ := e.Table().Loopback(gone)
	aliveLo, _ := e.Table().Loopback(alive)
	if at, ok := e.LastReply(goneLo); ok {
		t.Errorf("the gone server replied to a client at %v", at)
	}
	if _, ok := e.LastReply(aliveLo); !ok {
		t.Error("the live server's replies to the client were not recorded")
	}
}
