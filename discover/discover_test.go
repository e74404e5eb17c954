package discover

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
	"github.com/scout-discovery/scout/protocol/steammaster"
)

var (
	masterA = netip.MustParseAddrPort("192.0.2.1:27950")
	masterB = netip.MustParseAddrPort("192.0.2.2:27950")
	masterC = netip.MustParseAddrPort("192.0.2.3:27950")
	masterD = netip.MustParseAddrPort("192.0.2.4:27950")
)

func srv(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), 27960)
}

// q3Server answers getinfo after delay, echoing the challenge.
func q3Server(name string, delay time.Duration) handler {
	return func(b []byte, reply func([]byte, time.Duration)) {
		m, err := q3.Parse(b)
		req, ok := m.(q3.GetInfo)
		if err != nil || !ok {
			return
		}
		info := infostring.Info{{Key: "hostname", Value: name}, {Key: "mapname", Value: "q3dm17"},
			{Key: "clients", Value: "3"}, {Key: "sv_maxclients", Value: "16"}, {Key: "gametype", Value: "0"},
			{Key: "challenge", Value: req.Challenge}}
		out, err := q3.InfoResponse{Info: info}.AppendBinary(nil)
		if err != nil {
			panic(err)
		}
		reply(out, delay)
	}
}

// q3Master answers getservers with one packet per list, gap apart, the
// first after gap; the last carries EOT when eot is set.
func q3Master(gap time.Duration, eot bool, lists ...[]netip.AddrPort) handler {
	return func(b []byte, reply func([]byte, time.Duration)) {
		if m, err := q3.Parse(b); err != nil {
			return
		} else if _, ok := m.(q3.GetServers); !ok {
			return
		}
		for i, l := range lists {
			r := q3.ServersResponse{Servers: l}
			if eot && i == len(lists)-1 {
				r.End = q3.EndEOT
			}
			out, err := r.AppendBinary(nil)
			if err != nil {
				panic(err)
			}
			reply(out, time.Duration(i+1)*gap)
		}
	}
}

// q3Request asks for Quake III 1.32 servers alone: one list per master.
func q3Request(t *testing.T) Request {
	g := game.Builtin()[0] // Quake3Arena
	r, err := RequestFor(g, ProtocolQ3A132, false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type recorder struct {
	listed  []Listed
	masters map[string]MasterReport
	probed  map[netip.AddrPort]Server
	order   []string // event kinds in order
}

func (r *recorder) each(e Event) {
	switch e := e.(type) {
	case Listed:
		r.listed = append(r.listed, e)
		r.order = append(r.order, "listed")
	case MasterDone:
		r.masters[e.Name] = e.MasterReport
		r.order = append(r.order, "master")
	case Probed:
		r.probed[e.Addr] = e.Server
		r.order = append(r.order, "probed")
	}
}

func discover(t *testing.T, n *fakeNet, cfg Config) (*recorder, Summary) {
	t.Helper()
	rec := &recorder{masters: map[string]MasterReport{}, probed: map[netip.AddrPort]Server{}}
	sum, err := Discover(t.Context(), n.conn(), n.conn(), cfg, rec.each)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return rec, sum
}

// TestDiscover_MarkerOnEveryPacket: id's master and dpmaster before 2.0 end
// every packet with \EOT; a packet that follows a marker within EndGrace is
// still part of the list; one that comes after the list closed (here the
// only list, so collection is over) is not read.
func TestDiscover_MarkerOnEveryPacket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		lists := [][]netip.AddrPort{{srv(1), srv(2)}, {srv(3)}, {srv(4)}}
		n.node(masterA, func(b []byte, reply func([]byte, time.Duration)) {
			if m, err := q3.Parse(b); err != nil {
				return
			} else if _, ok := m.(q3.GetServers); !ok {
				return
			}
			// Back to back within EndGrace, except the last, which comes
			// after the list was closed.
			at := []time.Duration{10 * time.Millisecond, 10*time.Millisecond + EndGrace/2, 10*time.Millisecond + 3*EndGrace}
			for i, l := range lists {
				out, err := q3.ServersResponse{Servers: l, End: q3.EndEOT}.AppendBinary(nil)
				if err != nil {
					panic(err)
				}
				reply(out, at[i])
			}
		})
		for i := 1; i <= 4; i++ {
			n.node(srv(i), q3Server(fmt.Sprint("s", i), 5*time.Millisecond))
		}
		rec, sum := discover(t, n, Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}})
		m := rec.masters["A"]
		if m.End != EndMarker || m.Took != 10*time.Millisecond+EndGrace/2+EndGrace {
			t.Fatalf("master report %+v; want the list closed EndGrace after the second packet", m)
		}
		if sum.Listed != 3 || sum.Probe.Answered != 3 {
			t.Fatalf("listed %d, answered %d; want the 3 servers of the packets within EndGrace of a marker", sum.Listed, sum.Probe.Answered)
		}
	})
}

