package master

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/q3"
)

func TestMaster_FloodProtection(t *testing.T) {
	lim, err := NewSourceLimiter(DefaultThrottle, DefaultDecayTime, 100)
	if err != nil {
		t.Fatal(err)
	}
	f := newHandlerFix(t, Config{}, func(c *handlerSetup) { c.Queries = lim })
	f.list(t, ap("203.0.113.5:27960"))
	// dpmaster: throttle 5 allows 4 requests in a row, then one per decay.
	answered := 0
	for range 10 {
		if _, _, n := f.query(t, client, "getservers 71 empty full"); n > 0 {
			answered++
		}
	}
	if answered != DefaultThrottle-1 {
		t.Fatalf("answered %d of 10 in a burst, want %d", answered, DefaultThrottle-1)
	}
	if f.h.Stats().Dropped(ReasonRateLimited) != 6 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	// Another client is not affected; the first one gets one more after
	// the decay time.
	if _, _, n := f.query(t, ap("198.51.100.8:27960"), "getservers 71"); n == 0 {
		t.Fatal("other client limited")
	}
	f.now = f.now.Add(DefaultDecayTime)
	if _, _, n := f.query(t, client, "getservers 71"); n == 0 {
		t.Fatal("not answered after the decay time")
	}
}

func TestMaster_AmplificationBudget(t *testing.T) {
	// A budget of 10 full replies: a spoofed flood of queries from many
	// sources gets 10 answers, then nothing until the budget refills.
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, nil)
	for i := range 300 {
		f.list(t, netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i % 250)}), uint16(27960+i)))
	}
	_, _, n := f.query(t, client, "getservers 71 empty full")
	one := 0
	for _, o := range f.h.HandlePacket(f.now, client, oob("getservers 71 empty full"), nil) {
		one += len(o.Payload)
	}
	if n < 2 || one < 300*7 {
		t.Fatalf("full reply: %d packets, %d bytes", n, one)
	}
	budget, err := NewByteBudget(one, 10*one)
	if err != nil {
		t.Fatal(err)
	}
	f.h.deps.Budget = budget
	sent, queryBytes := 0, 0
	for i := range 100 {
		req := oob("getservers 71 empty full")
		queryBytes += len(req)
		victim := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 27960)
		for _, o := range f.h.HandlePacket(f.now, victim, req, nil) {
			sent += len(o.Payload)
		}
	}
	// Replies to addresses without a cookie take the burst but its last
	// quarter (BudgetReserveShare), kept for the others: 7 full replies.
	legacy := 10 * one * (BudgetReserveShare - 1) / BudgetReserveShare / one * one
	if sent != legacy {
		t.Fatalf("sent %d bytes, want the burst less its reserve, %d", sent, legacy)
	}
	if f.h.Stats().Dropped(ReasonBudgetExhausted) != uint64(100-legacy/one) {
		t.Fatalf("drops %v", f.dropSummary())
	}
	// One second later, one more full reply fits.
	f.now = f.now.Add(time.Second)
	if _, _, n := f.query(t, ap("192.0.2.200:27960"), "getservers 68 empty full"); n == 0 {
		t.Fatal("budget did not refill")
	}
}

func TestMaster_GametypeFilters(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	ffa, ctf := ap("203.0.113.1:27960"), ap("203.0.113.2:27960")
	empty, full := ap("203.0.113.3:27960"), ap("203.0.113.4:27960")
	f.list(t, ffa)
	f.list(t, ctf, "gametype", "4")
	f.list(t, empty, "clients", "0")
	f.list(t, full, "clients", "8")
	for _, tc := range []struct {
		req  string
		want []netip.AddrPort
	}{
		{"getservers 71", []netip.AddrPort{ffa, ctf}},
		{"getservers 71 empty", []netip.AddrPort{ffa, ctf, empty}},
		{"getservers 71 full", []netip.AddrPort{ffa, ctf, full}},
		{"getservers 71 empty full\n", []netip.AddrPort{ffa, ctf, empty, full}},
		{"getservers 71 ctf empty full", []netip.AddrPort{ctf}},
		{"getservers 71 gametype=4", []netip.AddrPort{ctf}},
		{"getservers 71 ffa empty full", []netip.AddrPort{ffa, empty, full}},
		{"getservers 71 tourney", nil},
		{"getservers 68 empty full", []netip.AddrPort{ffa, ctf, empty, full}}, // Quake3Arena's other protocol: empty list for 68 servers
	} {
		got, end, n := f.query(t, client, tc.req)
		if tc.req == "getservers 68 empty full" {
			tc.want = nil
		}
		if n != 1 || end != q3.EndEOT || !sameSet(got, tc.want) {
			t.Errorf("%q -> %v (%d packets, end %v), want %v", tc.req, got, n, end, tc.want)
		}
	}
}

