package master

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// listMany lists n Q3A servers on 203.0.113.1 through the handler.
func listMany(t testing.TB, f *hfix, n int) map[netip.AddrPort]bool {
	t.Helper()
	want := map[netip.AddrPort]bool{}
	for i := range n {
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, 1}), uint16(20000+i))
		f.list(t, a)
		want[a] = true
	}
	return want
}

// TestMaster_FullListAnswerAllocs: once a listing's reply is encoded, an
// answer allocates nothing but what parsing the request does, however
// long the list; the cached part (filter, cache lookup, budget, rotation,
// the datagrams appended to a reused dst) allocates nothing at all.
func TestMaster_FullListAnswerAllocs(t *testing.T) {
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, nil)
	listMany(t, f, 1000)
	req := oob("getservers 71 empty full")
	dst := f.h.HandlePacket(f.now, client, req, nil)
	if len(dst) != 6 {
		t.Fatalf("1000 servers in %d packets, want 6", len(dst))
	}
	whole := testing.AllocsPerRun(200, func() { dst = f.h.HandlePacket(f.now, client, req, dst[:0]) })

	parseOnly := testing.AllocsPerRun(200, func() { parseQ3(req) })
	if whole > parseOnly {
		t.Errorf("an answer allocates %v times, parsing the request %v", whole, parseOnly)
	}

	q := Query{Family: q71.Family, Protocol: 71, Empty: true, Full: true, IPv4: true}
	form := replyForm{split: q3.SplitOptions{End: q3.EndEOT, MaxBytes: q3.DefaultMaxBytes}}
	cached := testing.AllocsPerRun(200, func() {
		fl, _ := f.h.reg.resolve(q, f.h.reg.current(f.now))
		a, err := f.h.reg.answer(f.now, fl, form, false)
		if err != nil {
			t.Fatal(err)
		}
		dst = f.h.sendList(f.now, client, KindServersResponse, a, laneLegacy, dst[:0])
	})
	if cached != 0 {
		t.Errorf("the cached answer path allocates %v times, want 0", cached)
	}
}

// TestMaster_FairRotation: over n successive answers of an n-packet list,
// every packet goes first once and last once, every answer holds every
// server once, and (with --eot-last-only, dpmaster 2.x's layout) the end
// marker is on the last packet sent and no other.
func TestMaster_FairRotation(t *testing.T) {
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, func(c *handlerSetup) { c.EndOnLastOnly = true })
	want := listMany(t, f, 1000)
	first := map[netip.AddrPort]int{} // first server of the first packet
	last := map[netip.AddrPort]int{}  // first server of the last packet
	var n int
	for q := 0; ; q++ {
		out := f.in(client, oob("getservers 71 empty full"))
		if q == 0 {
			n = len(out)
		}
		if len(out) != n || n < 2 {
			t.Fatalf("answer %d: %d packets, want %d (at least 2)", q, len(out), n)
		}
		seen := map[netip.AddrPort]bool{}
		for i, o := range out {
			m, err := q3.Parse(o.Payload)
			if err != nil {
				t.Fatal(err)
			}
			r := m.(q3.ServersResponse)
			if wantEnd := map[bool]q3.End{true: q3.EndEOT, false: q3.EndNone}[i == n-1]; r.End != wantEnd {
				t.Fatalf("answer %d packet %d of %d: end %v, want %v", q, i, n, r.End, wantEnd)
			}
			for _, s := range r.Servers {
				if seen[s] || !want[s] {
					t.Fatalf("answer %d: %v twice or unknown", q, s)
				}
				seen[s] = true
			}
			if i == 0 {
				first[r.Servers[0]]++
			}
			if i == n-1 {
				last[r.Servers[0]]++
			}
		}
		if len(seen) != len(want) {
			t.Fatalf("answer %d: %d servers, want %d", q, len(seen), len(want))
		}
		if q == n-1 {
			break
		}
	}
	if len(first) != n || len(last) != n {
		t.Errorf("over %d answers, %d distinct first and %d distinct last packets; want %d each", n, len(first), len(last), n)
	}
}