func TestDiscover_ListEndsAtTheEndMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		n.node(masterA, q3Master(100*time.Millisecond, true, []netip.AddrPort{srv(1), srv(2)}, []netip.AddrPort{srv(3)}))
		for i := 1; i <= 3; i++ {
			n.node(srv(i), q3Server(fmt.Sprint("s", i), 30*time.Millisecond))
		}
		rec, sum := discover(t, n, Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}})
		m := rec.masters["A"]
		// The list ends EndGrace after the marker: nothing followed it.
		if m.End != EndMarker || m.Packets != 2 || m.Listed != 3 || m.New != 3 || m.Took != 200*time.Millisecond+EndGrace {
			t.Fatalf("master report %+v; want the end marker at 200ms, closed %v later", m, EndGrace)
		}
		if sum.ListsTook != 200*time.Millisecond+EndGrace || sum.Listed != 3 || sum.Probe.Answered != 3 {
			t.Fatalf("summary %+v", sum)
		}
		if s := rec.probed[srv(2)]; s.Name != "s2" || s.RTT != 30*time.Millisecond || !slices.Equal(s.Masters, []string{"A"}) {
			t.Fatalf("server %+v", s)
		}
	})
}

func TestDiscover_ListEndsAfterAQuietWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		n.node(masterA, q3Master(100*time.Millisecond, false, []netip.AddrPort{srv(1)}, []netip.AddrPort{srv(2)}))
		rec, _ := discover(t, n, Config{Quiet: 700 * time.Millisecond,
			Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}},
			Prober:  probe.Prober{Timeout: 100 * time.Millisecond, Attempts: 1}})
		m := rec.masters["A"]
		if m.End != EndQuiet || m.Took != 200*time.Millisecond+700*time.Millisecond || m.Listed != 2 {
			t.Fatalf("master report %+v; want quiet 700ms after the last packet at 200ms", m)
		}
		if len(rec.probed) != 2 || rec.probed[srv(1)].Answered() {
			t.Fatalf("probed %+v; want two silent servers reported", rec.probed)
		}
	})
}

func TestDiscover_SeveralMastersMergedOneDeadOneGarbage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		n.node(masterA, q3Master(10*time.Millisecond, true, []netip.AddrPort{srv(1), srv(2)}))
		n.node(masterB, q3Master(50*time.Millisecond, true, []netip.AddrPort{srv(2), srv(3), srv(2)}))
		// masterC never answers; masterD answers garbage.
		n.node(masterD, func(_ []byte, reply func([]byte, time.Duration)) {
			reply([]byte("\xff\xff\xff\xffgetserversResponse\\\x01"), time.Millisecond)
			reply([]byte("HTTP/1.0 400 Bad Request\r\n"), 2*time.Millisecond)
		})
		for i := 1; i <= 3; i++ {
			n.node(srv(i), q3Server(fmt.Sprint("s", i), 5*time.Millisecond))
		}
		req := q3Request(t)
		rec, sum := discover(t, n, Config{Masters: []Master{{Name: "A", Addr: masterA, Request: req},
			{Name: "B", Addr: masterB, Request: req}, {Name: "C", Addr: masterC, Request: req},
			{Name: "D", Addr: masterD, Request: req}, {Name: "A again", Addr: masterA, Request: req}}})
		if len(sum.Masters) != 4 {
			t.Errorf("%d masters asked, want 4 (A once)", len(sum.Masters))
		}
		if c := rec.masters["C"]; c.End != EndNoReply || c.Queries != DefaultMasterAttempts || c.Error == "" ||
			c.Took != DefaultMasterAttempts*DefaultMasterTimeout {
			t.Errorf("dead master %+v", c)
		}
		if d := rec.masters["D"]; d.End != EndGarbage || d.Garbled != 2 || d.Queries != 1 || d.Error == "" {
			t.Errorf("garbage master %+v", d)
		}
		if b := rec.masters["B"]; b.Listed != 3 || b.New != 1 {
			t.Errorf("master B %+v; want 3 listed, 1 new", b)
		}
		for i := 1; i <= 3; i++ {
			if got := len(n.sends(srv(i))); got != 1 {
				t.Errorf("server %d probed %d times, want once", i, got)
			}
		}
		if s := rec.probed[srv(2)]; !s.Answered() {
			t.Errorf("server 2 %+v", s)
		}
		if sum.Listed != 3 || sum.Probe.Answered != 3 || sum.Probe.Destinations != 3 {
			t.Errorf("summary %+v", sum)
		}
		again := 0
		for _, l := range rec.listed {
			if l.Again {
				again++
			}
		}
		if again != 2 {
			t.Errorf("%d listings of known servers, want 2 (srv 2 by B twice)", again)
		}
	})
}

