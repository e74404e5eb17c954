package master

import (
	"bytes"
	"net/netip"
	"slices"
	"testing"
)

// payloads returns the payloads of outs to to, in order.
func payloads(outs []Outgoing, to netip.AddrPort) [][]byte {
	var p [][]byte
	for _, o := range outs {
		if o.To == to {
			p = append(p, o.Payload)
		}
	}
	return p
}

// With DeferEncoding, an uncached list reply is left to Encode: identical
// queries waiting together are encoded once, the replies are the bytes
// HandlePacket sends without deferral, and once cached the reply is sent
// by HandlePacket itself.
func TestHandler_DeferEncodingSharesOneEncoding(t *testing.T) {
	setup := func(deferAt int) *hfix {
		f := newHandlerFix(t, Config{AllowLoopback: true}, func(hc *handlerSetup) { hc.DeferEncoding = deferAt })
		for i := range 3 {
			f.list(t, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), 27960))
		}
		return f
	}
	req := oob("getserversExt Quake3Arena 71 empty full")
	clients := []netip.AddrPort{ap("192.0.2.1:27960"), ap("192.0.2.2:27960"), ap("192.0.2.3:27960")}

	inline := setup(0)
	want := payloads(inline.in(clients[0], req), clients[0])
	if len(want) == 0 {
		t.Fatal("no reply without deferral")
	}

	f := setup(3)
	var jobs []*Encoding
	for _, c := range clients {
		out := f.in(c, req)
		if len(out) != 1 || out[0].Encode == nil || out[0].Payload != nil || out[0].To != c || out[0].Encode.To() != c {
			t.Fatalf("query from %v: %+v, want one deferred reply", c, out)
		}
		jobs = append(jobs, out[0].Encode)
	}
	if n := f.h.Stats().Deferred(); n != 3 {
		t.Errorf("%d deferred", n)
	}
	before, sent := f.h.reg.Encodings(), f.h.Stats().Answers()
	out := f.h.SendEncoded(f.now, f.h.Encode(f.now, jobs[0]), jobs, nil)
	if n := f.h.reg.Encodings() - before; n != 1 {
		t.Errorf("%d encodings for three identical queries, want 1", n)
	}
	if n := f.h.Stats().Answers() - sent; n != 3 {
		t.Errorf("%d answers counted, want 3", n)
	}
	for _, c := range clients {
		// The packets rotate per answer: compare them as a set.
		got := payloads(out, c)
		slices.SortFunc(got, bytes.Compare)
		w := slices.Clone(want)
		slices.SortFunc(w, bytes.Compare)
		if !slices.EqualFunc(got, w, bytes.Equal) {
			t.Errorf("%v got %q, want %q", c, got, w)
		}
	}
	// Cached now: sent at once.
	if out := f.in(clients[0], req); len(out) != len(want) || out[0].Encode != nil {
		t.Errorf("cached query: %+v", out)
	}
	// A game and protocol with fewer servers than DeferEncoding: sent at
	// once (the empty list).
	if out := f.in(clients[0], oob("getserversExt Quake3Arena 68 full")); len(out) == 0 || out[0].Encode != nil {
		t.Errorf("small query: %+v", out)
	}
}

// A deferred reply is reserved from the response limiter when Encode
// encodes it: refused, nothing is sent and the refusal is counted.
func TestHandler_DeferredReplyIsRateLimited(t *testing.T) {
	lim, err := NewResponseLimiter(ResponseLimits{VictimBurst: 100, VictimRate: 1, ReturnBurst: 1, ReturnRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := newHandlerFix(t, Config{AllowLoopback: true}, func(hc *handlerSetup) { hc.DeferEncoding = 1; hc.Responses = lim })
	for i := range 20 {
		f.list(t, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), 27960))
	}
	victim := ap("192.0.2.9:27960")
	out := f.in(victim, oob("getserversExt Quake3Arena 71 empty full"))
	if len(out) != 1 || out[0].Encode == nil {
		t.Fatalf("%+v, want one deferred reply", out)
	}
	job := out[0].Encode
	if sent := f.h.SendEncoded(f.now, f.h.Encode(f.now, job), []*Encoding{job}, nil); len(sent) != 0 {
		t.Fatalf("%d datagrams past a 100-byte victim budget", len(sent))
	}
	if n := f.h.Stats().Dropped(ReasonResponseLimited); n != 1 {
		t.Errorf("response-limited drops %d, want 1", n)
	}
}
