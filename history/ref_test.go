package history

import (
	"net/netip"
	"slices"
	"sync"
	"time"
)

// refHistory is History as it was before its compact encoding: every day
// a raw array of SlotsPerDay counts. The property test
// (history_test.go) holds History to its answers.

// refChunk is one day of a refSeries in memory (Day without the address).
type refChunk struct {
	day    int32
	counts [SlotsPerDay]uint8
}

type refSeries struct {
	days []*refChunk // ascending by day, at most RetentionDays
}

// refHistory keeps every server's player count over time from the master's
// verified replies (it is the handler's master.Observer). It is pure: it
// takes the time of each reply, never reads the clock, and owns no file;
// masterd's state writer takes its changed days (TakeDirty) into the state
// store's commits and gives them back at start (Load).
//
// mu guards everything.
type refHistory struct {
	mu      sync.Mutex
	servers map[netip.AddrPort]*refSeries
	dirty   map[refDayKey]struct{}
	samples uint64 // samples recorded, for the tests and the metrics
	refused uint64 // samples of servers beyond MaxServers
}

type refDayKey struct {
	a   netip.AddrPort
	day int32
}

// newRefHistory returns an empty reference history.
func newRefHistory() *refHistory {
	return &refHistory{servers: map[netip.AddrPort]*refSeries{}, dirty: map[refDayKey]struct{}{}}
}

// Record records count players at a at t, reporting whether it changed
// a day (when History calls its OnChange function).
func (h *refHistory) Record(a netip.AddrPort, t time.Time, count int) (changed bool) {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	slot := SlotOf(t)
	day := int32(floorDiv(slot, int64(SlotsPerDay)))
	idx := slot - int64(day)*int64(SlotsPerDay)
	return h.record(a, day, idx, uint8(max(0, min(count, MaxCount))))
}

// record sets a count, reporting whether it changed a refChunk.
func (h *refHistory) record(a netip.AddrPort, day int32, idx int64, c uint8) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples++
	s := h.servers[a]
	if s == nil {
		if len(h.servers) >= MaxServers {
			h.refused++
			return false
		}
		s = &refSeries{}
		h.servers[a] = s
	}
	d := s.day(day)
	if d == nil || d.counts[idx] == c {
		return false // older than every day kept, or no change
	}
	d.counts[idx] = c
	h.dirty[refDayKey{a, day}] = struct{}{}
	return true
}

// day returns s's refChunk of day, creating it (and dropping the oldest past
// RetentionDays), or nil if day is older than every refChunk kept and there
// is no room.
func (s *refSeries) day(day int32) *refChunk {
	i, found := s.find(day)
	if found {
		return s.days[i]
	}
	if len(s.days) >= RetentionDays && i == 0 {
		return nil
	}
	d := &refChunk{day: day}
	for j := range d.counts {
		d.counts[j] = NoSample
	}
	s.days = slices.Insert(s.days, i, d)
	if len(s.days) > RetentionDays {
		s.days = slices.Delete(s.days, 0, len(s.days)-RetentionDays)
	}
	return d
}

func (s *refSeries) find(day int32) (int, bool) {
	return slices.BinarySearchFunc(s.days, day, func(d *refChunk, n int32) int { return int(d.day - n) })
}

// Points returns a's samples in slots [from, to), oldest first.
func (h *refHistory) Points(a netip.AddrPort, from, to int64) []Point {
	out := []Point{}
	h.each(a, from, to, func(slot int64, c uint8) { out = append(out, Point{SlotTime(slot), int(c)}) })
	return out
}

// Recent returns a's last up to n counts in the slots before slot to,
// within the 24 h before it, oldest first.
func (h *refHistory) Recent(a netip.AddrPort, to int64, n int) []int {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	out := make([]int, 0, n)
	h.mu.Lock()
	s := h.servers[a]
	// Backwards from to-1, refChunk by refChunk, until n samples or a day.
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

func (s *refSeries) daysOrNil() []*refChunk {
	if s == nil {
		return nil
	}
	return s.days
}

// Stats returns the average and peak of a's samples in slots [from, to),
// and how many there were.
func (h *refHistory) Stats(a netip.AddrPort, from, to int64) (avg float64, peak, n int) {
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

func (h *refHistory) each(a netip.AddrPort, from, to int64, fn func(slot int64, c uint8)) {
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

// TakeDirty returns a copy of every day refChunk changed since the last call
// (for the state writer's next commit) and forgets them. If the commit
// fails, the writer gives them back with Redirty.
func (h *refHistory) TakeDirty() []Day {
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
		h.dirty = map[refDayKey]struct{}{} // let a big one (a start's) go
	} else {
		clear(h.dirty)
	}
	return out
}

// Redirty marks days changed again (a failed commit).
func (h *refHistory) Redirty(days []Day) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range days {
		h.dirty[refDayKey{d.Addr, d.Day}] = struct{}{}
	}
}

// Load adds days read back from the store (at start), keeping at most
// RetentionDays per server, the newest, and MaxServers servers.
// Samples already recorded win over loaded ones.
func (h *refHistory) Load(days []Day) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ld := range days {
		a := netip.AddrPortFrom(ld.Addr.Addr().Unmap(), ld.Addr.Port())
		s := h.servers[a]
		if s == nil {
			if len(h.servers) >= MaxServers {
				h.refused++
				continue
			}
			s = &refSeries{}
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
func (h *refHistory) Prune(now time.Time) (firstDay int32) {
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
// recorded and refused (beyond MaxServers) since New.
func (h *refHistory) Len() (servers int, samples, refused uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers), h.samples, h.refused
}
