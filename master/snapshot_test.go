package master

import (
	"net/netip"
	"testing"
	"time"
)

// A listing larger than InlineSnapshot is answered from its last snapshot
// until Refresh brings it up to date, but for a few changes of small
// groups, which the query applies itself; a smaller one is brought up to
// date by the query.
func TestRegistry_RefreshRebuildsLargeListingsOffTheQueryPath(t *testing.T) {
	r := newTestRegistry(t, Config{InlineSnapshot: 2, AllowLoopback: true})
	r.inlineGroup = 2 // a group of more than 2 servers is a large one here
	addr := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 27960)
	}
	q68 := q71
	q68.Protocol = 68
	for i := 1; i <= 2; i++ {
		register(t, r, t0, addr(i))
		if got := len(selectAll(r, t0, q71)); got != i {
			t.Fatalf("%d listed, small listing: %d answered", i, got)
		}
	}
	if r.Refresh(t0) {
		t.Error("Refresh rebuilt a fresh snapshot")
	}
	register(t, r, t0, addr(3))
	if got := len(selectAll(r, t0, q71)); got != 3 {
		t.Fatalf("the query that finds 2 listed rebuilds: %d answered, want 3", got)
	}
	register(t, r, t0, addr(4))
	if got := len(selectAll(r, t0, q71)); got != 3 {
		t.Fatalf("3 in the last snapshot's group, above InlineSnapshot and the inline group: %d answered, want 3 until Refresh", got)
	}
	register(t, r, t0, addr(5), "protocol", "68")
	if got := len(selectAll(r, t0, q68)); got != 1 {
		t.Fatalf("a new small group: %d answered, want 1 at the next query", got)
	}
	if got := len(selectAll(r, t0, q71)); got != 3 {
		t.Fatalf("the large group: %d answered, want 3 until Refresh", got)
	}
	if !r.Refresh(t0) {
		t.Fatal("Refresh left a stale snapshot")
	}
	if got := len(selectAll(r, t0, q71)); got != 4 {
		t.Fatalf("after Refresh: %d answered, want 4", got)
	}
	if r.Refresh(t0) {
		t.Error("Refresh rebuilt a fresh snapshot")
	}
	// An entry whose listing ran out makes the snapshot stale too.
	late := t0.Add(r.Config().Timeout)
	if !r.Refresh(late) {
		t.Fatal("Refresh kept servers silent for Timeout")
	}
	if got := len(selectAll(r, late, q71)) + len(selectAll(r, late, q68)); got != 0 {
		t.Fatalf("%d answered after Timeout, want 0", got)
	}
}

// Queries' builds of a large listing leave the changes of large groups
// to Refresh; without a Refresh those wait bounded: at most maxDeferred
// in the queries' list, then one record per server.
func TestRegistry_DeferredChangesBounded(t *testing.T) {
	r := newTestRegistry(t, Config{InlineSnapshot: 1, AllowLoopback: true})
	r.inlineGroup = 2
	addr := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 27960)
	}
	for i := 1; i <= 3; i++ {
		register(t, r, t0, addr(i))
	}
	r.Refresh(t0)
	now := t0
	for i := range 5 * maxDeferred {
		now = now.Add(time.Millisecond)
		s, _ := r.Lookup(addr(1 + i%3))
		s.Clients = 3 - s.Clients // empty, then not
		s.LastVerified = now
		if ch, why := r.Apply(now, s); why != OK || ch == ChangeNone {
			t.Fatalf("Apply: %v %v", ch, why)
		}
		r.current(now)
		r.mu.Lock()
		deferred, touched := len(r.deferred), len(r.touched)
		r.mu.Unlock()
		if deferred > maxDeferred+2*MaxInlineChanges || touched > 3 {
			t.Fatalf("after %d changes without Refresh: %d deferred, %d touched", i+1, deferred, touched)
		}
	}
	if !r.Refresh(now) {
		t.Fatal("Refresh built nothing")
	}
	if got := len(selectAll(r, now, q71)); got != 3 {
		t.Fatalf("%d answered, want 3", got)
	}
}

// With InlineSnapshot negative every query rebuilds a stale snapshot
// and Refresh does nothing.
func TestRegistry_InlineSnapshotNegativeAlwaysInline(t *testing.T) {
	r := newTestRegistry(t, Config{InlineSnapshot: -1, AllowLoopback: true})
	for i := 1; i <= 3; i++ {
		register(t, r, t0, netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 27960))
		if r.Refresh(t0) {
			t.Error("Refresh rebuilt with InlineSnapshot -1")
		}
		if got := len(selectAll(r, t0, q71)); got != i {
			t.Fatalf("%d listed: %d answered", i, got)
		}
	}
}

// The cached answers of a snapshot are bounded in bytes as well as in
// number: one that does not fit is returned but not kept.
func TestSnapshot_CacheBoundedInBytes(t *testing.T) {
	s := &snapshot{}
	big := &answer{pkts: [][]byte{make([]byte, MaxCachedAnswerBytes/2+1)}, bytes: MaxCachedAnswerBytes/2 + 1}
	k1, k2 := answerKey{f: filter{game: "a"}}, answerKey{f: filter{game: "b"}}
	if got := s.cache(k1, big); got != big {
		t.Fatal("first answer not returned")
	}
	other := &answer{pkts: big.pkts, bytes: big.bytes}
	if got := s.cache(k2, other); got != other {
		t.Fatal("second answer not returned")
	}
	if _, ok := s.answers.Load(k1); !ok {
		t.Error("the first answer, within the bound, was not kept")
	}
	if _, ok := s.answers.Load(k2); ok {
		t.Error("the second answer, beyond MaxCachedAnswerBytes, was kept")
	}
	if n, b := s.nAnswers.Load(), s.answerBytes.Load(); n != 1 || b != int64(big.bytes) {
		t.Errorf("counted %d answers, %d bytes; want 1, %d", n, b, big.bytes)
	}
}
