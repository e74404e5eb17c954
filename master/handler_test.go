package master

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
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

// handlerSetup is a handler's settings and dependencies in one, for the
// tests' changes to the fixture's.
type handlerSetup struct {
	HandlerConfig
	HandlerDeps
}

func newHandlerFix(t testing.TB, rc Config, mod func(*handlerSetup)) *hfix {
	t.Helper()
	st := &fakePersist{put: map[netip.AddrPort]Server{}}
	hc := handlerSetup{HandlerConfig{MOTD: "Welcome to scout"}, HandlerDeps{Registry: newTestRegistry(t, rc), Persist: st}}
	if mod != nil {
		mod(&hc)
	}
	h, err := NewHandler(hc.HandlerConfig, hc.HandlerDeps)
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
	m, err := q3.Parse(xxdFile(t, "../protocol/q3/testdata/openarena_statusResponse_3bots.hex"))
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
	hb := xxdFile(t, "../protocol/q3/testdata/openarena_heartbeat.hex")
	out := f.in(srv, hb)
	if len(out) != 1 || out[0].To != srv || out[0].Kind != KindGetInfo {
		t.Fatalf("heartbeat -> %v, want one getinfo to %v", out, srv)
	}
	c := challengeOf(t, out, KindGetInfo)
	if len(c) != ChallengeLen {
		t.Fatalf("challenge %q", c)
	}
	// The real reply, with our challenge in place of the captured one.
	real := xxdFile(t, "../protocol/q3/testdata/openarena_infoResponse.hex")
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
		"a response":         xxdFile(t, "../protocol/q3/testdata/probe_master_getserversResponse.hex"),
		"print":              xxdFile(t, "../protocol/q3/testdata/openarena_print_gamemismatch.hex"),
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

func q4InfoPacket(t testing.TB, challenge int32, players int) []byte {
	t.Helper()
	m, err := q4.ParseInfoResponse(xxdFile(t, "../protocol/q4/testdata/ours_q4_infoResponse_accepted_by_qstat_and_gamedig.hex"))
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
		xxdFile(t, "../protocol/q4/testdata/qstat_req_q4m_getServers.hex"),
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
