package master

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/infostring"
	"github.com/scout-discovery/scout/q3"
	"github.com/scout-discovery/scout/q4"
)

// xxdFile reads an xxd dump from testdata of another package.
func xxdFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, ln := range strings.Split(string(b), "\n") {
		_, rest, ok := strings.Cut(ln, ": ")
		if !ok {
			continue
		}
		if i := strings.Index(rest, "  "); i >= 0 {
			rest = rest[:i]
		}
		h, err := hex.DecodeString(strings.ReplaceAll(rest, " ", ""))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, h...)
	}
	return out
}

type fakePersist struct {
	put map[netip.AddrPort]Server
	del []netip.AddrPort
}

func (f *fakePersist) Put(s Server)            { f.put[s.Addr] = s }
func (f *fakePersist) Delete(a netip.AddrPort) { f.del = append(f.del, a) }

type hfix struct {
	h   *Handler
	st  *fakePersist
	now time.Time
}

func newHandlerFix(t testing.TB, rc Config, mod func(*HandlerConfig)) *hfix {
	t.Helper()
	st := &fakePersist{put: map[netip.AddrPort]Server{}}
	hc := HandlerConfig{Registry: newTestRegistry(t, rc), Persist: st, MOTD: "Welcome to scout"}
	if mod != nil {
		mod(&hc)
	}
	h, err := NewHandler(hc)
	if err != nil {
		t.Fatal(err)
	}
	return &hfix{h: h, st: st, now: t0}
}

func (f *hfix) in(from netip.AddrPort, pkt []byte) []Outgoing {
	return f.h.HandlePacket(f.now, from, pkt, nil)
}

func oob(s string) []byte { return []byte(q3.Prefix + s) }

// challengeOf returns the challenge of the getinfo (or getstatus) in outs.
func challengeOf(t testing.TB, outs []Outgoing, k Kind) string {
	t.Helper()
	for _, o := range outs {
		if o.Kind != k {
			continue
		}
		m, err := q3.Parse(o.Payload)
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case q3.GetInfo:
			return m.Challenge
		case q3.GetStatus:
			return m.Challenge
		}
	}
	t.Fatalf("no %v in %v", k, outs)
	return ""
}

// answerReprobe moves f to the listed srv's Q3A re-probe and answers its
// getstatus with OpenArena's statusResponse (3 bots), returning what was
// sent.
func answerReprobe(t testing.TB, f *hfix, srv netip.AddrPort) q3.StatusResponse {
	t.Helper()
	f.now = f.now.Add(game.Q3AReprobeInterval)
	out := f.h.Tick(f.now, nil)
	c := challengeOf(t, out, KindGetStatus)
	m, err := q3.Parse(xxdFile(t, "../q3/testdata/openarena_statusResponse_3bots.hex"))
	if err != nil {
		t.Fatal(err)
	}
	sr := m.(q3.StatusResponse)
	sr.Info.Set("challenge", c)
	pkt, _ := sr.AppendBinary(nil)
	f.in(srv, pkt)
	return sr
}

// oaInfo is the OpenArena 0.8.8 infoResponse with a challenge and changes.
func oaInfo(challenge string, kv ...string) []byte {
	in := infostring.Info{}
	for _, p := range infoReply(challenge, kv...).Info {
		in = append(in, infostring.Pair{Key: p.Key, Value: p.Value})
	}
	b, err := q3.InfoResponse{Info: in}.AppendBinary(nil)
	if err != nil {
		panic(err)
	}
	return b
}

var oaHeartbeat = oob("heartbeat QuakeArena-1\n")

// list registers a Q3A server at a through the handler.
func (f *hfix) list(t testing.TB, a netip.AddrPort, kv ...string) {
	t.Helper()
	out := f.in(a, oaHeartbeat)
	c := challengeOf(t, out, KindGetInfo)
	if out := f.in(a, oaInfo(c, kv...)); len(out) != 0 {
		t.Fatalf("reply to an infoResponse: %v", out)
	}
	if s, ok := f.h.Registry().Lookup(a); !ok || !s.Listed {
		t.Fatalf("%v not listed (drops %v)", a, f.dropSummary())
	}
}

