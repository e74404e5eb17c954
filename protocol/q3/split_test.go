package q3

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
)

// servers4 returns n distinct IPv4 servers.
func servers4(n int) []netip.AddrPort {
	out := make([]netip.AddrPort, n)
	for i := range out {
		out[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), 27960)
	}
	return out
}

// collect parses every packet and returns the servers in order, checking
// the end markers: want on the packets that must carry it.
func collect(t *testing.T, packets [][]byte, ext bool, end End, onEvery bool) []netip.AddrPort {
	t.Helper()
	var all []netip.AddrPort
	for i, p := range packets {
		m, err := Parse(p)
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		r := m.(ServersResponse)
		if r.Ext != ext {
			t.Fatalf("packet %d: Ext %v", i, r.Ext)
		}
		wantEnd := EndNone
		if onEvery || i == len(packets)-1 {
			wantEnd = end
		}
		if r.End != wantEnd {
			t.Fatalf("packet %d of %d: End %v, want %v", i, len(packets), r.End, wantEnd)
		}
		all = append(all, r.Servers...)
	}
	return all
}

func TestEncodeServersResponses_IDMaster112(t *testing.T) {
	in := servers4(250)
	packets, err := EncodeServersResponses(in, SplitOptions{End: EndEOT, EndOnEvery: true, MaxEntries: IDMasterEntriesPerPacket})
	if err != nil {
		t.Fatal(err)
	}
	if len(packets) != 3 {
		t.Fatalf("%d packets, want 3 (112+112+26)", len(packets))
	}
	// 4 prefix + 18 word + 112*7 entries + 7 EOT.
	if got, want := len(packets[0]), 4+18+112*7+7; got != want {
		t.Errorf("full packet is %d bytes, want %d", got, want)
	}
	if got := collect(t, packets, false, EndEOT, true); !reflect.DeepEqual(got, in) {
		t.Errorf("servers differ after the split")
	}
}

func TestEncodeServersResponses_ByteBudget(t *testing.T) {
	in := servers4(1000)
	packets, err := EncodeServersResponses(in, SplitOptions{End: EndEOT})
	if err != nil {
		t.Fatal(err)
	}
	// dpmaster's 1400 bytes: (1400-22-7)/7 = 195 entries a packet.
	perPacket := (DefaultMaxBytes - 4 - 18 - 7) / 7
	if want := (len(in) + perPacket - 1) / perPacket; len(packets) != want {
		t.Fatalf("%d packets, want %d", len(packets), want)
	}
	for i, p := range packets {
		if len(p) > DefaultMaxBytes {
			t.Errorf("packet %d is %d bytes, over %d", i, len(p), DefaultMaxBytes)
		}
		if i < len(packets)-1 && len(p)+7+7 <= DefaultMaxBytes {
			t.Errorf("packet %d is %d bytes: another entry and EOT would have fit", i, len(p))
		}
	}
	if got := collect(t, packets, false, EndEOT, false); !reflect.DeepEqual(got, in) {
		t.Errorf("servers differ after the split")
	}
}

func TestEncodeServersResponses_ExtMixed(t *testing.T) {
	var in []netip.AddrPort
	for i := 0; i < 300; i++ {
		if i%3 == 0 {
			in = append(in, netip.AddrPortFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)}), 27960))
		} else {
			in = append(in, netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, byte(i >> 8), byte(i)}), 27961))
		}
	}
	const budget = 512
	packets, err := EncodeServersResponses(in, SplitOptions{Ext: true, End: EndEOT, MaxBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range packets {
		if len(p) > budget {
			t.Errorf("packet %d is %d bytes, over %d", i, len(p), budget)
		}
	}
	if got := collect(t, packets, true, EndEOT, false); !reflect.DeepEqual(got, in) {
		t.Errorf("servers differ after the split")
	}
}

func TestEncodeServersResponses_Empty(t *testing.T) {
	packets, err := EncodeServersResponses(nil, SplitOptions{End: EndEOT})
	if err != nil {
		t.Fatal(err)
	}
	if len(packets) != 1 || string(packets[0]) != Prefix+"getserversResponse\\EOT\x00\x00\x00" {
		t.Fatalf("empty list gave %q, want one packet with only EOT", packets)
	}
}

func TestEncodeServersResponses_Refusals(t *testing.T) {
	good := servers4(3)
	for _, tc := range []struct {
		name    string
		servers []netip.AddrPort
		opt     SplitOptions
	}{
		{"port-0", append(good, netip.MustParseAddrPort("1.2.3.4:0")), SplitOptions{}},
		{"ipv6-plain", append(good, netip.MustParseAddrPort("[2001:db8::1]:1")), SplitOptions{}},
		{"invalid", append(good, netip.AddrPort{}), SplitOptions{}},
		{"budget-too-small", good, SplitOptions{End: EndEOT, MaxBytes: 4 + 18 + 7 + 6}},
		{"negative-entries", good, SplitOptions{MaxEntries: -1}},
		{"bad-end", good, SplitOptions{End: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := EncodeServersResponses(tc.servers, tc.opt); !errors.Is(err, ErrInvalid) || p != nil {
				t.Fatalf("EncodeServersResponses = %d packets, %v; want ErrInvalid", len(p), err)
			}
		})
	}
	// The smallest budget that works holds one entry and the marker.
	p, err := EncodeServersResponses(good, SplitOptions{End: EndEOT, MaxBytes: 4 + 18 + 7 + 7})
	if err != nil || len(p) != 3 {
		t.Fatalf("tightest budget: %d packets, %v; want 3", len(p), err)
	}
}