func TestMaster_ETAlwaysEmptyAndFull(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.9:27960")
	out := f.in(srv, oob("heartbeat EnemyTerritory-1\n"))
	if len(out) != 1 {
		t.Fatalf("ET heartbeat -> %v", out)
	}
	c := challengeOf(t, out, KindGetInfo)
	f.in(srv, oaInfo(c, "gamename", "et", "protocol", "84", "clients", "0"))
	got, _, _ := f.query(t, client, "getservers 84") // ET asks for neither
	if len(got) != 1 {
		t.Fatalf("ET query -> %v (%v)", got, f.dropSummary())
	}
	// Its re-probe is getchallenge + getstatus + getinfo, in that order;
	// the challengeResponse is read and let go, the statusResponse
	// verifies.
	f.now = f.now.Add(game.ETReprobeInterval)
	out = f.h.Tick(f.now, nil)
	if len(out) != 3 || out[0].Kind != KindGetChallenge || out[1].Kind != KindGetStatus || out[2].Kind != KindGetInfo {
		t.Fatalf("ET re-probe %v", out)
	}
	if r := f.in(srv, oob("challengeResponse 12345")); len(r) != 0 {
		t.Fatal("replied to challengeResponse")
	}
	before := f.h.Stats().Changes(ChangeRefreshed) + f.h.Stats().Changes(ChangeUpdated)
	st := "statusResponse\n\\challenge\\" + challengeOf(t, out, KindGetStatus) +
		"\\protocol\\84\\gamename\\et\\sv_maxclients\\20\\g_gametype\\2\n0 25 \"player\"\n"
	f.in(srv, oob(st))
	if f.h.Stats().Changes(ChangeRefreshed)+f.h.Stats().Changes(ChangeUpdated) != before+1 {
		t.Fatalf("statusResponse did not verify: %v", f.dropSummary())
	}
}

func sameSet(a, b []netip.AddrPort) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[netip.AddrPort]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

func TestMaster_EndMarkersAndSplit(t *testing.T) {
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, func(c *handlerSetup) { c.MaxEntries = q3.IDMasterEntriesPerPacket })
	f.h.reg.conf().Catalogue, _ = f.h.reg.conf().Catalogue.Apply(game.Property{Game: "Quake3Arena", Key: "protocols", Op: game.OpAdd, Values: []string{"43"}})
	for i := range 250 {
		f.list(t, netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, 1}), uint16(20000+i)))
	}
	got, end, n := f.query(t, client, "getservers 71 empty full")
	if len(got) != 250 || n != 3 || end != q3.EndEOT {
		t.Fatalf("112-entry mode: %d servers in %d packets, end %v", len(got), n, end)
	}
	// Rotation: the next answer starts elsewhere.
	again, _, _ := f.query(t, ap("198.51.100.9:1"), "getservers 71 empty full")
	if again[0] == got[0] {
		t.Error("no rotation between answers")
	}
	// Protocols 43 and 45 end with a single NUL.
	out := f.in(client, oob("getservers 43 empty full"))
	last := out[len(out)-1].Payload
	if !bytes.HasSuffix(last, []byte("\\\x00")) {
		t.Fatalf("protocol 43 reply ends % x", last[len(last)-8:])
	}
	// 1400-byte default: every packet within it.
	g := newHandlerFix(t, Config{MaxServersPerAddress: -1}, nil)
	for i := range 500 {
		g.list(t, netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, 1}), uint16(20000+i)))
	}
	for _, o := range g.in(client, oob("getservers 71 empty full")) {
		if len(o.Payload) > q3.DefaultMaxBytes {
			t.Fatalf("packet of %d bytes", len(o.Payload))
		}
	}
}