func (f *hfix) dropSummary() map[string]uint64 {
	m := map[string]uint64{}
	for _, r := range Reasons() {
		if n := f.h.Stats().Dropped(r); n > 0 {
			m[r.String()] = n
		}
	}
	return m
}

// query sends a getservers and returns the servers of every reply packet
// and the end marker of the last.
func (f *hfix) query(t testing.TB, from netip.AddrPort, req string) ([]netip.AddrPort, q3.End, int) {
	t.Helper()
	out := f.in(from, oob(req))
	var all []netip.AddrPort
	end := q3.EndNone
	for _, o := range out {
		m, err := q3.Parse(o.Payload)
		if err != nil {
			t.Fatalf("reply %q: %v", o.Payload, err)
		}
		r := m.(q3.ServersResponse)
		all = append(all, r.Servers...)
		end = r.End
	}
	return all, end, len(out)
}

var client = ap("198.51.100.7:27960")

func TestMaster_HeartbeatListsOpenArena(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.5:27960")
	hb := xxdFile(t, "../q3/testdata/openarena_heartbeat.hex")
	out := f.in(srv, hb)
	if len(out) != 1 || out[0].To != srv || out[0].Kind != KindGetInfo {
		t.Fatalf("heartbeat -> %v, want one getinfo to %v", out, srv)
	}
	c := challengeOf(t, out, KindGetInfo)
	if len(c) != ChallengeLen {
		t.Fatalf("challenge %q", c)
	}
	// The real reply, with our challenge in place of the captured one.
	real := xxdFile(t, "../q3/testdata/openarena_infoResponse.hex")
	m, err := q3.Parse(real)
	if err != nil {
		t.Fatal(err)
	}
	ir := m.(q3.InfoResponse)
	ir.Info.Set("challenge", c)
	pkt, _ := ir.AppendBinary(nil)
	if out := f.in(srv, pkt); len(out) != 0 {
		t.Fatalf("replied to infoResponse: %v", out)
	}
	if _, ok := f.st.put[srv]; !ok {
		t.Fatal("listing not persisted")
	}
	got, end, _ := f.query(t, client, "getservers 71 empty full\n")
	if len(got) != 1 || got[0] != srv || end != q3.EndEOT {
		t.Fatalf("getservers 71 -> %v end %v", got, end)
	}
}

func TestMaster_NoReplyToGarbage(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.5:27960")
	f.list(t, srv)
	for name, pkt := range map[string][]byte{
		"empty":              {},
		"no prefix":          []byte("getservers 71 empty full"),
		"three ff":           []byte("\xff\xff\xffgetservers 71"),
		"unknown command":    oob("rcon secret quit"),
		"getinfo to master":  oob("getinfo xyz"),
		"getstatus":          oob("getstatus"),
		"a response":         xxdFile(t, "../q3/testdata/probe_master_getserversResponse.hex"),
		"print":              xxdFile(t, "../q3/testdata/openarena_print_gamemismatch.hex"),
		"malformed protocol": oob("getservers abc def"),
		"truncated word":     oob("getserv"),
		"q4 servers":         []byte("\xff\xffservers\x00\x01\x02\x03\x04\x05\x06"),
		"q4 unknown":         []byte("\xff\xffconnect\x00"),
		"q4 getServers cut":  []byte("\xff\xffgetServers\x00\x55"),
		"unsolicited info":   oaInfo("AAAAAAAAAAAAAAAA"),
		"getmotd on master":  oob(`getmotd "\challenge\1"`),
	} {
		before := f.h.Stats().DroppedTotal()
		if out := f.in(client, pkt); len(out) != 0 {
			t.Errorf("%s: replied %d packets", name, len(out))
		}
		if f.h.Stats().DroppedTotal() != before+1 {
			t.Errorf("%s: drop not counted exactly once (%v)", name, f.dropSummary())
		}
	}
	if f.h.Stats().Dropped(ReasonNotConnectionless) == 0 || f.h.Stats().Dropped(ReasonUnexpected) == 0 ||
		f.h.Stats().Dropped(ReasonUnknownCommand) == 0 || f.h.Stats().Dropped(ReasonMalformed) == 0 {
		t.Errorf("drop reasons %v", f.dropSummary())
	}
}

