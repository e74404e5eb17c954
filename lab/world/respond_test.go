package world

import (
	"hash/maphash"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/a2s"
	"github.com/scout-discovery/scout/protocol/gs4"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

var (
	t0      = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	prober  = netip.MustParseAddrPort("127.0.0.1:40000")
	testRes = responder{chal: challenger{seed: maphash.MakeSeed()}}
)

func testServer(g Game) *Server {
	return &Server{
		Public:   netip.MustParseAddrPort("81.169.12.34:27960"),
		Loopback: netip.MustParseAddrPort("127.1.0.1:27960"),
		Game:     g, Hostname: "Test " + string(g), Map: "q3dm17", GameType: "0", MaxClients: 16,
		Players: []Player{{Name: "Alice", Score: 12, Ping: 48}, {Name: "Sarge", Score: 3, Ping: 77, Bot: true}},
	}
}

// ask runs one query through a fresh limiter and returns the replies.
func ask(t *testing.T, s *Server, pkt []byte) ([][]byte, Outcome) {
	t.Helper()
	var lim limiter
	return testRes.respond(t0, 0, s, &lim, prober, pkt, nil)
}

func ask1(t *testing.T, s *Server, pkt []byte) []byte {
	t.Helper()
	out, o := ask(t, s, pkt)
	return one(t, out, o)
}

func one(t *testing.T, out [][]byte, o Outcome) []byte {
	t.Helper()
	if len(out) != 1 {
		t.Fatalf("%d replies (%v), want 1", len(out), o)
	}
	return out[0]
}

func TestRespond_Q3Family(t *testing.T) {
	for _, g := range []Game{Q3A, ET, RTCW, OA} {
		s := testServer(g)
		m, err := q3.Parse(ask1(t, s, []byte("\xff\xff\xff\xffgetinfo 2a6b4f2e")))
		ir, ok := m.(q3.InfoResponse)
		if err != nil || !ok {
			t.Fatalf("%s getinfo: %T %v", g, m, err)
		}
		if last := ir.Info[len(ir.Info)-1]; last.Key != "challenge" || last.Value != "2a6b4f2e" {
			t.Errorf("%s: last key %v, want the echoed challenge (ioquake3 order)", g, last)
		}
		for k, want := range map[string]string{"hostname": s.Hostname, "mapname": "q3dm17", "clients": "2", "sv_maxclients": "16", "protocol": strconv.Itoa(s.protocol())} {
			if v, _ := ir.Info.Get(k); v != want {
				t.Errorf("%s infoResponse %s = %q, want %q", g, k, v, want)
			}
		}
		// qstat's bare getinfo: no challenge key at all.
		m, _ = q3.Parse(ask1(t, s, []byte("\xff\xff\xff\xffgetinfo\n")))
		if _, has := m.(q3.InfoResponse).Info.Get("challenge"); has {
			t.Errorf("%s: bare getinfo answered with a challenge key", g)
		}

		m, err = q3.Parse(ask1(t, s, []byte("\xff\xff\xff\xffgetstatus 77")))
		sr, ok := m.(q3.StatusResponse)
		if err != nil || !ok || len(sr.Players) != 2 {
			t.Fatalf("%s getstatus: %+v %v", g, m, err)
		}
		if sr.Info[0].Key != "challenge" || sr.Info[0].Value != "77" {
			t.Errorf("%s: statusResponse starts with %v, want the challenge", g, sr.Info[0])
		}
		if p := sr.Players[0]; p.Score != 12 || p.Ping != 48 || p.Name != "Alice" || sr.Players[1].Ping != 0 {
			t.Errorf("%s players %+v (bots have ping 0)", g, sr.Players)
		}
	}
}

func TestRespond_GetChallenge(t *testing.T) {
	m, _ := q3.Parse(ask1(t, testServer(OA), []byte("\xff\xff\xff\xffgetchallenge 477913120 Quake3Arena")))
	cr, ok := m.(q3.ChallengeResponse)
	if !ok || cr.ClientChallenge != "477913120" || cr.Protocol != 71 || cr.Challenge == "" {
		t.Errorf("ioquake3 challengeResponse %+v", m)
	}
	m, _ = q3.Parse(ask1(t, testServer(OA), []byte("\xff\xff\xff\xffgetchallenge 1 WrongGame")))
	if p, ok := m.(q3.Print); !ok || p.Text != "Game mismatch: This is a Quake3Arena server\n" {
		t.Errorf("game mismatch: %+v", m)
	}
	m, _ = q3.Parse(ask1(t, testServer(ET), []byte("\xff\xff\xff\xffgetchallenge")))
	if cr, ok := m.(q3.ChallengeResponse); !ok || cr.ClientChallenge != "" || cr.Protocol != 0 {
		t.Errorf("ET challengeResponse %+v: want the server challenge alone", m)
	}
}

func TestRespond_IgnoresGarbageAndUnknown(t *testing.T) {
	cases := map[Game][]string{
		OA: {"", "\xff\xff\xff", "\xff\xff\xff\xff", "\xff\xff\xff\xffrcon secret status", "\xff\xff\xff\xffheartbeat QuakeArena-1\n",
			"\xff\xff\xff\xffinfoResponse\n\\a\\b", "\xff\xff\xff\xffgetservers 68 empty full", "hello", "\xff\xff\xff\xffgetinfo " + strings.Repeat("x", 129)},
		Q4:  {"\xff\xffgetInfo", "\xff\xffheartbeat\x00", "\xff\xffgetServers\x00\x55\x00\x02\x00\x00\x00", "\xff\xff\xff\xffgetinfo"},
		UT3: {"\xfe\xfd", "\xfe\xfd\x00\x00\x00\x00\x01\xff\xff\xff\x01", "\xfe\xfd\x07\x00\x00\x00\x01"},
		CSS: {"\xff\xff\xff\xffTSource Engine Query", "\xff\xff\xff\xffV\x01\x02", "\xff\xff\xff\xffI\x11", "\xfe\xff\xff\xff"},
	}
	for g, pkts := range cases {
		for _, p := range pkts {
			out, o := ask(t, testServer(g), []byte(p))
			if len(out) != 0 || (o != Ignored && o != BadChallenge) {
				t.Errorf("%s %q: %d replies, outcome %v; want none", g, p, len(out), o)
			}
		}
	}
}

func TestRespond_Quake4(t *testing.T) {
	s := testServer(Q4)
	m, err := q4.ParseInfoResponse(ask1(t, s, []byte("\xff\xffgetInfo\x00PiNGPoNg\x00")))
	if err != nil {
		t.Fatal(err)
	}
	if m.Challenge != 0x474e6950 || m.Protocol != (q4.Version{Major: 2, Minor: 85}) || len(m.Players) != 2 || m.Players[1].Ping != 0 {
		t.Errorf("%+v", m)
	}
	if v, _ := m.Info.Get("si_name"); v != s.Hostname {
		t.Errorf("si_name %q", v)
	}
}

func TestRespond_UT3ChallengeAndSplit(t *testing.T) {
	s := testServer(UT3)
	for i := len(s.Players); i < 64 && len(s.Players) < s.MaxClients; i++ {
		s.Players = append(s.Players, Player{Name: "LongPlayerNameNumber" + strconv.Itoa(i), Score: i, Ping: 30})
	}
	s.MaxClients = 64
	for len(s.Players) < 64 {
		s.Players = append(s.Players, Player{Name: "LongPlayerNameNumber" + strconv.Itoa(len(s.Players)), Ping: 30})
	}
	var lim limiter
	out, o := testRes.respond(t0, 3, s, &lim, prober, []byte{0xfe, 0xfd, 0x09, 0x10, 0x20, 0x30, 0x40}, nil)
	if o != Challenged {
		t.Fatalf("outcome %v", o)
	}
	ch, err := gs4.ParseChallengeReply(one(t, out, o))
	if err != nil || ch.SessionID != 0x10203040 {
		t.Fatal(ch, err)
	}
	req, _ := gs4.InfoRequest{SessionID: 7, HasChallenge: true, Challenge: ch.Challenge, Rules: true, Players: true, Teams: true, Split: true}.AppendBinary(nil)
	out, o = testRes.respond(t0.Add(time.Second), 3, s, &lim, prober, req, nil)
	if o != Answered || len(out) < 2 {
		t.Fatalf("%d packets, %v: a 64-player reply should be split", len(out), o)
	}
	var r gs4.Reassembler
	for _, b := range out {
		if len(b) > GS4MaxPacket {
			t.Errorf("packet of %d bytes", len(b))
		}
		p, err := gs4.ParseInfoPacket(b)
		if err != nil {
			t.Fatal(err)
		}
		r.Add(p)
	}
	info, err := r.Info()
	if err != nil || len(info.PlayerNames()) != 64 {
		t.Fatalf("assembled %d players, %v", len(info.PlayerNames()), err)
	}
	// A wrong challenge, another source, or none: no answer.
	bad, _ := gs4.InfoRequest{SessionID: 7, HasChallenge: true, Challenge: ch.Challenge + 1, Rules: true}.AppendBinary(nil)
	if out, o := testRes.respond(t0, 3, s, &lim, prober, bad, nil); len(out) != 0 || o != BadChallenge {
		t.Errorf("bad challenge answered: %v", o)
	}
	if out, _ := testRes.respond(t0, 3, s, &lim, netip.MustParseAddrPort("127.0.0.2:40000"), req, nil); len(out) != 0 {
		t.Error("challenge accepted from another source")
	}
	if out, _ := testRes.respond(t0.Add(2*ChallengeLifetime), 3, s, &lim, prober, req, nil); len(out) != 0 {
		t.Error("challenge accepted after two lifetimes")
	}
}

func TestRespond_A2SChallengeRoundTrip(t *testing.T) {
	s := testServer(CSS)
	var lim limiter
	for _, first := range [][]byte{
		[]byte("\xff\xff\xff\xffTSource Engine Query\x00"),
		[]byte("\xff\xff\xff\xffU\xff\xff\xff\xff"),
	} {
		out, o := testRes.respond(t0, 1, s, &lim, prober, first, nil)
		ch, err := a2s.ParseChallenge(one(t, out, o))
		if err != nil || o != Challenged {
			t.Fatal(err, o)
		}
		var again []byte
		if first[4] == 'T' {
			again, _ = a2s.InfoRequest{HasChallenge: true, Challenge: ch.Challenge}.AppendBinary(nil)
		} else {
			again, _ = a2s.PlayerRequest(ch).AppendBinary(nil)
		}
		out, o = testRes.respond(t0, 1, s, &lim, prober, again, nil)
		m, err := a2s.Parse(one(t, out, o))
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case a2s.Info:
			if m.Name != s.Hostname || m.Players != 2 || m.Bots != 1 || m.MaxPlayers != 16 || m.Port == nil || *m.Port != 27960 {
				t.Errorf("info %+v", m)
			}
		case a2s.Players:
			if len(m.Players) != 2 || m.Players[0].Name != "Alice" {
				t.Errorf("players %+v", m)
			}
		default:
			t.Errorf("reply %T", m)
		}
	}
}

