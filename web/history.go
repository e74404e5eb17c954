package web

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/scout-discovery/scout/master"
)

// History resolution and bounds. A server's player count is kept per
// Resolution slot (the last verified reply in the slot wins: the master
// re-probes every 4 or 5 minutes, and checks on heartbeats in between), in
// day chunks of SlotsPerDay one-byte counts, for the current UTC day and
// the RetentionDays-1 before it: at least 7 full days back from any
// instant. A count above MaxCount is kept as MaxCount; NoSample marks a
// slot without a verified reply.
//
// Size per server, with its full RetentionDays: in memory 2,727 bytes (a
// day chunk is 292 bytes, 320 with the allocator's rounding, 8 of them,
// plus the slice and the map slot; BenchmarkHistory_MemoryPerServer); on
// disk (master/store's history bucket, one 289-byte record per server and
// day) 3,039 bytes of state file (BenchmarkHistory_FileBytesPerServer in
// master/store, 5,000 servers). At most MaxHistoryServers servers are
// kept: 32,768 × 2.7 KB = 89 MB in the worst case; 5,000 servers with 8
// days, 13.6 MB.
const (
	Resolution        = 5 * time.Minute
	SlotsPerDay       = int(24 * time.Hour / Resolution)
	RetentionDays     = 8
	MaxCount          = 254
	NoSample          = 0xFF
	MaxHistoryServers = 2 * master.DefaultMaxServers
)

// Day is one server's counts of one UTC day (days since the Unix epoch):
// the unit the state writer commits (History keeps the counts without the
// address).
type Day struct {
	Addr   netip.AddrPort
	Day    int32
	Counts [SlotsPerDay]uint8
}

// chunk is one day of a series in memory (Day without the address).
type chunk struct {
	day    int32
	counts [SlotsPerDay]uint8
}

type series struct {
	days []*chunk // ascending by day, at most RetentionDays
}

// History keeps every server's player count over time from the master's
// verified replies (it is the handler's master.Observer). It is pure: it
// takes the time of each reply, never reads the clock, and owns no file;
// masterd's state writer takes its changed days (TakeDirty) into the state
// store's commits and gives them back at start (Load).
//
// mu guards everything.
type History struct {
	notify func() // OnChange's; called after mu is released

	mu      sync.Mutex
	servers map[netip.AddrPort]*series
	dirty   map[dayKey]struct{}
	samples uint64 // samples recorded, for the tests and the metrics
	refused uint64 // samples of servers beyond MaxHistoryServers
}

type dayKey struct {
	a   netip.AddrPort
	day int32
}

// NewHistory returns an empty history.
func NewHistory() *History {
	return &History{servers: map[netip.AddrPort]*series{}, dirty: map[dayKey]struct{}{}}
}

// OnChange sets a function called (without History's lock held) after a
// sample changed a day chunk, so that the state writer commits it within
// its interval. It must be set before the first Record.
func (h *History) OnChange(fn func()) { h.notify = fn }

// SlotOf returns the slot of t (Resolution slots since the Unix epoch).
func SlotOf(t time.Time) int64 { return floorDiv(t.Unix(), int64(Resolution/time.Second)) }

// SlotTime returns the start of slot.
func SlotTime(slot int64) time.Time {
	return time.Unix(slot*int64(Resolution/time.Second), 0).UTC()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Verified records s's player count at now (master.Observer).
func (h *History) Verified(now time.Time, s master.Server) {
	h.Record(s.Addr, now, s.Clients)
}

// Record records count players at a at t.
func (h *History) Record(a netip.AddrPort, t time.Time, count int) {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	slot := SlotOf(t)
	day := int32(floorDiv(slot, int64(SlotsPerDay)))
	idx := slot - int64(day)*int64(SlotsPerDay)
	if h.record(a, day, idx, uint8(max(0, min(count, MaxCount)))) && h.notify != nil {
		h.notify()
	}
}

// record sets a count, reporting whether it changed a chunk.
func (h *History) record(a netip.AddrPort, day int32, idx int64, c uint8) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples++
	s := h.servers[a]
	if s == nil {
		if len(h.servers) >= MaxHistoryServers {
			h.refused++
			return false
		}
		s = &series{}
		h.servers[a] = s
	}
	d := s.day(day)
	if d == nil || d.counts[idx] == c {
		return false // older than every day kept, or no change
	}
	d.counts[idx] = c
	h.dirty[dayKey{a, day}] = struct{}{}
	return true
}

// KeepFrom is the first day (days since the Unix epoch) History keeps at
// now; the store deletes the days before it.
func KeepFrom(now time.Time) int32 {
	return int32(floorDiv(SlotOf(now), int64(SlotsPerDay))) - RetentionDays + 1
}

// day returns s's chunk of day, creating it (and dropping the oldest past
// RetentionDays), or nil if day is older than every chunk kept and there
// is no room.
func (s *series) day(day int32) *chunk {
	i, found := s.find(day)
	if found {
		return s.days[i]
	}
	if len(s.days) >= RetentionDays && i == 0 {
		return nil
	}
	d := &chunk{day: day}
	for j := range d.counts {
		d.counts[j] = NoSample
	}
	s.days = slices.Insert(s.days, i, d)
	if len(s.days) > RetentionDays {
		s.days = slices.Delete(s.days, 0, len(s.days)-RetentionDays)
	}
	return d
}

