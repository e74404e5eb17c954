package master

import (
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// listAfter lists a Q3A server at a whose infoResponse comes rtt after the
// heartbeat's getinfo.
func (f *hfix) listAfter(t *testing.T, a netip.AddrPort, rtt time.Duration) {
	t.Helper()
	c := challengeOf(t, f.in(a, oaHeartbeat), KindGetInfo)
	f.now = f.now.Add(rtt)
	f.in(a, oaInfo(c))
	if s, ok := f.h.Registry().Lookup(a); !ok || !s.Listed || s.RTT != rtt {
		t.Fatalf("%v: %+v", a, s)
	}
}

// landmarkPackets splits outs into the list packets and the parsed
// landmark packets.
func landmarkPackets(t *testing.T, outs []Outgoing) (list int, lm []q3.LandmarksResponse) {
	t.Helper()
	for _, o := range outs {
		switch o.Kind {
		case KindLandmarksResponse:
			r, err := q3.ParseLandmarksResponse(o.Payload)
			if err != nil {
				t.Fatal(err)
			}
			lm = append(lm, r)
		case KindServersExtResponse, KindServersResponse:
			list++
		default:
			t.Fatalf("unexpected %v", o.Kind)
		}
	}
	return list, lm
}

// A landmark master answers "getserversExt ... landmarks" with the list
// and its RTTs to the servers listed; never the short form, never a query
// without the word, never as a master that is not a landmark.
func TestHandler_LandmarksOnlyWhenAsked(t *testing.T) {
	f := newHandlerFix(t, Config{}, func(c *handlerSetup) { c.Landmark = "fra-1" })
	rtts := map[netip.AddrPort]time.Duration{
		ap("198.51.100.1:27960"): 12 * time.Millisecond,
		ap("198.51.100.2:27960"): 80 * time.Millisecond,
		ap("198.51.100.3:27960"): 230 * time.Millisecond,
	}
	for a, d := range rtts {
		f.listAfter(t, a, d)
	}
	other := ap("198.51.100.4:27961")
	f.list(t, other, "protocol", "68") // another protocol: not in the list asked for
	f.now = f.now.Add(10 * time.Second)
	client := ap("203.0.113.9:5000")

	list, lm := landmarkPackets(t, f.in(client, oob("getserversExt Quake3Arena 71 empty full landmarks")))
	if list != 1 || len(lm) != 1 || lm[0].Landmark != "fra-1" || len(lm[0].Entries) != len(rtts) {
		t.Fatalf("list %d, landmarks %+v", list, lm)
	}
	for _, e := range lm[0].Entries {
		if want, ok := rtts[e.Addr]; !ok || e.RTT != want || e.Age < 10*time.Second || e.Age > 11*time.Second {
			t.Errorf("entry %+v, want rtt %v, age 10 s", e, want)
		}
	}
	for _, req := range []string{"getserversExt Quake3Arena 71 empty full", "getservers 71 empty full landmarks"} {
		if list, lm := landmarkPackets(t, f.in(client, oob(req))); list != 1 || len(lm) != 0 {
			t.Errorf("%q: list %d, landmarks %d", req, list, len(lm))
		}
	}

	g := newHandlerFix(t, Config{}, nil)
	g.listAfter(t, ap("198.51.100.1:27960"), 12*time.Millisecond)
	if list, lm := landmarkPackets(t, g.in(client, oob("getserversExt Quake3Arena 71 empty full landmarks"))); list != 1 || len(lm) != 0 {
		t.Errorf("not a landmark: list %d, landmarks %d", list, len(lm))
	}
	if _, err := NewHandler(HandlerConfig{}, HandlerDeps{Registry: newTestRegistry(t, Config{}), Landmark: "bad id"}); err == nil {
		t.Error("a landmark id with a space accepted")
	}
}

// The landmark packets are reserved from the response limiter after the
// list: a victim whose budget holds the list but not the RTTs gets the
// list alone.
func TestHandler_LandmarksRespectResponseLimiter(t *testing.T) {
	client := ap("203.0.113.9:5000")
	req := oob("getserversExt Quake3Arena 71 empty full landmarks")
	setup := func(lim *ResponseLimiter) *hfix {
		f := newHandlerFix(t, Config{}, func(c *handlerSetup) { c.Landmark = "fra-1"; c.Responses = lim })
		for i := range 20 {
			f.listAfter(t, netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), 27960), time.Duration(i+1)*time.Millisecond)
		}
		return f
	}
	outs := setup(nil).in(client, req)
	var listCost, lmCost int
	for _, o := range outs {
		c := Cost(client.Addr(), len(o.Payload), 1)
		if o.Kind == KindLandmarksResponse {
			lmCost += c
		} else {
			listCost += c
		}
	}
	lim, err := NewResponseLimiter(ResponseLimits{VictimBurst: listCost + lmCost - 1, VictimRate: 1, ReturnBurst: 1, ReturnRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := setup(lim)
	if list, lm := landmarkPackets(t, f.in(client, req)); list != 1 || len(lm) != 0 {
		t.Errorf("budget for the list only: list %d, landmarks %d", list, len(lm))
	}
	if n := f.h.Stats().Dropped(ReasonResponseLimited); n != 1 {
		t.Errorf("response-limited drops %d, want 1 (the landmark packets)", n)
	}
}

// A client's landmark ping ("getservers 0 empty full landmarkping", the
// query q3.LandmarkPing builds) is answered by a landmark master, with
// servers listed, by the empty list: one getserversResponse with its end
// marker alone, smaller than the query, and never landmark packets.
func TestHandler_LandmarkPingAnsweredEmpty(t *testing.T) {
	f := newHandlerFix(t, Config{}, func(c *handlerSetup) { c.Landmark = "fra-1" })
	f.listAfter(t, ap("198.51.100.1:27960"), 12*time.Millisecond)
	ping := q3.LandmarkPing()
	if string(ping) != string(oob("getservers 0 empty full landmarkping")) {
		t.Fatalf("ping %q", ping)
	}
	outs := f.in(ap("203.0.113.9:5000"), ping)
	if len(outs) != 1 || outs[0].Kind != KindServersResponse {
		t.Fatalf("answer %+v", outs)
	}
	m, err := q3.Parse(outs[0].Payload)
	r, ok := m.(q3.ServersResponse)
	if err != nil || !ok || r.Ext || len(r.Servers) != 0 || r.End != q3.EndEOT || len(outs[0].Payload) > len(ping) {
		t.Errorf("answer %q (%d bytes for a %d-byte query): %+v %v", outs[0].Payload, len(outs[0].Payload), len(ping), m, err)
	}
}
