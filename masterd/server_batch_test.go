package masterd

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
)

// TestPacketServer_BatchKeepsDatagrams: a reply sent in one batch, runs of
// equal-sized datagrams (and a shorter one after a run) segmented by the
// kernel, arrives as the same datagrams, in order, one read each. The
// fallbacks run here too: a batch without segmentation (every platform
// but Linux, and a kernel that refuses UDP_SEGMENT), and one write per
// datagram (a socket that cannot batch).
func TestPacketServer_BatchKeepsDatagrams(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*sender)
	}{
		{"segmented", func(*sender) {}},
		{"batched", func(snd *sender) { snd.gso = false }},
		{"unbatched", func(snd *sender) { snd.batch = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) { testBatchKeepsDatagrams(t, tc.setup) })
	}
}

func testBatchKeepsDatagrams(t *testing.T, setup func(*sender)) {
	src, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ap("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ap("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	dst.SetReadBuffer(1 << 20)
	to := dst.LocalAddr().(*net.UDPAddr).AddrPort()

	// A rotated reply's shape: full packets, the short tail, more full
	// ones, the last with its marker; 70 full ones exceed one segmented
	// send.
	sizes := []int{1387, 1387, 1387, 897}
	for range 70 {
		sizes = append(sizes, 1387)
	}
	sizes = append(sizes, 1394)
	var out []master.Outgoing
	for i, n := range sizes {
		out = append(out, master.Outgoing{To: to, Kind: master.KindServersResponse, Payload: bytes.Repeat([]byte{byte(i)}, n)})
	}
	s := NewPacketServer(nil, nil)
	snd := newSender(src)
	setup(snd)
	// Each message's datagrams are known: after a refused segmented
	// message, sendBatch sends again from it, not from the start.
	// A segmented message is a run of one size and at most one shorter
	// datagram last, as the kernel splits it.
	snd.pack(out)
	total := 0
	for j, k := range snd.segs {
		size, sum := len(out[total].Payload), 0
		for i, o := range out[total : total+k] {
			sum += len(o.Payload)
			if n := len(o.Payload); n > size || n < size && i != k-1 {
				t.Errorf("message %d: datagram %d of %d is %d bytes, segments of %d", j, i, k, n, size)
			}
		}
		if len(snd.bufs[j]) != sum || !snd.gso && k != 1 {
			t.Errorf("message %d: %d bytes for %d datagrams of %d bytes", j, len(snd.bufs[j]), k, sum)
		}
		total += k
	}
	if total != len(out) || len(snd.segs) != len(snd.msgs) {
		t.Errorf("%d messages count %d datagrams, want %d", len(snd.msgs), total, len(out))
	}
	// The three full ones and the short tail; the 70 full ones in two
	// (gsoMaxBytes holds 43); the last, larger than the run before it.
	if snd.gso && len(snd.msgs) != 4 {
		t.Errorf("%d segmented messages (datagrams per message %v), want 4", len(snd.msgs), snd.segs)
	}
	for range 2 { // the second reuses the sender's buffers
		s.writeBatched(snd, out)
		buf := make([]byte, 65536)
		dst.SetReadDeadline(time.Now().Add(5 * time.Second))
		for i, o := range out {
			n, from, err := dst.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatalf("datagram %d: %v", i, err)
			}
			if from != src.LocalAddr().(*net.UDPAddr).AddrPort() || !bytes.Equal(buf[:n], o.Payload) {
				t.Fatalf("datagram %d: %d bytes from %v, want %d bytes of %d", i, n, from, len(o.Payload), i)
			}
		}
	}
	if gsoSupported && !snd.gso && t.Name() == "TestPacketServer_BatchKeepsDatagrams/segmented" {
		t.Log("the kernel refused UDP segmentation; sent one by one")
	}
	if refused, _ := s.SendErrors(); refused != 0 {
		t.Errorf("%d send errors", refused)
	}
}