// TestMaster_EndOnEveryCached: by default every packet of a cached reply
// keeps its marker whatever the rotation (quakestat and the ioquake3 client
// drop the last server of a packet without one).
func TestMaster_EndOnEveryCached(t *testing.T) {
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, func(c *handlerSetup) {})
	listMany(t, f, 400)
	for range 3 {
		out := f.in(client, oob("getservers 71 empty full"))
		for i, o := range out {
			if !bytes.HasSuffix(o.Payload, []byte("\\EOT\x00\x00\x00")) {
				t.Fatalf("packet %d of %d has no EOT", i, len(out))
			}
		}
	}
}

// TestMaster_CachedAnswerFollowsListing: the cached reply is dropped when
// a server is listed, and a server silent for Timeout leaves the answers
// at that instant, before Expire runs.
func TestMaster_CachedAnswerFollowsListing(t *testing.T) {
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, nil)
	a, b := ap("203.0.113.5:27960"), ap("203.0.113.6:27960")
	f.list(t, a)
	if got, _, _ := f.query(t, client, "getservers 71 empty full"); !sameSet(got, []netip.AddrPort{a}) {
		t.Fatalf("before: %v", got)
	}
	later := t0.Add(time.Minute)
	f.now = later
	f.list(t, b)
	if got, _, _ := f.query(t, client, "getservers 71 empty full"); !sameSet(got, []netip.AddrPort{a, b}) {
		t.Fatalf("after listing %v: %v", b, got)
	}
	f.now = t0.Add(DefaultTimeout - time.Nanosecond)
	if got, _, _ := f.query(t, client, "getservers 71 empty full"); !sameSet(got, []netip.AddrPort{a, b}) {
		t.Fatalf("1ns before %v's timeout: %v", a, got)
	}
	f.now = t0.Add(DefaultTimeout)
	if got, _, _ := f.query(t, client, "getservers 71 empty full"); !sameSet(got, []netip.AddrPort{b}) {
		t.Fatalf("at %v's timeout: %v", a, got)
	}
}

// TestRegistry_RefreshKeepsListed: a server whose listing a verified
// reply extended, with nothing else changed, stays in the answers past
// its first expiry time (the snapshot is rebuilt there, not trusted).
func TestRegistry_RefreshKeepsListed(t *testing.T) {
	r := newTestRegistry(t, Config{})
	a := ap("198.51.100.7:27960")
	register(t, r, t0, a)
	if got := selectAll(r, t0, q71); len(got) != 1 {
		t.Fatalf("listed: %v", got)
	}
	mid := t0.Add(DefaultTimeout / 2)
	p, why := r.Heartbeat(mid, a, q3hb)
	if why != OK {
		t.Fatal(why)
	}
	if _, ch, why := r.Verify(mid, a, infoReply(p.Challenge.Text)); why != OK || ch == ChangeNone || ch == ChangeListed {
		t.Fatalf("refresh: %v %v", ch, why)
	}
	if got := selectAll(r, t0.Add(DefaultTimeout), q71); len(got) != 1 {
		t.Errorf("at the first expiry time, after a refresh: %v", got)
	}
	if got := selectAll(r, mid.Add(DefaultTimeout), q71); len(got) != 0 {
		t.Errorf("at the refreshed expiry time: %v", got)
	}
}

// TestMaster_AnswerCacheBounded: made-up filters beyond MaxCachedAnswers
// are answered, uncached.
func TestMaster_AnswerCacheBounded(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	f.list(t, ap("203.0.113.5:27960"))
	for i := range MaxCachedAnswers + 10 {
		out := f.in(client, oob(fmt.Sprintf("getservers 71 gametype=x%d", i)))
		if len(out) != 1 {
			t.Fatalf("query %d: %d packets", i, len(out))
		}
	}
	if n := f.h.reg.current(f.now).nAnswers.Load(); n != MaxCachedAnswers {
		t.Errorf("%d answers cached, want %d", n, MaxCachedAnswers)
	}
}