func TestRespond_RateLimitPerSource(t *testing.T) {
	s := testServer(OA)
	var lim limiter
	req := []byte("\xff\xff\xff\xffgetstatus x")
	answered := 0
	for i := range 20 {
		now := t0.Add(time.Duration(i) * time.Millisecond * 20) // 20 queries in 400 ms
		if _, o := testRes.respond(now, 0, s, &lim, prober, req, nil); o == Answered {
			answered++
		}
	}
	if answered != SourceBurst {
		t.Errorf("%d of 20 answered from one source in 400 ms, want the burst of %d", answered, SourceBurst)
	}
	// Another port of the same address shares the bucket; another address
	// does not.
	if _, o := testRes.respond(t0.Add(400*time.Millisecond), 0, s, &lim, netip.MustParseAddrPort("127.0.0.1:40001"), req, nil); o != RateLimited {
		t.Errorf("same address, other port: %v, want rate_limited", o)
	}
	if _, o := testRes.respond(t0.Add(500*time.Millisecond), 0, s, &lim, netip.MustParseAddrPort("127.0.0.9:40000"), req, nil); o != Answered {
		t.Errorf("other address: %v, want answered", o)
	}
	// One period later one more query from the first source is allowed.
	if _, o := testRes.respond(t0.Add(380*time.Millisecond+SourcePeriod), 0, s, &lim, prober, req, nil); o != Answered {
		t.Errorf("after a period: %v", o)
	}
}

