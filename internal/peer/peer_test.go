package peer

import (
	"testing"
)

func TestStartOpenArena_AnswersQstat(t *testing.T) {
	oa := StartOpenArena(t, OpenArenaConfig{Bots: []string{"sarge", "grism"}, Hostname: "peer-test"})
	servers := RunQuakestat(t, "-q3s", oa.Addr.String(), "-R", "-P")
	if len(servers) != 1 {
		t.Fatalf("quakestat reported %d servers", len(servers))
	}
	s := servers[0]
	if s.Status != "online" || s.Name != "peer-test" || s.NumPlayers != 2 || len(s.Players) != 2 {
		t.Fatalf("quakestat saw %+v", s)
	}
	t.Logf("ready after %v; qstat ping %d ms", oa.ReadyAfter, s.Ping)
}

func TestLoopbackOnly(t *testing.T) {
	for _, a := range []string{"127.0.0.1:27950", "127.9.9.9:1"} {
		if err := loopback(a); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
	for _, a := range []string{"192.0.2.1:27950", "[::1]:27950", "master.ioquake3.org:27950"} {
		if err := loopback(a); err == nil {
			t.Errorf("%s accepted", a)
		}
	}
}