func (s *series) find(day int32) (int, bool) {
	return slices.BinarySearchFunc(s.days, day, func(d *chunk, n int32) int { return int(d.day - n) })
}

// Point is one slot's count.
type Point struct {
	T       time.Time `json:"t"`
	Players int       `json:"players"`
}

// Points returns a's samples in slots [from, to), oldest first.
func (h *History) Points(a netip.AddrPort, from, to int64) []Point {
	out := []Point{}
	h.each(a, from, to, func(slot int64, c uint8) { out = append(out, Point{SlotTime(slot), int(c)}) })
	return out
}

// Recent returns a's last up to n counts in the slots before slot to,
// within the 24 h before it, oldest first.
func (h *History) Recent(a netip.AddrPort, to int64, n int) []int {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	out := make([]int, 0, n)
	h.mu.Lock()
	s := h.servers[a]
	// Backwards from to-1, chunk by chunk, until n samples or a day.
	for i := len(s.daysOrNil()) - 1; i >= 0 && len(out) < n; i-- {
		d := s.days[i]
		base := int64(d.day) * int64(SlotsPerDay)
		for slot := min(to, base+int64(SlotsPerDay)) - 1; slot >= base && slot >= to-int64(SlotsPerDay) && len(out) < n; slot-- {
			if c := d.counts[slot-base]; c != NoSample {
				out = append(out, int(c))
			}
		}
	}
	h.mu.Unlock()
	slices.Reverse(out)
	return out
}

func (s *series) daysOrNil() []*chunk {
	if s == nil {
		return nil
	}
	return s.days
}

// Stats returns the average and peak of a's samples in slots [from, to),
// and how many there were.
func (h *History) Stats(a netip.AddrPort, from, to int64) (avg float64, peak, n int) {
	sum := 0
	h.each(a, from, to, func(_ int64, c uint8) {
		sum += int(c)
		peak = max(peak, int(c))
		n++
	})
	if n > 0 {
		avg = float64(sum) / float64(n)
	}
	return avg, peak, n
}

func (h *History) each(a netip.AddrPort, from, to int64, fn func(slot int64, c uint8)) {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.servers[a]
	if s == nil {
		return
	}
	for _, d := range s.days {
		base := int64(d.day) * int64(SlotsPerDay)
		if base+int64(SlotsPerDay) <= from || base >= to {
			continue
		}
		for i, c := range d.counts {
			if slot := base + int64(i); c != NoSample && slot >= from && slot < to {
				fn(slot, c)
			}
		}
	}
}

// TakeDirty returns a copy of every day chunk changed since the last call
// (for the state writer's next commit) and forgets them. If the commit
// fails, the writer gives them back with Redirty.
func (h *History) TakeDirty() []Day {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Day, 0, len(h.dirty))
	for k := range h.dirty {
		if s := h.servers[k.a]; s != nil {
			if i, ok := s.find(k.day); ok {
				out = append(out, Day{Addr: k.a, Day: k.day, Counts: s.days[i].counts})
			}
		}
	}
	if len(h.dirty) > 1024 {
		h.dirty = map[dayKey]struct{}{} // let a big one (a start's) go
	} else {
		clear(h.dirty)
	}
	return out
}

// Redirty marks days changed again (a failed commit).
func (h *History) Redirty(days []Day) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range days {
		h.dirty[dayKey{d.Addr, d.Day}] = struct{}{}
	}
}

// Load adds days read back from the store (at start), keeping at most
// RetentionDays per server, the newest, and MaxHistoryServers servers.
// Samples already recorded win over loaded ones.
func (h *History) Load(days []Day) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ld := range days {
		a := netip.AddrPortFrom(ld.Addr.Addr().Unmap(), ld.Addr.Port())
		s := h.servers[a]
		if s == nil {
			if len(h.servers) >= MaxHistoryServers {
				h.refused++
				continue
			}
			s = &series{}
			h.servers[a] = s
		}
		d := s.day(ld.Day)
		if d == nil {
			continue
		}
		for i, c := range ld.Counts {
			if d.counts[i] == NoSample {
				d.counts[i] = c
			}
		}
	}
}

// Prune forgets the days older than RetentionDays before now's day, and
// servers left without any, returning the first day kept (the store
// deletes the days before it).
func (h *History) Prune(now time.Time) (firstDay int32) {
	firstDay = KeepFrom(now)
	h.mu.Lock()
	defer h.mu.Unlock()
	for a, s := range h.servers {
		i := 0
		for i < len(s.days) && s.days[i].day < firstDay {
			i++
		}
		s.days = slices.Delete(s.days, 0, i)
		if len(s.days) == 0 {
			delete(h.servers, a)
		}
	}
	for k := range h.dirty {
		if k.day < firstDay {
			delete(h.dirty, k)
		}
	}
	return firstDay
}

// Len returns the number of servers with a history, and the samples
// recorded and refused (beyond MaxHistoryServers) since NewHistory.
func (h *History) Len() (servers int, samples, refused uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers), h.samples, h.refused
}
