package loadgen

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/scout-discovery/scout/protocol/q3"
)

func servers(n int) []netip.AddrPort {
	out := make([]netip.AddrPort, n)
	for i := range out {
		out[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), uint16(27960+i%7))
	}
	return out
}

// TestCountEntries_AgreesWithParse checks the allocation-free counter
// against q3.Parse, the reference decoder, on the packets q3 encodes the
// way dpmaster splits them (1400 bytes, EOT on the last packet only).
func TestCountEntries_AgreesWithParse(t *testing.T) {
	for _, n := range []int{0, 1, 196, 197, 392, 5000} {
		pkts, err := q3.EncodeServersResponses(servers(n), q3.SplitOptions{End: q3.EndEOT, MaxBytes: 1400})
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for k, p := range pkts {
			got, eot, err := countEntries(p)
			if err != nil {
				t.Fatalf("n=%d packet %d: %v", n, k, err)
			}
			m, err := q3.Parse(p)
			if err != nil {
				t.Fatalf("n=%d packet %d: reference: %v", n, k, err)
			}
			r := m.(q3.ServersResponse)
			if got != len(r.Servers) || eot != (r.End == q3.EndEOT) {
				t.Errorf("n=%d packet %d: count %d eot %v, reference %d %v", n, k, got, eot, len(r.Servers), r.End)
			}
			if eot != (k == len(pkts)-1) {
				t.Errorf("n=%d packet %d of %d: eot %v", n, k, len(pkts), eot)
			}
			total += got
		}
		if total != n {
			t.Errorf("n=%d: counted %d", n, total)
		}
	}
}

// TestCountEntries_FullListIs26Packets pins the size of dpmaster's answer: 5,000 servers in 26 packets, 35.6 KB.
func TestCountEntries_FullListIs26Packets(t *testing.T) {
	pkts, err := q3.EncodeServersResponses(servers(5000), q3.SplitOptions{End: q3.EndEOT, MaxBytes: 1400})
	if err != nil {
		t.Fatal(err)
	}
	bytes := 0
	for _, p := range pkts {
		bytes += len(p)
	}
	if len(pkts) != 26 || bytes != 35579 {
		t.Errorf("%d packets, %d bytes; want 26, 35579", len(pkts), bytes)
	}
}

func TestCountEntries_EveryCutFailsOrCountsLess(t *testing.T) {
	pkts, err := q3.EncodeServersResponses(servers(3), q3.SplitOptions{End: q3.EndEOT})
	if err != nil {
		t.Fatal(err)
	}
	p := pkts[0]
	for cut := range len(p) {
		n, eot, err := countEntries(p[:cut])
		if eot {
			t.Errorf("cut %d: EOT reported", cut)
		}
		if cut < len(responseHeader) && !errors.Is(err, errNotList) {
			t.Errorf("cut %d: err %v, want errNotList", cut, err)
		}
		if n > 3 {
			t.Errorf("cut %d: %d entries", cut, n)
		}
	}
}

func TestCountEntries_Hostile(t *testing.T) {
	for name, p := range map[string]string{
		"other command":   q3.Prefix + "getserversExtResponse\\\x01\x02\x03\x04\x00\x01",
		"no prefix":       "getserversResponse\\EOT\x00\x00\x00",
		"bytes after EOT": q3.Prefix + "getserversResponse\\EOT\x00\x00\x00junk",
		"wrong separator": q3.Prefix + "getserversResponse/\x01\x02\x03\x04\x00\x01",
		"cut entry":       q3.Prefix + "getserversResponse\\\x01\x02\x03",
	} {
		if _, _, err := countEntries([]byte(p)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestLayout(t *testing.T) {
	got, err := Layout(netip.MustParseAddr("127.16.0.254"), 27960, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.16.0.254:27960", "127.16.0.254:27961", "127.16.1.1:27960", "127.16.1.1:27961", "127.16.1.2:27960"}
	for i, w := range want {
		if got[i].String() != w {
			t.Errorf("address %d = %v, want %s (skipping .255 and .0)", i, got[i], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d addresses, want %d", len(got), len(want))
	}
	for name, f := range map[string]func() error{
		"not loopback":           func() error { _, err := Layout(netip.MustParseAddr("10.0.0.1"), 1, 1, 1); return err },
		"IPv6":                   func() error { _, err := Layout(netip.MustParseAddr("::1"), 1, 1, 1); return err },
		"leaves 127/8":           func() error { _, err := Layout(netip.MustParseAddr("127.255.255.253"), 1, 10, 1); return err },
		"ports past 65535":       func() error { _, err := Layout(netip.MustParseAddr("127.0.0.1"), 65535, 2, 2); return err },
		"port 0 shared":          func() error { _, err := Layout(netip.MustParseAddr("127.0.0.1"), 0, 2, 2); return err },
		"no servers per address": func() error { _, err := Layout(netip.MustParseAddr("127.0.0.1"), 1, 2, 0); return err },
	} {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// BenchmarkCountEntries counts one 195-entry packet of a 5,000-server
// answer, the load generator's inner loop.
func BenchmarkCountEntries(b *testing.B) {
	pkts, err := q3.EncodeServersResponses(servers(5000), q3.SplitOptions{End: q3.EndEOT, EndOnEvery: true, MaxBytes: 1400})
	if err != nil {
		b.Fatal(err)
	}
	p := pkts[0]
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if n, _, err := countEntries(p); err != nil || n != 195 {
			b.Fatal(n, err)
		}
	}
}

// Sources spread over /16s: none shares a /24, each /16 holds its share.
func TestSpreadLayout(t *testing.T) {
	got, err := SpreadLayout(netip.MustParseAddr("127.64.0.1"), 256, 128)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 256 || got[0].String() != "127.64.0.1:0" || got[1].String() != "127.65.0.1:0" || got[128].String() != "127.64.1.1:0" || got[255].String() != "127.191.1.1:0" {
		t.Errorf("got %v ... %v", got[:2], got[len(got)-1])
	}
	nets24, nets16 := map[netip.Prefix]int{}, map[netip.Prefix]int{}
	for _, a := range got {
		p24, _ := a.Addr().Prefix(24)
		p16, _ := a.Addr().Prefix(16)
		nets24[p24]++
		nets16[p16]++
	}
	if len(nets24) != 256 || len(nets16) != 128 {
		t.Errorf("%d /24s and %d /16s, want 256 and 128", len(nets24), len(nets16))
	}
	if _, err := SpreadLayout(netip.MustParseAddr("127.200.0.1"), 256, 128); err == nil {
		t.Error("sources past 127.255.0.0/16 accepted")
	}
	if l, _ := SpreadLayout(netip.MustParseAddr("127.64.0.1"), 3, 1); len(l) != 3 || l[2].String() != "127.64.0.3:0" {
		t.Errorf("one /16: %v", l)
	}
}
