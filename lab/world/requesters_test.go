package world

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Config.Requesters is refused unless each requester is an unmapped
// loopback IP with one valid link per server.
func TestListen_RequestersValidated(t *testing.T) {
	w := World{Version: 1, Seed: 1, Servers: []Server{{
		Public:   netip.MustParseAddrPort("5.9.0.1:27960"),
		Loopback: netip.MustParseAddrPort("127.4.250.1:0"),
		Game:     Q3A, Hostname: "a", Map: "q3dm17", MaxClients: 8,
	}}}
	ok := []Link{{RTT: Duration(20 * time.Millisecond)}}
	for name, r := range map[string]map[netip.Addr][]Link{
		"not loopback":   {netip.MustParseAddr("192.0.2.1"): ok},
		"mapped":         {netip.MustParseAddr("::ffff:127.0.0.1"): ok},
		"too few links":  {netip.MustParseAddr("127.0.0.1"): nil},
		"too many links": {netip.MustParseAddr("127.0.0.1"): append(ok, ok...)},
		"negative rtt":   {netip.MustParseAddr("127.0.0.1"): {{RTT: -1}}},
		"loss above 1":   {netip.MustParseAddr("127.0.0.1"): {{Loss: 1.5}}},
	} {
		if e, err := Listen(w, Config{Requesters: r}); err == nil || !strings.Contains(err.Error(), "requester") {
			if e != nil {
				e.socks.close()
			}
			t.Errorf("%s: %v", name, err)
		}
	}
	e, err := Listen(w, Config{Requesters: map[netip.Addr][]Link{netip.MustParseAddr("127.0.0.1"): ok}})
	if err != nil {
		t.Fatal(err)
	}
	e.socks.close()
}
