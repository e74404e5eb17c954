package discover

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/q3"
)

// hostileMaster answers every getservers on a real loopback socket with
// list, in packets of up to 1,400 bytes sent back to back, and never the
// end marker. It returns the master's address.
func hostileMaster(t *testing.T, list []netip.AddrPort) netip.AddrPort {
	t.Helper()
	pkts, err := q3.EncodeServersResponses(list, q3.SplitOptions{End: q3.EndNone, MaxBytes: 1400})
	if err != nil {
		t.Fatal(err)
	}
	return peer.ServeUDP(t, func(req []byte) [][]byte {
		if m, err := q3.Parse(req); err != nil {
			return nil
		} else if _, ok := m.(q3.GetServers); !ok {
			return nil
		}
		return pkts
	})
}

func loopbackConn(t *testing.T) probe.Conn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetReadBuffer(1 << 20); err != nil {
		t.Fatal(err)
	}
	w, _ := probe.Wrap(c) // ICMP errors end a probe at once where the platform reports them
	return w
}

// TestMasterReply_NoEOTCannotFloodProbesOverUDP: a hostile master on a
// real loopback socket lists 20,000 addresses no server listens on (in
// 127.77.0.0/16, so nothing else on the machine is probed) and never
// sends the end marker; the prober's window is as large as the list, and
// on Linux every probe ends at once with an ICMP port unreachable, so
// only admission holds the pace. Until the list ends at the quiet window
// (a second after its last packet), the client probes no more than the
// burst, AdmitRate a second and nothing admitted by an answer, where it
// once probed all 20,000 (460 KB).
func TestMasterReply_NoEOTCannotFloodProbesOverUDP(t *testing.T) {
	var list []netip.AddrPort
	for i := range 20000 {
		list = append(list, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 77, byte(i >> 8), byte(i)}), 40000+uint16(i%1000)))
	}
	master := hostileMaster(t, list)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg := Config{
		Masters:    []Master{{Name: "hostile", Addr: master, Request: q3Request(t)}},
		MaxServers: len(list),
		Prober:     probe.Prober{Window: len(list), Attempts: 1, Timeout: 200 * time.Millisecond},
	}
	var rep MasterReport
	sum, err := Discover(ctx, loopbackConn(t), loopbackConn(t), cfg, func(e Event) {
		if m, ok := e.(MasterDone); ok {
			rep = m.MasterReport
			cancel() // the list is over: the rest would come at AdmitRate
		}
	})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("err %v; want the run cancelled at the list's end", err)
	}
	// The list is sent back to back; a loaded machine may drop some of it
	// at the socket (rmem_max caps the buffer). Enough must come for the
	// bound to be what holds the probes back.
	if rep.End != EndQuiet || rep.Listed < 4*DefaultAdmitBurst {
		t.Fatalf("master report %+v; want most of the %d listed, ended by the quiet window", rep, len(list))
	}
	c := sum.Probe
	bound := DefaultAdmitBurst + int(DefaultAdmitRate*sum.Took.Seconds()) + 1
	t.Logf("%d listed in %v; %d probed, %d bytes, %d answered, %d unreachable",
		sum.Listed, sum.Took, c.Destinations, c.BytesOut, c.Answered, c.Unreachable)
	if c.Answered != 0 || c.Destinations > bound || c.Sent > bound {
		t.Fatalf("%d destinations, %d probes in %v: want at most %d", c.Destinations, c.Sent, sum.Took, bound)
	}
}
