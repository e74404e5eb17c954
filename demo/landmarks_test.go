package demo

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"
)

// TestRelay_KeepsOrder sends 200 datagrams from a master through a Relay
// back to its client: all come, in the order sent, none before the delay.
// (With a timer per datagram they came out of order on a busy machine.)
func TestRelay_KeepsOrder(t *testing.T) {
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	master, client := listen(), listen()
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
	if _, _, err := master.ReadFromUDPAddrPort(buf); err != nil {
		t.Fatal(err)
	}
	const n = 200
	sent := time.Now()
	for i := range n {
		if _, err := master.WriteToUDPAddrPort(binary.BigEndian.AppendUint32(nil, uint32(i)), relay); err != nil {
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
