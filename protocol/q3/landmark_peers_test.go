package q3

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A landmark's RTTs to its peers round-trip, split over packets of the
// size asked; no entries is no packet.
func TestLandmarkPeersResponse_RoundTripAndSplit(t *testing.T) {
	var in []LandmarkPeerEntry
	for i := range 40 {
		in = append(in, LandmarkPeerEntry{Peer: fmt.Sprintf("lm-%02d.example:27950", i), RTT: time.Duration(i+1) * time.Millisecond, Age: time.Duration(i) * time.Second})
	}
	pkts, err := EncodeLandmarkPeersResponses("fra-1", in, 300)
	if err != nil || len(pkts) < 4 {
		t.Fatalf("%d packets, %v", len(pkts), err)
	}
	var out []LandmarkPeerEntry
	for _, p := range pkts {
		if len(p) > 300 {
			t.Fatalf("packet of %d bytes", len(p))
		}
		r, err := ParseLandmarkPeersResponse(p)
		if err != nil || r.Landmark != "fra-1" {
			t.Fatalf("%q: %v", r.Landmark, err)
		}
		out = append(out, r.Entries...)
	}
	if fmt.Sprint(out) != fmt.Sprint(in) {
		t.Errorf("round trip\n%v\n%v", out, in)
	}
	if pkts, err := EncodeLandmarkPeersResponses("fra-1", nil, 0); err != nil || len(pkts) != 0 {
		t.Errorf("no entries: %q, %v", pkts, err)
	}
}

// Bad entries are refused at encoding, bad packets at parsing.
func TestLandmarkPeersResponse_Refused(t *testing.T) {
	ok := LandmarkPeerEntry{Peer: "nyc", RTT: time.Millisecond}
	for _, c := range []struct {
		id string
		e  LandmarkPeerEntry
	}{
		{"", ok}, {"bad id", ok}, {"x", LandmarkPeerEntry{Peer: "nyc"}}, {"x", LandmarkPeerEntry{Peer: "nyc", RTT: 7 * time.Second}},
		{"x", LandmarkPeerEntry{Peer: "", RTT: time.Millisecond}}, {"x", LandmarkPeerEntry{Peer: "a\nb", RTT: time.Millisecond}},
		{"x", LandmarkPeerEntry{Peer: strings.Repeat("a", MaxLandmarkIDLen+1), RTT: time.Millisecond}},
	} {
		if _, err := EncodeLandmarkPeersResponses(c.id, []LandmarkPeerEntry{c.e}, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q %+v: %v", c.id, c.e, err)
		}
	}
	h := Prefix + LandmarkPeersResponseCommand
	for _, p := range []string{
		Prefix + LandmarksResponseCommand + "\nfra\n",
		h + "\nfra",
		h + "\n\n",
		h + "\nfra\nnyc",
		h + "\nfra\nnyc\n\x00\x05\x00",
		h + "\nfra\nnyc\n\x00\x00\x00\x00",
		h + "\nfra\nn y\n\x00\x05\x00\x00",
		h + "\nfra\n" + strings.Repeat("a", MaxLandmarkIDLen+1) + "\n\x00\x05\x00\x00",
	} {
		if _, err := ParseLandmarkPeersResponse([]byte(p)); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
}

// FuzzParseLandmarkPeersResponse: no panic; whatever parses encodes back
// to the same bytes (one spelling per value).
func FuzzParseLandmarkPeersResponse(f *testing.F) {
	seed, _ := EncodeLandmarkPeersResponses("127.0.0.1:27950", []LandmarkPeerEntry{
		{Peer: "nyc", RTT: 75 * time.Millisecond, Age: time.Minute}, {Peer: "[2001:db8::1]:27950", RTT: 300 * time.Millisecond},
	}, 0)
	f.Add(seed[0])
	f.Add([]byte(Prefix + LandmarkPeersResponseCommand + "\nx\n"))
	f.Add([]byte(Prefix + LandmarkPeersResponseCommand + "\nx\ny\n\x00\n\x00"))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		r, err := ParseLandmarkPeersResponse(pkt)
		if err != nil {
			return
		}
		back, err := EncodeLandmarkPeersResponses(r.Landmark, r.Entries, max(len(pkt), len(landmarkPeersHeader)+len(r.Landmark)+1+MaxLandmarkIDLen+5))
		if err != nil {
			t.Fatalf("parsed %+v does not encode: %v", r, err)
		}
		if len(r.Entries) == 0 {
			if len(back) != 0 {
				t.Fatalf("no entries encoded as %q", back)
			}
			return
		}
		if len(back) != 1 || string(back[0]) != string(pkt) {
			t.Fatalf("%q parsed and encoded as %q", pkt, back)
		}
	})
}

// LandmarkPing is the documented query, its reply is a pong, and a list
// or an extended reply is not.
func TestLandmarkPing(t *testing.T) {
	if string(LandmarkPing()) != Prefix+"getservers 0 empty full landmarkping" {
		t.Errorf("ping %q", LandmarkPing())
	}
	pong, _ := ServersResponse{End: EndEOT}.AppendBinary(nil)
	ext, _ := ServersResponse{Ext: true, End: EndEOT}.AppendBinary(nil)
	list, _ := ServersResponse{Servers: nil, End: EndNone}.AppendBinary(nil)
	if !IsLandmarkPong(pong) || IsLandmarkPong(ext) || IsLandmarkPong(list) || IsLandmarkPong(LandmarkPing()) {
		t.Errorf("pong %v, ext %v, no end %v", IsLandmarkPong(pong), IsLandmarkPong(ext), IsLandmarkPong(list))
	}
	if len(pong) > len(LandmarkPing()) {
		t.Errorf("the reply (%d bytes) is larger than the ping (%d)", len(pong), len(LandmarkPing()))
	}
}
