// Package rttcache is the client's memory of its own round-trip times: per
// server group (a /24, or an IPv6 /64: adaptive.GroupKey), the few latest
// samples, each the least RTT of a run in that group, with the time it
// was taken and how many answers of the group that run had (the evidence
// its decisions rested on: adaptive.Grouped's sequential test counts
// them). A later run of scout servers orders and stops by it
// (adaptive.Grouped: groups remembered playable are probed first, groups
// remembered far are not probed); servers it has never seen fall back to
// the landmarks and calibration. Only measurements over the client's own
// path are close enough to stop by: a landmark's, or another player's,
// are tens of ms off (EVALUATION.md, "The client's memory").
//
// The memory is only as good as the paths are stable, so it is bounded
// in age (MaxAge), and it is tied to where it was measured from: the
// client's RTTs to the masters it asked (the vantage). A run whose RTTs
// to the same masters are not the remembered ones (a laptop on another
// network; Cache.Matches) does not use it.
//
// The core (Cache, Parse, AppendText) is pure: times are passed in. The
// file shell (Load, Save, DefaultPath) writes atomically (a temporary
// file, synced, renamed over the old one) and treats the file as hostile:
// a damaged one is moved aside and the run starts with an empty memory.
//
// It also keeps which groups were in the list of a run that planned
// every server it was given (Cache.SetListed): a later run tells a group new
// since (whose servers it must measure) from one an earlier run saw and
// decided on without probing it (landmark.PlanInput.Known).
//
// The file is text, one record a line:
//
//	scout-rtt-cache 2
//	vantage 192.0.2.1:27950 31.2
//	group 203.0.113.0/24 1767225600 41.3 1 1767229200 40.9 3
//	listed 198.51.100.0/24 1767229200
//	end CRC
//
// "vantage" gives a master and the least RTT (ms) the client has measured
// to it from this place (since the memory last started afresh); "group" a
// group, then up to MaxSamples triples of Unix time (s), RTT (ms) and the
// run's answers from the group, oldest first; "listed" a group and the
// Unix time of the last run whose list held it; "end" the CRC-32 (IEEE)
// of every byte before its line, in hex. A version 1 file (pairs of time
// and RTT, one answer each; no "listed" records) is read as it is.
package rttcache

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/adaptive"
)

// Limits.
const (
	// MaxGroups bounds the groups kept, and separately the groups
	// remembered as listed; past it, the groups sampled (or listed)
	// longest ago are dropped first. A full Source list is about 20,000
	// /24s.
	MaxGroups = 1 << 16
	// MaxSamples bounds the samples kept per group, newest kept.
	MaxSamples = 4
	// MaxAge is how old a sample may be and still be used. The shared
	// data has no RTT time series to fit it on (EVALUATION.md): a day is
	// the span over which the two directions of a path, measured apart,
	// agreed within 3 ms for 99% of the paths.
	MaxAge = 24 * time.Hour
	// MaxVantage bounds the masters a vantage holds.
	MaxVantage = 32
	// MaxFile bounds the file's size: a larger one is refused as damaged.
	// MaxGroups group lines of MaxSamples samples and MaxGroups listed
	// lines are under 11 MiB.
	MaxFile = 12 << 20
	// MaxRTT bounds an RTT (ms) the file may hold.
	MaxRTT = 60_000
	// MaxAnswers bounds the answers a sample counts: past a few, more
	// answers of one run say little more about the path's floor.
	MaxAnswers = 16
	// maxLine bounds a line's length: a group line with MaxSamples
	// triples is under 130 bytes.
	maxLine = 256
)

// How far the client's RTT to a master may be from the one remembered
// for the memory to be used: at most VantageBelow ms (or that share of
// it, if larger) below it, and VantageAbove ms (or share) above it. One
// sample of a round trip can sit far over the path's (a queue on the
// way, a busy master), never under it, so a sample well under the
// remembered RTT says the client moved, and one over it must be far
// over to say so.
const (
	VantageBelow      = 10.0
	VantageBelowShare = 0.2
	VantageAbove      = 50.0
	VantageAboveShare = 0.5
)

// header is the file's first line; headerV1 a file's without "listed"
// records, which Parse still reads.
const (
	header   = "scout-rtt-cache 2"
	headerV1 = "scout-rtt-cache 1"
)

// Sample is one run's memory of a group.
type Sample struct {
	At      time.Time     // when it was measured (second precision)
	RTT     time.Duration // the least of the run's answers; 0.1 ms precision
	Answers int           // the run's answers from the group, 1 to MaxAnswers
}