// TestBucket follows ioquake3's SVC_RateLimit at the boundaries.
func TestBucket(t *testing.T) {
	var b bucket
	for i := range 10 {
		if b.limited(t0, 10, time.Second) {
			t.Fatalf("request %d limited within the burst", i)
		}
	}
	if !b.limited(t0, 10, time.Second) {
		t.Fatal("11th request in the same instant allowed")
	}
	if !b.limited(t0.Add(time.Second-time.Nanosecond), 10, time.Second) {
		t.Error("allowed 1 ns before a period leaked")
	}
	if b.limited(t0.Add(time.Second), 10, time.Second) {
		t.Error("limited after one period leaked one")
	}
	if b.limited(t0.Add(time.Hour), 10, time.Second) {
		t.Error("limited after an hour")
	}
}

func TestLimiter_OutboundPerServer(t *testing.T) {
	var lim limiter
	allowed := 0
	for i := range 30 { // 30 sources at once: the outbound bucket lets 10 through
		if lim.allow(t0, netip.AddrFrom4([4]byte{127, 0, 1, byte(i)})) {
			allowed++
		}
	}
	if allowed != OutboundBurst {
		t.Errorf("%d allowed in one instant from distinct sources, want %d", allowed, OutboundBurst)
	}
}

// TestQuakestat checks replies with the real qstat against an emulated
// server of each family on loopback.
func TestQuakestat(t *testing.T) {
	qs, err := exec.LookPath("quakestat")
	if err != nil {
		if testingCI() {
			t.Fatal("quakestat not installed")
		}
		t.Skip("quakestat not installed")
	}
	var servers []Server
	for i, g := range []Game{OA, Q4, CSS} {
		s := *testServer(g)
		s.Public = netip.AddrPortFrom(netip.AddrFrom4([4]byte{81, 169, 12, byte(40 + i)}), 27960)
		s.Loopback = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1, 200, byte(1 + i)}), 0)
		servers = append(servers, s)
	}
	e, stop := startWorld(t, World{Version: FormatVersion, Servers: servers}, Config{})
	defer stop()
	for i, kind := range []string{"-q3s", "-q4s", "-a2s"} {
		lo, _ := e.Table().Loopback(servers[i].Public)
		out, err := exec.Command(qs, "-xml", "-R", "-P", "-timeout", "5", kind, lo.String()).CombinedOutput()
		if err != nil {
			t.Fatalf("quakestat %s: %v\n%s", kind, err, out)
		}
		x := string(out)
		if !strings.Contains(x, `status="UP"`) || !strings.Contains(x, servers[i].Hostname) || !strings.Contains(x, "Alice") {
			t.Errorf("quakestat %s %v:\n%s", kind, lo, x)
		}
	}
}
