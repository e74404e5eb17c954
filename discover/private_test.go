package discover

import (
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// A public master and the entries it may list: public servers are
// probed; local ones and the master's own host are not, unless the run
// allows them.
var (
	publicMaster = netip.MustParseAddrPort("203.0.114.1:27950")
	publicGood   = []netip.AddrPort{
		netip.MustParseAddrPort("203.0.114.50:27960"),
		netip.MustParseAddrPort("[2a00:1450::1]:27960"),
	}
	localEntries = map[netip.AddrPort]string{
		netip.MustParseAddrPort("127.0.0.1:27960"):     "loopback",
		netip.MustParseAddrPort("127.0.0.1:1"):         "loopback",
		netip.MustParseAddrPort("10.0.0.1:27960"):      "private",
		netip.MustParseAddrPort("192.168.1.1:27960"):   "private",
		netip.MustParseAddrPort("[fd00::1]:27960"):     "private",
		netip.MustParseAddrPort("169.254.1.1:27960"):   "link-local",
		netip.MustParseAddrPort("192.0.2.5:27960"):     "documentation",
		netip.MustParseAddrPort("198.18.0.1:27960"):    "reserved",
		netip.MustParseAddrPort("203.0.114.1:27961"):   "master",
		netip.MustParseAddrPort("[::1]:27960"):         "loopback",
		netip.MustParseAddrPort("[::ffff:10.1.1.1]:1"): "private",
	}
)

func localList() []netip.AddrPort {
	list := []netip.AddrPort{publicGood[0]}
	for ap := range localEntries {
		list = append(list, ap)
	}
	slices.SortFunc(list[1:], func(a, b netip.AddrPort) int { return a.Compare(b) })
	return append(list, publicGood[1])
}

func TestMasterReply_LocalEntriesFromAPublicMasterNotProbed(t *testing.T) {
	req := q3Request(t)
	req.Q3.Ext = true
	s := coreOf(t, Config{Masters: []Master{{Name: "public", Addr: publicMaster, Request: req}}})
	s.receive(at(10*time.Millisecond), publicMaster, q3Entries(localList(), true))
	if got := addrs(s.due(at(10 * time.Millisecond))); !slices.Equal(got, publicGood) {
		t.Errorf("probed %v, want only %v", got, publicGood)
	}
	r := s.masters[0].rep
	if r.Listed != len(localEntries)+2 || r.Refused != len(localEntries) || r.Unusable != 0 {
		t.Errorf("report: %d listed, %d refused, %d unusable; want %d, %d, 0", r.Listed, r.Refused, r.Unusable, len(localEntries)+2, len(localEntries))
	}
	want := map[string]int{}
	for _, why := range localEntries {
		want[why]++
	}
	if got := s.summary(at(time.Second)).Refused; !maps.Equal(got, want) {
		t.Errorf("summary refused %v, want %v", got, want)
	}
}

// TestMasterReply_RefusedServerCountedOnce: a local server listed twice
// by one master (under two forms) and again by a second public master is
// one server not probed, in the reports and the summary alike.
func TestMasterReply_RefusedServerCountedOnce(t *testing.T) {
	req := q3Request(t)
	req.Q3.Ext = true
	other := netip.MustParseAddrPort("198.51.101.1:27950")
	s := coreOf(t, Config{Masters: []Master{{Name: "public", Addr: publicMaster, Request: req}, {Name: "other", Addr: other, Request: req}}})
	local := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:27960"), netip.MustParseAddrPort("10.0.0.1:27960")}
	s.receive(at(10*time.Millisecond), publicMaster, q3Entries(local, false))
	s.receive(at(11*time.Millisecond), publicMaster, q3Entries(local, true))
	s.receive(at(12*time.Millisecond), other, q3Entries(local, true))
	if a, b := s.masters[0].rep, s.masters[1].rep; a.Listed != 4 || a.Refused != 2 || b.Listed != 2 || b.Refused != 0 {
		t.Errorf("reports: %d listed, %d refused; %d listed, %d refused; want 4, 2; 2, 0 (as New)", a.Listed, a.Refused, b.Listed, b.Refused)
	}
	if got, want := s.summary(at(time.Second)).Refused, map[string]int{"loopback": 1, "private": 1}; !maps.Equal(got, want) {
		t.Errorf("summary refused %v, want %v", got, want)
	}
}

func TestMasterReply_AllowLocalProbesThem(t *testing.T) {
	req := q3Request(t)
	req.Q3.Ext = true
	s := coreOf(t, Config{AllowLocal: true, Masters: []Master{{Name: "public", Addr: publicMaster, Request: req}}})
	list := localList()
	s.receive(at(10*time.Millisecond), publicMaster, q3Entries(list, true))
	got := addrs(s.due(at(10 * time.Millisecond)))
	if len(got) != len(list) {
		t.Errorf("with AllowLocal, probed %d of %d entries: %v", len(got), len(list), got)
	}
	if r := s.masters[0].rep; r.Refused != 0 || s.summary(at(time.Second)).Refused != nil {
		t.Errorf("with AllowLocal, %d refused", r.Refused)
	}
}

func TestMasterReply_LANMasterListsLocalServers(t *testing.T) {
	req := q3Request(t)
	req.Q3.Ext = true
	lan := netip.MustParseAddrPort("192.168.1.2:27950")
	list := []netip.AddrPort{netip.MustParseAddrPort("192.168.1.3:27960"), netip.MustParseAddrPort("127.0.0.1:27960"),
		netip.MustParseAddrPort("192.168.1.2:27960"), netip.MustParseAddrPort("203.0.114.50:27960")}
	s := coreOf(t, Config{Masters: []Master{{Name: "lan", Addr: lan, Request: req}}})
	s.receive(at(10*time.Millisecond), lan, q3Entries(list, true))
	if got := addrs(s.due(at(10 * time.Millisecond))); !slices.Equal(got, list) {
		t.Errorf("a LAN master's list: probed %v, want %v", got, list)
	}
}