// Cache is the memory: the groups' samples and the vantage. The zero
// value is not usable; New makes one. Not safe for concurrent use.
type Cache struct {
	groups  map[netip.Prefix][]Sample // oldest first
	listed  map[netip.Prefix]time.Time
	vantage map[netip.AddrPort]time.Duration
}

// New returns an empty Cache.
func New() *Cache {
	return &Cache{groups: map[netip.Prefix][]Sample{}, listed: map[netip.Prefix]time.Time{}, vantage: map[netip.AddrPort]time.Duration{}}
}

// Len returns the number of groups remembered.
func (c *Cache) Len() int { return len(c.groups) }

// Outcome is one probe's outcome, as a run reports it.
type Outcome struct {
	Addr     netip.AddrPort
	RTT      time.Duration
	Answered bool
}

// Record remembers a run's outcomes, measured at now from a client whose
// RTTs to the masters it asked were vantage: per group, the least answered
// RTT of the run and its number of answers become a sample. A vantage that does not match the one
// remembered (Matches) starts the memory afresh; one that matches keeps,
// per master, the least RTT seen from this place (a sample can be
// inflated by a queue, never deflated, so the least is the path's).
func (c *Cache) Record(now time.Time, vantage map[netip.AddrPort]time.Duration, outs []Outcome) {
	if !c.Matches(vantage) {
		clear(c.groups)
		clear(c.listed)
		clear(c.vantage)
	}
	for _, a := range slices.SortedFunc(maps.Keys(vantage), func(x, y netip.AddrPort) int { return x.Compare(y) }) {
		d := stored(vantage[a])
		if old, ok := c.vantage[a]; ok {
			c.vantage[a] = min(old, d)
		} else if len(c.vantage) < MaxVantage {
			c.vantage[a] = d
		}
	}
	runs := map[netip.Prefix]Sample{}
	for _, o := range outs {
		if !o.Answered || o.RTT <= 0 || o.RTT > MaxRTT*time.Millisecond || !o.Addr.IsValid() {
			continue
		}
		k := adaptive.GroupKey(o.Addr.Addr())
		r, ok := runs[k]
		if !ok || o.RTT < r.RTT {
			r.RTT = o.RTT
		}
		r.Answers = min(r.Answers+1, MaxAnswers)
		runs[k] = r
	}
	at := now.Truncate(time.Second)
	for k, r := range runs {
		s := append(c.groups[k], Sample{At: at, RTT: stored(r.RTT), Answers: r.Answers})
		if len(s) > MaxSamples {
			s = slices.Delete(s, 0, len(s)-MaxSamples)
		}
		c.groups[k] = s
	}
	c.bound()
}

// SetListed remembers that a run at now had servers (its whole list)
// and planned every one of them: those it did not probe, it decided
// without probing (their site, their group-mates or its bound ruled them
// out). Call it after Record, with the same run's list, and only for a
// run that was neither cut short nor stopped early by the player.
func (c *Cache) SetListed(now time.Time, servers []netip.AddrPort) {
	at := now.Truncate(time.Second)
	for _, a := range servers {
		if a.IsValid() {
			c.listed[adaptive.GroupKey(a.Addr())] = at
		}
	}
	c.bound()
}

// bound drops the groups sampled (or listed) longest ago past MaxGroups.
func (c *Cache) bound() {
	dropOldest(c.groups, func(s []Sample) time.Time { return s[len(s)-1].At })
	dropOldest(c.listed, func(at time.Time) time.Time { return at })
}

// dropOldest deletes m's entries of oldest time (ties: lowest prefix)
// until it holds MaxGroups.
func dropOldest[V any](m map[netip.Prefix]V, at func(V) time.Time) {
	if len(m) <= MaxGroups {
		return
	}
	keys := slices.SortedFunc(maps.Keys(m), func(a, b netip.Prefix) int {
		return cmp.Or(at(m[a]).Compare(at(m[b])), a.Addr().Compare(b.Addr()))
	})
	for _, k := range keys[:len(keys)-MaxGroups] {
		delete(m, k)
	}
}

// Matches reports whether a client whose RTTs to its masters are vantage
// is where the memory was measured from: every master both know within
// VantageBelow and VantageAbove of the remembered RTT. With no master in common
// (or an empty memory) it matches: nothing says the client moved.
func (c *Cache) Matches(vantage map[netip.AddrPort]time.Duration) bool {
	for a, d := range vantage {
		old, ok := c.vantage[a]
		if !ok {
			continue
		}
		x, o := millis(d), millis(old)
		if x < o-max(VantageBelow, VantageBelowShare*o) || x > o+max(VantageAbove, VantageAboveShare*o) {
			return false
		}
	}
	return true
}