func TestDiscover_MastersListedServerMasters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		n.node(masterA, q3Master(10*time.Millisecond, true, []netip.AddrPort{srv(1)}))
		n.node(masterB, q3Master(20*time.Millisecond, true, []netip.AddrPort{srv(1)}))
		// srv(1) answers after B listed it too.
		n.node(srv(1), q3Server("s1", 50*time.Millisecond))
		req := q3Request(t)
		rec, _ := discover(t, n, Config{Masters: []Master{{Name: "A", Addr: masterA, Request: req}, {Name: "B", Addr: masterB, Request: req}}})
		if s := rec.probed[srv(1)]; !slices.Equal(s.Masters, []string{"A", "B"}) {
			t.Fatalf("masters %v, want A and B", s.Masters)
		}
	})
}

func TestDiscover_ListsFromOtherAddressesAreDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		forged, _ := q3.ServersResponse{Servers: []netip.AddrPort{srv(9)}, End: q3.EndEOT}.AppendBinary(nil)
		var mconn *fakeConn
		n.node(masterA, func(b []byte, reply func([]byte, time.Duration)) {
			mconn.deliver(masterB, forged, time.Millisecond) // a spoofer races the master
			q3Master(10*time.Millisecond, true, []netip.AddrPort{srv(1)})(b, reply)
		})
		n.node(srv(1), q3Server("s1", time.Millisecond))
		rec := &recorder{masters: map[string]MasterReport{}, probed: map[netip.AddrPort]Server{}}
		mconn = n.conn()
		sum, err := Discover(t.Context(), mconn, n.conn(),
			Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}}, rec.each)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Stray != 1 || sum.Listed != 1 || len(n.sends(srv(9))) != 0 {
			t.Fatalf("stray %d, listed %d, srv 9 probed %d times; want the forged list dropped",
				sum.Stray, sum.Listed, len(n.sends(srv(9))))
		}
	})
}

func TestDiscover_ProbingOverlapsTheList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Three packets 400 ms apart: the first probes must leave when the
		// first packet arrives, before the last one does.
		n := newNet()
		var lists [][]netip.AddrPort
		for p := range 3 {
			var l []netip.AddrPort
			for i := range 10 {
				l = append(l, srv(p*10+i+1))
				n.node(srv(p*10+i+1), q3Server("x", 20*time.Millisecond))
			}
			lists = append(lists, l)
		}
		n.node(masterA, q3Master(400*time.Millisecond, true, lists...))
		start := time.Now()
		rec, sum := discover(t, n, Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}})
		first := n.sends(srv(1))
		if len(first) != 1 || first[0].Sub(start) != 400*time.Millisecond {
			t.Fatalf("first probe at %v, want 400ms (with the first packet)", first[0].Sub(start))
		}
		if rec.masters["A"].Took != 1200*time.Millisecond+EndGrace || sum.FirstResult != 420*time.Millisecond {
			t.Fatalf("list took %v, first result %v", rec.masters["A"].Took, sum.FirstResult)
		}
		i := slices.Index(rec.order, "probed")
		j := slices.Index(rec.order, "master")
		if i < 0 || j < i {
			t.Fatalf("events %v: want results before the list ended", rec.order)
		}
	})
}

