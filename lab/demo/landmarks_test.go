package demo

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
)

// TestRelay_KeepsOrder sends 200 datagrams from a master through a Relay
// back to its client: all come, in the order sent, none before the delay.
// (With a timer per datagram they came out of order on a busy machine.)
func TestRelay_KeepsOrder(t *testing.T) {
	master, client := peer.ListenLoopback(t), peer.ListenLoopback(t)
	client.SetReadBuffer(1 << 20)
	masterAddr := master.LocalAddr().(*net.UDPAddr).AddrPort()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	const delay = 20 * time.Millisecond
	relay, err := Relay(ctx, &wg, masterAddr, delay)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.WriteToUDPAddrPort([]byte("query"), relay); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	master.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, path, err := master.ReadFromUDPAddrPort(buf) // the client's path's socket
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	sent := time.Now()
	for i := range n {
		if _, err := master.WriteToUDPAddrPort(binary.BigEndian.AppendUint32(nil, uint32(i)), path); err != nil {
			t.Fatal(err)
		}
	}
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := range n {
		m, _, err := client.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if i == 0 && time.Since(sent) < delay {
			t.Errorf("first datagram after %v, want at least %v", time.Since(sent), delay)
		}
		if got := binary.BigEndian.Uint32(buf[:m]); got != uint32(i) {
			t.Fatalf("datagram %d came as the %dth: out of order", got, i)
		}
	}
}

// TestRelay_PathPerClient: two clients ask one echoing master through one
// RelayWith; each gets its own echoes, none before its own path's
// delay (20 and 80 ms), the master sees two sources.
func TestRelay_PathPerClient(t *testing.T) {
	master, a, b := peer.ListenLoopback(t), peer.ListenLoopback(t), peer.ListenLoopback(t)
	masterAddr := master.LocalAddr().(*net.UDPAddr).AddrPort()
	aAddr := a.LocalAddr().(*net.UDPAddr).AddrPort()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	delays := map[bool]time.Duration{true: 20 * time.Millisecond, false: 80 * time.Millisecond}
	relay, err := RelayWith(ctx, &wg, masterAddr, RelayConfig{Delay: func(c netip.AddrPort) time.Duration { return delays[c == aAddr] }})
	if err != nil {
		t.Fatal(err)
	}
	sources := map[netip.AddrPort]bool{}
	wg.Go(func() {
		buf := make([]byte, 64)
		for range 4 {
			n, from, err := master.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			sources[from] = true
			master.WriteToUDPAddrPort(buf[:n], from)
		}
	})
	for round := range 2 {
		for _, c := range []struct {
			conn *net.UDPConn
			name string
		}{{a, "a"}, {b, "b"}} {
			msg := []byte(c.name + string(rune('0'+round)))
			sent := time.Now()
			if _, err := c.conn.WriteToUDPAddrPort(msg, relay); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, from, err := c.conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatal(err)
			}
			if string(buf[:n]) != string(msg) || from != relay {
				t.Errorf("%s got %q from %v", c.name, buf[:n], from)
			}
			if took, want := time.Since(sent), delays[c.conn == a]; took < want {
				t.Errorf("%s's echo after %v, want at least %v", c.name, took, want)
			}
		}
	}
	cancel()
	master.SetReadDeadline(time.Unix(1, 0))
	wg.Wait()
	if len(sources) != 2 {
		t.Errorf("the master saw %d sources, want 2", len(sources))
	}
}
