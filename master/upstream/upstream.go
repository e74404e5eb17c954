package upstream

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/netscope"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

// Defaults of a Config whose fields are zero.
const (
	// DefaultInterval is how often each source is asked for its list:
	// every five minutes, as the community aggregators of the field do,
	// the period servers heartbeat at.
	DefaultInterval = 5 * time.Minute
	// DefaultJitter spreads each refresh over ±10% of the interval.
	DefaultJitter = 0.1
	// DefaultTimeout is how long a query waits for its first packet
	// before it is sent again; DefaultAttempts how many times it is
	// sent in all before the query counts as unanswered.
	DefaultTimeout  = 3 * time.Second
	DefaultAttempts = 2
	// DefaultQuiet ends a list that carries no end marker (masters
	// before dpmaster 2.0, Quake 4's always): the source has been
	// silent this long after its last packet.
	DefaultQuiet = 2 * time.Second
	// DefaultMaxEntries bounds the entries of one query's answer,
	// duplicates included: the discovery client's bound on one master
	// (four times the 4,096 servers dpmaster holds by default).
	DefaultMaxEntries = 16384
	// DefaultMaxPackets bounds the packets of one query's answer,
	// garbled ones included: 16,384 servers in the 112-entry packets of
	// id's master are 147 packets.
	DefaultMaxPackets = 1024
	// DefaultMaxListTime bounds one query's answer from its first send:
	// real lists come within 2 s.
	DefaultMaxListTime = 30 * time.Second
	// DefaultMaxLearned bounds the distinct servers one source may name
	// in one refresh: the registry's own default bound on servers.
	DefaultMaxLearned = 16384
	// DefaultMaxPeerBytes bounds one peer's list body (JSON,
	// decompressed): about 100 bytes a server at DefaultMaxLearned,
	// four times over.
	DefaultMaxPeerBytes = 8 << 20
)

// Bounds that are not settings.
const (
	// MaxSources bounds the sources of one master.
	MaxSources = 64
	// MaxQueries bounds the queries of one source.
	MaxQueries = 32
	// MaxNameLen bounds a source's name.
	MaxNameLen = 128
	// EndGrace is how long a list stays open after its end marker, for
	// packets reordered behind it (q3.EndGrace).
	EndGrace = q3.EndGrace
)

// Kind is how a source is asked.
type Kind uint8

const (
	// KindMaster is a master asked over UDP with its Queries.
	KindMaster Kind = iota
	// KindPeer is a scout master whose verified list the shell fetches
	// over HTTP (GET URL/api/v1/verified) and hands to Offer.
	KindPeer
)

// String returns "master" or "peer".
func (k Kind) String() string {
	if k == KindPeer {
		return "peer"
	}
	return "master"
}

// Query is one list request sent to a master source.
type Query struct {
	// Family is game.FamilyQ3 (Q3 is sent) or game.FamilyDoom3 (Q4).
	Family game.Family
	Q3     q3.GetServers
	Q4     q4.GetServers
	// Game is the game the servers of this list are taken to be when
	// their replies do not name one: the anonymous game a bare protocol
	// asks for (Quake3Arena for "getservers 68", et for 84), as a
	// heartbeat's tag would name it. Empty: each server must name its
	// game in its reply (DarkPlaces games, Quake 4 by protocol). The
	// master fills it from its catalogue when the query names an
	// anonymous game or protocol.
	Game string
}

// String is the query as text, without the packet prefix.
func (q Query) String() string {
	if q.Family == game.FamilyDoom3 {
		s := "getServers " + q.Q4.Protocol.String()
		if q.Q4.Game != "" {
			s += " " + q.Q4.Game
		}
		return s
	}
	b, err := q.Q3.AppendBinary(nil)
	if err != nil {
		return "invalid: " + err.Error()
	}
	return strings.TrimPrefix(string(b), q3.Prefix)
}

