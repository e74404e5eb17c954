package discover

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// A client asks every master for a cookie; a master that answers with one
// and "again" (it did not send the list) is asked again at once with the
// cookie echoed, once; the list that follows counts; a later query of the
// same run echoes the cookie. With NoCookies the word is not sent.
func TestSession_Cookie(t *testing.T) {
	s := newSession(Config{Masters: []Master{{Name: "A", Addr: masterA, Request: extRequest(t)}}}, t0)
	out := s.poll(t0)
	if len(out) != 1 || !bytes.HasSuffix(out[0].b, []byte(" cookie")) {
		t.Fatalf("first query %v, want the cookie word", out)
	}
	s.wrote(t0, out[0], nil)
	c, _ := q3.Cookie{Token: "Tok_123", Again: true}.AppendBinary(nil)
	again := s.receive(at(20*time.Millisecond), masterA, c)
	if len(again) != 1 || !bytes.HasSuffix(again[0].b, []byte(" cookie=Tok_123")) {
		t.Fatalf("after the cookie with again: %v, want the query echoing it", again)
	}
	s.wrote(at(20*time.Millisecond), again[0], nil)
	// A second "again" is not followed: one retry per list.
	if more := s.receive(at(21*time.Millisecond), masterA, c); len(more) != 0 {
		t.Fatalf("a second again asked again: %v", more)
	}
	list, _ := q3.ServersResponse{Ext: true, Servers: []netip.AddrPort{srv(1), srv(2)}, End: q3.EndEOT}.AppendBinary(nil)
	s.receive(at(40*time.Millisecond), masterA, list)
	r := s.masters[0].rep
	if r.Packets != 1 || r.Garbled != 0 || !r.Cookie || r.Queries != 2 {
		t.Errorf("report %+v", r)
	}

	off := newSession(Config{NoCookies: true, Masters: []Master{{Name: "A", Addr: masterA, Request: extRequest(t)}}}, t0)
	if out := off.poll(t0); len(out) != 1 || bytes.Contains(out[0].b, []byte("cookie")) {
		t.Fatalf("NoCookies: %v", out)
	}
	// Without NoCookies a cookie packet is garbage to that session.
	off.wrote(t0, out[0], nil)
	off.receive(at(20*time.Millisecond), masterA, c)
	if off.masters[0].rep.Garbled != 1 {
		t.Errorf("NoCookies: a cookie is not counted as garbage: %+v", off.masters[0].rep)
	}
}