// Priors returns, per group, what a run at now may use: the least RTT of
// the samples at most MaxAge old and how many answers they count (a
// sample dated after now, a clock set back, is not used).
func (c *Cache) Priors(now time.Time) map[netip.Prefix]adaptive.Prior {
	out := make(map[netip.Prefix]adaptive.Prior, len(c.groups))
	for k, ss := range c.groups {
		var p adaptive.Prior
		for _, s := range ss {
			age := now.Sub(s.At)
			if age < 0 || age > MaxAge {
				continue
			}
			if p.Samples == 0 || s.RTT < p.Least {
				p.Least = s.RTT
			}
			p.Samples += s.Answers
		}
		if p.Samples > 0 {
			out[k] = p
		}
	}
	return out
}

// Known returns the groups a run at now may take as seen before: sampled,
// or in the list of a run that planned every server (SetListed), at most
// MaxAge ago (not after now).
func (c *Cache) Known(now time.Time) map[netip.Prefix]bool {
	fresh := func(at time.Time) bool { age := now.Sub(at); return age >= 0 && age <= MaxAge }
	out := make(map[netip.Prefix]bool, len(c.groups)+len(c.listed))
	for k, at := range c.listed {
		if fresh(at) {
			out[k] = true
		}
	}
	for k, ss := range c.groups {
		if slices.ContainsFunc(ss, func(s Sample) bool { return fresh(s.At) }) {
			out[k] = true
		}
	}
	return out
}

// Samples returns a group's samples, oldest first (nil if none).
func (c *Cache) Samples(k netip.Prefix) []Sample { return slices.Clone(c.groups[k]) }

// ErrDamaged is wrapped by Parse's error: the bytes are not a cache file
// this version wrote.
var ErrDamaged = errors.New("rttcache: damaged file")

// Parse reads a cache file. It refuses anything but what AppendText
// writes: a wrong header, an unknown record, a value out of range, a
// group not a /24 (or /64), a record past a bound, a missing or wrong
// end line.
func Parse(b []byte) (*Cache, error) {
	bad := func(line int, format string, a ...any) error {
		return fmt.Errorf("%w: line %d: "+format, append([]any{ErrDamaged, line}, a...)...)
	}
	if len(b) > MaxFile {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrDamaged, len(b), MaxFile)
	}
	c := New()
	rest := b
	v1 := false
	for n := 1; ; n++ {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return nil, bad(n, "no end line")
		}
		line := rest[:i]
		start := len(b) - len(rest)
		rest = rest[i+1:]
		if len(line) > maxLine {
			return nil, bad(n, "%d bytes long", len(line))
		}
		f := strings.Fields(string(line))
		if n == 1 {
			switch string(line) {
			case header:
			case headerV1:
				v1 = true
			default:
				return nil, bad(n, "not %q", header)
			}
			continue
		}
		if len(f) == 0 {
			return nil, bad(n, "empty")
		}
		switch f[0] {
		case "end":
			if len(f) != 2 {
				return nil, bad(n, "end: want a checksum")
			}
			sum, err := strconv.ParseUint(f[1], 16, 32)
			if err != nil || uint32(sum) != crc32.ChecksumIEEE(b[:start]) {
				return nil, bad(n, "checksum %q does not match", f[1])
			}
			if len(rest) != 0 {
				return nil, bad(n+1, "bytes after the end line")
			}
			return c, nil
		case "vantage":
			if len(f) != 3 {
				return nil, bad(n, "vantage: want ADDR:PORT MS")
			}
			a, err := netip.ParseAddrPort(f[1])
			d, ok := parseMs(f[2])
			if err != nil || !ok || a.Addr().Zone() != "" || len(c.vantage) >= MaxVantage {
				return nil, bad(n, "vantage %q %q", f[1], f[2])
			}
			if _, dup := c.vantage[a]; dup {
				return nil, bad(n, "vantage %v twice", a)
			}
			c.vantage[a] = d
		case "group":
			width := 3 // TIME MS ANSWERS
			if v1 {
				width = 2 // TIME MS
			}
			if len(f) < 2+width || (len(f)-2)%width != 0 || (len(f)-2)/width > MaxSamples {
				return nil, bad(n, "group: want PREFIX and 1 to %d samples of %d fields", MaxSamples, width)
			}
			p, why := newPrefix("group", "groups", f[1], c.groups)
			if why != "" {
				return nil, bad(n, "%s", why)
			}
			var ss []Sample
			for j := 2; j < len(f); j += width {
				t, err := strconv.ParseInt(f[j], 10, 64)
				d, ok := parseMs(f[j+1])
				if err != nil || t < 0 || t > maxUnix || !ok || d <= 0 {
					return nil, bad(n, "sample %q %q", f[j], f[j+1])
				}
				answers := 1
				if !v1 {
					a, err := strconv.Atoi(f[j+2])
					if err != nil || a < 1 || a > MaxAnswers || strconv.Itoa(a) != f[j+2] {
						return nil, bad(n, "answers %q", f[j+2])
					}
					answers = a
				}
				at := time.Unix(t, 0).UTC()
				if len(ss) > 0 && at.Before(ss[len(ss)-1].At) {
					return nil, bad(n, "samples out of order")
				}
				ss = append(ss, Sample{At: at, RTT: d, Answers: answers})
			}
			c.groups[p] = ss
		case "listed":
			if len(f) != 3 {
				return nil, bad(n, "listed: want PREFIX TIME")
			}
			p, why := newPrefix("listed", "listed groups", f[1], c.listed)
			if why != "" {
				return nil, bad(n, "%s", why)
			}
			t, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil || t < 0 || t > maxUnix {
				return nil, bad(n, "listed time %q", f[2])
			}
			c.listed[p] = time.Unix(t, 0).UTC()
		default:
			return nil, bad(n, "unknown record %q", f[0])
		}
	}
}

