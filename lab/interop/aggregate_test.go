package interop

import (
	"fmt"
	"net/netip"
	"os"
	"testing"

	"github.com/scout-discovery/scout/internal/masterproc"
	"github.com/scout-discovery/scout/internal/peer"
)

// TestAggregate_RealServersThroughAnUpstream: Debian's OpenArena server
// (two bots added with +addbot) and a Nexuiz (DarkPlaces) server
// heartbeat to a first scout master only; a second scout master, which
// has the first as its upstream (--aggregate), lists both, each checked
// with its own challenge, and counts the bots as bots; a third, which has
// the second as its scout peer (--scout-peer), lists both too; quakestat
// gets both from the second master's lists.
func TestAggregate_RealServersThroughAnUpstream(t *testing.T) {
	peer.Need(t, peer.OpenArenaServer, "apt-get install openarena-server")
	peer.Need(t, peer.NexuizServer, "apt-get install nexuiz-server")
	peer.Need(t, peer.Quakestat, "apt-get install qstat")
	bin := masterproc.Binary(t)

	up := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), peer.FreeUDPPort(t))
	a := masterproc.Start(t, bin, "-l", up.String(), "--list-loopback", "--motd-port", "0")
	a.WaitLog(t, "listening", "port", "master")
	oa := peer.StartOpenArena(t, peer.OpenArenaConfig{Master: up.String(), Hostname: "aggregated-oa", Bots: []string{"sarge", "grism"}})
	nx := peer.StartNexuiz(t, peer.NexuizConfig{Master: up.String(), Hostname: "aggregated-nexuiz"})
	waitListed(t, a, oa.Addr, nx.Addr)

	httpPort := peer.FreeTCPPort(t)
	b := masterproc.Start(t, bin, "-l", "127.0.0.1:0", "--list-loopback", "--motd-port", "0",
		"--http", fmt.Sprintf("127.0.0.1:%d", httpPort), "--aggregate", up.String(), "q3", "Nexuiz", "name=first")
	second := b.Addr(t, "master")
	waitListed(t, b, oa.Addr, nx.Addr)

	// The second master's API: the OpenArena server's two bots, and
	// where it learned of each.
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	var d struct {
		Players, Humans, Bots int
		Game                  string
		Sources               []struct{ Source string }
	}
	masterproc.GetJSON(t, base+"/api/v1/servers/"+oa.Addr.String(), &d)
	if d.Players != 2 || d.Bots != 2 || d.Humans != 0 || len(d.Sources) != 1 || d.Sources[0].Source != "first" {
		t.Errorf("OpenArena through the upstream: %+v", d)
	}
	masterproc.GetJSON(t, base+"/api/v1/servers/"+nx.Addr.String(), &d)
	if d.Game != "Nexuiz" || len(d.Sources) != 1 {
		t.Errorf("Nexuiz through the upstream: %+v", d)
	}
	var ups struct {
		Upstreams []struct {
			Name               string
			State              string
			Reported, Verified int
		}
	}
	masterproc.GetJSON(t, base+"/api/v1/upstreams", &ups)
	if len(ups.Upstreams) != 1 || ups.Upstreams[0].State != "up" || ups.Upstreams[0].Reported != 2 || ups.Upstreams[0].Verified != 2 {
		t.Errorf("upstreams %+v", ups)
	}

	// A third scout master, not in a fleet with either, has the second as
	// its scout peer: it fetches the second's verified list over HTTP
	// and checks each server itself.
	c := masterproc.Start(t, bin, "-l", "127.0.0.1:0", "--list-loopback", "--motd-port", "0", "--scout-peer", base)
	waitListed(t, c, oa.Addr, nx.Addr)

	// A game client's view of the second master: quakestat lists each.
	for _, c := range []struct {
		kind string
		want netip.AddrPort
	}{{"-q3m,71", oa.Addr}, {"-nexuizm", nx.Addr}} {
		found := false
		for _, s := range peer.RunQuakestat(t, c.kind, second.String()) {
			found = found || s.Address == c.want.String()
		}
		if !found {
			t.Errorf("quakestat %s %v does not list %v", c.kind, second, c.want)
		}
	}
}

// waitListed waits for master m's "listed" line of each server.
func waitListed(t *testing.T, m *masterproc.Process, servers ...netip.AddrPort) {
	t.Helper()
	left := map[string]bool{}
	for _, s := range servers {
		left[s.String()] = true
	}
	for len(left) > 0 {
		line := m.WaitLog(t, "listed")
		delete(left, fmt.Sprint(line["server"]))
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	masterproc.Cleanup()
	os.Exit(code)
}
