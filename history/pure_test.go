package history

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

func TestHistory(t *testing.T) {
	h := New()
	h.OnChange(func() {})
	a := netip.MustParseAddrPort("192.0.2.1:27960")
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for i := range 9 * SlotsPerDay { // nine days, one sample a slot
		h.Record(a, t0.Add(time.Duration(i)*Resolution), i%10)
	}
	h.Record(a, t0.Add(Resolution+time.Second), 300) // a second sample in a slot wins; capped
	end := t0.Add(9 * 24 * time.Hour)
	first := SlotOf(end) - int64(7*SlotsPerDay)
	pts := h.Points(a, first, SlotOf(end))
	if len(pts) != 7*SlotsPerDay || !pts[0].T.Equal(SlotTime(first)) {
		t.Fatalf("%d points from %v", len(pts), pts[0].T)
	}
	if n := len(h.Points(a, 0, SlotOf(end))); n != RetentionDays*SlotsPerDay {
		t.Errorf("%d points kept, want %d", n, RetentionDays*SlotsPerDay)
	}
	if got := h.Points(a, SlotOf(t0), SlotOf(t0)+2); len(got) != 0 {
		t.Errorf("day 0 kept: %v", got)
	}
	if r := h.Recent(a, SlotOf(end), 5); !slices.Equal(r, []int{7, 8, 9, 0, 1}) { // i = 2587..2591
		t.Errorf("recent %v", r)
	}
	avg, peak, n := h.Stats(a, SlotOf(end)-10, SlotOf(end))
	if n != 10 || peak != 9 || avg != 4.5 {
		t.Errorf("stats %v %v %v", avg, peak, n)
	}
	// Dirty days round-trip through Load into a new history.
	days := h.TakeDirty()
	if len(days) != RetentionDays || len(h.TakeDirty()) != 0 {
		t.Fatalf("%d dirty days", len(days))
	}
	h2 := New()
	h2.Load(days)
	if !slices.Equal(h2.Points(a, 0, SlotOf(end)), h.Points(a, 0, SlotOf(end))) {
		t.Error("loaded history differs")
	}
	// Prune at day 20+9+7: everything goes.
	if h2.Prune(end.Add(8 * 24 * time.Hour)); func() int { n, _, _ := h2.Len(); return n }() != 0 {
		t.Error("prune kept a server with no day left")
	}
	// Cap: a count over MaxCount.
	h3 := New()
	h3.Record(a, t0, 1000)
	if p := h3.Points(a, 0, SlotOf(t0)+1); len(p) != 1 || p[0].Players != MaxCount {
		t.Errorf("cap %v", p)
	}
	// Without OnChange nobody takes the changed days: none are kept.
	if d := h3.TakeDirty(); len(d) != 0 {
		t.Errorf("%d dirty days without OnChange", len(d))
	}
}