func TestMaster_IPv6(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	v4, v6 := ap("203.0.113.5:27960"), ap("[2001:db8::5]:27960")
	f.list(t, v4)
	f.list(t, v6)
	got, _, _ := f.query(t, client, "getservers 71 empty full")
	if !sameSet(got, []netip.AddrPort{v4}) {
		t.Fatalf("short form -> %v, want IPv4 only", got)
	}
	got, _, _ = f.query(t, client, "getserversExt Quake3Arena 71 empty full")
	if !sameSet(got, []netip.AddrPort{v4, v6}) {
		t.Fatalf("ext -> %v", got)
	}
	got, _, _ = f.query(t, client, "getserversExt Quake3Arena 71 empty full ipv6")
	if !sameSet(got, []netip.AddrPort{v6}) {
		t.Fatalf("ext ipv6 -> %v", got)
	}
	out := f.in(ap("[2001:db8::99]:5000"), oob("getserversExt Quake3Arena 71 ipv4"))
	if len(out) != 1 || out[0].Kind != KindServersExtResponse || out[0].To != ap("[2001:db8::99]:5000") {
		t.Fatalf("reply to an IPv6 client: %v", out)
	}
}

func TestMaster_MOTD(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	req := oob("getmotd \"\\challenge\\29862\\renderer\\GeForce 7900 GS/PCI/SSE2\\version\\ET 2.60 win-x86 Mar 10 2005\"\n")
	out := f.h.HandleMOTD(f.now, client, req, nil)
	if len(out) != 1 || out[0].Kind != KindMOTD {
		t.Fatalf("getmotd -> %v", out)
	}
	m, err := q3.Parse(out[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	info := m.(q3.MOTD).Info
	if c, _ := info.Get("challenge"); c != "29862" {
		t.Errorf("challenge %q", c)
	}
	if s, _ := info.Get("motd"); s != "Welcome to scout" {
		t.Errorf("motd %q", s)
	}
	// Only getmotd on that port.
	if out := f.h.HandleMOTD(f.now, client, oob("getservers 84"), nil); len(out) != 0 {
		t.Fatal("answered getservers on the MOTD port")
	}
	if f.h.Stats().Dropped(ReasonWrongPort) != 1 {
		t.Fatalf("drops %v", f.dropSummary())
	}
}

// A large list paced on the global budget (scout's client, from its
// cookie lane) takes the budget for a while ahead; the master's own
// checks of servers that heartbeat meanwhile are charged to it but still
// go: a million-server listing read by scout's clients must not stop the
// registration of new servers.
func TestMaster_OwnChecksGoWhileTheBudgetIsPacedAhead(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	budget, err := NewByteBudget(DefaultOutboundBytesPerSecond, DefaultOutboundBurst)
	if err != nil {
		t.Fatal(err)
	}
	f.h.deps.Budget = budget
	// 5 MB paced over the budget: about 0.4 s of it taken ahead.
	if _, why := budget.ReservePaced(f.now, 5_000_000, false, time.Minute); why != OK {
		t.Fatal(why)
	}
	ahead := budget.tat
	for i := range 100 {
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i + 1)}), 27960)
		if out := f.in(a, oaHeartbeat); len(out) != 1 || out[0].Kind != KindGetInfo {
			t.Fatalf("heartbeat %d: %d datagrams, drops %v; want its getinfo", i, len(out), f.dropSummary())
		}
	}
	// They were charged (the budget is further ahead), and a list that
	// needs the budget at once waits.
	if budget.tat <= ahead {
		t.Errorf("100 getinfos left the budget where it was (%d ns): not charged", budget.tat)
	}
	if _, why := budget.ReservePaced(f.now, 1000, true, 0); why != ReasonBudgetExhausted {
		t.Errorf("a reply at once while the budget is taken ahead: %v", why)
	}
}