func TestDiscover_SteamPagesBySeed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		pages := [][]netip.AddrPort{{srv(1), srv(2)}, {srv(3), srv(4)}, {srv(5)}}
		var seeds []string
		n.node(masterA, func(b []byte, reply func([]byte, time.Duration)) {
			q, err := steammaster.ParseQuery(b)
			if err != nil {
				return
			}
			seeds = append(seeds, q.Seed.String())
			i := slices.IndexFunc(pages, func(p []netip.AddrPort) bool { return p[len(p)-1] == q.Seed }) + 1
			if len(seeds) == 2 {
				return // the second page's first query is lost
			}
			r := steammaster.Reply{Servers: pages[i], End: i == len(pages)-1}
			out, _ := r.AppendBinary(nil)
			reply(out, 10*time.Millisecond)
		})
		g := &game.Game{Name: "cstrike", Family: game.FamilySource}
		req, err := RequestFor(g, 0, false)
		if err != nil || !strings.Contains(req.Steam.Filter, `\gamedir\cstrike`) {
			t.Fatalf("request %+v, %v", req, err)
		}
		rec, sum := discover(t, n, Config{Masters: []Master{{Name: "steam", Addr: masterA, Request: req}},
			Prober: probe.Prober{Timeout: 50 * time.Millisecond, Attempts: 1}})
		want := []string{"0.0.0.0:0", srv(2).String(), srv(2).String(), srv(4).String()}
		if !slices.Equal(seeds, want) {
			t.Fatalf("seeds %v, want %v", seeds, want)
		}
		if m := rec.masters["steam"]; m.End != EndMarker || m.Listed != 5 || m.Queries != 4 || m.Packets != 3 {
			t.Fatalf("report %+v", m)
		}
		if sum.Listed != 5 || len(rec.probed) != 5 {
			t.Fatalf("summary %+v", sum)
		}
	})
}

func TestDiscover_Quake4ListHasNoEndMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		n.node(masterA, func(b []byte, reply func([]byte, time.Duration)) {
			req, err := q4.ParseGetServers(b)
			if err != nil || req.Protocol != q4.Quake4 || !req.ThirdParty {
				return
			}
			for i, l := range [][]netip.AddrPort{{srv(1), srv(2)}, {srv(3)}} {
				out, _ := (&q4.Servers{Servers: l}).AppendBinary(nil)
				reply(out, time.Duration(i+1)*50*time.Millisecond)
			}
		})
		var q4game *game.Game
		for _, g := range game.Builtin() {
			if g.Name == "Quake4" {
				q4game = g
			}
		}
		req, err := RequestFor(q4game, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		rec, _ := discover(t, n, Config{Masters: []Master{{Name: "q4", Addr: masterA, Request: req}},
			Prober: probe.Prober{Timeout: 50 * time.Millisecond, Attempts: 1}})
		if m := rec.masters["q4"]; m.End != EndQuiet || m.Listed != 3 || m.Took != 100*time.Millisecond+DefaultQuiet {
			t.Fatalf("report %+v", m)
		}
	})
}

func TestDiscover_ContextEndsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newNet()
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		rec := &recorder{masters: map[string]MasterReport{}, probed: map[netip.AddrPort]Server{}}
		_, err := Discover(ctx, n.conn(), n.conn(), Config{Masters: []Master{{Name: "A", Addr: masterA, Request: q3Request(t)}}}, rec.each)
		if err == nil || rec.masters["A"].End != EndStopped {
			t.Fatalf("err %v, report %+v", err, rec.masters["A"])
		}
	})
}

func TestLAN_FindsServersOnEveryPort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The "broadcast" goes to a loopback address; servers on two of
		// the four ports answer, one of them from another address as a
		// broadcast answer would.
		n := newNet()
		bcast := netip.MustParseAddr("127.0.0.1")
		n.node(netip.AddrPortFrom(bcast, 27960), q3Server("lan0", 2*time.Millisecond))
		other := netip.MustParseAddrPort("127.0.0.9:27962")
		var c *fakeConn
		n.node(netip.AddrPortFrom(bcast, 27962), func(b []byte, _ func([]byte, time.Duration)) {
			q3Server("lan2", 3*time.Millisecond)(b, func(r []byte, d time.Duration) { c.deliver(other, r, d) })
		})
		c = n.conn()
		var found []Server
		start := time.Now()
		counts, err := LAN(t.Context(), c, LANTargets(bcast), 0, func(s Server) { found = append(found, s) })
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 2 || found[0].Name != "lan0" || found[1].Addr != other || found[1].RTT != 3*time.Millisecond {
			t.Fatalf("found %+v", found)
		}
		if took := time.Since(start); took != DefaultLANWindow || counts.Sent != 4 {
			t.Fatalf("took %v, counts %+v", took, counts)
		}
	})
}
