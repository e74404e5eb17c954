package interop

import (
	"fmt"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
	"github.com/scout-discovery/scout/probe"
)

// openArenaBots are the bots the server gets; their names as the server
// reports them are capitalised.
var openArenaBots = []string{"sarge", "grism", "kyonshi"}

// TestOpenArena_ProbeAgreesWithQstat queries a real OpenArena server with
// scout's probe and with quakestat -q3s -R -P, and requires the two to
// agree on every field both report. ioquake3 allows 10 getinfo/getstatus
// per source address before it limits to one a second; this test sends 2
// and qstat 2, from 127.0.0.1 (readiness probes come from 127.0.0.254).
func TestOpenArena_ProbeAgreesWithQstat(t *testing.T) {
	peer.Need(t, peer.Quakestat, "apt-get install qstat")
	oa := peer.StartOpenArena(t, peer.OpenArenaConfig{Bots: openArenaBots, Hostname: "^1scout ^7interop"})

	res, counts, err := (&probe.Prober{}).Query(t.Context(), []probe.Target{{Addr: oa.Addr, Dialect: probe.Q3}})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.Err != nil || !r.Answered() {
		t.Fatalf("scout: %v\n%s", r.Err, oa.LogTail())
	}
	t.Logf("scout: RTT %v, attempts %d, counts %+v", r.RTT, r.Attempts, counts)

	qs := peer.RunQuakestat(t, "-q3s", oa.Addr.String(), "-R", "-P")
	if len(qs) != 1 || qs[0].Status != "online" {
		t.Fatalf("quakestat: %+v", qs)
	}
	q := qs[0]

	var diffs []string
	check := func(field string, scout, qstat any) {
		if fmt.Sprint(scout) != fmt.Sprint(qstat) {
			diffs = append(diffs, fmt.Sprintf("%s: scout %q, qstat %q", field, fmt.Sprint(scout), fmt.Sprint(qstat)))
		}
	}
	check("host name", probe.StripColours(r.Name), q.Name) // qstat strips colour codes
	check("map", r.Map, q.Map)
	check("players", r.NumPlayers, q.NumPlayers)
	check("max players", r.MaxPlayers, q.MaxPlayers)
	// qstat leaves its gametype field empty for OpenArena and keeps the
	// number in its rules, as the server sent it.
	check("game type", r.GameType, q.Rules["gametype"])
	check("protocol", r.Protocol, q.Rules["protocol"])
	check("player count", len(r.Players), len(q.Players))
	for i := range min(len(r.Players), len(q.Players)) {
		sp, qp := r.Players[i], q.Players[i]
		check(fmt.Sprintf("player %d", i),
			fmt.Sprintf("%s score %d ping %d", sp.Name, sp.Score, sp.Ping),
			fmt.Sprintf("%s score %d ping %d", qp.Name, qp.Score, qp.Ping))
	}
	// Every rule qstat reports, scout has, with the same value. (qstat
	// moves hostname, mapname, clients, sv_maxclients and the challenge
	// out of its rules; scout keeps all but the challenge in Info.)
	for k, v := range q.Rules {
		got, ok := r.Info.Get(k)
		if !ok {
			diffs = append(diffs, fmt.Sprintf("rule %s: missing in scout, qstat %q", k, v))
		} else if got != v {
			diffs = append(diffs, fmt.Sprintf("rule %s: scout %q, qstat %q", k, got, v))
		}
	}
	if len(diffs) > 0 {
		t.Errorf("scout and qstat disagree about %v:\n  %s", oa.Addr, strings.Join(diffs, "\n  "))
	}
	// The bots are the ones asked for.
	for i, b := range openArenaBots {
		if i < len(r.Players) && !strings.EqualFold(r.Players[i].Name, b) {
			t.Errorf("player %d is %q, want bot %s", i, r.Players[i].Name, b)
		}
	}
}
