package master

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/q3"
)

var q71all = Query{Family: game.FamilyQ3, Protocol: 71, Empty: true, Full: true, IPv4: true}

func selected(t *testing.T, r *Registry, now time.Time) []netip.AddrPort {
	t.Helper()
	got, why := r.Select(now, q71all, nil)
	if why != OK {
		t.Fatal(why)
	}
	slices.SortFunc(got, netip.AddrPort.Compare)
	return got
}

// TestClones_ManyPortsOneAddress: one game server registered on three
// ports of one address (same host name, map and clients) is one group,
// its first-seen address the primary; the UDP answers list every address
// as dpmaster's do, or the primary alone with OnePerCloneGroup; a server
// of another name on the address is apart.
func TestClones_ManyPortsOneAddress(t *testing.T) {
	for _, one := range []bool{false, true} {
		r := newTestRegistry(t, Config{OnePerCloneGroup: one})
		a, b, c := ap("198.51.100.7:27961"), ap("198.51.100.7:27960"), ap("198.51.100.7:27962")
		other := ap("198.51.100.7:27970")
		register(t, r, t0, a)
		register(t, r, t0.Add(time.Second), b)
		register(t, r, t0.Add(2*time.Second), c)
		register(t, r, t0.Add(3*time.Second), other, "hostname", "another server")
		if n := r.UpdateClones(t0.Add(4 * time.Second)); n != 1 {
			t.Fatalf("%d groups", n)
		}
		g := r.CloneGroups()[0]
		if g.Primary != a || !slices.Equal(g.Clones, []netip.AddrPort{b, c}) {
			t.Fatalf("group %+v", g)
		}
		got := selected(t, r, t0.Add(5*time.Second))
		want := []netip.AddrPort{b, a, c, other}
		if one {
			want = []netip.AddrPort{a, other}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("OnePerCloneGroup=%v: answers list %v, want %v", one, got, want)
		}
	}
}

// TestClones_RosterAcrossAddresses: servers at different addresses with
// the same host name, map and roster (names and scores, at least
// MinCloneRoster players) are one server; one shared player is not
// enough, nor is the same roster under another host name.
func TestClones_RosterAcrossAddresses(t *testing.T) {
	f := newHandlerFix(t, Config{}, nil)
	a, b, c, d := ap("198.51.100.7:27960"), ap("203.0.113.9:27960"), ap("192.0.2.44:27960"), ap("192.0.2.45:27960")
	for _, s := range []netip.AddrPort{a, b, c, d} {
		f.list(t, s)
	}
	answerReprobes(t, f, map[netip.AddrPort][]string{
		a: nil, b: nil, // the vector's three bots: same roster
		c: {"hostname", "somewhere else"},
	})
	f.h.Registry().UpdateClones(f.now)
	groups := f.h.Registry().CloneGroups()
	if len(groups) != 1 || groups[0].Primary != a || !slices.Equal(groups[0].Clones, []netip.AddrPort{b}) {
		t.Fatalf("groups %+v", groups)
	}
}

// answerReprobes runs the servers' next re-probe and answers each with the
// OpenArena statusResponse capture (three bots), its serverinfo changed
// by kv; servers not in kv do not answer.
func answerReprobes(t *testing.T, f *hfix, kv map[netip.AddrPort][]string) {
	t.Helper()
	f.now = f.now.Add(game.Q3AReprobeInterval)
	for _, o := range f.h.Tick(f.now, nil) {
		if o.Kind != KindGetStatus {
			continue
		}
		changes, ok := kv[o.To]
		if !ok {
			continue
		}
		c := challengeOf(t, []Outgoing{o}, KindGetStatus)
		sr := statusCapture(t)
		sr.Info.Set("challenge", c)
		for i := 0; i+1 < len(changes); i += 2 {
			sr.Info.Set(changes[i], changes[i+1])
		}
		pkt, _ := sr.AppendBinary(nil)
		f.in(o.To, pkt)
	}
}

// TestClones_DifferentClocksApart: two servers of one address, name, map
// and clients whose match clocks differ (ET's g_levelStartTime) are two
// matches, not clones.
func TestClones_DifferentClocksApart(t *testing.T) {
	r := newTestRegistry(t, Config{})
	register(t, r, t0, ap("198.51.100.7:27960"), "g_levelStartTime", "1000")
	register(t, r, t0, ap("198.51.100.7:27961"), "g_levelStartTime", "98000")
	register(t, r, t0, ap("198.51.100.7:27962"), "g_levelStartTime", "98000")
	r.UpdateClones(t0)
	groups := r.CloneGroups()
	if len(groups) != 1 || groups[0].Primary != ap("198.51.100.7:27961") || len(groups[0].Clones) != 1 {
		t.Fatalf("groups %+v", groups)
	}
}

// TestClones_MarkFollowsTheGroup: a clone whose reply changes (another
// map) leaves its group at the next grouping, and the policy's answers
// list it again.
func TestClones_MarkFollowsTheGroup(t *testing.T) {
	r := newTestRegistry(t, Config{OnePerCloneGroup: true})
	a, b := ap("198.51.100.7:27960"), ap("198.51.100.7:27961")
	register(t, r, t0, a)
	register(t, r, t0.Add(time.Second), b)
	r.UpdateClones(t0.Add(2 * time.Second))
	if got := selected(t, r, t0.Add(2*time.Second)); len(got) != 1 {
		t.Fatalf("answers %v", got)
	}
	p, _ := r.Heartbeat(t0.Add(3*time.Second), b, q3hb)
	if _, _, why := r.Verify(t0.Add(3*time.Second), b, infoReply(p.Challenge.Text, "mapname", "oa_dm4")); why != OK {
		t.Fatal(why)
	}
	r.UpdateClones(t0.Add(4 * time.Second))
	if got := selected(t, r, t0.Add(4*time.Second)); len(got) != 2 || len(r.CloneGroups()) != 0 {
		t.Fatalf("answers %v, groups %+v", got, r.CloneGroups())
	}
}

// statusCapture is the real OpenArena statusResponse with three bots.
func statusCapture(t testing.TB) q3.StatusResponse {
	t.Helper()
	m, err := q3.Parse(xxdFile(t, "../protocol/q3/testdata/openarena_statusResponse_3bots.hex"))
	if err != nil {
		t.Fatal(err)
	}
	return m.(q3.StatusResponse)
}
