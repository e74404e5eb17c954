package capture

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// seedAll adds every testdata file and the synthetic captures to the corpus.
func seedAll(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add(pcapFile(binary.BigEndian, true, LinkEthernet, mixed()...))
	f.Add(pcapFile(binary.LittleEndian, false, LinkLinuxSLL2, record{frame: sll2(udpIPv6(src6, dst6, payload), etherIPv6)}))
	f.Add(ngMixed(binary.BigEndian))
	f.Add([]byte("ff ff ff ff 0a\n\n0x45 0x00\n"))
}

// checkPackets checks the invariants every packet must keep.
func checkPackets(t *testing.T, ps []Packet, st Stats) {
	if len(ps) != st.Packets || len(ps) > MaxPackets {
		t.Fatalf("%d packets, stats say %d", len(ps), st.Packets)
	}
	for i, p := range ps {
		if p.Index != i {
			t.Fatalf("packet %d has Index %d", i, p.Index)
		}
		if len(p.Payload) > p.Length {
			t.Fatalf("%s: %d bytes present, %d declared", p.Source, len(p.Payload), p.Length)
		}
		at := len(p.Payload)
		for _, pc := range p.Rest {
			if pc.Offset < at || pc.Offset+len(pc.Data) > p.Length || len(pc.Data) == 0 {
				t.Fatalf("%s: piece [%d,%d) out of order or beyond %d", p.Source, pc.Offset, pc.Offset+len(pc.Data), p.Length)
			}
			at = pc.Offset + len(pc.Data)
		}
		for _, g := range p.Gaps() {
			if g.Start >= g.End || g.End > p.Length {
				t.Fatalf("%s: bad gap %v", p.Source, g)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	seedAll(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, format := range []Format{Auto, Raw, Hex, Dump, PCAP, PCAPNG} {
			ps, st, _ := Parse(b, format)
			checkPackets(t, ps, st)
		}
	})
}

func FuzzUDP(f *testing.F) {
	f.Add(uint16(LinkEthernet), ether(etherIPv4, udpIPv4(src4, dst4, payload, []byte{1, 1, 1, 0}), 3))
	f.Add(uint16(LinkRaw), udpIPv6(src6, dst6, payload, extHdr{protoFragment, []byte{0, 0, 0, 0, 0, 0, 0, 1}}))
	f.Add(uint16(LinkLinuxSLL2), sll2(udpIPv6(src6, dst6, payload, extHdr{protoAH, make([]byte, 12)}), etherIPv6))
	f.Add(uint16(LinkNull), append([]byte{2, 0, 0, 0}, udpIPv4(src4, dst4, payload, nil)...))
	f.Fuzz(func(t *testing.T, link uint16, b []byte) {
		d, err := UDP(Link(link), b)
		if err != nil {
			return
		}
		if len(d.Payload) > d.Length || d.Offset > len(b) || d.Offset+len(d.Payload) > len(b) {
			t.Fatalf("datagram %+v from %d bytes", d, len(b))
		}
		if !d.Src.IsValid() || !d.Dst.IsValid() {
			t.Fatalf("invalid addresses %v %v", d.Src, d.Dst)
		}
	})
}
