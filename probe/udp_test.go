package probe

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/protocol/gs4"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q4"
)

// responder is peer.ServeUDP: answer's packets for each datagram, from a
// socket on 127.0.0.1 bound before it returns, until the test ends.
var responder = peer.ServeUDP

func queryOne(t *testing.T, p *Prober, tg Target) (Result, Counts) {
	t.Helper()
	res, counts, err := p.Query(t.Context(), []Target{tg})
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	return res[0], counts
}

func TestQuery_Q4OverUDP(t *testing.T) {
	addr := responder(t, func(b []byte) [][]byte {
		req, err := q4.ParseGetInfo(b)
		if err != nil {
			return nil
		}
		m := q4.InfoResponse{Challenge: req.Challenge, Protocol: q4.Quake4,
			Info: infostring.Info{{Key: "si_name", Value: "^1Red ^7Q4"}, {Key: "si_map", Value: "mp/q4dm1"},
				{Key: "si_maxPlayers", Value: "8"}, {Key: "si_gameType", Value: "DM"}},
			Players: []q4.Player{{ID: 0, Ping: 42, Rate: 25000, Name: "Alice", Clan: "A"}, {ID: 3, Ping: 7, Name: "Bob"}},
			OSMask:  1}
		out, err := m.AppendBinary(nil)
		if err != nil {
			t.Error(err)
		}
		return [][]byte{out}
	})
	r, c := queryOne(t, &Prober{}, Target{addr, Q4})
	if r.Err != nil || !r.Answered() || r.Attempts != 1 {
		t.Fatalf("result %+v", r)
	}
	if r.Name != "^1Red ^7Q4" || r.Map != "mp/q4dm1" || r.MaxPlayers != 8 || r.NumPlayers != 2 ||
		r.GameType != "DM" || r.Protocol != q4.Quake4.String() {
		t.Errorf("summary %+v", r)
	}
	if len(r.Players) != 2 || r.Players[0] != (Player{Name: "[A]Alice", Ping: 42}) || r.Players[1] != (Player{Name: "Bob", Ping: 7}) {
		t.Errorf("players %+v", r.Players)
	}
	if c.Sent != 1 || c.Matched != 1 || c.Received != 1 || c.BytesIn == 0 {
		t.Errorf("counts %+v", c)
	}
}

func TestQuery_GS4ChallengeAndSplitReplyOverUDP(t *testing.T) {
	const challenge = 0xB3C4D5E6
	info := gs4.Info{
		Rules: []gs4.KeyValue{{Key: "hostname", Value: "UT3 box"}, {Key: "numplayers", Value: "2"},
			{Key: "maxplayers", Value: "16"}, {Key: "p1073741825", Value: "DM-Deck"},
			{Key: "p1073741826", Value: "UTGame.UTDeathmatch"}},
		Players: gs4.Table{Fields: []string{"player_", "score_", "ping_", "team_"},
			Rows: [][]string{{"Alice", "12", "40", "0"}, {"Bob", "3", "9", "1"}}},
	}
	var mu sync.Mutex // guards infoRequests, written by the responder
	var infoRequests []gs4.InfoRequest
	addr := responder(t, func(b []byte) [][]byte {
		m, err := gs4.Parse(b)
		if err != nil {
			return nil
		}
		switch m := m.(type) {
		case gs4.ChallengeRequest:
			out, _ := gs4.ChallengeReply{SessionID: m.SessionID, Challenge: challenge}.AppendBinary(nil)
			return [][]byte{out}
		case gs4.InfoRequest:
			mu.Lock()
			infoRequests = append(infoRequests, m)
			mu.Unlock()
			in := info
			in.SessionID = m.SessionID
			pkts, err := in.Split(140) // forces several packets
			if err != nil {
				t.Error(err)
			}
			var out [][]byte
			for i := len(pkts) - 1; i >= 0; i-- { // last first: order must not matter
				b, _ := pkts[i].AppendBinary(nil)
				out = append(out, b)
			}
			return out
		}
		return nil
	})
	r, c := queryOne(t, &Prober{}, Target{addr, GS4})
	if r.Err != nil {
		t.Fatalf("result %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(infoRequests) != 1 || !infoRequests[0].HasChallenge || infoRequests[0].Challenge != challenge {
		t.Fatalf("info requests %+v; want one carrying the challenge", infoRequests)
	}
	if r.Name != "UT3 box" || r.Map != "DM-Deck" || r.NumPlayers != 2 || r.MaxPlayers != 16 || r.GameType != "UTGame.UTDeathmatch" {
		t.Errorf("summary %+v", r)
	}
	want := []Player{{Name: "Alice", Score: 12, Ping: 40, Team: "0"}, {Name: "Bob", Score: 3, Ping: 9, Team: "1"}}
	if len(r.Players) != 2 || r.Players[0] != want[0] || r.Players[1] != want[1] {
		t.Errorf("players %+v, want %+v", r.Players, want)
	}
	if c.Received < 3 || c.Matched != c.Received || c.Sent != 2 {
		t.Errorf("counts %+v; want every packet of the split reply matched", c)
	}
}

// closedPort returns a loopback address nothing listens on: bound, then
// closed.
func closedPort(t testing.TB, ip net.IP) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// TestRun_ClosedPortWithoutICMPIsTimeout pins what a plain unconnected
// socket learns of a closed port: nothing (the ICMP port unreachable is
// not reported to it), so the server times out after every attempt.
func TestRun_ClosedPortWithoutICMPIsTimeout(t *testing.T) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	closed := closedPort(t, net.IPv4(127, 0, 0, 1))
	var r Result
	counts, err := (&Prober{Timeout: 50 * time.Millisecond, Attempts: 2}).Run(t.Context(), c, []Target{{closed, Q4}},
		func(_ int, res Result) { r = res })
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(r.Err, ErrTimeout) || r.Attempts != 2 {
		t.Fatalf("err %v after %d attempts; want ErrTimeout after 2", r.Err, r.Attempts)
	}
	if counts.ReadErrors != 0 || counts.ICMPErrors != 0 || counts.Unreachable != 0 {
		t.Errorf("counts %+v: this platform reported an ICMP error to a plain socket; update the package doc", counts)
	}
}

