package masterd

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/q3"
)

// Over a real socket, an uncached list reply is encoded by the socket's
// encoder goroutine and arrives whole; the same query again is answered
// from the cache by the loop.
func TestMaster_DeferredListReplyArrivesWhole(t *testing.T) {
	m, stop := startMaster(t, Config{
		Listen:        []netip.AddrPort{ap("127.0.0.1:0")},
		DeferEncoding: 1,
		Reloadable: Reloadable{
			Registry:     master.Config{AllowLoopback: true},
			Handler:      master.HandlerConfig{MaxEntries: 4},
			NoQueryLimit: true,
		},
	})
	defer stop()
	const servers = 50
	for i := range servers {
		listQ3(t, m.Handler, time.Now(), netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i + 1)}), 27960))
	}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, _ := q3.GetServers{Ext: true, GameName: "Quake3Arena", Protocol: 71, Empty: true, Full: true}.AppendBinary(nil)
	ask := func() int {
		if _, err := c.WriteToUDPAddrPort(req, m.Addrs()[0]); err != nil {
			t.Fatal(err)
		}
		got := map[netip.AddrPort]bool{}
		buf := make([]byte, 2048)
		for len(got) < servers {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatalf("%d of %d servers, then %v", len(got), servers, err)
			}
			msg, err := q3.Parse(buf[:n])
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range msg.(q3.ServersResponse).Servers {
				got[a] = true
			}
		}
		return len(got)
	}
	ask()
	if n := m.Handler.Stats().Deferred(); n != 1 {
		t.Errorf("%d replies deferred, want 1", n)
	}
	ask()
	if n := m.Handler.Stats().Deferred(); n != 1 {
		t.Errorf("%d replies deferred after the cached query, want 1", n)
	}
}

// A list query that finds its socket's encoder queue full is dropped and
// counted; the other datagrams of out are kept.
func TestPacketServer_HandOverFullQueueDrops(t *testing.T) {
	s := NewPacketServer(nil, nil)
	jobs := make(chan *master.Encoding, 1)
	a, b := ap("192.0.2.1:1"), ap("192.0.2.2:1")
	out := []master.Outgoing{
		{To: a, Encode: &master.Encoding{}},
		{To: b, Payload: []byte("x")},
		{To: a, Encode: &master.Encoding{}},
	}
	out = s.handOver(out, jobs)
	if len(out) != 1 || out[0].To != b {
		t.Errorf("left %+v, want the one datagram", out)
	}
	if len(jobs) != 1 || s.EncodeDrops() != 1 {
		t.Errorf("%d queued, %d dropped; want 1 and 1", len(jobs), s.EncodeDrops())
	}
}
