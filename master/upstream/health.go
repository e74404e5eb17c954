package upstream

import (
	"math"
	"net/netip"
	"time"
)

// States of a source.
const (
	StateUnknown = "unknown" // not asked yet
	StateUp      = "up"      // its last refresh answered
	StateDown    = "down"    // its last refresh did not
)

// Health is what a source has done: its state, its last refresh and
// success, what its lists held, and its uptime. Counters run from the
// aggregator's start.
type Health struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`    // "master" or "peer"
	Address string   `json:"address"` // a master's ADDR:PORT, a peer's URL
	Queries []string `json:"queries,omitempty"`
	State   string   `json:"state"` // StateUnknown, StateUp, StateDown

	LastAttempt time.Time `json:"last_attempt"` // the last refresh's start; zero: none yet
	LastSuccess time.Time `json:"last_success"` // the end of the last refresh that answered
	LastError   string    `json:"last_error,omitempty"`
	// Reported is the distinct servers of the last successful refresh
	// (after the bounds and the private-address rule).
	Reported int `json:"reported"`
	// Verified is how many of those this master lists: filled by the
	// master, not the aggregator.
	Verified int `json:"verified"`
	// AnswerTime is, for the last successful refresh, the time from its
	// first query to the first packet (a peer: the fetch's duration);
	// RefreshTime the whole refresh, every query and quiet window.
	AnswerTime  time.Duration `json:"-"`
	RefreshTime time.Duration `json:"-"`
	// Uptime24h and Uptime7d are the share of refreshes that answered
	// over the last 24 hours and 7 days (hourly buckets), NaN before the
	// first refresh.
	Uptime24h float64 `json:"-"`
	Uptime7d  float64 `json:"-"`

	Refreshes   uint64 `json:"refreshes"`
	Failures    uint64 `json:"failures"`     // refreshes no query of which answered
	QueriesSent uint64 `json:"queries_sent"` // retries included; a peer: fetches
	Unanswered  uint64 `json:"unanswered"`   // queries that got nothing
	Packets     uint64 `json:"packets"`      // list packets received (a peer: lists)
	Garbled     uint64 `json:"garbled"`      // packets that were not the list asked for
	Entries     uint64 `json:"entries"`      // entries read, duplicates included
	Duplicates  uint64 `json:"duplicates"`   // entries already named in the same refresh
	Unusable    uint64 `json:"unusable"`     // entries naming no server (port 0, broadcast, ...)
	Refused     uint64 `json:"refused"`      // entries at local addresses or the source's host (netscope)
	OverLearned uint64 `json:"over_learned"` // distinct servers beyond MaxLearned, dropped
	Cut         uint64 `json:"cut"`          // queries cut off at a bound
	QueueFull   uint64 `json:"queue_full"`   // servers dropped because the queue to verify was full
	LastCut     string `json:"last_cut,omitempty"`
}

// Health returns each source's health at now, in Config.Sources order.
func (a *Aggregator) Health(now time.Time) []Health {
	out := make([]Health, len(a.sources))
	for i, s := range a.sources {
		h := s.h
		h.Uptime24h = s.up.share(now, 24)
		h.Uptime7d = s.up.share(now, uptimeHours)
		out[i] = h
	}
	return out
}

// LastSuccess returns when source i's last successful refresh began (the
// servers it reported then carry marks from at least that time), or the
// zero time.
func (a *Aggregator) LastSuccess(i int) time.Time {
	if i < 0 || i >= len(a.sources) || a.sources[i].h.LastSuccess.IsZero() {
		return time.Time{}
	}
	s := a.sources[i]
	return s.h.LastSuccess.Add(-s.h.RefreshTime)
}

// uptimeHours is the uptime window kept: 7 days of hourly buckets.
const uptimeHours = 7 * 24

// uptime counts a source's refreshes, and those that answered, per hour
// over the last uptimeHours: a fixed ring, whatever the interval.
type uptime struct {
	buckets [uptimeHours]struct {
		hour      int64 // hours since the epoch; stale when older than the window
		ok, total uint32
	}
}

func hourOf(t time.Time) int64 { return t.Unix() / 3600 }

// add counts one refresh at now.
func (u *uptime) add(now time.Time, ok bool) {
	h := hourOf(now)
	b := &u.buckets[h%uptimeHours]
	if b.hour != h {
		b.hour, b.ok, b.total = h, 0, 0
	}
	b.total++
	if ok {
		b.ok++
	}
}

// share is the answered share of the refreshes of the last hours hours
// up to now (the current one included), NaN if none.
func (u *uptime) share(now time.Time, hours int64) float64 {
	h := hourOf(now)
	var ok, total uint64
	for _, b := range u.buckets {
		if b.total > 0 && b.hour <= h && b.hour > h-hours {
			ok += uint64(b.ok)
			total += uint64(b.total)
		}
	}
	if total == 0 {
		return math.NaN()
	}
	return float64(ok) / float64(total)
}

// Reconfigure applies cfg at now: sources kept (same name, kind and
// address or URL) keep their schedule, refresh in progress and health;
// new ones start as in New (a zero now: at the next Poll); removed ones
// are forgotten. It returns the
// old index of each new source, -1 for a new one.
func (a *Aggregator) Reconfigure(now time.Time, cfg Config) ([]int, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	old := map[string]int{}
	for i, s := range a.sources {
		old[s.Name] = i
	}
	prev := a.sources
	a.cfg, a.sources, a.byAddr = cfg, nil, map[netip.AddrPort]int{}
	from := make([]int, len(cfg.Sources))
	for i, s := range cfg.Sources {
		from[i] = -1
		var src *source
		if j, ok := old[s.Name]; ok && prev[j].Kind == s.Kind && prev[j].Addr == s.Addr && prev[j].URL == s.URL {
			src, from[i] = prev[j], j
			src.Source = s
			if src.active && src.Kind == KindMaster && src.q >= len(s.Queries) {
				src.q = len(s.Queries) - 1
			}
			src.h.Queries = nil
		} else {
			src = &source{Source: s, next: now.Add(a.firstDelay(i))}
			if now.IsZero() {
				src.next = time.Time{} // due at the next Poll
			}
			src.h = Health{Name: s.Name, Kind: s.Kind.String(), State: StateUnknown}
			if s.Kind == KindPeer {
				src.h.Address = s.URL
			} else {
				src.h.Address = s.Addr.String()
			}
		}
		for _, q := range s.Queries {
			src.h.Queries = append(src.h.Queries, q.String())
		}
		if s.Kind == KindMaster {
			a.byAddr[s.Addr] = i
		}
		a.sources = append(a.sources, src)
	}
	a.remapQueue(from)
	return from, nil
}
