package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2007, 7, 30, 12, 0, 0, 123456789, time.UTC)

// mixed is a set of frames on an Ethernet link: UDP, ARP, TCP, a second
// fragment and a UDP datagram cut by the snap length.
func mixed() []record {
	ip4 := udpIPv4(src4, dst4, payload, nil)
	tcp := append([]byte(nil), ip4...)
	tcp[9] = 6
	frag := append([]byte(nil), ip4...)
	binary.BigEndian.PutUint16(frag[6:], 1)
	full := ether(etherIPv4, ip4)
	return []record{
		{t: t0, frame: full},
		{t: t0.Add(time.Second), frame: ether(0x0806, make([]byte, 28))},
		{t: t0.Add(2 * time.Second), frame: ether(etherIPv4, tcp)},
		{t: t0.Add(3 * time.Second), frame: ether(etherIPv4, frag)},
		{t: t0.Add(4 * time.Second), frame: full[:len(full)-10], orig: len(full)},
		{t: t0.Add(5 * time.Second), frame: ether(etherIPv6, udpIPv6(src6, dst6, payload), 9)},
	}
}

// checkMixed checks what the mixed records yield.
func checkMixed(t *testing.T, ps []Packet, st Stats, prec time.Duration) {
	t.Helper()
	want := Stats{Records: 6, Packets: 3, Incomplete: 1, NotUDP: 2, Fragments: 1}
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if len(ps) != 3 {
		t.Fatalf("%d packets, want 3", len(ps))
	}
	if !bytes.Equal(ps[0].Payload, payload) || ps[0].Src != src4 || !ps[0].Time.Equal(t0.Truncate(prec)) {
		t.Errorf("packet 0: %v %v %q", ps[0].Time, ps[0].Src, ps[0].Payload)
	}
	if p := ps[1]; p.Complete() || p.Length != len(payload) || !bytes.Equal(p.Payload, payload[:len(payload)-10]) ||
		len(p.Gaps()) != 1 || p.Gaps()[0] != (Range{len(payload) - 10, len(payload)}) {
		t.Errorf("cut packet: length %d present %d gaps %v", p.Length, len(p.Payload), p.Gaps())
	}
	if ps[2].Src != src6 || ps[2].Index != 2 || !ps[2].Time.Equal(t0.Add(5*time.Second).Truncate(prec)) {
		t.Errorf("packet 2: %+v", ps[2])
	}
}

func TestPCAP_ByteOrdersAndPrecisions(t *testing.T) {
	for _, tt := range []struct {
		name string
		bo   order
		nano bool
	}{
		{"le-usec", binary.LittleEndian, false},
		{"be-usec", binary.BigEndian, false},
		{"le-nsec", binary.LittleEndian, true},
		{"be-nsec", binary.BigEndian, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := pcapFile(tt.bo, tt.nano, LinkEthernet, mixed()...)
			if Detect(b) != PCAP {
				t.Errorf("Detect = %v", Detect(b))
			}
			ps, st, err := Parse(b, Auto)
			if err != nil {
				t.Fatal(err)
			}
			prec := time.Microsecond
			if tt.nano {
				prec = time.Nanosecond
			}
			checkMixed(t, ps, st, prec)
		})
	}
}