// packet encodes the query.
func (q Query) packet() ([]byte, error) {
	if q.Family == game.FamilyDoom3 {
		return q.Q4.AppendBinary(nil)
	}
	return q.Q3.AppendBinary(nil)
}

// Source is one upstream: a master asked over UDP, or a scout peer.
type Source struct {
	// Name identifies the source in the API, the metrics and the logs,
	// and in each server's list of sources; empty means Addr (a master)
	// or URL (a peer). Names are unique.
	Name string
	Kind Kind
	// Addr is where a master is asked, and the address a peer's URL
	// resolves to; either way the address netscope.Refused judges its
	// entries against.
	Addr netip.AddrPort
	// URL is a peer's base URL ("http://host:8080"); masters have none.
	URL string
	// Queries are a master's requests, sent one after the other at each
	// refresh; at least one, at most MaxQueries.
	Queries []Query
}

// Config is an aggregator's settings; the zero value of each field is its
// default.
type Config struct {
	// Sources are the upstreams; empty: none (no aggregation).
	Sources []Source
	// Interval is each source's refresh period; 0 means DefaultInterval.
	Interval time.Duration
	// Jitter spreads each refresh uniformly over Interval ± Jitter ×
	// Interval; 0 means DefaultJitter, negative none. At most 0.5.
	Jitter float64
	// Timeout and Attempts govern a query without an answer; 0 means
	// DefaultTimeout and DefaultAttempts.
	Timeout  time.Duration
	Attempts int
	// Quiet ends a list without an end marker; 0 means DefaultQuiet.
	Quiet time.Duration
	// MaxEntries, MaxPackets and MaxListTime bound one query's answer;
	// 0 means DefaultMaxEntries, DefaultMaxPackets, DefaultMaxListTime.
	MaxEntries  int
	MaxPackets  int
	MaxListTime time.Duration
	// MaxLearned bounds the distinct servers a source names in one
	// refresh; 0 means DefaultMaxLearned.
	MaxLearned int
	// MaxPeerBytes bounds a peer's list body; 0 means
	// DefaultMaxPeerBytes. (The shell applies it.)
	MaxPeerBytes int
	// AllowLocal takes what a source at a public address lists at local
	// addresses (netscope.Refused); off by default.
	AllowLocal bool
}

func (c *Config) setDefaults() {
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	if c.Jitter == 0 {
		c.Jitter = DefaultJitter
	}
	c.Jitter = max(c.Jitter, 0)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.Attempts = cmp.Or(c.Attempts, DefaultAttempts)
	c.Quiet = cmp.Or(c.Quiet, DefaultQuiet)
	c.MaxEntries = cmp.Or(c.MaxEntries, DefaultMaxEntries)
	c.MaxPackets = cmp.Or(c.MaxPackets, DefaultMaxPackets)
	c.MaxListTime = cmp.Or(c.MaxListTime, DefaultMaxListTime)
	c.MaxLearned = cmp.Or(c.MaxLearned, DefaultMaxLearned)
	c.MaxPeerBytes = cmp.Or(c.MaxPeerBytes, DefaultMaxPeerBytes)
}

// WithDefaults returns c with its zero fields set to their defaults and
// each source's empty name set.
func (c Config) WithDefaults() Config {
	c.setDefaults()
	c.Sources = slices.Clone(c.Sources)
	for i := range c.Sources {
		s := &c.Sources[i]
		if s.Name == "" {
			s.Name = s.defaultName()
		}
	}
	return c
}

func (s *Source) defaultName() string {
	if s.Kind == KindPeer {
		return s.URL
	}
	return s.Addr.String()
}

