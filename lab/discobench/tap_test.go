package discobench

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// ipv4UDP builds an IPv4 UDP packet as the tap reads it.
func ipv4UDP(src, dst netip.AddrPort, payload []byte) []byte {
	b := make([]byte, 28+len(payload))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8], b[9] = 64, 17
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	binary.BigEndian.PutUint16(b[20:], src.Port())
	binary.BigEndian.PutUint16(b[22:], dst.Port())
	binary.BigEndian.PutUint16(b[24:], uint16(8+len(payload)))
	copy(b[28:], payload)
	return b
}

func TestClassify_DirectionsShapesAndSegments(t *testing.T) {
	ap := netip.MustParseAddrPort
	master, client, cm := ap("127.0.0.1:27950"), ap("127.0.0.1:40000"), ap("127.0.0.1:40001")
	srv := map[netip.AddrPort]bool{ap("127.1.0.1:27960"): true, ap("127.1.0.2:27960"): true}
	var pkts []tapped
	add := func(src, dst netip.AddrPort, payload string, seg int) {
		p, ok := parseTapped(ipv4UDP(src, dst, []byte(payload)))
		if !ok {
			t.Fatalf("parseTapped refused %q", payload)
		}
		p.segment = seg
		pkts = append(pkts, p)
	}
	add(cm, master, "\xff\xff\xff\xffgetservers 71 empty full", 0)
	add(master, cm, string(make([]byte, 250)), 100) // one UDP_SEGMENT send: 100+100+50
	add(client, ap("127.1.0.1:27960"), "\xff\xff\xff\xffgetinfo 1ITGmfJN2wC", 0)
	add(client, ap("127.1.0.2:27960"), "\xff\xff\xff\xffgetinfo 1ITGmfJN2wD", 0)
	add(client, ap("127.1.0.2:27960"), "\xff\xff\xff\xffgetinfo\n", 0)
	add(ap("127.1.0.1:27960"), client, "\xff\xff\xff\xffinfoResponse\n\\a\\b", 0)
	// Not the client's: the master's verification, a heartbeat, strangers.
	add(master, ap("127.1.0.1:27960"), "\xff\xff\xff\xffgetinfo abcdefghij", 0)
	add(ap("127.1.0.1:27960"), master, "\xff\xff\xff\xffheartbeat QuakeArena-1\n", 0)
	add(ap("127.9.9.9:1"), ap("127.9.9.9:2"), "other", 0)

	tr := classify(pkts, master, func(a netip.AddrPort) bool { return srv[a] })
	want := Traffic{
		ToServers:   Flow{3, 23 + 23 + 12},
		FromServers: Flow{1, 21},
		ToMaster:    Flow{1, 28},
		FromMaster:  Flow{3, 250},
	}
	if tr.ToServers != want.ToServers || tr.FromServers != want.FromServers || tr.ToMaster != want.ToMaster || tr.FromMaster != want.FromMaster {
		t.Fatalf("traffic %+v, want %+v", tr, want)
	}
	if tr.FromMaster.Wire() != 250+3*HeaderBytes || tr.Total().Datagrams != 8 {
		t.Errorf("wire %d, total %+v", tr.FromMaster.Wire(), tr.Total())
	}
	if len(tr.Requests) != 2 || tr.Requests[0] != (Shape{"getinfo <11>", 23, 2}) || tr.Requests[1] != (Shape{`getinfo\n`, 12, 1}) {
		t.Errorf("requests %+v", tr.Requests)
	}
}

func TestParseTapped_RefusesWhatIsNotOneUDPDatagram(t *testing.T) {
	good := ipv4UDP(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.2:2"), []byte("hi"))
	if p, ok := parseTapped(good); !ok || p.size != 2 || string(p.head) != "hi" {
		t.Fatalf("%+v, %v", p, ok)
	}
	for name, mut := range map[string]func(b []byte) []byte{
		"short":          func(b []byte) []byte { return b[:27] },
		"ipv6":           func(b []byte) []byte { b[0] = 0x65; return b },
		"tcp":            func(b []byte) []byte { b[9] = 6; return b },
		"ihl 4":          func(b []byte) []byte { b[0] = 0x44; return b },
		"later fragment": func(b []byte) []byte { b[7] = 1; return b },
		"udp length 7":   func(b []byte) []byte { b[25] = 7; return b },
	} {
		if p, ok := parseTapped(mut(append([]byte(nil), good...))); ok {
			t.Errorf("%s: accepted %+v", name, p)
		}
	}
}

func FuzzParseTapped(f *testing.F) {
	f.Add(ipv4UDP(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.2:2"), []byte("\xff\xff\xff\xffgetinfo x")))
	f.Add([]byte{0x4f, 0, 0, 0, 0, 0, 0, 0, 0, 17})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok := parseTapped(b)
		if !ok {
			return
		}
		if p.size < 0 || len(p.head) > len(b) {
			t.Fatalf("%+v from %d bytes", p, len(b))
		}
		_ = shapeOf(p.head, p.size)
		var f Flow
		p.count(&f)
		if f.Datagrams != 1 || f.Payload != uint64(p.size) {
			t.Fatalf("flow %+v for %+v", f, p)
		}
	})
}