func TestPCAP_Refusals(t *testing.T) {
	good := pcapFile(binary.LittleEndian, false, LinkEthernet, mixed()...)
	huge := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(huge[24+8:], MaxRecord+1)
	for _, tt := range []struct {
		name string
		b    []byte
		want error
	}{
		{"unknown-link", pcapFile(binary.LittleEndian, false, Link(147)), ErrUnsupportedLink},
		{"record-over-MaxRecord", huge, ErrTooLarge},
		{"bad-magic", append([]byte("\xa1\xb2\xcd\x34"), good[4:]...), ErrFormat},
	} {
		if _, _, err := Parse(tt.b, PCAP); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// Every prefix of a capture file either fails with ErrTruncated or ends on
// a record boundary and yields the records before it.
func TestPCAP_TruncatedPrefixes(t *testing.T) {
	b := pcapFile(binary.BigEndian, true, LinkEthernet, mixed()...)
	truncatedPrefixes(t, b, PCAP)
}

func TestPCAPNG_TruncatedPrefixes(t *testing.T) {
	truncatedPrefixes(t, ngMixed(binary.LittleEndian), PCAPNG)
	truncatedPrefixes(t, readTestdata(t, "oa088_any_sll.pcapng"), PCAPNG)
}

func truncatedPrefixes(t *testing.T, b []byte, f Format) {
	t.Helper()
	_, full, err := Parse(b, f)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(b) {
		ps, st, err := Parse(b[:n], f)
		if err != nil && !errors.Is(err, ErrTruncated) {
			t.Errorf("[:%d]: err = %v, want ErrTruncated or none", n, err)
		}
		if len(ps) > full.Packets || st.Records > full.Records {
			t.Errorf("[:%d]: %d packets from a prefix, %d from the whole", n, len(ps), full.Packets)
		}
	}
}

// ngMixed is a two-section pcapng file: a section in byte order bo with two
// interfaces (Ethernet in microseconds, raw IP in 2^-20 s with an offset)
// holding the mixed records, an unknown block, a simple and an obsolete
// packet block; then a big-endian section whose interface 0 is raw IPv4.
func ngMixed(bo order) []byte {
	var blocks [][]byte
	blocks = append(blocks, ngSHB(bo), ngIDB(bo, LinkEthernet, -1, 0), ngIDB(bo, LinkRaw, 0x80|20, 100))
	for _, r := range mixed() {
		blocks = append(blocks, ngEPB(bo, 0, uint64(r.t.UnixMicro()), r.frame, max(r.orig, len(r.frame))))
	}
	blocks = append(blocks,
		ngBlock(bo, 0x0BAD, []byte("custom")),
		ngEPB(bo, 1, 3<<20|1<<19, udpIPv4(src4, dst4, []byte("iface1"), nil), 0), // 3.5 s + 100 s offset
		ngSPB(bo, ether(etherIPv4, udpIPv4(src4, dst4, []byte("simple"), nil))),
		ngOPB(bo, 0, 7, ether(etherIPv4, udpIPv4(src4, dst4, []byte("obsolete"), nil))),
		ngSHB(binary.BigEndian), ngIDB(binary.BigEndian, LinkIPv4, 9, 0),
		ngEPB(binary.BigEndian, 0, 42, udpIPv4(src4, dst4, []byte("section2"), nil), 0),
	)
	return cat(blocks...)
}

func TestPCAPNG_SectionsInterfacesBlocks(t *testing.T) {
	for _, tt := range []struct {
		name string
		bo   order
	}{{"le", binary.LittleEndian}, {"be", binary.BigEndian}} {
		t.Run(tt.name, func(t *testing.T) {
			b := ngMixed(tt.bo)
			if Detect(b) != PCAPNG {
				t.Errorf("Detect = %v", Detect(b))
			}
			ps, st, err := Parse(b, Auto)
			if err != nil {
				t.Fatal(err)
			}
			if st.Blocks != 1 || st.Records != 10 || len(ps) != 7 {
				t.Fatalf("stats %+v, %d packets; want 1 skipped block, 10 records, 7 packets", st, len(ps))
			}
			checkMixed(t, ps[:3], Stats{Records: 6, Packets: 3, Incomplete: 1, NotUDP: 2, Fragments: 1}, time.Microsecond)
			for i, w := range []struct {
				payload string
				link    Link
				time    time.Time
			}{
				{"iface1", LinkRaw, time.Unix(103, 500_000_000)},
				{"simple", LinkEthernet, time.Time{}},
				{"obsolete", LinkEthernet, time.Unix(0, 7000)},
				{"section2", LinkIPv4, time.Unix(0, 42)},
			} {
				p := ps[3+i]
				if string(p.Payload) != w.payload || p.Link != w.link || !p.Time.Equal(w.time) {
					t.Errorf("%s: %q %v %v, want %q %v %v", p.Source, p.Payload, p.Link, p.Time, w.payload, w.link, w.time)
				}
			}
		})
	}
}

func TestPCAPNG_Refusals(t *testing.T) {
	le := binary.LittleEndian
	shb := ngSHB(le)
	idb := ngIDB(le, LinkEthernet, 6, 0)
	frame := ether(etherIPv4, udpIPv4(src4, dst4, payload, nil))
	badTrailer := ngEPB(le, 0, 1, frame, len(frame))
	badTrailer[len(badTrailer)-1] ^= 1
	capOver := ngEPB(le, 0, 1, frame, len(frame))
	le.PutUint32(capOver[8+12:], uint32(len(frame)+100))
	oddLen := append([]byte(nil), shb...)
	le.PutUint32(oddLen[4:], 30)
	hugeLen := append([]byte(nil), shb...)
	le.PutUint32(hugeLen[4:], MaxBlock+4)
	badBOM := append([]byte(nil), shb...)
	copy(badBOM[8:], "abcd")
	v2 := append([]byte(nil), shb...)
	le.PutUint16(v2[12:], 2)
	resol := ngIDB(le, LinkEthernet, 20, 0)

	for _, tt := range []struct {
		name  string
		b     []byte
		err   error
		stats Stats
	}{
		{"no-section-header", cat(idb, shb), ErrFormat, Stats{}},
		{"bad-trailing-length", cat(shb, idb, badTrailer), ErrMalformed, Stats{}},
		{"length-not-multiple-of-4", oddLen, ErrMalformed, Stats{}},
		{"block-over-MaxBlock", hugeLen, ErrTooLarge, Stats{}},
		{"bad-byte-order-magic", badBOM, ErrMalformed, Stats{}},
		{"version-2", v2, ErrFormat, Stats{}},
		{"tsresol-10^-20", cat(shb, resol), ErrMalformed, Stats{}},
		{"undescribed-interface", cat(shb, idb, ngEPB(le, 1, 1, frame, len(frame))), nil, Stats{Records: 1, Malformed: 1}},
		{"captured-beyond-block", cat(shb, idb, capOver), nil, Stats{Records: 1, Malformed: 1}},
		{"unknown-link-interface", cat(shb, ngIDB(le, Link(147), 6, 0), ngEPB(le, 0, 1, frame, len(frame))), nil, Stats{Records: 1, Unknown: 1}},
	} {
		_, st, err := Parse(tt.b, PCAPNG)
		if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.err)
		}
		if tt.err == nil && st != tt.stats {
			t.Errorf("%s: stats %+v, want %+v", tt.name, st, tt.stats)
		}
	}
}

