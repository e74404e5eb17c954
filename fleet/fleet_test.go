package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/web"
)

var apiHead = regexp.MustCompile(`"version":[0-9]+,"generated":"[^"]*",`)

// A server verified by one instance is in every instance's answers
// within 1 s.
func TestFleet_VerifiedByOneListedByAllWithinASecond(t *testing.T) {
	r := startRedis(t)
	var ins []*instance
	for i := range 3 {
		ins = append(ins, startInstance(t, fastConfig(r.URL(), fmt.Sprint("i", i)), 0))
	}
	servers := startGameServers(t, 30)
	var worst time.Duration
	for k, g := range servers {
		at := ins[k%3]
		g.heartbeat(t, at.addr)
		if !waitFor(patience(t), func() bool { s, ok := at.m.Registry.Lookup(g.addr); return ok && s.Listed }) {
			t.Fatalf("%v not listed by the instance it heartbeat to", g.addr)
		}
		verified := time.Now()
		for _, other := range ins {
			if !waitFor(time.Second, func() bool { s, ok := other.m.Registry.Lookup(g.addr); return ok && s.Listed }) {
				t.Fatalf("%v verified by %s is not listed by %s within 1 s", g.addr, at.node.ID(), other.node.ID())
			}
		}
		worst = max(worst, time.Since(verified))
	}
	t.Logf("worst convergence over 30 servers and 3 instances: %v", worst)
	for _, in := range ins {
		if got := list(t, in.addr); len(got) != len(servers) {
			t.Errorf("%s answers %d servers, want %d", in.node.ID(), len(got), len(servers))
		}
	}
	// Any instance serves the same HTTP list, read from the shared
	// registry.
	var pages []string
	for _, in := range ins {
		resp, err := http.Get("http://" + in.m.HTTPAddr().String() + "/servers")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if src := resp.Header.Get("X-Scout-List-Source"); src != "fleet" {
			t.Errorf("%s lists from %q", in.node.ID(), src)
		}
		pages = append(pages, string(b))
	}
	if pages[0] != pages[1] || pages[1] != pages[2] || strings.Count(pages[0], `"address"`) != len(servers) {
		t.Errorf("the instances serve different /servers pages")
	}
	// And the same page of the web API's list.
	pages = pages[:0]
	for _, in := range ins {
		resp, err := http.Get("http://" + in.m.HTTPAddr().String() + "/api/v1/servers?per_page=100")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The time it was made and the instance's own listing version
		// may differ; the rest is the list.
		if !apiHead.Match(b) {
			t.Errorf("/api/v1/servers has no version and time: %.200s", b)
		}
		pages = append(pages, apiHead.ReplaceAllString(string(b), ""))
	}
	if n := strings.Count(pages[0], `"name_plain":"fleet test `); n != len(servers) {
		t.Errorf("/api/v1/servers lists %d of %d: %.300s", n, len(servers), pages[0])
	}
	if pages[0] != pages[1] || pages[1] != pages[2] {
		i := 0
		for i < len(pages[0]) && i < len(pages[1]) && pages[0][i] == pages[1][i] {
			i++
		}
		t.Errorf("the instances serve different /api/v1/servers pages, from byte %d:\n%.200s\n%.200s", i, pages[0][i:], pages[1][i:])
	}
	// /metrics has the fleet.
	resp, err := http.Get("http://" + ins[0].m.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`scout_fleet_instances{instance_id="i0"} 3`, `scout_fleet_redis_up{instance_id="i0"} 1`,
		`scout_fleet_queued_writes{instance_id="i0"} 0`, "scout_fleet_redis_seconds_bucket", "scout_fleet_reprobe_share"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Two instances verifying the same server at once leave one record, the
// later verification, in Redis and in both registries.
func TestFleet_SameServerAtOnceLeavesOneRecord(t *testing.T) {
	r := startRedis(t)
	a := startInstance(t, fastConfig(r.URL(), "a"), 0)
	b := startInstance(t, fastConfig(r.URL(), "b"), 0)
	rc := r.client(t)
	ctx := context.Background()
	for range 5 {
		g := startGameServers(t, 1)[0]
		g.heartbeat(t, a.addr)
		g.heartbeat(t, b.addr)
		both := func() bool {
			sa, oka := a.m.Registry.Lookup(g.addr)
			sb, okb := b.m.Registry.Lookup(g.addr)
			return oka && okb && sa.Listed && sb.Listed && sa.LastVerified.Equal(sb.LastVerified) && a.node.Queued() == 0 && b.node.Queued() == 0
		}
		if !waitFor(patience(t), both) {
			t.Fatalf("%v: the instances did not converge on one verification", g.addr)
		}
		sa, _ := a.m.Registry.Lookup(g.addr)
		v, err := rc.HGet(ctx, DefaultPrefix+"servers", g.addr.String()).Result()
		if err != nil {
			t.Fatal(err)
		}
		if v[:20] != version(sa.LastVerified) {
			t.Errorf("Redis holds version %s, the instances %s", v[:20], version(sa.LastVerified))
		}
	}
	if n := rc.HLen(ctx, DefaultPrefix+"servers").Val(); n != 5 {
		t.Errorf("%d records for 5 servers", n)
	}
	// Both verified each server and wrote it: 10 scripts, some of which
	// found a newer record.
	if w := a.node.stats.written.Load() + a.node.stats.superseded.Load() + b.node.stats.written.Load() + b.node.stats.superseded.Load(); w < 10 {
		t.Errorf("%d writes: the instances did not both verify each server", w)
	}
}

// The re-probes are divided and rotate: each server is re-probed once
// per period by the fleet, not once per instance, and by every instance
// within 2×3 periods (master.Rendezvous: 3 with no late re-probe); when
// an instance dies its share moves to the others within one period.
//
// Each instance is a landmark: once every instance re-probed every
// server, any one instance gives every landmark's RTT to every server, in
// the JSON API and in the landmark extension, and describes all three at
// /api/v1/landmarks.
func TestFleet_ReprobeShareMovesWhenAnInstanceDies(t *testing.T) {
	const period = 2 * time.Second
	r := startRedis(t)
	var ins []*instance
	places := []string{"Frankfurt", "NewYork", "Tokyo"}
	for i := range 3 {
		fc := fastConfig(r.URL(), fmt.Sprint("i", i))
		fc.Landmark = &master.Landmark{Place: places[i]}
		ins = append(ins, startInstance(t, fc, period))
	}
	if !waitFor(patience(t), func() bool {
		for _, in := range ins {
			if len(in.node.Live()) != 3 {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the instances do not see each other")
	}
	servers := startGameServers(t, 30)
	for k, g := range servers {
		g.heartbeat(t, ins[k%3].addr)
	}
	start := time.Now()
	// Every server re-probed by every instance: within 3 re-probes (its
	// round moves on by one a period however late the 1 s tick makes
	// them); the wait allows twice that.
	from := func(g *gameServer) map[netip.AddrPort]bool {
		m := map[netip.AddrPort]bool{}
		for _, e := range g.reprobes(start) {
			m[e.from] = true
		}
		return m
	}
	if !waitFor(6*period+6*time.Second, func() bool {
		for _, g := range servers {
			if len(from(g)) < 3 {
				return false
			}
		}
		return true
	}) {
		for _, g := range servers {
			if f := from(g); len(f) < 3 {
				t.Errorf("%v re-probed only from %v", g.addr, f)
			}
		}
		t.Fatal("not every server was re-probed from every instance")
	}
	byInstance := map[netip.AddrPort]int{}
	most := 0
	for _, g := range servers {
		rs := g.reprobes(start)
		most = max(most, len(rs))
		// Once per period of the server's grid (master.Phase): the
		// re-probes fall at its points, each up to the 1 s tick late,
		// so two in one grid period would be two owners.
		for i := 1; i < len(rs); i++ {
			if k := master.Round(g.addr, rs[i].at, period); k == master.Round(g.addr, rs[i-1].at, period) {
				t.Errorf("%v re-probed twice in its grid period %d, %v apart (by %v and %v): not once per period", g.addr, k, rs[i].at.Sub(rs[i-1].at), rs[i-1].from, rs[i].from)
			}
		}
		for _, e := range rs {
			byInstance[e.from]++
		}
	}
	t.Logf("re-probes per instance: %v; every server re-probed from all 3 after at most %d re-probes, %v", byInstance, most, time.Since(start).Round(time.Millisecond))

	// Every instance holds the three landmarks' RTTs to every server (its
	// own and the two others', applied from the stream).
	ids := []string{"i0", "i1", "i2"}
	if !waitFor(patience(t), func() bool {
		for _, in := range ins {
			for _, s := range in.m.Registry.Servers(nil) {
				if s.RTT <= 0 || len(s.Landmarks) != 2 {
					return false
				}
			}
		}
		return true
	}) {
		for _, in := range ins {
			for _, s := range in.m.Registry.Servers(nil)[:1] {
				t.Errorf("%s: %v: own RTT %v, others %+v", in.node.ID(), s.Addr, s.RTT, s.Landmarks)
			}
		}
		t.Fatal("the instances do not hold every landmark's RTTs")
	}
	for _, in := range ins {
		got := landmarkRTTs(t, in.addr)
		if len(got) != 3 {
			t.Fatalf("%s's landmark extension gave %d landmarks (%v), want 3", in.node.ID(), len(got), got)
		}
		for _, id := range ids {
			if len(got[id]) != len(servers) {
				t.Errorf("%s's landmark extension gave %d of %d servers' RTTs from %s", in.node.ID(), len(got[id]), len(servers), id)
			}
		}
		var l web.ListJSON
		rec := httptest.NewRecorder()
		in.m.API.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/servers", nil))
		if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Servers {
			var lms []string
			for _, x := range s.Landmarks {
				lms = append(lms, x.ID)
			}
			if len(lms) != 3 || lms[0] != in.node.ID() {
				t.Errorf("%s: /api/v1/servers: %s's landmarks %v, want its own then the two others'", in.node.ID(), s.Address, lms)
			}
		}
		if len(l.Servers) != len(servers) {
			t.Errorf("%s: /api/v1/servers lists %d", in.node.ID(), len(l.Servers))
		}
		var lj web.LandmarksJSON
		rec = httptest.NewRecorder()
		in.m.API.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/landmarks", nil))
		if err := json.Unmarshal(rec.Body.Bytes(), &lj); err != nil {
			t.Fatal(err)
		}
		var described []string
		for _, l := range lj.Landmarks {
			described = append(described, l.ID+"@"+l.Place)
		}
		slices.Sort(described)
		if want := []string{"i0@Frankfurt", "i1@NewYork", "i2@Tokyo"}; !slices.Equal(described, want) {
			t.Errorf("%s: /api/v1/landmarks %v, want %v", in.node.ID(), described, want)
		}
	}

	// i2 dies (no clean leave).
	dead := ins[2]
	dead.crash()
	died := time.Now()
	// Each server (its share in its next round may be the dead one's) is
	// re-probed by a survivor within one period of being due (the share
	// moves after Dead, then the survivors look again within half a
	// period, on their 1 s tick).
	bound := period + period/2 + fastConfig("", "").Dead + time.Second + 500*time.Millisecond
	var mu sync.Mutex
	late := 0
	if !waitFor(bound+period, func() bool {
		for _, g := range servers {
			if len(g.reprobes(died)) == 0 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the servers were not all re-probed within %v", bound+period)
	}
	for _, g := range servers {
		all := g.reprobes(start)
		var before time.Time
		for _, e := range all {
			if e.at.Before(died) {
				before = e.at
			}
		}
		first := g.reprobes(died)[0]
		if gap := first.at.Sub(before); gap > bound {
			mu.Lock()
			late++
			mu.Unlock()
			t.Errorf("%v: %v between its last re-probe by the dead instance and the first by a survivor (bound %v)", g.addr, gap, bound)
		}
		if first.from == dead.addr {
			t.Errorf("%v re-probed by the dead instance", g.addr)
		}
	}
}

// commandCalls returns INFO commandstats' calls per command.
func commandCalls(t testing.TB, r *redisProc) map[string]int {
	t.Helper()
	s, err := r.client(t).Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(s, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":calls=")
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		var n int
		fmt.Sscan(calls, &n)
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

// The Redis operations per heartbeat, verification and re-probe, counted
// by Redis itself (INFO commandstats, commands run by scripts included).
func TestFleet_RedisOpsPerEvent(t *testing.T) {
	const period = 2 * time.Second
	r := startRedis(t)
	a := startInstance(t, fastConfig(r.URL(), "a"), period)
	b := startInstance(t, fastConfig(r.URL(), "b"), period)
	b.stop() // a alone re-probes; b is started again below as a follower
	rc := r.client(t)
	ctx := context.Background()
	if err := rc.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Heartbeats of servers that never answer: no Redis operation.
	mute := startGameServers(t, 10)
	for _, g := range mute {
		g.conn.Close()
	}
	hb, _ := q3.Heartbeat{Tag: "QuakeArena-1"}.AppendBinary(nil)
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 10 {
		c.WriteToUDPAddrPort(hb, a.addr)
	}
	if !waitFor(patience(t), func() bool { _, p := a.m.Registry.Counts(); return p == 1 }) {
		t.Fatal("the heartbeat was not taken")
	}
	calls := commandCalls(t, r)
	if w := calls["hget"] + calls["hset"] + calls["xadd"] + calls["hdel"]; w != 0 {
		t.Errorf("heartbeats cost %d writes: %v", w, calls)
	}
	t.Logf("10 heartbeats of a silent server: %v", calls)

	// Verifications: one script each (HGET, HSET, XADD inside).
	const n = 20
	rc.ConfigResetStat(ctx)
	servers := startGameServers(t, n)
	for _, g := range servers {
		g.heartbeat(t, a.addr)
	}
	if !waitFor(patience(t), func() bool { return a.listed() == n && a.node.Queued() == 0 && commandCalls(t, r)["xadd"] == n }) {
		t.Fatalf("%d listed, %d queued", a.listed(), a.node.Queued())
	}
	calls = commandCalls(t, r)
	// Scripts: a beat's (one ZADD), a history write's (one EXPIREAT, an
	// HGET and an HSET per server and day: history.go), and the
	// verifications'.
	if calls["hget"]-calls["hset"] != 0 || calls["xadd"] != n || calls["evalsha"]-calls["zadd"]-calls["expireat"] != n {
		t.Errorf("%d verifications: %v, want %d script runs of HGET, HSET, XADD each", n, calls, n)
	}
	t.Logf("%d verifications: %v", n, calls)

	// Re-probes: a re-probe costs nothing to send; its verification one
	// script. A follower reads the changes with XREAD.
	b = startInstance(t, fastConfig(r.URL(), "b"), period)
	if !waitFor(patience(t), func() bool { return len(a.node.Live()) == 2 && b.listed() == n }) {
		t.Fatal("b did not join")
	}
	rc.ConfigResetStat(ctx)
	counts := func() (verified, reprobes uint64) {
		for _, in := range []*instance{a, b} {
			st := in.m.Handler.Stats()
			verified += st.Changes(master.ChangeListed) + st.Changes(master.ChangeUpdated) + st.Changes(master.ChangeRefreshed)
			reprobes += st.Probes(master.CauseReprobe)
		}
		return verified, reprobes
	}
	v0, p0 := counts()
	start := time.Now()
	if !waitFor(5*period, func() bool {
		for _, g := range servers {
			if len(g.reprobes(start)) < 2 {
				return false
			}
		}
		return true
	}) {
		t.Fatal("not every server was re-probed twice")
	}
	a.stop() // each writes its queue
	b.stop()
	v1, p1 := counts()
	verified, reprobes := v1-v0, p1-p0
	calls = commandCalls(t, r)
	if scripts := calls["evalsha"] - calls["zadd"] - calls["expireat"]; uint64(scripts) != verified || uint64(calls["xadd"]) != verified {
		t.Errorf("%d re-probes verified %d times, and ran %d scripts: %v", reprobes, verified, scripts, calls)
	}
	t.Logf("%d re-probes, %d verified: %v", reprobes, verified, calls)
}

// A silent server expires fleet-wide once: its share's owner writes the
// one removal, the others learn it from the stream (they would wait a
// second Timeout before deciding themselves).
func TestFleet_SilentServerExpiresOnce(t *testing.T) {
	const timeout = 2 * time.Second
	r := startRedis(t)
	var ins []*instance
	for i := range 3 {
		// No re-probe within the test: silence alone removes.
		ins = append(ins, startInstanceTimeout(t, fastConfig(r.URL(), fmt.Sprint("i", i)), time.Hour, timeout))
	}
	if !waitFor(patience(t), func() bool { return len(ins[0].node.Live()) == 3 && len(ins[2].node.Live()) == 3 }) {
		t.Fatal("the instances do not see each other")
	}
	servers := startGameServers(t, 6)
	for k, g := range servers {
		g.heartbeat(t, ins[k%3].addr)
	}
	for _, in := range ins {
		if !waitFor(patience(t), func() bool { return in.listed() == len(servers) }) {
			t.Fatalf("%s lists %d", in.node.ID(), in.listed())
		}
	}
	verified := time.Now()
	rc := r.client(t)
	ctx := context.Background()
	rc.ConfigResetStat(ctx)
	for _, in := range ins {
		if !waitFor(timeout+patience(t), func() bool { return in.listed() == 0 }) {
			t.Fatalf("%s still lists %d silent servers", in.node.ID(), in.listed())
		}
	}
	// By their owners' removals: had an owner's removal not reached the
	// others, each would have decided itself a second Timeout later (more
	// silence decisions than servers, below). How long it took is load's:
	// the 1 s tick after the Timeout, late on a busy machine (4.2-4.4 s
	// for a 2 s Timeout, twice, at load average 13).
	t.Logf("the silent servers went %v after their verification", time.Since(verified).Round(time.Millisecond))
	calls := commandCalls(t, r)
	if calls["hdel"] != len(servers) {
		t.Errorf("%d removals written for %d servers: %v", calls["hdel"], len(servers), calls)
	}
	if n := rc.HLen(ctx, DefaultPrefix+"servers").Val(); n != 0 {
		t.Errorf("Redis still holds %d", n)
	}
	var removedBy []string
	decided := uint64(0)
	for _, in := range ins {
		n := in.m.Handler.Stats().Removed(master.ReasonSilent)
		decided += n
		removedBy = append(removedBy, fmt.Sprint(in.node.ID(), ":", n))
	}
	if decided != uint64(len(servers)) {
		t.Errorf("%d silence decisions for %d servers (%v): not once each", decided, len(servers), removedBy)
	}
	t.Logf("removed as silent by: %v; removal scripts %d (hdel %d)", removedBy, calls["evalsha"]-calls["zadd"], calls["hdel"])
}