// Check reports the first thing wrong with c (after WithDefaults).
func (c *Config) Check() error {
	switch {
	case len(c.Sources) > MaxSources:
		return fmt.Errorf("upstream: %d sources; at most %d", len(c.Sources), MaxSources)
	case c.Interval < time.Second || c.Timeout <= 0 || c.Quiet <= 0 || c.MaxListTime <= 0:
		return errors.New("upstream: the interval must be at least a second, the timeout, quiet window and list time positive")
	case c.Jitter > 0.5:
		return fmt.Errorf("upstream: jitter %g of the interval; at most 0.5", c.Jitter)
	case c.Attempts < 1 || c.MaxEntries < 1 || c.MaxPackets < 1 || c.MaxLearned < 1 || c.MaxPeerBytes < 1:
		return errors.New("upstream: the attempts and bounds must be positive")
	}
	names := map[string]bool{}
	for _, s := range c.Sources {
		if s.Name == "" || len(s.Name) > MaxNameLen || strings.ContainsAny(s.Name, "\x00\n") {
			return fmt.Errorf("upstream: source name %q: 1 to %d bytes without NUL or newline", s.Name, MaxNameLen)
		}
		if names[s.Name] {
			return fmt.Errorf("upstream: two sources named %q", s.Name)
		}
		names[s.Name] = true
		switch s.Kind {
		case KindMaster:
			if !s.Addr.IsValid() || s.Addr.Port() == 0 {
				return fmt.Errorf("upstream: master %q without an address and port", s.Name)
			}
			if len(s.Queries) == 0 || len(s.Queries) > MaxQueries {
				return fmt.Errorf("upstream: master %q has %d queries; 1 to %d", s.Name, len(s.Queries), MaxQueries)
			}
			for _, q := range s.Queries {
				if q.Family != game.FamilyQ3 && q.Family != game.FamilyDoom3 {
					return fmt.Errorf("upstream: master %q: a query of family %v; only %v and %v have master lists", s.Name, q.Family, game.FamilyQ3, game.FamilyDoom3)
				}
				if _, err := q.packet(); err != nil {
					return fmt.Errorf("upstream: master %q: %w", s.Name, err)
				}
			}
		case KindPeer:
			if s.URL == "" || !s.Addr.IsValid() {
				return fmt.Errorf("upstream: peer %q without a URL and the address it resolves to", s.Name)
			}
		default:
			return fmt.Errorf("upstream: source %q of unknown kind %d", s.Name, s.Kind)
		}
	}
	return nil
}

// Found is a server a source named: where, and how its reply is read.
type Found struct {
	Addr   netip.AddrPort // unmapped
	Family game.Family
	// Game is Query.Game (a peer gives each server's game): the game a
	// reply that names none belongs to; empty when the reply must.
	Game string
	// Source is the index of the source that named it, in Config.Sources.
	Source int
}

// Send is a query to send to a master source.
type Send struct {
	To      netip.AddrPort
	Payload []byte
	Source  int
	Family  game.Family
}

// Fetch asks the shell to fetch a peer's list (Source.URL) and hand it
// to Offer.
type Fetch struct {
	Source int
	URL    string
	Addr   netip.AddrPort
}

// How a query's list ended.
const (
	EndMarker  = "end marker" // the list said it was complete
	EndQuiet   = "quiet"      // no end marker; the source fell silent
	EndNoReply = "no reply"   // nothing came, after every attempt
	EndLimit   = "limit"      // a bound (entries, packets, list time) was passed
	EndError   = "error"      // a peer's fetch failed
)

// Aggregator schedules each source's refresh, reads its lists and keeps
// its health. It does no I/O and never reads the clock; it is not safe
// for concurrent use (package master guards it with a mutex).
type Aggregator struct {
	cfg     Config
	rng     *rand.Rand
	sources []*source
	byAddr  map[netip.AddrPort]int // master sources by address
	// The servers learned, waiting for the master to verify them
	// (queue.go).
	queue  []Found
	queued map[netip.AddrPort]struct{}
	// lazy: New was given no time; the first Poll schedules the first
	// refreshes.
	lazy bool
}