func TestPCAPNG_TimestampResolutions(t *testing.T) {
	for _, tt := range []struct {
		resol uint8
		ts    uint64
		want  time.Time
	}{
		{6, 1_500_000, time.Unix(1, 500_000_000)},
		{9, 1_000_000_001, time.Unix(1, 1)},
		{0, 5, time.Unix(5, 0)},
		{12, 2_000_000_123_999, time.Unix(2, 123)}, // picoseconds, truncated to ns
		{0x80 | 10, 3<<10 | 512, time.Unix(3, 500_000_000)},
		{0x80, 9, time.Unix(9, 0)}, // base 2, exponent 0
		{0x80 | 63, 1 << 62, time.Unix(0, 500_000_000)},
		{19, ^uint64(0), time.Unix(1, 844674407)},
	} {
		if got := (ngInterface{resol: tt.resol}).time(tt.ts); !got.Equal(tt.want) {
			t.Errorf("resol %#x ts %d: %v, want %v", tt.resol, tt.ts, got, tt.want)
		}
	}
}

func TestRead_TooLarge(t *testing.T) {
	r := bytes.NewReader(make([]byte, MaxInput+1))
	if _, _, err := Read(r, Raw); !errors.Is(err, ErrTooLarge) {
		t.Errorf("err = %v, want ErrTooLarge", err)
	}
}
