package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

var (
	src4    = netip.MustParseAddrPort("192.0.2.1:27960")
	dst4    = netip.MustParseAddrPort("198.51.100.2:27950")
	src6    = netip.MustParseAddrPort("[2001:db8::1]:27960")
	dst6    = netip.MustParseAddrPort("[2001:db8::2]:27950")
	payload = []byte("\xff\xff\xff\xffheartbeat QuakeArena-1\n")
)

func sll(ip []byte, proto uint16) []byte {
	h := make([]byte, 16)
	binary.BigEndian.PutUint16(h[0:], 0)   // packet type: to us
	binary.BigEndian.PutUint16(h[2:], 772) // ARPHRD_LOOPBACK
	binary.BigEndian.PutUint16(h[14:], proto)
	return append(h, ip...)
}

func sll2(ip []byte, proto uint16) []byte {
	h := make([]byte, 20)
	binary.BigEndian.PutUint16(h[0:], proto)
	binary.BigEndian.PutUint32(h[4:], 1) // interface index
	return append(h, ip...)
}

func TestUDP_Links(t *testing.T) {
	ip4 := udpIPv4(src4, dst4, payload, nil)
	ip6 := udpIPv6(src6, dst6, payload)
	tests := []struct {
		name     string
		link     Link
		frame    []byte
		src, dst netip.AddrPort
	}{
		{"ethernet-ipv4", LinkEthernet, ether(etherIPv4, ip4), src4, dst4},
		{"ethernet-ipv6", LinkEthernet, ether(etherIPv6, ip6), src6, dst6},
		{"ethernet-vlan", LinkEthernet, ether(etherIPv4, ip4, 42), src4, dst4},
		{"ethernet-qinq", LinkEthernet, append(append([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x88, 0xa8, 0, 1}, 0x81, 0, 0, 2, 0x08, 0), ip4...), src4, dst4},
		{"ethernet-padding", LinkEthernet, append(ether(etherIPv4, ip4), 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef), src4, dst4},
		{"ipv4-options", LinkRaw, udpIPv4(src4, dst4, payload, []byte{1, 1, 1, 0, 1, 1, 1, 0}), src4, dst4},
		{"raw-ipv4", LinkRaw, ip4, src4, dst4},
		{"raw-ipv6", LinkRaw, ip6, src6, dst6},
		{"ipv4", LinkIPv4, ip4, src4, dst4},
		{"ipv6", LinkIPv6, ip6, src6, dst6},
		{"sll", LinkLinuxSLL, sll(ip4, etherIPv4), src4, dst4},
		{"sll2-ipv6", LinkLinuxSLL2, sll2(ip6, etherIPv6), src6, dst6},
		{"null-le", LinkNull, append([]byte{2, 0, 0, 0}, ip4...), src4, dst4},
		{"null-be-inet6-bsd", LinkNull, append([]byte{0, 0, 0, 30}, ip6...), src6, dst6},
		{"loop", LinkLoop, append([]byte{0, 0, 0, 2}, ip4...), src4, dst4},
		{"ipv6-ext", LinkIPv6, udpIPv6(src6, dst6, payload,
			extHdr{protoHopByHop, []byte{0, 0, 1, 4, 0, 0, 0, 0}},
			extHdr{protoDstOpts, []byte{0, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
			extHdr{protoRouting, []byte{0, 0, 0, 0, 0, 0, 0, 0}},
			extHdr{protoAH, []byte{0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}}), src6, dst6},
		{"ipv6-atomic-fragment", LinkIPv6, udpIPv6(src6, dst6, payload, extHdr{protoFragment, []byte{0, 0, 0, 0, 0, 0, 0, 1}}), src6, dst6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := UDP(tt.link, tt.frame)
			if err != nil {
				t.Fatal(err)
			}
			if d.Src != tt.src || d.Dst != tt.dst || !bytes.Equal(d.Payload, payload) || d.Length != len(payload) || d.Fragment {
				t.Errorf("got %v -> %v %q (length %d, fragment %v)", d.Src, d.Dst, d.Payload, d.Length, d.Fragment)
			}
			if !bytes.Equal(tt.frame[d.Offset:d.Offset+len(payload)], payload) {
				t.Errorf("Offset %d does not point at the payload", d.Offset)
			}
		})
	}
}

func TestUDP_Refusals(t *testing.T) {
	ip4 := udpIPv4(src4, dst4, payload, nil)
	tcp := append([]byte(nil), ip4...)
	tcp[9] = 6
	frag2 := append([]byte(nil), ip4...)
	binary.BigEndian.PutUint16(frag2[6:], 185) // offset 1480
	shortUDPLen := append([]byte(nil), ip4...)
	binary.BigEndian.PutUint16(shortUDPLen[24:], 7)
	longUDPLen := append([]byte(nil), ip4...)
	binary.BigEndian.PutUint16(longUDPLen[24:], uint16(len(ip4)))
	badIHL := append([]byte(nil), ip4...)
	badIHL[0] = 0x44
	totalLTIHL := append([]byte(nil), ip4...)
	binary.BigEndian.PutUint16(totalLTIHL[2:], 19)
	esp := udpIPv6(src6, dst6, payload)
	esp[6] = 50
	var deepExt []extHdr
	for range MaxIPv6ExtHeaders + 1 {
		deepExt = append(deepExt, extHdr{protoDstOpts, make([]byte, 8)})
	}
	ip6frag2 := udpIPv6(src6, dst6, payload, extHdr{protoFragment, []byte{0, 0, 0, 8 << 3, 0, 0, 0, 1}})
	vlans := append([]byte{}, make([]byte, 12)...)
	for range MaxVLANTags + 1 {
		vlans = append(vlans, 0x81, 0, 0, 1)
	}
	vlans = append(append(vlans, 0x08, 0), ip4...)

	tests := []struct {
		name  string
		link  Link
		frame []byte
		want  error
	}{
		{"arp", LinkEthernet, ether(0x0806, make([]byte, 28)), ErrNotUDP},
		{"802.3-length", LinkEthernet, ether(0x0040, ip4), ErrNotUDP},
		{"tcp", LinkRaw, tcp, ErrNotUDP},
		{"ipv6-esp", LinkRaw, esp, ErrNotUDP},
		{"ip-version-5", LinkRaw, append([]byte{0x50}, ip4[1:]...), ErrNotUDP},
		{"ipv6-on-ipv4-link", LinkIPv4, udpIPv6(src6, dst6, payload), ErrMalformed},
		{"ipv4-fragment-2", LinkRaw, frag2, ErrFragment},
		{"ipv6-fragment-2", LinkRaw, ip6frag2, ErrFragment},
		{"udp-length-7", LinkRaw, shortUDPLen, ErrMalformed},
		{"udp-length-beyond-ip", LinkRaw, longUDPLen, ErrMalformed},
		{"ihl-4", LinkRaw, badIHL, ErrMalformed},
		{"total-length-lt-ihl", LinkRaw, totalLTIHL, ErrMalformed},
		{"too-many-ext-headers", LinkRaw, udpIPv6(src6, dst6, payload, deepExt...), ErrMalformed},
		{"too-many-vlans", LinkEthernet, vlans, ErrMalformed},
		{"ethernet-without-ip", LinkEthernet, ether(etherIPv6, nil), ErrTruncated},
		{"unknown-link", Link(147), ip4, ErrUnsupportedLink},
		{"empty-raw", LinkRaw, nil, ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := UDP(tt.link, tt.frame); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// A first fragment holds the UDP header: its payload is returned, marked
// incomplete, with the datagram's declared length.
func TestUDP_FirstFragment(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, 3000)
	ip := udpIPv4(src4, dst4, big, nil)
	const fragData = 1480 // what an MTU 1500 first fragment carries after the IPv4 header
	first := append([]byte(nil), ip[:20+fragData]...)
	binary.BigEndian.PutUint16(first[2:], uint16(len(first)))
	binary.BigEndian.PutUint16(first[6:], 0x2000) // more fragments
	binary.BigEndian.PutUint16(first[10:], 0)
	binary.BigEndian.PutUint16(first[10:], ipv4Checksum(first[:20]))
	first = append(first, 0, 0, 0, 0) // trailing link padding is not payload
	d, err := UDP(LinkRaw, first)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Fragment || d.Length != len(big) || len(d.Payload) != fragData-8 {
		t.Errorf("fragment %v length %d present %d; want true %d %d", d.Fragment, d.Length, len(d.Payload), len(big), fragData-8)
	}

	ps, st, err := Parse(pcapFile(binary.LittleEndian, false, LinkRaw, record{frame: first}), PCAP)
	if err != nil || len(ps) != 1 || !ps[0].Fragment || ps[0].Complete() || st.Incomplete != 1 {
		t.Fatalf("Parse: %v %+v", err, st)
	}
	if g := ps[0].Gaps(); len(g) != 1 || g[0] != (Range{fragData - 8, len(big)}) {
		t.Errorf("Gaps = %v", g)
	}
}

// Every prefix of a frame fails with ErrTruncated while it ends inside the
// headers, and yields an incomplete datagram after.
func TestUDP_TruncatedPrefixes(t *testing.T) {
	frames := map[string]struct {
		link  Link
		frame []byte
	}{
		"ethernet-vlan-ipv4": {LinkEthernet, ether(etherIPv4, udpIPv4(src4, dst4, payload, []byte{1, 1, 1, 0}), 7)},
		"sll2-ipv6-ext":      {LinkLinuxSLL2, sll2(udpIPv6(src6, dst6, payload, extHdr{protoHopByHop, make([]byte, 8)}), etherIPv6)},
		"sll":                {LinkLinuxSLL, sll(udpIPv4(src4, dst4, payload, nil), etherIPv4)},
		"null":               {LinkNull, append([]byte{2, 0, 0, 0}, udpIPv4(src4, dst4, payload, nil)...)},
	}
	for name, f := range frames {
		full, err := UDP(f.link, f.frame)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for n := range len(f.frame) {
			d, err := UDP(f.link, f.frame[:n])
			switch {
			case n < full.Offset:
				if !errors.Is(err, ErrTruncated) {
					t.Errorf("%s[:%d]: err = %v, want ErrTruncated", name, n, err)
				}
			case err != nil:
				t.Errorf("%s[:%d]: %v", name, n, err)
			case d.Length != len(payload) || !bytes.Equal(d.Payload, payload[:n-full.Offset]):
				t.Errorf("%s[:%d]: length %d payload %q", name, n, d.Length, d.Payload)
			}
		}
	}
}

func TestGuessLink(t *testing.T) {
	ip4 := udpIPv4(src4, dst4, payload, nil)
	badSum := append([]byte(nil), ip4...)
	badSum[10] ^= 0xff
	for _, tt := range []struct {
		name string
		b    []byte
		want Link
	}{
		{"ethernet", ether(etherIPv4, ip4), LinkEthernet},
		{"vlan", ether(etherIPv4, ip4, 5), LinkEthernet},
		{"ipv4", ip4, LinkIPv4},
		{"ipv6", udpIPv6(src6, dst6, payload), LinkIPv6},
		{"ipv4-bad-checksum", badSum, LinkNone},
		{"q3-payload", payload, LinkNone},
		{"q4-payload", []byte("\xff\xffgetServers\x00\x55\x00\x02\x80\x00\x00\x00\x00"), LinkNone},
		{"ut3-reply", []byte("\x09\x10\x20\x30\x40-1234567\x00"), LinkNone},
	} {
		if got, _ := guessLink(tt.b); got != tt.want {
			t.Errorf("%s: guessLink = %v, want %v", tt.name, got, tt.want)
		}
	}
}
