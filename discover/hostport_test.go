package discover

import (
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/probe"
)

func TestParseHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3.4":          "1.2.3.4:27960",
		"1.2.3.4:28960":    "1.2.3.4:28960",
		"::1":              "[::1]:27960",
		"[::1]":            "[::1]:27960",
		"[2001:db8::1]:5":  "[2001:db8::1]:5",
		"[::ffff:1.2.3.4]": "1.2.3.4:27960",
	} {
		hp, err := ParseHostPort(in, 27960)
		if err != nil || hp.Literal.String() != want {
			t.Errorf("ParseHostPort(%q) = %v, %v; want %s", in, hp.Literal, err, want)
		}
	}
	if hp, err := ParseHostPort("example.org:27961", 27960); err != nil || hp.Host != "example.org" || hp.Port != 27961 {
		t.Errorf("host:port = %+v, %v", hp, err)
	}
	for _, bad := range []string{"1.2.3.4:99999", "host:port", "a:b:c", "", "[::1", "ho st"} {
		if _, err := ParseHostPort(bad, 27960); err == nil {
			t.Errorf("ParseHostPort(%q) accepted", bad)
		}
	}
}

// QueryHosts keeps the hosts' order: a host that does not resolve gets
// its error, unprobed; the others are probed.
func TestQueryHosts_ResultPerHostInOrder(t *testing.T) {
	var hosts []HostPort
	for _, s := range []string{"no-such-host.invalid", "127.0.0.1:1"} {
		h, err := ParseHostPort(s, 27960)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	p := &probe.Prober{Timeout: 100 * time.Millisecond, Attempts: 1}
	rs, err := QueryHosts(t.Context(), p, probe.Q3, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Err == nil || rs[0].Addr.IsValid() || rs[0].Game != "q3" ||
		rs[1].Addr != netip.MustParseAddrPort("127.0.0.1:1") || rs[1].Answered() || rs[1].Err == nil {
		t.Fatalf("%+v", rs)
	}
}
