package q3

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

func TestLandmarksResponse_RoundTripAndSplit(t *testing.T) {
	var in []LandmarkEntry
	for i := range 300 {
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}), uint16(27960+i))
		if i%3 == 0 {
			a = netip.AddrPortFrom(netip.MustParseAddr("2001:db8::1").Next(), uint16(i))
		}
		in = append(in, LandmarkEntry{Addr: a, RTT: time.Duration(i+1) * time.Millisecond, Age: time.Duration(i) * time.Second})
	}
	pkts, err := EncodeLandmarksResponses("fra-1", in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkts) < 2 {
		t.Fatalf("%d packets for 300 entries", len(pkts))
	}
	var out []LandmarkEntry
	for _, p := range pkts {
		if len(p) > DefaultMaxBytes {
			t.Errorf("packet of %d bytes", len(p))
		}
		r, err := ParseLandmarksResponse(p)
		if err != nil || r.Landmark != "fra-1" {
			t.Fatalf("%q: %v", r.Landmark, err)
		}
		out = append(out, r.Entries...)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip differs: %d in, %d out", len(in), len(out))
	}
}

func TestLandmarksResponse_Refused(t *testing.T) {
	ok := LandmarkEntry{Addr: netip.MustParseAddrPort("1.2.3.4:5"), RTT: time.Millisecond}
	for _, c := range []struct {
		id string
		e  LandmarkEntry
	}{
		{"", ok}, {"bad id", ok}, {string(make([]byte, MaxLandmarkIDLen+1)), ok},
		{"x", LandmarkEntry{Addr: ok.Addr}},
		{"x", LandmarkEntry{Addr: ok.Addr, RTT: 7 * time.Second}},
		{"x", LandmarkEntry{RTT: time.Millisecond}},
	} {
		if _, err := EncodeLandmarksResponses(c.id, []LandmarkEntry{c.e}, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q %+v: %v", c.id, c.e, err)
		}
	}
	for _, p := range []string{
		Prefix + "getserversResponse\\\x01\x02\x03\x04\x00\x05",
		Prefix + LandmarksResponseCommand + "\nfra",
		Prefix + LandmarksResponseCommand + "\n\n",
		Prefix + LandmarksResponseCommand + "\nfra\n\\\x01\x02\x03\x04\x00\x05\x00",
		Prefix + LandmarksResponseCommand + "\nfra\n\\\x01\x02\x03\x04\x00\x05\x00\x00\x00\x00",
		Prefix + LandmarksResponseCommand + "\nfra\nX",
	} {
		if _, err := ParseLandmarksResponse([]byte(p)); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
}

// FuzzParseLandmarksResponse: no panic; whatever parses encodes back to
// the same bytes (the format has one spelling per value).
func FuzzParseLandmarksResponse(f *testing.F) {
	seed, _ := EncodeLandmarksResponses("127.0.0.1:27950", []LandmarkEntry{
		{Addr: netip.MustParseAddrPort("1.2.3.4:27960"), RTT: 12 * time.Millisecond, Age: time.Minute},
		{Addr: netip.MustParseAddrPort("[2001:db8::7]:27960"), RTT: 300 * time.Millisecond},
	}, 0)
	f.Add(seed[0])
	f.Add([]byte(Prefix + LandmarksResponseCommand + "\nx\n"))
	f.Add([]byte(Prefix + LandmarksResponseCommand + "\nx\n/" + string(make([]byte, 22))))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		r, err := ParseLandmarksResponse(pkt)
		if err != nil {
			return
		}
		back, err := EncodeLandmarksResponses(r.Landmark, r.Entries, max(len(pkt), len(landmarksHeader)+len(r.Landmark)+1+23))
		if err != nil {
			t.Fatalf("parsed %+v does not encode: %v", r, err)
		}
		if len(back) != 1 || string(back[0]) != string(pkt) {
			t.Fatalf("%q parsed and encoded as %q", pkt, back)
		}
	})
}

// An RTT under half a LandmarkRTTUnit (a landmark on loopback) is sent
// as one unit: rounded to 0 it would make the parser refuse the packet.
func TestLandmarksResponse_SubUnitRTT(t *testing.T) {
	in := []LandmarkEntry{{Addr: netip.MustParseAddrPort("1.2.3.4:5"), RTT: 10 * time.Microsecond}}
	pkts, err := EncodeLandmarksResponses("x", in, 0)
	if err != nil || len(pkts) != 1 {
		t.Fatalf("%d packets, %v", len(pkts), err)
	}
	r, err := ParseLandmarksResponse(pkts[0])
	if err != nil || len(r.Entries) != 1 || r.Entries[0].RTT != LandmarkRTTUnit {
		t.Fatalf("parsed %+v, %v; want one entry of RTT %v", r, err, LandmarkRTTUnit)
	}
}

// A landmark that has measured none of the listed servers still sends its
// own run (the first, by which a client knows the master's id): one packet
// with the id alone, which parses with no entries.
func TestLandmarksResponse_EmptyRun(t *testing.T) {
	pkts, err := EncodeLandmarksResponses("fra-1", nil, 0)
	if err != nil || len(pkts) != 1 || string(pkts[0]) != Prefix+LandmarksResponseCommand+"\nfra-1\n" {
		t.Fatalf("%q, %v; want one id-only packet", pkts, err)
	}
	r, err := ParseLandmarksResponse(pkts[0])
	if err != nil || r.Landmark != "fra-1" || len(r.Entries) != 0 {
		t.Fatalf("parsed %+v, %v", r, err)
	}
}
