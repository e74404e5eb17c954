// Package history keeps every listed server's player count over time, in
// five-minute slots for the last eight days: what the server browser's
// detail view and ranking show, what masterd's state file and a fleet's
// Redis keep across restarts; and where each player was seen in the last
// seven days (Sightings, sightings.go), for the players' pages, which the
// state file keeps. A pure core: it takes the time of every sample, never
// reads the clock and owns no file; masterd feeds it from the master's
// verified replies and persists what it hands out (TakeDirty).
package history

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/scout-discovery/scout/master"
)

// History resolution and bounds. A server's player count is kept per
// Resolution slot (the last verified reply in the slot wins: the master
// re-probes every 4 or 5 minutes, and checks on heartbeats in between), in
// days of SlotsPerDay one-byte counts, for the current UTC day and the
// RetentionDays-1 before it: at least 7 full days back from any instant. A
// count above MaxCount is kept as MaxCount; NoSample marks a slot without
// a verified reply.
//
// Size per server in memory (live heap, its map slot included;
// BenchmarkHistory_MemoryPerServer), the days encoded as runs
// (enc.go):
//
//	just registered (one sample)                  79 B
//	8 days, one count (nobody plays: most)       181 B
//	8 days, the count changing 12 times a day    357 B
//	8 days, a new count at every slot (worst)  2,444 B
//
// against 431 B and 2,811 B in every case for the raw days kept before.
// A day never takes more than its 288 counts plus 7 bytes. On disk
// (master/store's history bucket, one 289-byte record per server and day)
// 3,039 bytes of state file with 8 days (BenchmarkHistory_FileBytesPerServer
// in master/store, 5,000 servers). At most MaxServers servers are
// kept: 32,768 × 2.4 KB = 80 MB in the worst case.
const (
	Resolution    = 5 * time.Minute
	SlotsPerDay   = int(24 * time.Hour / Resolution)
	RetentionDays = 8
	MaxCount      = 254
	NoSample      = 0xFF
	MaxServers    = 2 * master.DefaultMaxServers
)

// Day is one server's counts of one UTC day (days since the Unix epoch):
// the unit the state writer commits (History keeps the counts without the
// address).
type Day struct {
	Addr   netip.AddrPort
	Day    int32
	Counts [SlotsPerDay]uint8
}

// History keeps every server's player count over time from the master's
// verified replies (it is the handler's master.Observer). It is pure: it
// takes the time of each reply, never reads the clock, and owns no file;
// masterd's state writer takes its changed days (TakeDirty) into the state
// store's commits and gives them back at start (Load).
//
// Each server's days are kept encoded (a series, see enc.go): runs
// of one count, and the counts as they are where they change too often
// for runs to be shorter; in the map's slot when they fit in 21 bytes,
// else in a byte slice of their own. Every call decodes the days it reads
// or changes.
//
// mu guards everything, the scratch buffers included.
type History struct {
	notify func() // OnChange's; called after mu is released

	mu      sync.Mutex
	servers map[histKey]seriesSlot // each server's series (enc.go), never empty
	big     [][]byte               // the series too long for their slot, by index
	free    []uint32               // indices of big not in use
	dirty   map[dirtyKey]struct{}  // days changed since TakeDirty; nil before OnChange
	samples uint64                 // samples recorded, for the tests and the metrics
	refused uint64                 // samples of servers beyond MaxServers

	cur  seriesSlot // the slot being read (its bytes are what load returns)
	refs [RetentionDays + 1]dayRef
	raw  [SlotsPerDay]uint8
	body []byte // the changed day's body
	buf  []byte // the series being written
}

// histKey is a server's address as History's map key: the unmapped
// address in 16 bytes and the port (18 bytes, where a netip.AddrPort is
// 32 with its zone handle), as master's registry keys its servers. A zone
// is not part of it.
type histKey struct {
	ip   [16]byte
	port uint16
}

func histKeyOf(a netip.AddrPort) histKey { return histKey{a.Addr().Unmap().As16(), a.Port()} }

func (k histKey) addrPort() netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom16(k.ip).Unmap(), k.port)
}

// seriesSlot is one server's series as History's map holds it: in the
// slot itself when it fits in inlineSeries bytes (the first day or two of
// a server whose count rarely changes: most servers), else in History.big
// at an index. It holds no pointer, so the collector never scans the map.
type seriesSlot struct {
	n uint8 // bytes in b; outOfLine: b[:4] is the index in History.big
	b [inlineSeries]byte
}

const (
	inlineSeries = 21   // a 40-byte map slot with the key
	outOfLine    = 0xFF // seriesSlot.n of a series in History.big
)