// source is one source's schedule, refresh in progress and health.
type source struct {
	Source
	next time.Time // next refresh
	// The refresh in progress (active): its queries, one at a time.
	active      bool
	start       time.Time
	q           int // the query asked
	qStart      time.Time
	sentAt      time.Time
	attempts    int
	packets     int
	entries     int
	lastPacket  time.Time
	endAt       time.Time // the end marker came; zero if not
	cut         string    // the bound the query passed, if any
	answered    int       // queries answered this refresh
	firstAnswer time.Duration
	seen        map[netip.AddrPort]struct{} // distinct servers this refresh
	h           Health
	up          uptime
}

// New returns an aggregator for cfg (defaults filled), its first refresh
// of each source at now plus a small random delay (a zero now: the first
// Poll's time); seed seeds the jitter.
func New(now time.Time, cfg Config, seed uint64) (*Aggregator, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	a := &Aggregator{cfg: cfg, rng: rand.New(rand.NewPCG(seed, 0x75707374)), byAddr: map[netip.AddrPort]int{}, lazy: now.IsZero()}
	for i, s := range cfg.Sources {
		src := &source{Source: s}
		src.h = Health{Name: s.Name, Kind: s.Kind.String(), State: StateUnknown}
		if s.Kind == KindPeer {
			src.h.Address = s.URL
		} else {
			src.h.Address = s.Addr.String()
			for _, q := range s.Queries {
				src.h.Queries = append(src.h.Queries, q.String())
			}
			a.byAddr[s.Addr] = i
		}
		src.next = now.Add(a.firstDelay(i))
		a.sources = append(a.sources, src)
	}
	return a, nil
}

// firstDelay staggers the first refreshes: source i a second apart, plus
// up to a second at random, so a restart asks soon but not all at once.
func (a *Aggregator) firstDelay(i int) time.Duration {
	return time.Duration(i)*time.Second + time.Duration(a.rng.Int64N(int64(time.Second)))
}

// Config returns the aggregator's settings with defaults filled.
func (a *Aggregator) Config() Config { return a.cfg }

// Sources returns the sources, names resolved.
func (a *Aggregator) Sources() []Source { return slices.Clone(a.cfg.Sources) }

// jittered returns the interval with its jitter applied.
func (a *Aggregator) jittered() time.Duration {
	iv := a.cfg.Interval
	if a.cfg.Jitter <= 0 {
		return iv
	}
	span := float64(iv) * a.cfg.Jitter
	return iv + time.Duration((a.rng.Float64()*2-1)*span)
}

// Poll does the work due at now: it starts the refreshes due, sends again
// the queries that went unanswered, moves on from the queries whose lists
// have ended, and finishes the refreshes done. It returns the queries to
// send and the peer lists to fetch.
func (a *Aggregator) Poll(now time.Time) (sends []Send, fetches []Fetch) {
	if a.lazy {
		a.lazy = false
		for i, s := range a.sources {
			s.next = now.Add(a.firstDelay(i))
		}
	}
	for i, s := range a.sources {
		if !s.active {
			if now.Before(s.next) {
				continue
			}
			a.begin(now, s)
			if s.Kind == KindPeer {
				fetches = append(fetches, Fetch{Source: i, URL: s.URL, Addr: s.Addr})
				continue
			}
			sends = append(sends, a.ask(now, i, s))
			continue
		}
		if s.Kind == KindPeer {
			continue // Offer ends it
		}
		for {
			end := a.queryEnded(now, s)
			if end == "" {
				if s.packets == 0 && !now.Before(s.sentAt.Add(a.cfg.Timeout)) && s.attempts < a.cfg.Attempts {
					sends = append(sends, a.send(now, i, s))
				}
				break
			}
			a.endQuery(now, s, end)
			if s.q+1 >= len(s.Queries) {
				a.finish(now, s, "")
				break
			}
			s.q++
			sends = append(sends, a.ask(now, i, s))
		}
	}
	return sends, fetches
}

// begin starts a refresh of s at now.
func (a *Aggregator) begin(now time.Time, s *source) {
	s.active, s.start, s.q, s.answered, s.firstAnswer = true, now, 0, 0, 0
	s.seen = map[netip.AddrPort]struct{}{}
	s.h.LastAttempt = now
}