// TestQuery_ClosedPortIsUnreachable: on a socket from Wrap (Linux), a
// server whose port is closed ends with ErrUnreachable at its first
// attempt, long before its (one-hour) timeout would, while a live server
// probed from the same socket answers normally, and no write fails
// because of the other's ICMP error. The timeout is never waited for: a
// platform without ICMP errors fails this test through the context's
// deadline, not a measured time.
func TestQuery_ClosedPortIsUnreachable(t *testing.T) {
	probeConn, err := net.ListenUDP("udp", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, f := Wrap(probeConn)
	probeConn.Close()
	if !f.ICMPErrors {
		t.Skip("this platform reports no ICMP errors to an unconnected socket (see TestRun_ClosedPortWithoutICMPIsTimeout)")
	}
	live := responder(t, func(b []byte) [][]byte {
		req, err := q4.ParseGetInfo(b)
		if err != nil {
			return nil
		}
		m := q4.InfoResponse{Challenge: req.Challenge, Protocol: q4.Quake4,
			Info: infostring.Info{{Key: "si_name", Value: "live"}}}
		out, _ := m.AppendBinary(nil)
		return [][]byte{out}
	})
	// Q3 sends two requests at once to the dead port, so the second write
	// meets the ICMP error the first drew; the live server comes after.
	targets := []Target{
		{closedPort(t, net.IPv4(127, 0, 0, 1)), Q3},
		{live, Q4},
		{closedPort(t, net.IPv4(127, 0, 0, 2)), Q4},
	}
	if c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6loopback}); err == nil { // ICMPv6 too, where ::1 exists
		targets = append(targets, Target{c.LocalAddr().(*net.UDPAddr).AddrPort(), A2S})
		c.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	before := runtime.NumGoroutine()
	p := &Prober{Timeout: time.Hour, Attempts: 3}
	res, counts, err := p.Query(ctx, targets)
	if err != nil {
		t.Fatalf("Query: %v (counts %+v)", err, counts)
	}
	t.Logf("%d targets, counts %+v", len(targets), counts)
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines after Query, %d before", after, before)
	}
	for i, r := range res {
		if targets[i].Addr == live {
			if r.Err != nil || r.Name != "live" || !r.Answered() {
				t.Errorf("live server: %+v", r)
			}
			continue
		}
		var ue *UnreachableError
		if !errors.Is(r.Err, ErrUnreachable) || !errors.As(r.Err, &ue) || ue.Kind != UnreachablePort ||
			ue.From.IsValid() || r.Answered() || r.Attempts != 1 {
			t.Errorf("%v (%s): err %v, attempts %d; want unreachable: port after 1", r.Addr, r.Game, r.Err, r.Attempts)
		}
	}
	if want := len(targets) - 1; counts.Unreachable != want || counts.Answered != 1 || counts.Silent != 0 ||
		counts.ICMPErrors < want || counts.WriteErrors != 0 || counts.ReadErrors != 0 {
		t.Errorf("counts %+v; want %d unreachable, 1 answered, no write or read errors", counts, want)
	}
}

// TestQuery_UnreachableFreesTheWindow: with a window of one request, a
// list of dead servers followed by a live one is probed through in one go:
// each ICMP error frees the slot its server held, where a timeout would
// hold it for an hour.
func TestQuery_UnreachableFreesTheWindow(t *testing.T) {
	probeConn, err := net.ListenUDP("udp", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, f := Wrap(probeConn)
	probeConn.Close()
	if !f.ICMPErrors {
		t.Skip("this platform reports no ICMP errors to an unconnected socket")
	}
	live := responder(t, func(b []byte) [][]byte {
		req, err := q4.ParseGetInfo(b)
		if err != nil {
			return nil
		}
		m := q4.InfoResponse{Challenge: req.Challenge, Protocol: q4.Quake4}
		out, _ := m.AppendBinary(nil)
		return [][]byte{out}
	})
	var targets []Target
	for i := range 20 {
		targets = append(targets, Target{closedPort(t, net.IPv4(127, 0, 1, byte(i+1))), Q4})
	}
	targets = append(targets, Target{live, Q4})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, counts, err := (&Prober{Timeout: time.Hour, Window: 1}).Query(ctx, targets)
	if err != nil {
		t.Fatalf("Query: %v (counts %+v)", err, counts)
	}
	if r := res[len(res)-1]; r.Err != nil || !r.Answered() {
		t.Errorf("live server after the dead ones: %+v", r)
	}
	if counts.Unreachable != 20 || counts.PeakInFlight != 1 || counts.Sent != 21 {
		t.Errorf("counts %+v; want 20 unreachable, 21 sends, one at a time", counts)
	}
}