// load returns s's series (aliasing h.cur or h.big).
func (h *History) load(s seriesSlot) []byte {
	h.cur = s
	if s.n == outOfLine {
		return h.big[binary.LittleEndian.Uint32(s.b[:4])]
	}
	return h.cur.b[:s.n]
}

// release frees s's place in h.big, if it has one.
func (h *History) release(s seriesSlot) {
	if s.n == outOfLine {
		i := binary.LittleEndian.Uint32(s.b[:4])
		h.big[i] = nil
		h.free = append(h.free, i)
	}
}

type dirtyKey struct {
	k   histKey
	day int32
}

// New returns an empty history.
func New() *History {
	return &History{servers: map[histKey]seriesSlot{}}
}

// OnChange sets a function called (without History's lock held) after a
// sample changed a day, so that the state writer commits it within its
// interval, and from then on remembers the changed days for TakeDirty. It
// must be set before the first Record.
func (h *History) OnChange(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notify = fn
	if h.dirty == nil {
		h.dirty = map[dirtyKey]struct{}{}
	}
}

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

// Verified records s's player count at now (master.Observer): its
// humans, the players that are neither bots nor suspected bots, so that
// the ranking and recent_players count people.
func (h *History) Verified(now time.Time, s master.Server) {
	h.Record(s.Addr, now, s.Humans())
}

// Record records count players at a at t.
func (h *History) Record(a netip.AddrPort, t time.Time, count int) {
	slot := SlotOf(t)
	day := int32(floorDiv(slot, int64(SlotsPerDay)))
	idx := slot - int64(day)*int64(SlotsPerDay)
	if h.record(histKeyOf(a), day, idx, uint8(max(0, min(count, MaxCount)))) && h.notify != nil {
		h.notify()
	}
}

// record sets a count, reporting whether it changed a day.
func (h *History) record(k histKey, day int32, idx int64, c uint8) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples++
	old, ok := h.servers[k]
	if !ok && len(h.servers) >= MaxServers {
		h.refused++
		return false
	}
	refs, i, ok := h.open(h.load(old), day)
	if !ok {
		return false // older than every day kept
	}
	if h.raw[idx] == c {
		return false
	}
	h.raw[idx] = c
	h.put(k, old, refs, i)
	if h.dirty != nil {
		h.dirty[dirtyKey{k, day}] = struct{}{}
	}
	return true
}

// open parses enc's days into h.refs and decodes day into h.raw, adding
// it (all NoSample) if enc has no such day. It returns the days and day's
// index among them, or false if day is older than every day kept and
// there is no room for it (RetentionDays days kept).
func (h *History) open(enc []byte, day int32) (refs []dayRef, i int, ok bool) {
	refs = parseDays(enc, h.refs[:0])
	i, found := slices.BinarySearchFunc(refs, day, func(d dayRef, n int32) int { return int(d.day - n) })
	if found {
		decodeBody(refs[i].body, &h.raw)
		return refs, i, true
	}
	if len(refs) >= RetentionDays && i == 0 {
		return nil, 0, false
	}
	for j := range h.raw {
		h.raw[j] = NoSample
	}
	return slices.Insert(refs, i, dayRef{day: day}), i, true
}

// put encodes h.raw as refs[i]'s body and stores refs, without the oldest
// days past RetentionDays, as k's series in place of old.
func (h *History) put(k histKey, old seriesSlot, refs []dayRef, i int) {
	h.body = appendBody(h.body[:0], &h.raw)
	refs[i].body = h.body
	if len(refs) > RetentionDays {
		refs = refs[len(refs)-RetentionDays:]
	}
	h.store(k, old, refs)
}

// store writes refs as k's series in place of old: in its slot when it
// fits, else in h.big, in old's array there when it fits and is not more
// than twice what is needed; no days deletes k.
func (h *History) store(k histKey, old seriesSlot, refs []dayRef) {
	if len(refs) == 0 {
		h.release(old)
		delete(h.servers, k)
		return
	}
	h.buf = appendSeries(h.buf[:0], refs) // refs may alias old's bytes: written before they change
	n := len(h.buf)
	if n <= inlineSeries {
		h.release(old)
		s := seriesSlot{n: uint8(n)}
		copy(s.b[:], h.buf)
		h.servers[k] = s
		return
	}
	s := old
	if s.n != outOfLine {
		s = seriesSlot{n: outOfLine}
		i := uint32(len(h.big))
		if len(h.free) > 0 {
			i = h.free[len(h.free)-1]
			h.free = h.free[:len(h.free)-1]
		} else {
			h.big = append(h.big, nil)
		}
		binary.LittleEndian.PutUint32(s.b[:4], i)
	}
	i := binary.LittleEndian.Uint32(s.b[:4])
	enc := h.big[i]
	if n > cap(enc) || cap(enc) > 2*n {
		enc = slices.Grow([]byte(nil), n) // capacity rounded up to the allocator's size class
	}
	h.big[i] = append(enc[:0], h.buf...)
	h.servers[k] = s
}