// ask starts query s.q of s at now.
func (a *Aggregator) ask(now time.Time, i int, s *source) Send {
	s.qStart, s.attempts, s.packets, s.entries = now, 0, 0, 0
	s.lastPacket, s.endAt, s.cut = time.Time{}, time.Time{}, ""
	return a.send(now, i, s)
}

// send (re)sends query s.q.
func (a *Aggregator) send(now time.Time, i int, s *source) Send {
	q := s.Queries[s.q]
	b, _ := q.packet() // checked by Config.Check
	s.sentAt = now
	s.attempts++
	s.h.QueriesSent++
	return Send{To: s.Addr, Payload: b, Source: i, Family: q.Family}
}

// queryEnded returns how query s.q's list has ended by now, or "".
func (a *Aggregator) queryEnded(now time.Time, s *source) string {
	switch {
	case s.cut != "":
		return EndLimit
	case !now.Before(s.qStart.Add(a.cfg.MaxListTime)):
		s.cut = "list time"
		return EndLimit
	case !s.endAt.IsZero() && !now.Before(s.endAt.Add(EndGrace)):
		return EndMarker
	case s.packets > 0 && !now.Before(s.lastPacket.Add(a.cfg.Quiet)):
		return EndQuiet
	case s.packets == 0 && s.attempts >= a.cfg.Attempts && !now.Before(s.sentAt.Add(a.cfg.Timeout)):
		return EndNoReply
	}
	return ""
}

// endQuery records how query s.q ended.
func (a *Aggregator) endQuery(now time.Time, s *source, end string) {
	if s.packets > 0 {
		s.answered++
	}
	if end == EndLimit {
		s.h.Cut++
		s.h.LastCut = s.cut
	}
	if end == EndNoReply {
		s.h.Unanswered++
	}
}

// finish ends s's refresh at now and schedules the next; errText, if not
// empty, says why it failed (a peer's fetch).
func (a *Aggregator) finish(now time.Time, s *source, errText string) {
	ok := s.answered > 0 && errText == ""
	s.h.Refreshes++
	if ok {
		s.h.LastSuccess = now
		s.h.Reported = len(s.seen)
		s.h.AnswerTime = s.firstAnswer
		s.h.RefreshTime = now.Sub(s.start)
		s.h.State = StateUp
		s.h.LastError = ""
	} else {
		s.h.Failures++
		s.h.State = StateDown
		s.h.LastError = cmp.Or(errText, "no query answered")
	}
	s.up.add(now, ok)
	s.active, s.seen = false, nil
	s.next = s.start.Add(a.jittered())
	if !s.next.After(now) {
		s.next = now.Add(a.jittered())
	}
}

// Packet is one list packet from a master, as the master's handler parsed
// it: a q3.ServersResponse or a q4.Servers.
type Packet struct {
	Family  game.Family
	Ext     bool // getserversExtResponse
	Servers []netip.AddrPort
	Dropped int  // entries the codec dropped as naming no server
	End     bool // the list's end marker
	Err     error
}

// Expecting reports whether from is a master source with a query in
// flight: whether a list packet from it is the aggregator's.
func (a *Aggregator) Expecting(from netip.AddrPort) bool {
	i, ok := a.byAddr[from]
	return ok && a.sources[i].active
}

