package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/scout-discovery/scout/master"
)

// A landmark's RTT costs no Redis round trip: each verification is still
// one script, which now also writes the landmark's RTT record (one HSET
// more: HGET, HSET, HSET, XADD), one record per server and landmark.
func TestFleet_LandmarkRTTOps(t *testing.T) {
	r := startRedis(t)
	fc := fastConfig(r.URL(), "lm")
	fc.Landmark = &master.Landmark{Place: "Frankfurt"}
	a := startInstance(t, fc, 0)
	rc := r.client(t)
	ctx := context.Background()
	rc.ConfigResetStat(ctx)
	const n = 20
	for _, g := range startGameServers(t, n) {
		g.heartbeat(t, a.addr)
	}
	if !waitFor(5*time.Second, func() bool { return a.listed() == n && a.node.Queued() == 0 && commandCalls(t, r)["xadd"] == n }) {
		t.Fatalf("%d listed, %d queued", a.listed(), a.node.Queued())
	}
	calls := commandCalls(t, r)
	// Beats: one ZADD and one HSET (the description) each; history
	// writes: an HGET and an HSET per server and day.
	if rtts := calls["hset"] - calls["hget"] - calls["zadd"]; rtts != n || calls["evalsha"]-calls["zadd"]-calls["expireat"] != n {
		t.Errorf("%d verifications: %v; want %d scripts and %d RTT records", n, calls, n, n)
	}
	if got := rc.HLen(ctx, DefaultPrefix+"rtts").Val(); got != n {
		t.Errorf("%d RTT records for %d servers and one landmark", got, n)
	}
	t.Logf("%d verifications by a landmark: %v", n, calls)
}

// An RTT record from Redis that does not parse is refused, never a panic.
func FuzzParseRTT(f *testing.F) {
	for _, s := range []string{"123 1764041400000", "1 1", "0 5", "-3 5", "65535 1", "65536 1", "12", "", " ", "1 ", "x y", "99999999999999999999 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		rtt, at, ok := parseRTT(v)
		if ok && (rtt <= 0 || rtt > master.MaxRTT || at.IsZero()) {
			t.Fatalf("parseRTT(%q) = %v, %v, ok", v, rtt, at)
		}
	})
}

// A beat's answer from Redis that is not the script's shape gives no live
// instance rather than a panic; a description that does not parse or
// names another instance is dropped.
func FuzzParseBeat(f *testing.F) {
	f.Add("a", "b", `{"id":"b","place":"Tokyo"}`, `{"id":"x"}`)
	f.Add("", "", "", "{")
	f.Fuzz(func(t *testing.T, id1, id2, d1, d2 string) {
		n := &Node{cfg: Config{ID: "a"}}
		for _, res := range [][]any{
			{[]any{id1, id2}, []any{d1, d2}},
			{[]any{id1, id2}, []any{d1, d2}, d2}, // with the epoch
			{[]any{id1}, []any{nil}},
			{[]any{id1, 7}, "x"},
			{"x"},
			nil,
		} {
			live, peers := n.parseBeat(res)
			for _, p := range peers {
				if p.ID == "a" || p.ID == "" {
					t.Fatalf("peer %+v", p)
				}
			}
			if len(peers) > len(live) {
				t.Fatalf("%d peers of %d live", len(peers), len(live))
			}
		}
	})
}