func TestMaster_SpoofedInfoResponseRejected(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv, spoofer := ap("203.0.113.5:27960"), ap("203.0.113.66:27960")
	c := challengeOf(t, f.in(srv, oaHeartbeat), KindGetInfo)
	// The right challenge from another address; a wrong challenge from
	// the right one; the right port on another host's challenge.
	f.in(spoofer, oaInfo(c))
	f.in(srv, oaInfo("AAAAAAAAAAAAAAAA"))
	f.in(srv, oaInfo(c[:15]+"x"))
	if s, _ := f.h.Registry().Lookup(srv); s.Listed {
		t.Fatal("listed on a spoofed reply")
	}
	if f.h.Stats().Dropped(ReasonUnknownServer) != 1 || f.h.Stats().Dropped(ReasonBadChallenge) != 2 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	// The real reply still lists it.
	f.in(srv, oaInfo(c))
	if s, _ := f.h.Registry().Lookup(srv); !s.Listed {
		t.Fatalf("not listed: %v", f.dropSummary())
	}
}

func TestMaster_ChallengeExpired(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.5:27960")
	c := challengeOf(t, f.in(srv, oaHeartbeat), KindGetInfo)
	f.now = t0.Add(DefaultChallengeLifetime) // exactly at the limit: too late
	f.in(srv, oaInfo(c))
	if f.h.Stats().Dropped(ReasonChallengeExpired) != 1 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	// One nanosecond earlier it would have been accepted.
	g := newHandlerFix(t, Config{}, nil)
	c = challengeOf(t, g.in(srv, oaHeartbeat), KindGetInfo)
	g.now = t0.Add(DefaultChallengeLifetime - time.Nanosecond)
	g.in(srv, oaInfo(c))
	if s, _ := g.h.Registry().Lookup(srv); !s.Listed {
		t.Fatalf("not listed 1ns before expiry: %v", g.dropSummary())
	}
}

func TestMaster_UnknownHeartbeat(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	if out := f.in(ap("203.0.113.5:27960"), oob("heartbeat SomethingElse-1\n")); len(out) != 0 {
		t.Fatalf("probed on an unknown heartbeat: %v", out)
	}
	if f.h.Stats().Dropped(ReasonUnknownHeartbeat) != 1 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	// DarkPlaces heartbeats are not unknown: the reply names the game.
	srv := ap("203.0.113.6:26000")
	out := f.in(srv, xxdFile(t, "../q3/testdata/openarena_heartbeat_darkplaces.hex"))
	c := challengeOf(t, out, KindGetInfo)
	f.in(srv, oaInfo(c, "gamename", "OpenArena"))
	got, _, _ := f.query(t, client, "getservers OpenArena 71 empty full")
	if len(got) != 1 || got[0] != srv {
		t.Fatalf("DarkPlaces form -> %v (%v)", got, f.dropSummary())
	}
}

func TestMaster_LoopbackRefused(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	for _, a := range []string{"127.0.0.1:27960", "[::1]:27960", "[::ffff:127.0.0.1]:27960"} {
		if out := f.in(ap(a), oaHeartbeat); len(out) != 0 {
			t.Errorf("%s: probed", a)
		}
	}
	if f.h.Stats().Dropped(ReasonLoopback) != 3 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	g := newHandlerFix(t, Config{AllowLoopback: true}, nil)
	g.list(t, ap("127.0.0.1:27960"))
}

func TestMaster_MaxServersPerAddress(t *testing.T) {
	f := newHandlerFix(t, Config{MaxServersPerAddress: 2}, nil)
	f.list(t, ap("203.0.113.5:27960"))
	f.list(t, ap("203.0.113.5:27961"))
	if out := f.in(ap("203.0.113.5:27962"), oaHeartbeat); len(out) != 0 {
		t.Fatal("third server on the address probed")
	}
	if f.h.Stats().Dropped(ReasonAddressFull) != 1 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	// IPv6: per /64.
	f.list(t, ap("[2001:db8:1:2::1]:27960"))
	f.list(t, ap("[2001:db8:1:2::2]:27960"))
	if out := f.in(ap("[2001:db8:1:2:ffff::3]:27960"), oaHeartbeat); len(out) != 0 {
		t.Fatal("third server in the /64 probed")
	}
	f.list(t, ap("[2001:db8:1:3::1]:27960")) // another /64
}

