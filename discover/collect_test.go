package discover

import (
	"fmt"
	"net/netip"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/protocol/q3"
)

// stallConn is a master socket of fakeNet read as a *net.UDPConn is: a
// read whose deadline has passed when it begins returns
// os.ErrDeadlineExceeded at once, without looking at what is queued. Once
// armed (after the datagram numbered stallAfter has been read), the next
// SetReadDeadline stalls stall first, as a client the machine did not
// run for that long between setting the deadline and reading.
type stallConn struct {
	*fakeConn
	stallAfter int
	stall      time.Duration

	mu       sync.Mutex
	read     int
	armed    bool
	deadline time.Time
}

func (c *stallConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	armed := c.armed
	c.armed = false
	c.mu.Unlock()
	if armed {
		time.Sleep(c.stall)
	}
	return c.fakeConn.SetReadDeadline(t)
}

func (c *stallConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	c.mu.Lock()
	d := c.deadline
	c.mu.Unlock()
	if !d.IsZero() && !time.Now().Before(d) {
		return 0, netip.AddrPort{}, os.ErrDeadlineExceeded
	}
	n, from, err := c.fakeConn.ReadFromUDPAddrPort(b)
	if err == nil {
		c.mu.Lock()
		c.read++
		c.armed = c.read == c.stallAfter
		c.mu.Unlock()
	}
	return n, from, err
}

// TestOrdered_BusyClientKeepsTheLandmarkRun: a landmark master sends its
// list, with its end marker, and its landmark run right behind it; the
// client, busy, does not run for longer than EndGrace just after reading
// the list, while the landmark run waits in its socket. The list must not
// be taken as ended before the landmark run is read: the master's report
// has its landmark. (Before, the client took its own delay for the
// master's silence: on a loaded machine the demo's landmark run heard from
// 2 of its 3 landmark masters.) A run that truly comes after EndGrace, to
// a client that was not held up, is still not the list's.
func TestOrdered_BusyClientKeepsTheLandmarkRun(t *testing.T) {
	for _, c := range []struct {
		gap   time.Duration // from the list to the landmark run, at the master
		stall time.Duration // of the client, after reading the list
		kept  bool
	}{{0, 3 * EndGrace, true}, {0, 0, true}, {EndGrace + 50*time.Millisecond, 0, false}} {
		t.Run(fmt.Sprint(c.gap, "/", c.stall), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := newNet()
				n.node(masterA, func(b []byte, reply func([]byte, time.Duration)) {
					m, err := q3.Parse(b)
					if err != nil {
						return
					}
					if _, ok := m.(q3.GetServers); !ok {
						return
					}
					list, err := q3.ServersResponse{Ext: true, Servers: []netip.AddrPort{srv(1)}, End: q3.EndEOT}.AppendBinary(nil)
					if err != nil {
						panic(err)
					}
					reply(list, 40*time.Millisecond)
					reply(landmarkPacket(t, "fra-1", q3.LandmarkEntry{Addr: srv(1), RTT: 12 * time.Millisecond}), 40*time.Millisecond+c.gap)
				})
				n.node(srv(1), q3Server("s1", 5*time.Millisecond))
				mc := &stallConn{fakeConn: n.conn(), stallAfter: 1, stall: c.stall}
				cfg := Config{Landmarks: true, Masters: []Master{{Name: "A", Addr: masterA, Request: extRequest(t)}}}
				var got MasterReport
				_, _, err := Ordered(t.Context(), mc, n.conn(), cfg, nil,
					func(ts []adaptive.Target) (adaptive.Strategy, error) { return adaptive.NewConventional(ts) },
					func(e Event) {
						if d, ok := e.(MasterDone); ok {
							got = d.MasterReport
						}
					})
				if err != nil {
					t.Fatal(err)
				}
				if kept := got.Landmark == "fra-1" && got.LandmarkRTTs[srv(1)] == 12*time.Millisecond; kept != c.kept || got.End != EndMarker {
					t.Errorf("landmark %q, RTTs %v, end %q; want the run kept %v", got.Landmark, got.LandmarkRTTs, got.End, c.kept)
				}
			})
		})
	}
}