// KeepFrom is the first day (days since the Unix epoch) History keeps at
// now; the store deletes the days before it.
func KeepFrom(now time.Time) int32 {
	return int32(floorDiv(SlotOf(now), int64(SlotsPerDay))) - RetentionDays + 1
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
	out := make([]int, 0, n)
	h.mu.Lock()
	refs := parseDays(h.load(h.servers[histKeyOf(a)]), h.refs[:0])
	// Backwards from to-1, day by day, until n samples or a day.
	for i := len(refs) - 1; i >= 0 && len(out) < n; i-- {
		base := int64(refs[i].day) * int64(SlotsPerDay)
		if base >= to || base+int64(SlotsPerDay) <= to-int64(SlotsPerDay) {
			continue
		}
		decodeBody(refs[i].body, &h.raw)
		for slot := min(to, base+int64(SlotsPerDay)) - 1; slot >= base && slot >= to-int64(SlotsPerDay) && len(out) < n; slot-- {
			if c := h.raw[slot-base]; c != NoSample {
				out = append(out, int(c))
			}
		}
	}
	h.mu.Unlock()
	slices.Reverse(out)
	return out
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
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range parseDays(h.load(h.servers[histKeyOf(a)]), h.refs[:0]) {
		base := int64(d.day) * int64(SlotsPerDay)
		if base+int64(SlotsPerDay) <= from || base >= to {
			continue
		}
		decodeBody(d.body, &h.raw)
		for i, c := range h.raw {
			if slot := base + int64(i); c != NoSample && slot >= from && slot < to {
				fn(slot, c)
			}
		}
	}
}

// TakeDirty returns a copy of every day changed since the last call (for
// the state writer's next commit) and forgets them. If the commit fails,
// the writer gives them back with Redirty. Changed days are remembered
// only once OnChange is set: a History whose days nobody takes keeps no
// list of them.
func (h *History) TakeDirty() []Day {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Day, 0, len(h.dirty))
	for dk := range h.dirty {
		refs := parseDays(h.load(h.servers[dk.k]), h.refs[:0])
		if i, ok := slices.BinarySearchFunc(refs, dk.day, func(d dayRef, n int32) int { return int(d.day - n) }); ok {
			d := Day{Addr: dk.k.addrPort(), Day: dk.day}
			decodeBody(refs[i].body, &d.Counts)
			out = append(out, d)
		}
	}
	if len(h.dirty) > 1024 {
		h.dirty = map[dirtyKey]struct{}{} // let a big one (a start's) go
	} else {
		clear(h.dirty)
	}
	return out
}

// Redirty marks days changed again (a failed commit).
func (h *History) Redirty(days []Day) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dirty == nil {
		h.dirty = map[dirtyKey]struct{}{}
	}
	for _, d := range days {
		h.dirty[dirtyKey{histKeyOf(d.Addr), d.Day}] = struct{}{}
	}
}

// Load adds days read back from the store (at start), keeping at most
// RetentionDays per server, the newest, and MaxServers servers.
// Samples already recorded win over loaded ones.
func (h *History) Load(days []Day) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ld := range days {
		k := histKeyOf(ld.Addr)
		old, ok := h.servers[k]
		if !ok && len(h.servers) >= MaxServers {
			h.refused++
			continue
		}
		refs, i, ok := h.open(h.load(old), ld.Day)
		if !ok {
			continue
		}
		for j, c := range ld.Counts {
			if h.raw[j] == NoSample {
				h.raw[j] = c
			}
		}
		h.put(k, old, refs, i)
	}
}

// Prune forgets the days older than RetentionDays before now's day, and
// servers left without any, returning the first day kept (the store
// deletes the days before it).
func (h *History) Prune(now time.Time) (firstDay int32) {
	firstDay = KeepFrom(now)
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, s := range h.servers {
		refs := parseDays(h.load(s), h.refs[:0])
		i := 0
		for i < len(refs) && refs[i].day < firstDay {
			i++
		}
		if i > 0 {
			h.store(k, s, refs[i:])
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
func (h *History) Len() (servers int, samples, refused uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers), h.samples, h.refused
}
