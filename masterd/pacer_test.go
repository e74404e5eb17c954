package masterd

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/q3"
)

// A list larger than the address's burst reaches a real UDP client whole,
// paced: its datagrams arrive spread over the time the address's rate
// takes for the bytes beyond the burst, none early, while a second client
// of another address is answered at once meanwhile (the paced reply does
// not hold up the socket).
func TestMaster_LargeListPacedOverUDP(t *testing.T) {
	lim := master.ResponseLimits{VictimBurst: 8000, VictimRate: 16000, ReturnBurst: 8000, ReturnRate: 16000}
	m, stop := startMaster(t, Config{
		Listen: []netip.AddrPort{ap("127.0.0.1:0")},
		Reloadable: Reloadable{
			Registry:   master.Config{AllowLoopback: true, MaxServersPerAddress: -1},
			Responses:  lim,
			Heartbeats: Limit{Throttle: 1 << 20, Decay: time.Millisecond},
		},
	})
	defer stop()
	now := time.Now()
	for i := range 2000 {
		listQ3(t, m.Handler, now, netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i / 250)}), uint16(20000+i)))
	}
	req, _ := q3.GetServers{Protocol: 71, Empty: true, Full: true}.AppendBinary(nil)
	c := udp4(t)
	start := time.Now()
	if _, err := c.WriteToUDPAddrPort(req, m.Addrs()[0]); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 65536)
	servers, bytes := 0, 0
	asked := false
	for servers < 2000 {
		n, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("after %d servers: %v", servers, err)
		}
		bytes += n + master.DatagramCost4
		msg, err := q3.Parse(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		servers += len(msg.(q3.ServersResponse).Servers)
		if !asked {
			// Meanwhile another client is answered at once: the paced
			// reply does not hold up the socket.
			asked = true
			other, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ap("127.1.0.2:0")))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			other.SetReadDeadline(time.Now().Add(10 * time.Second))
			small, _ := q3.GetServers{Protocol: 43, Empty: true, Full: true}.AppendBinary(nil)
			sent := time.Now()
			other.WriteToUDPAddrPort(small, m.Addrs()[0])
			readMsg(t, other)
			if d := time.Since(sent); d > time.Second {
				t.Errorf("another client waited %v during the paced reply", d)
			}
		}
		// No datagram arrives before the address's lane holds its bytes.
		if early := time.Duration(float64(bytes-lim.VictimBurst-1400) / float64(lim.VictimRate) * float64(time.Second)); time.Since(start) < early {
			t.Fatalf("%d bytes after %v, before the lane had them (%v)", bytes, time.Since(start), early)
		}
	}
	took := time.Since(start)
	want := time.Duration(float64(bytes-lim.VictimBurst) / float64(lim.VictimRate) * float64(time.Second))
	if took < want-100*time.Millisecond {
		t.Errorf("the list took %v, want about %v (paced)", took, want)
	}
	if got := m.Server.Paced(); got != 1 {
		t.Errorf("paced replies %d, want 1", got)
	}
	t.Logf("%d bytes in %v (the lane's pace: %v)", bytes, took.Round(time.Millisecond), want.Round(time.Millisecond))
}