func TestMaster_FloodProtection(t *testing.T) {
	lim, err := NewSourceLimiter(DefaultThrottle, DefaultDecayTime, 100)
	if err != nil {
		t.Fatal(err)
	}
	f := newHandlerFix(t, Config{}, func(c *HandlerConfig) { c.Queries = lim })
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
	f.h.cfg.Budget = budget
	sent, queryBytes := 0, 0
	for i := range 100 {
		req := oob("getservers 71 empty full")
		queryBytes += len(req)
		victim := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 27960)
		for _, o := range f.h.HandlePacket(f.now, victim, req, nil) {
			sent += len(o.Payload)
		}
	}
	if sent != 10*one {
		t.Fatalf("sent %d bytes, want the burst %d", sent, 10*one)
	}
	if f.h.Stats().Dropped(ReasonBudgetExhausted) != 90 {
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

func TestMaster_StatusResponseOfIoquake3(t *testing.T) {
	// The Q3A re-probe is getstatus; ioquake3's serverinfo says
	// com_protocol and gamename\baseoa (the mod), and must still verify.
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.5:27960")
	f.list(t, srv)
	answerReprobe(t, f, srv)
	s, _ := f.h.Registry().Lookup(srv)
	if !s.LastVerified.Equal(f.now) || s.Clients != 3 || s.Game != "Quake3Arena" {
		t.Fatalf("after statusResponse: %+v, drops %v", s, f.dropSummary())
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
	f := newHandlerFix(t, Config{MaxServersPerAddress: -1}, func(c *HandlerConfig) { c.MaxEntries = q3.IDMasterEntriesPerPacket })
	f.h.reg.cfg.Catalogue, _ = f.h.reg.cfg.Catalogue.Apply(game.Property{Game: "Quake3Arena", Key: "protocols", Op: game.OpAdd, Values: []string{"43"}})
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

func q4InfoPacket(t testing.TB, challenge int32, players int) []byte {
	t.Helper()
	m, err := q4.ParseInfoResponse(xxdFile(t, "../q4/testdata/ours_q4_infoResponse_accepted_by_qstat_and_gamedig.hex"))
	if err != nil {
		t.Fatal(err)
	}
	m.Challenge = challenge
	m.Players = m.Players[:players]
	b, err := m.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMaster_Quake4Listing(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.44:28004")
	out := f.in(srv, []byte("\xff\xffheartbeat\x00"))
	if len(out) != 1 || out[0].Kind != KindQ4GetInfo {
		t.Fatalf("Q4 heartbeat -> %v", out)
	}
	gi, err := q4.ParseGetInfo(out[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	f.in(srv, q4InfoPacket(t, gi.Challenge^2, 2)) // wrong challenge
	if f.h.Stats().Dropped(ReasonBadChallenge) != 1 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	f.in(srv, q4InfoPacket(t, gi.Challenge, 2))
	s, _ := f.h.Registry().Lookup(srv)
	if !s.Listed || s.Game != "Quake4" || s.Clients != 2 {
		t.Fatalf("Q4 server %+v, drops %v", s, f.dropSummary())
	}
	// The real Quake 4 request (seed 000 Fig. 6) and qstat's q4m (0.0).
	fig6, _ := hex.DecodeString("ffff67657453657276657273005500028000000000")
	for _, req := range [][]byte{
		fig6,
		xxdFile(t, "../q4/testdata/qstat_req_q4m_getServers.hex"),
	} {
		out := f.in(client, req)
		if len(out) != 1 || out[0].Kind != KindQ4Servers {
			t.Fatalf("getServers -> %v (%v)", out, f.dropSummary())
		}
		sv, err := q4.ParseServers(out[0].Payload)
		if err != nil || len(sv.Servers) != 1 || sv.Servers[0] != srv {
			t.Fatalf("servers %v, %v", sv.Servers, err)
		}
	}
	// gameAuth -> authKey with a GUID.
	ga := q4.GameAuth{Protocol: q4.VersionOf(0x00020055), HasCDKey: true, CDKey: "ABCD1234EFGH5678"}
	req, _ := ga.AppendBinary(nil)
	out = f.in(client, req)
	if len(out) != 1 {
		t.Fatalf("gameAuth -> %v", out)
	}
	ak, err := q4.ParseAuthKey(out[0].Payload)
	if err != nil || ak.Kind != q4.AuthGUID || ak.GUID != GUIDOf(ga.CDKey) || len(ak.GUID) != 11 {
		t.Fatalf("authKey %+v, %v", ak, err)
	}
	_ = binary.LittleEndian
}

func TestMaster_Flatline(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	srv := ap("203.0.113.9:27960")
	c := challengeOf(t, f.in(srv, oob("heartbeat EnemyTerritory-1\n")), KindGetInfo)
	f.in(srv, oaInfo(c, "gamename", "et", "protocol", "84"))
	// A flatline triggers a check; a live server answers and stays.
	out := f.in(srv, oob("heartbeat ETFlatline-1\n"))
	c = challengeOf(t, out, KindGetInfo)
	f.now = f.now.Add(time.Second)
	f.in(srv, oaInfo(c, "gamename", "et", "protocol", "84"))
	f.now = f.now.Add(DefaultChallengeLifetime)
	f.h.Tick(f.now, nil)
	if s, ok := f.h.Registry().Lookup(srv); !ok || !s.Listed {
		t.Fatal("live server delisted by a (spoofed) flatline")
	}
	// A server that is gone does not answer: dropped, and deleted from
	// the store, once the check's lifetime has passed (and not before).
	f.in(srv, oob("heartbeat ETFlatline-1\n"))
	f.h.Tick(f.now.Add(DefaultChallengeLifetime-time.Nanosecond), nil)
	if _, ok := f.h.Registry().Lookup(srv); !ok {
		t.Fatal("dropped before the check expired")
	}
	f.h.Tick(f.now.Add(DefaultChallengeLifetime), nil)
	if _, ok := f.h.Registry().Lookup(srv); ok {
		t.Fatal("silent server still listed after flatline")
	}
	if len(f.st.del) != 1 || f.st.del[0] != srv {
		t.Fatalf("store deletes %v", f.st.del)
	}
	// ioquake3's shutdown: two identical heartbeats; the second finds the
	// check in flight and sends nothing more.
	g := newHandlerFix(t, Config{}, nil)
	g.list(t, srv)
	hb := xxdFile(t, "../q3/testdata/openarena_shutdown_heartbeat_pair_2nd.hex")
	if len(g.in(srv, hb)) != 1 || len(g.in(srv, hb)) != 0 {
		t.Fatal("shutdown pair: want one check")
	}
	g.h.Tick(g.now.Add(DefaultChallengeLifetime), nil)
	if _, ok := g.h.Registry().Lookup(srv); ok {
		t.Fatal("shut-down ioquake3 server still listed")
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

func TestMaster_Register(t *testing.T) {
	peer, upstream := ap("192.0.2.10:27950"), ap("192.0.2.20:27950")
	f := newHandlerFix(t, Config{}, func(c *HandlerConfig) {
		c.Peers = []netip.AddrPort{peer}
		c.Upstreams = []netip.AddrPort{upstream}
	})
	srv := ap("203.0.113.5:27960")
	reg, _ := q3.Register{Server: srv}.AppendBinary(nil)
	if out := f.in(ap("192.0.2.99:27950"), reg); len(out) != 0 {
		t.Fatal("register from a stranger probed")
	}
	if f.h.Stats().Dropped(ReasonNotPeer) != 1 {
		t.Fatalf("drops %v", f.dropSummary())
	}
	out := f.in(peer, reg)
	if len(out) != 1 || out[0].To != srv {
		t.Fatalf("register from a peer -> %v", out)
	}
	out = f.in(srv, oaInfo(challengeOf(t, out, KindGetInfo)))
	if s, _ := f.h.Registry().Lookup(srv); !s.Listed {
		t.Fatalf("registered server not listed: %v", f.dropSummary())
	}
	// Verified: forwarded upstream as register.
	if len(out) != 1 || out[0].To != upstream || out[0].Kind != KindRegister {
		t.Fatalf("forward -> %v", out)
	}
	m, err := q3.Parse(out[0].Payload)
	if err != nil || m.(q3.Register).Server != srv {
		t.Fatalf("forwarded %v, %v", m, err)
	}
}
