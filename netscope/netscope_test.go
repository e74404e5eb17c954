package netscope

import (
	"net/netip"
	"testing"
)

func TestOf(t *testing.T) {
	for addr, want := range map[string]Scope{
		"8.8.8.8":              Public,
		"1.1.1.1":              Public,
		"2a00:1450:4001::200e": Public,
		"0.0.0.0":              Unspecified,
		"0.1.2.3":              Unspecified,
		"::":                   Unspecified,
		"127.0.0.1":            Loopback,
		"127.255.0.9":          Loopback,
		"::1":                  Loopback,
		"::ffff:127.0.0.1":     Loopback,
		"10.1.2.3":             Private,
		"172.16.0.1":           Private,
		"172.31.255.255":       Private,
		"172.32.0.1":           Public,
		"192.168.1.1":          Private,
		"100.64.0.1":           Private,
		"100.128.0.1":          Public,
		"fd12:3456::1":         Private,
		"fec0::1":              Private,
		"169.254.1.1":          LinkLocal,
		"fe80::1":              LinkLocal,
		"fe80::1%eth0":         LinkLocal,
		"224.0.0.1":            Multicast,
		"239.255.255.250":      Multicast,
		"ff02::1":              Multicast,
		"192.0.2.1":            Documentation,
		"198.51.100.7":         Documentation,
		"203.0.113.200":        Documentation,
		"2001:db8::1":          Documentation,
		"3fff::1":              Documentation,
		"255.255.255.255":      Reserved,
		"240.0.0.1":            Reserved,
		"198.18.0.1":           Reserved,
		"198.19.255.1":         Reserved,
		"192.0.0.8":            Reserved,
		"100::1":               Reserved,
		"::7f00:1":             Reserved, // IPv4-compatible, deprecated
		"64:ff9b::7f00:1":      Loopback, // NAT64 of 127.0.0.1
		"64:ff9b::808:808":     Public,   // NAT64 of 8.8.8.8
		"2002:c0a8:101::1":     Private,  // 6to4 of 192.168.1.1
		"2002:808:808::1":      Public,
	} {
		if got := Of(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Of(%s) = %v, want %v", addr, got, want)
		}
	}
	if got := Of(netip.Addr{}); got != Unspecified {
		t.Errorf("Of(zero) = %v, want unspecified", got)
	}
}

func TestRefused_LocalEntriesFromAPublicMaster(t *testing.T) {
	public := netip.MustParseAddrPort("203.0.114.5:27950")
	for server, want := range map[string]Reason{
		"8.8.8.8:27960":          "",
		"127.0.0.1:27960":        "loopback",
		"[::1]:27960":            "loopback",
		"[::ffff:10.0.0.1]:1":    "private",
		"192.168.0.10:27960":     "private",
		"169.254.9.9:27960":      "link-local",
		"224.0.0.251:5353":       "multicast",
		"0.0.0.0:27960":          "unspecified",
		"192.0.2.1:27960":        "documentation",
		"255.255.255.255:27960":  "reserved",
		"203.0.114.5:27960":      ReasonMaster,
		"203.0.114.5:27950":      ReasonMaster,
		"[::ffff:203.0.114.5]:1": ReasonMaster,
		"203.0.114.6:27960":      "",
	} {
		if got := Refused(public, netip.MustParseAddrPort(server)); got != want {
			t.Errorf("Refused(public master, %s) = %q, want %q", server, got, want)
		}
	}
}

func TestRefused_LocalMasterListsAnything(t *testing.T) {
	for _, master := range []string{"127.0.0.1:27950", "192.168.1.2:27950", "[fe80::1%eth0]:27950", "192.0.2.7:27950"} {
		m := netip.MustParseAddrPort(master)
		for _, server := range []string{"127.0.0.1:27960", "192.168.1.3:27960", "8.8.8.8:27960", master} {
			if got := Refused(m, netip.MustParseAddrPort(server)); got != "" {
				t.Errorf("Refused(%s, %s) = %q, want allowed (a LAN master)", master, server, got)
			}
		}
	}
}

func TestScopeNames(t *testing.T) {
	seen := map[string]bool{}
	for s := Public; s <= Reserved; s++ {
		n := s.String()
		if n == "unknown" || seen[n] {
			t.Errorf("scope %d named %q", s, n)
		}
		seen[n] = true
		if s.Local() != (s != Public) {
			t.Errorf("%v.Local() = %v", s, s.Local())
		}
	}
	if Scope(200).String() != "unknown" {
		t.Error("an out-of-range scope has a name")
	}
}
