package probe

import (
	"math"
	"net/netip"
	"testing"
	"time"
)

// TestPacer_RoomHoldsTheRate: with the capacity known (10 Mbit/s: 5,682
// replies a second) and the rate at the utilisation (81.5%: 4,633 a
// second), the calendar's millisecond bins take 4 or 5 replies each,
// 4,633 (within 10) over a second of them; a bin filled by sends to
// servers of known RTT has no room, the next one has; the spread of a
// send to a server of unknown RTT puts a fraction of a reply in each bin
// of the run's RTTs, summing to one.
func TestPacer_RoomHoldsTheRate(t *testing.T) {
	p := NewPacer(Pace{})
	at := teachCapacity(t, p, time.Unix(0, 0), 176*time.Microsecond)
	p.rate = p.target() * p.capacityRate()
	if math.Abs(p.rate-4633) > 5 {
		t.Fatalf("rate %.0f, want 4633", p.rate)
	}
	total := 0.0
	for i := range 1000 {
		room, share := p.room(at.Add(time.Duration(i) * calBin))
		if room != 4 && room != 5 || share != room {
			t.Fatalf("bin %d: room for %v replies, want 4 or 5", i, room)
		}
		total += room
	}
	if math.Abs(total-4633) > 10 {
		t.Errorf("a second of bins holds %v replies, want 4633", total)
	}
	now := at.Add(time.Second)
	bin := now.Add(100 * time.Millisecond)
	for p.Room(bin) {
		p.Planned(now, 100*time.Millisecond)
	}
	if got := p.cal.load(bin); got < 4 || got > 5 {
		t.Errorf("a full bin holds %v replies", got)
	}
	if !p.Room(bin.Add(calBin)) {
		t.Errorf("the next bin has no room")
	}
	for i := range 100 { // RTTs of 10-109 ms
		p.Answered(now, time.Duration(10+i)*time.Millisecond+time.Microsecond)
	}
	later := now.Add(time.Second)
	p.Planned(later, 0)
	sum := 0.0
	for i := range 200 {
		l := p.cal.load(later.Add(time.Duration(i) * calBin))
		if l > 0 && (i < 10 || i > 109) {
			t.Errorf("the spread puts %v in bin %d ms, outside the RTTs", l, i)
		}
		sum += l
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("the spread sums to %v replies, want 1", sum)
	}
}

// TestSession_PacedKnownGoWhereRoom: two servers of known RTT wait, one
// 50 ms away, one 300 ms. With the link's capacity known and the bins
// 50 ms ahead full, the far one goes and the near one waits; with both
// bins empty the far one goes first too (the farthest among equally
// empty bins), then the near one.
func TestSession_PacedKnownGoWhereRoom(t *testing.T) {
	setup := func() (*session, time.Time, *request, *request) {
		s := newSession((&Prober{Timeout: time.Second, Pace: &Pace{}}).settings())
		at := teachCapacity(t, s.pacer, time.Unix(100, 0), 176*time.Microsecond)
		s.pacer.rate = s.pacer.target() * s.pacer.capacityRate() // 4,633 a second
		near := s.add(Target{netip.MustParseAddrPort("198.18.0.1:27961"), Q3Info})
		far := s.add(Target{netip.MustParseAddrPort("198.18.0.2:27961"), Q3Info})
		s.hosts[near.addr.Addr()].rtt = 50 * time.Millisecond
		s.hosts[far.addr.Addr()].rtt = 300 * time.Millisecond
		s.closeInput()
		s.nextSend = at.Add(time.Hour)
		s.poll(at) // begins both, sends nothing
		return s, at, near.reqs[0], far.reqs[0]
	}
	s, at, near, far := setup()
	for s.pacer.Room(at.Add(50 * time.Millisecond)) {
		s.pacer.Planned(at, 50*time.Millisecond)
	}
	if r, rtt := s.next(at); r != far || rtt != 300*time.Millisecond {
		t.Fatalf("with the near bin full: %v (%v), want the far one", r, rtt)
	}
	if r, _ := s.next(at); r != nil || near.park != parkKnown {
		t.Errorf("with the near bin full: %v went; the near one parked %d, want known", r, near.park)
	}
	s, at, near, far = setup()
	if r, _ := s.next(at); r != far {
		t.Errorf("both bins empty: %v first, want the far one", r.t.addr)
	}
	if r, _ := s.next(at); r != near {
		t.Errorf("then %v, want the near one", r)
	}
}
