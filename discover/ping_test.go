package discover

import (
	"errors"
	"testing"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// pingSession is a landmark session with pings whose list (one server,
// its end marker at listRTT) and own landmark run have come.
func pingSession(t *testing.T, pings int, listRTT time.Duration) *session {
	t.Helper()
	s := listedSession(t, pings, listRTT)
	s.receive(at(listRTT), masterA, landmarkPacket(t, "fra-1", q3.LandmarkEntry{Addr: srv(1), RTT: 9 * time.Millisecond}))
	return s
}

func pingReply(t *testing.T) []byte {
	t.Helper()
	b, err := q3.ServersResponse{End: q3.EndEOT}.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func masterDone(s *session) *MasterDone {
	for _, e := range s.events {
		if d, ok := e.(MasterDone); ok {
			return &d
		}
	}
	return nil
}

// After a landmark master's list ends, the session pings it one ping at a
// time, keeps each round trip, and reports the master done after the last;
// BestRTT is the least sample: the list's inflated one (300 ms) gives way
// to the pings' (52 and 50 ms).
func TestSession_LandmarkPings(t *testing.T) {
	s := pingSession(t, 2, 300*time.Millisecond)
	now := at(300*time.Millisecond + EndGrace)
	out := s.poll(now)
	if len(out) != 1 || !out[0].ping || string(out[0].b) != string(pingQuery) || out[0].to != masterA {
		t.Fatalf("at the list's end: %+v, want one ping", out)
	}
	s.wrote(now, out[0], nil)
	if masterDone(s) != nil || s.listsDone() {
		t.Fatal("master done before its pings")
	}
	if w := s.wake(); !w.Equal(now.Add(2*300*time.Millisecond + PingSlack)) {
		t.Errorf("wake %v after the ping, want its wait", w.Sub(now))
	}
	now = now.Add(52 * time.Millisecond)
	out = s.receive(now, masterA, pingReply(t))
	if len(out) != 1 || !out[0].ping {
		t.Fatalf("after the first reply: %+v, want the second ping", out)
	}
	s.wrote(now, out[0], nil)
	now = now.Add(50 * time.Millisecond)
	if out = s.receive(now, masterA, pingReply(t)); len(out) != 0 {
		t.Fatalf("after the last reply: %+v", out)
	}
	d := masterDone(s)
	if d == nil || d.End != EndMarker || d.PingsSent != 2 || len(d.Pings) != 2 || d.Pings[0] != 52*time.Millisecond ||
		d.Pings[1] != 50*time.Millisecond || d.RTT != 300*time.Millisecond || d.BestRTT() != 50*time.Millisecond ||
		d.Took != 300*time.Millisecond+EndGrace || d.Packets != 1 || d.Garbled != 0 {
		t.Fatalf("master done %+v", d)
	}
	if !s.listsDone() {
		t.Fatal("lists not done")
	}
	// A reply that comes after is no sample and no list packet.
	s.receive(now.Add(time.Millisecond), masterA, pingReply(t))
	if r := s.masters[0].rep; len(r.Pings) != 2 || r.Packets != 1 || r.Garbled != 0 {
		t.Errorf("a late reply counted: %+v", r)
	}
}

// A ping unanswered within its wait ends the master's pings (its late
// reply is not taken for a later ping's), and the master is done with
// the samples it has.
func TestSession_LandmarkPingTimeout(t *testing.T) {
	s := pingSession(t, 3, 40*time.Millisecond)
	now := at(40*time.Millisecond + EndGrace)
	out := s.poll(now)
	s.wrote(now, out[0], nil)
	wait := 2*40*time.Millisecond + PingSlack
	if out = s.poll(now.Add(wait - time.Millisecond)); len(out) != 0 || masterDone(s) != nil {
		t.Fatalf("before the wait: %+v", out)
	}
	if out = s.poll(now.Add(wait)); len(out) != 0 {
		t.Fatalf("at the wait: %+v, want no more pings", out)
	}
	d := masterDone(s)
	if d == nil || d.PingsSent != 1 || len(d.Pings) != 0 || d.BestRTT() != 40*time.Millisecond || d.End != EndMarker {
		t.Fatalf("master done %+v", d)
	}
	if out = s.receive(now.Add(wait+time.Millisecond), masterA, pingReply(t)); len(out) != 0 || len(s.masters[0].rep.Pings) != 0 {
		t.Errorf("the late reply: %+v, pings %v", out, s.masters[0].rep.Pings)
	}
}

// No pings without LandmarkPings, to a master that is no landmark, or to
// one asked with the short form; a context that ends during the pings
// keeps the list's end.
func TestSession_LandmarkPingsWhen(t *testing.T) {
	s := pingSession(t, 0, 40*time.Millisecond)
	if out := s.poll(at(40*time.Millisecond + EndGrace)); len(out) != 0 || masterDone(s) == nil {
		t.Errorf("LandmarkPings 0: %+v", out)
	}
	s = listedSession(t, 2, 10*time.Millisecond)
	if out := s.poll(at(10*time.Millisecond + EndGrace)); len(out) != 0 || masterDone(s) == nil {
		t.Errorf("no landmark run: %+v", out)
	}
	s = pingSession(t, 2, 40*time.Millisecond)
	out := s.poll(at(40*time.Millisecond + EndGrace))
	s.wrote(at(40*time.Millisecond+EndGrace), out[0], nil)
	s.stop(at(60*time.Millisecond), nil)
	if d := masterDone(s); d == nil || d.End != EndMarker || d.Error != "" {
		t.Errorf("stopped during the pings: %+v", d)
	}
}

// A ping's write error ends the pings, not the list.
func TestSession_LandmarkPingWriteError(t *testing.T) {
	s := pingSession(t, 2, 40*time.Millisecond)
	now := at(40*time.Millisecond + EndGrace)
	out := s.poll(now)
	s.wrote(now, out[0], errors.New("sendto: no buffer space"))
	if d := masterDone(s); d == nil || d.End != EndMarker || d.Error != "" || d.BestRTT() != 40*time.Millisecond {
		t.Errorf("after a failed ping: %+v", d)
	}
}