// Receive reads one list packet from from at now, and appends to dst the
// servers it names that are new to this refresh of the source, within
// the bounds. ok is false when no query of from is in flight (the packet
// is not the aggregator's).
func (a *Aggregator) Receive(now time.Time, from netip.AddrPort, p Packet, dst []Found) (_ []Found, ok bool) {
	i, ok := a.byAddr[from]
	if !ok || !a.sources[i].active {
		return dst, false
	}
	s := a.sources[i]
	q := s.Queries[s.q]
	s.h.Packets++
	if s.cut != "" {
		return dst, true // cut off: the rest of the list is not read
	}
	if s.packets == 0 && s.answered == 0 {
		s.firstAnswer = now.Sub(s.sentAt)
	}
	s.packets++
	s.lastPacket = now
	if p.Family != q.Family || (q.Family == game.FamilyQ3 && p.Ext != q.Q3.Ext) {
		s.h.Garbled++
		return dst, true
	}
	if p.Err != nil && len(p.Servers) == 0 {
		s.h.Garbled++
	}
	if s.packets > a.cfg.MaxPackets {
		s.cut = "packets"
		return dst, true
	}
	s.h.Unusable += uint64(p.Dropped)
	for _, ap := range p.Servers {
		if s.entries >= a.cfg.MaxEntries {
			s.cut = "entries"
			break
		}
		s.entries++
		dst = a.take(s, i, ap, q.Family, q.Game, dst)
	}
	if p.End {
		s.endAt = now
	}
	return dst, true
}

// take counts one entry ap of source s (index i) and appends it to dst
// when it is usable, allowed and new to this refresh, within MaxLearned.
func (a *Aggregator) take(s *source, i int, ap netip.AddrPort, f game.Family, gameName string, dst []Found) []Found {
	s.h.Entries++
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if !usable(ap) {
		s.h.Unusable++
		return dst
	}
	if !a.cfg.AllowLocal && netscope.Refused(s.Addr, ap) != "" {
		s.h.Refused++
		return dst
	}
	if _, dup := s.seen[ap]; dup {
		s.h.Duplicates++
		return dst
	}
	if len(s.seen) >= a.cfg.MaxLearned {
		s.h.OverLearned++
		return dst
	}
	s.seen[ap] = struct{}{}
	return append(dst, Found{Addr: ap, Family: f, Game: gameName, Source: i})
}

// usable reports whether a listed address names a server a datagram can
// go to: a port, and a unicast address outside 0.0.0.0/8 and 240.0.0.0/4
// (the broadcast among them); an IPv6 link-local address means nothing
// without its zone, which no list carries.
func usable(ap netip.AddrPort) bool {
	ad := ap.Addr()
	switch {
	case ap.Port() == 0 || !ad.IsValid() || ad.IsUnspecified() || ad.IsMulticast() || (ad.Is6() && ad.IsLinkLocalUnicast()):
		return false
	case ad.Is4():
		b := ad.As4()
		return b[0] != 0 && b[0] < 240
	}
	return true
}

// PeerServer is one server of a peer's verified list.
type PeerServer struct {
	Addr   netip.AddrPort
	Family game.Family
	Game   string // the game the peer lists it under
}

// Offer hands the aggregator the list the shell fetched for peer source
// i at now (err: why the fetch failed), and appends to dst the servers
// new to this refresh, within the bounds (MaxEntries and MaxLearned). An
// offer for a source that is not a peer with a fetch outstanding is
// ignored.
func (a *Aggregator) Offer(now time.Time, i int, list []PeerServer, took time.Duration, err error, dst []Found) []Found {
	if i < 0 || i >= len(a.sources) {
		return dst
	}
	s := a.sources[i]
	if s.Kind != KindPeer || !s.active {
		return dst
	}
	s.h.QueriesSent++
	if err != nil {
		s.h.Unanswered++
		a.finish(now, s, err.Error())
		return dst
	}
	s.h.Packets++
	s.answered, s.firstAnswer = 1, took
	for n, ps := range list {
		if n >= a.cfg.MaxEntries {
			s.h.Cut++
			s.h.LastCut = "entries"
			break
		}
		if ps.Family != game.FamilyQ3 && ps.Family != game.FamilyDoom3 {
			s.h.Entries++
			s.h.Unusable++
			continue
		}
		dst = a.take(s, i, ps.Addr, ps.Family, ps.Game, dst)
	}
	a.finish(now, s, "")
	return dst
}
