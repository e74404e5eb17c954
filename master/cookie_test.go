package master

import (
	"crypto/rand"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// cookieFix is a handler with cookies and the default defences, listing n
// servers.
func cookieFix(t *testing.T, n int, lim ResponseLimits) *hfix {
	t.Helper()
	chal, err := NewChallenger(time.Hour, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rl := newRRL(t, lim)
	budget, err := NewByteBudget(DefaultOutboundBytesPerSecond, DefaultOutboundBurst)
	if err != nil {
		t.Fatal(err)
	}
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, func(c *handlerSetup) { c.Responses, c.Budget, c.Cookies = rl, budget, chal })
	listMany(t, f, n)
	f.now = f.now.Add(time.Second)
	return f
}

// reply splits what the handler sent to one request: its cookie, if any,
// and the servers of its list.
func reply(t *testing.T, outs []Outgoing) (cookie *q3.Cookie, servers int) {
	t.Helper()
	for i, o := range outs {
		if o.Kind == KindCookie {
			if i != 0 {
				t.Errorf("the cookie is datagram %d, want the first", i)
			}
			c, err := q3.ParseCookie(o.Payload)
			if err != nil {
				t.Fatal(err)
			}
			cookie = &c
			continue
		}
		m, err := q3.Parse(o.Payload)
		if err != nil {
			t.Fatal(err)
		}
		servers += len(m.(q3.ServersResponse).Servers)
	}
	return cookie, servers
}

// scout's client asks for a cookie and gets one before its list, no larger
// than its request; echoed from the same address, the cookie is taken and
// the list sent on the address's cookie lane, without another cookie.
func TestMaster_CookieGivenAndEchoed(t *testing.T) {
	f := cookieFix(t, 500, ResponseLimits{})
	req := oob("getservers 71 empty full cookie")
	outs := f.in(client, req)
	c, n := reply(t, outs)
	if c == nil || c.Again || n != 500 {
		t.Fatalf("cookie %+v, %d servers", c, n)
	}
	if len(outs[0].Payload) > len(req) {
		t.Errorf("the cookie is %d bytes, the request %d: it would reflect", len(outs[0].Payload), len(req))
	}
	// Another port of the same address echoes it (a NAT may change it).
	again := netip.AddrPortFrom(client.Addr(), 50000)
	c2, n := reply(t, f.in(again, oob("getservers 71 empty full "+q3.CookieWord(c.Token))))
	if c2 != nil || n != 500 {
		t.Fatalf("echoed: cookie %+v, %d servers", c2, n)
	}
	if given, answered, bad := f.h.Stats().Cookies(); given != 1 || answered != 1 || bad != 0 {
		t.Errorf("cookies given %d, answered %d, bad %d", given, answered, bad)
	}
	// The same cookie from another address does not check: that address
	// is answered as one without a cookie, and given its own.
	other := ap("203.0.113.99:27960")
	c3, n := reply(t, f.in(other, oob("getservers 71 empty full "+q3.CookieWord(c.Token))))
	if c3 == nil || c3.Token == c.Token || n != 500 {
		t.Errorf("another address echoing it: cookie %+v, %d servers", c3, n)
	}
	if _, _, bad := f.h.Stats().Cookies(); bad != 1 {
		t.Errorf("bad cookies %d, want 1", bad)
	}
}

// A /24 flooded with spoofed requests: a newcomer there finds the legacy
// lanes spent; scout's client is told so with its cookie ("again"), asks
// again with it and gets the list at once; a game client keeps getting
// nothing until the flood's budget refills.
func TestMaster_CookieServedInsideAFloodedNetwork(t *testing.T) {
	f := cookieFix(t, 5000, ResponseLimits{})
	for i := range 600 {
		b := client.Addr().As4()
		b[3] = byte(i)
		f.in(netip.AddrPortFrom(netip.AddrFrom4(b), uint16(1024+i)), oob("getservers 71 empty full"))
	}
	newcomer := ap("198.51.100.200:27960")
	if _, n := reply(t, f.in(newcomer, oob("getservers 71 empty full"))); n != 0 {
		t.Fatalf("the flooded /24 still answers a game client's %d servers", n)
	}
	scout := ap("198.51.100.201:27960")
	c, n := reply(t, f.in(scout, oob("getservers 71 empty full cookie")))
	if c == nil || !c.Again || n != 0 {
		t.Fatalf("scout's first query: cookie %+v, %d servers; want the cookie with again", c, n)
	}
	if c2, n := reply(t, f.in(scout, oob("getservers 71 empty full "+q3.CookieWord(c.Token)))); c2 != nil || n != 5000 {
		t.Fatalf("echoed: cookie %+v, %d servers", c2, n)
	}
}

// A request too short to carry the cookie's reply gets none (the master
// never sends more than it was sent); without cookies the word is ignored
// as dpmaster ignores it.
func TestMaster_CookieNeverLargerThanTheRequest(t *testing.T) {
	f := cookieFix(t, 10, ResponseLimits{})
	if c, n := reply(t, f.in(client, oob("getservers 71 cookie"))); c != nil || n != 10 {
		t.Errorf("a 24-byte request got a cookie %+v and %d servers", c, n)
	}
	plain := newHandlerFix(t, Config{MaxServersPerAddress: -1}, nil)
	listMany(t, plain, 10)
	for _, o := range plain.in(client, oob("getservers 71 empty full cookie")) {
		if o.Kind == KindCookie {
			t.Error("a master without cookies sent one")
		}
	}
}

// Through the handler, a reply larger than a lane's burst goes out paced:
// the datagrams' delays rise at the slowest lane's rate, and the shell is
// told when each may go.
func TestMaster_LargeListPaced(t *testing.T) {
	lim := ResponseLimits{VictimBurst: 4000, VictimRate: 2000}
	f := cookieFix(t, 1000, lim)
	outs := f.in(client, oob("getservers 71 empty full"))
	_, n := reply(t, outs)
	if n != 1000 || outs[0].Delay != 0 {
		t.Fatalf("%d servers, first delay %v", n, outs[0].Delay)
	}
	cum := 0
	for i, o := range outs {
		cum += len(o.Payload) + DatagramCost4
		if i > 0 && o.Delay < outs[i-1].Delay {
			t.Fatalf("datagram %d goes before %d", i, i-1)
		}
		if want := time.Duration(float64(max(cum-lim.VictimBurst, 0)) / float64(lim.VictimRate) * float64(time.Second)); o.Delay < want-time.Millisecond {
			t.Fatalf("datagram %d (%d bytes so far) at %v, before the address's lane has them (%v)", i, cum, o.Delay, want)
		}
	}
	if f.h.Stats().Paced() != 1 {
		t.Errorf("paced %d", f.h.Stats().Paced())
	}
	// scout's client is never paced: told to ask again with its cookie,
	// it gets the whole list at once from its cookie lane.
	scout := ap("192.0.2.77:27960")
	outs = f.in(scout, oob("getservers 71 empty full cookie"))
	c, n := reply(t, outs)
	if c == nil || !c.Again || n != 0 {
		t.Fatalf("asking: cookie %+v, %d servers; want again and no list", c, n)
	}
	outs = f.in(scout, oob("getservers 71 empty full "+q3.CookieWord(c.Token)))
	if _, n := reply(t, outs); n != 1000 || outs[len(outs)-1].Delay != 0 {
		t.Fatalf("echoing: %d servers, last delay %v", n, outs[len(outs)-1].Delay)
	}
}

// A list left to the encoder (a listing large enough to be encoded off
// the socket loop) for a request that asked for a cookie: the cookie goes
// when the list is sent, before it, or alone with "again" when the list
// is too large to go at once; scout's client then asks again with it at
// once instead of waiting for a list that will not come.
func TestMaster_CookieWithDeferredList(t *testing.T) {
	for _, c := range []struct {
		name  string
		lim   ResponseLimits
		again bool
	}{{"list-goes", ResponseLimits{}, false}, {"list-too-large", ResponseLimits{VictimBurst: 16 << 10}, true}} {
		t.Run(c.name, func(t *testing.T) {
			chal, err := NewChallenger(time.Hour, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			budget, err := NewByteBudget(DefaultOutboundBytesPerSecond, DefaultOutboundBurst)
			if err != nil {
				t.Fatal(err)
			}
			rl := newRRL(t, c.lim)
			f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, func(s *handlerSetup) {
				s.Responses, s.Budget, s.Cookies, s.DeferEncoding = rl, budget, chal, 1
			})
			listMany(t, f, 5000)
			f.now = f.now.Add(time.Second)
			send := func(req string) []Outgoing {
				out := f.in(client, oob(req))
				if len(out) != 1 || out[0].Encode == nil {
					t.Fatalf("%d datagrams, want the list left to the encoder", len(out))
				}
				job := out[0].Encode
				return f.h.SendEncoded(f.now, f.h.Encode(f.now, job), []*Encoding{job}, nil)
			}
			req := "getservers 71 empty full cookie"
			out := send(req)
			k, n := reply(t, out)
			want := 5000
			if c.again {
				want = 0
			}
			if k == nil || k.Again != c.again || n != want {
				t.Fatalf("cookie %+v, %d servers; want a cookie, again %v, %d servers", k, n, c.again, want)
			}
			if len(out[0].Payload) > len(oob(req)) {
				t.Errorf("the cookie is %d bytes, the request %d", len(out[0].Payload), len(oob(req)))
			}
			if !c.again {
				return
			}
			// Asked again with the cookie: the whole list, from the cookie
			// lane, and no other cookie.
			out = f.in(client, oob("getservers 71 empty full "+q3.CookieWord(k.Token)))
			if len(out) == 1 && out[0].Encode != nil {
				job := out[0].Encode
				out = f.h.SendEncoded(f.now, f.h.Encode(f.now, job), []*Encoding{job}, nil)
			}
			if k2, n := reply(t, out); k2 != nil || n != 5000 {
				t.Fatalf("echoed: cookie %+v, %d servers", k2, n)
			}
		})
	}
}