// parseGroup reads a group's prefix as AppendText writes it: a masked /24
// or /64 (adaptive.GroupKey).
func parseGroup(s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	return p, err == nil && p == adaptive.GroupKey(p.Addr()) // GroupKey unmaps: never a mapped v4
}

// maxUnix bounds a sample's time: the year 9999.
const maxUnix = 253402300799

// parseMs reads an RTT in ms with at most one decimal, 0 to MaxRTT.
func parseMs(s string) (time.Duration, bool) {
	if len(s) > 8 {
		return 0, false
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || !(x >= 0 && x <= MaxRTT) || strconv.FormatFloat(x, 'f', 1, 64) != s {
		return 0, false
	}
	return time.Duration(math.Round(x*10)) * precision, true
}

// newPrefix reads the group s of a kind record (group, listed) into
// records (at most MaxGroups of them, named plural): why is "" for a
// group not yet read, else what is wrong.
func newPrefix[V any](kind, plural, s string, records map[netip.Prefix]V) (p netip.Prefix, why string) {
	p, ok := parseGroup(s)
	switch _, dup := records[p]; {
	case !ok:
		return p, fmt.Sprintf("%s %q is not a /%d or /%d", kind, s, adaptive.GroupBits4, adaptive.GroupBits6)
	case dup:
		return p, fmt.Sprintf("%s %v twice", kind, p)
	case len(records) >= MaxGroups:
		return p, fmt.Sprintf("more than %d %s", MaxGroups, plural)
	}
	return p, ""
}

func fmtMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Round(precision))/float64(time.Millisecond), 'f', 1, 64)
}

// precision is the file's: RTTs are written in ms with one decimal.
const precision = 100 * time.Microsecond

// stored is an RTT as Record keeps it: at the file's precision, and never
// 0.0 (which the file refuses for a sample): a loopback or LAN server can
// answer within 50 µs.
func stored(d time.Duration) time.Duration { return max(d.Round(precision), precision) }

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// AppendText appends the file's bytes to b: records in a fixed order (the
// vantage by address, the groups by prefix), so that the same memory
// writes the same bytes.
func (c *Cache) AppendText(b []byte) []byte {
	start := len(b)
	b = append(b, header...)
	b = append(b, '\n')
	for _, a := range slices.SortedFunc(maps.Keys(c.vantage), func(x, y netip.AddrPort) int { return x.Compare(y) }) {
		b = fmt.Appendf(b, "vantage %s %s\n", a, fmtMs(c.vantage[a]))
	}
	for _, k := range slices.SortedFunc(maps.Keys(c.groups), func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) }) {
		b = fmt.Appendf(b, "group %s", k)
		for _, s := range c.groups[k] {
			b = fmt.Appendf(b, " %d %s %d", s.At.Unix(), fmtMs(s.RTT), s.Answers)
		}
		b = append(b, '\n')
	}
	for _, k := range slices.SortedFunc(maps.Keys(c.listed), func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) }) {
		b = fmt.Appendf(b, "listed %s %d\n", k, c.listed[k].Unix())
	}
	return fmt.Appendf(b, "end %08x\n", crc32.ChecksumIEEE(b[start:]))
}
