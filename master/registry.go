package master

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scout-discovery/scout/game"
)

// Registry defaults. dpmaster's are 4096 servers in all and 32 per address;
// its challenge lives 2 s and a verified server 15 min.
const (
	DefaultMaxServers           = 16384
	DefaultMaxServersPerAddress = 32
	// DefaultMaxPending bounds servers challenged but not yet verified.
	// A check holds its place until answered or for ChallengeLifetime,
	// so 4,096 takes about 800 unanswered checks a second; registering
	// R servers a second of which a fraction P go unanswered (heartbeats
	// lost on a busy host) needs about R*P*ChallengeLifetime.
	DefaultMaxPending = 4096
	// DefaultChallengeLifetime is how long a challenge is honoured after
	// it was sent, and how long a check waits for its reply.
	DefaultChallengeLifetime = 5 * time.Second
	// DefaultTimeout is how long a listed server stays listed without a
	// verified reply (dpmaster: 15 minutes).
	DefaultTimeout = 15 * time.Minute
	// DefaultMaxMissedProbes is how many checks of a listed server in a
	// row (re-probes, heartbeat checks, re-checks; not flatline checks)
	// may go unanswered before it is dropped. See Expire for the rule.
	DefaultMaxMissedProbes = 3
	// MaxInfoPairs bounds the info key/values kept per server (for the
	// HTTP list); further pairs are dropped.
	MaxInfoPairs = 64
	// MaxInfoBytes bounds the total bytes of keys and values kept per
	// server; further pairs are dropped.
	MaxInfoBytes = 2048
	// MaxGamenameLen and MaxGametypeLen are dpmaster's bounds (63, 31).
	// A longer gamename is refused; a longer gametype is kept cut to its
	// first MaxGametypeLen bytes, in the listing and in a query's
	// gametype filter alike, as dpmaster keeps it (see gametypeOf).
	MaxGamenameLen = 63
	MaxGametypeLen = 31
)

// Verification retries. A check (the probe that a heartbeat, a flatline,
// a re-probe or a restart starts) whose reply has not come is sent again,
// with a fresh challenge, DefaultVerifyRetryDelay after its first try,
// then 2×, 4×... that delay later (by default at 1 s and 3 s), at most
// VerifyRetries times, all within the check's ChallengeLifetime. So one
// lost packet (one way or the other) no longer leaves a new server
// unlisted until its next heartbeat, nor drops a listed one.
//
// Amplification stays bounded: a heartbeat, spoofed or not, costs its
// source address at most 1+VerifyRetries tries of one small getinfo each
// (a heartbeat during a check sends nothing), and per-source heartbeat
// limits apply before any of it. A reply is valid if it carries the
// challenge of any try of the check in flight and comes before the
// check's deadline; a challenge of an earlier check, or any reply after
// the deadline, is refused.
const (
	// DefaultVerifyRetries is how many times an unanswered check is sent
	// again.
	DefaultVerifyRetries = 2
	// MaxVerifyRetries bounds Config.VerifyRetries: a check is at most
	// 1+MaxVerifyRetries tries.
	MaxVerifyRetries = 3
	// DefaultVerifyRetryDelay is the wait from a check's first try to its
	// first retry; each further retry waits twice as long as the one
	// before.
	DefaultVerifyRetryDelay = time.Second
)

// Config configures a Registry. The zero value of each field means its
// default, except the booleans, which default to false.
type Config struct {
	MaxServers           int           // servers in all, listed or pending; default DefaultMaxServers
	MaxServersPerAddress int           // per IPv4 address or IPv6 /64; default DefaultMaxServersPerAddress; negative = unlimited
	MaxPending           int           // challenged, not yet verified; default DefaultMaxPending
	ChallengeLifetime    time.Duration // default DefaultChallengeLifetime; must not exceed the Challenger's period
	Timeout              time.Duration // silent-server expiry; default DefaultTimeout
	MaxMissedProbes      int           // default DefaultMaxMissedProbes; above MaxMissedCount: never
	// VerifyRetries is how many times an unanswered check is sent again,
	// at most MaxVerifyRetries; default DefaultVerifyRetries; negative:
	// none. The last retry must go out before ChallengeLifetime.
	VerifyRetries int
	// VerifyRetryDelay is the wait before the first retry, doubling for
	// each next; default DefaultVerifyRetryDelay.
	VerifyRetryDelay time.Duration
	AllowLoopback    bool // accept servers on loopback addresses (tests only)
	RefusePrivate    bool // refuse unmapped servers on private / link-local addresses
	Catalogue        *game.Catalogue
	Policy           game.Policy
	AddrMap          *AddrMap // dpmaster -m; nil maps nothing
	// InlineSnapshot is the largest listing whose answer snapshot a
	// query rebuilds itself when the listing changed; a larger one is
	// answered from the last snapshot until Refresh rebuilds it (see
	// Refresh). Default DefaultInlineSnapshot; negative: always inline.
	InlineSnapshot int
}

func (c *Config) setDefaults() {
	c.MaxServers = cmp.Or(c.MaxServers, DefaultMaxServers)
	c.MaxServersPerAddress = cmp.Or(c.MaxServersPerAddress, DefaultMaxServersPerAddress)
	c.MaxPending = cmp.Or(c.MaxPending, DefaultMaxPending)
	c.MaxMissedProbes = cmp.Or(c.MaxMissedProbes, DefaultMaxMissedProbes)
	c.InlineSnapshot = cmp.Or(c.InlineSnapshot, DefaultInlineSnapshot)
	c.VerifyRetries = cmp.Or(c.VerifyRetries, DefaultVerifyRetries)
	if c.VerifyRetries < 0 {
		c.VerifyRetries = 0
	}
	c.VerifyRetryDelay = cmp.Or(c.VerifyRetryDelay, DefaultVerifyRetryDelay)
	c.ChallengeLifetime = cmp.Or(c.ChallengeLifetime, DefaultChallengeLifetime)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	if c.Catalogue == nil {
		c.Catalogue = game.Default()
	}
}

// Pair is one info key and value, in the order the server sent them.
type Pair struct{ Key, Value string }

// Server is what the registry knows of one server: a value copy, safe to
// keep. Info is shared and must not be modified.
type Server struct {
	Addr       netip.AddrPort // source of its packets (Unmap()ed): its public address
	Listed     bool           // verified at least once and not dropped
	Game       string         // game name (catalogue name or gamename)
	Family     game.Family
	Protocol   int
	Gametype   string
	Clients    int
	MaxClients int
	Info       []Pair

	FirstSeen     time.Time
	LastVerified  time.Time // last verified reply; zero if never
	LastHeartbeat time.Time
	NextProbe     time.Time // when it is re-probed next; zero if never
	Missed        int       // checks unanswered in a row (see Expire)

	// RTT is the median of this master's last RTTSamples round trips to
	// the server (see rtt.go), 0 if none measured; RTTMeasured is when
	// the last was taken.
	RTT         time.Duration
	RTTMeasured time.Time
	// Landmarks are the other landmarks' RTTs to it (a fleet's other
	// instances, peers.go), nil if none; filled by Servers and Lookup.
	Landmarks []LandmarkRTT
}

// Empty reports a server with no client; Full one with as many clients as
// slots.
func (s *Server) Empty() bool { return s.Clients == 0 }
func (s *Server) Full() bool  { return s.Clients >= s.MaxClients }

// Heartbeat is a server's registration packet, as the handler parsed it.
type Heartbeat struct {
	Family game.Family // FamilyQ3 for "heartbeat TAG\n", FamilyDoom3 for 0xFFFF "heartbeat"
	Tag    string      // Q3 family only: "QuakeArena-1", "DarkPlaces", "ETFlatline-1", ...
}

// ProbeCause is why the master probes a server.
type ProbeCause uint8

const (
	CauseHeartbeat ProbeCause = iota // a heartbeat: new server, or check of a listed one
	CauseFlatline                    // a flatline: check at once, drop if unanswered
	CauseReprobe                     // the game's periodic re-probe
	CauseRestored                    // re-verification after a restart
)

// String returns the cause's metrics label.
func (c ProbeCause) String() string {
	switch c {
	case CauseHeartbeat:
		return "heartbeat"
	case CauseFlatline:
		return "flatline"
	case CauseReprobe:
		return "reprobe"
	case CauseRestored:
		return "restored"
	}
	return fmt.Sprintf("cause(%d)", uint8(c))
}

// Probe is what the master must send to a server: the requests, in the
// order getchallenge, getstatus, getinfo, each with the challenge (text
// form for the Quake III family, Int32 for Doom 3 / Quake 4).
type Probe struct {
	To        netip.AddrPort
	Family    game.Family
	Requests  game.Requests
	Challenge Challenge
	Cause     ProbeCause
	Try       int // 0 for a check's first try, k for its k-th retry
}

// ReplyKind is the kind of a server's reply.
type ReplyKind uint8

const (
	ReplyInfo   ReplyKind = iota // infoResponse (Q3) / infoResponse (Doom 3 family)
	ReplyStatus                  // statusResponse (Q3)
)

// Reply is a server's answer to a probe, as the handler parsed it.
type Reply struct {
	Kind ReplyKind
	// Info is the info string (Q3) or the NUL-separated key/values (Doom 3
	// family), in wire order. Keys are matched without regard to ASCII
	// case, as the engines do.
	Info []Pair
	// Players is the number of players the reply lists (statusResponse
	// lines, Doom 3 family player records), or -1 if it lists none. It
	// stands for "clients" where that key does not exist.
	Players int
	// Challenge32 and Protocol are the Doom 3 family's binary fields.
	Challenge32 int32
	Protocol    int
	// HasPlayerList says the reply lists players (a statusResponse, a
	// Doom 3 family infoResponse): PlayerList is kept as the server's
	// player list (see Registry.Players), even when empty.
	HasPlayerList bool
	PlayerList    []Player
}

func (r *Reply) get(key string) (string, bool) {
	for _, p := range r.Info {
		if strings.EqualFold(p.Key, key) {
			return p.Value, true
		}
	}
	return "", false
}

// Change is what a verified reply did to the listing.
type Change uint8

const (
	ChangeNone      Change = iota // rejected
	ChangeListed                  // newly listed
	ChangeUpdated                 // listed; fields clients filter on or the info changed
	ChangeRefreshed               // listed; only its verification time moved
)

// String returns the change's label.
func (c Change) String() string {
	switch c {
	case ChangeNone:
		return "none"
	case ChangeListed:
		return "listed"
	case ChangeUpdated:
		return "updated"
	case ChangeRefreshed:
		return "refreshed"
	}
	return fmt.Sprintf("change(%d)", uint8(c))
}

// Removal is a server the registry dropped, and why.
type Removal struct {
	Addr   netip.AddrPort
	Listed bool // it was listed (the store must delete it)
	Reason Reason
	// LastVerified is its last verification here (for a restored server
	// not verified since, its restoration): in a fleet, the removal only
	// applies to a record no newer.
	LastVerified time.Time
}

// entry is what the registry keeps of one server, with its bookkeeping.
// It holds the fields of Server in a compact form (Server.Info is built
// from info, instants are stamps, names are interned) because there is
// one per listed server: 144 bytes, where a Server with its []Pair and
// five time.Time was 320 plus the pairs (see BENCHMARKS.md, "Memory per
// listed server"). server returns the Server.
type entry struct {
	Addr     netip.AddrPort
	Game     string     // interned
	Gametype string     // interned
	info     string     // packInfo's encoding of the info pairs
	hbGame   *game.Game // game announced by heartbeat tag; nil for DarkPlaces
	chk      *check     // the check in flight; nil if none
	rtt      rttRing    // this master's last round trips to it (rtt.go)

	// LastVerified is the last verified reply, or the restart for a
	// restored server not verified since (restored). A listed server is
	// silent from LastVerified+Timeout.
	FirstSeen, LastVerified, LastHeartbeat, NextProbe stamp

	Protocol            int32 // Q3: ParseInt(.., 32); Doom 3: a catalogue protocol
	Clients, MaxClients int32
	Missed              uint8 // checks unanswered in a row, at most MaxMissedCount
	Family              game.Family
	Listed              bool
	restored            bool // listed from the store, not verified by this process
}

// MaxMissedCount is where an entry's count of missed checks stops (it is
// one byte): a Config.MaxMissedProbes above it never drops a server for
// missed checks.
const MaxMissedCount = 255

// server returns e as a Server, with its info pairs.
func (e *entry) server() Server {
	return Server{
		Addr: e.Addr, Listed: e.Listed, Game: e.Game, Family: e.Family, Protocol: int(e.Protocol),
		Gametype: e.Gametype, Clients: int(e.Clients), MaxClients: int(e.MaxClients),
		Info:      unpackInfo(e.info),
		FirstSeen: e.FirstSeen.Time(), LastVerified: e.lastVerified(),
		LastHeartbeat: e.LastHeartbeat.Time(), NextProbe: e.NextProbe.Time(),
		Missed: int(e.Missed),
		RTT:    e.rtt.median(), RTTMeasured: e.rtt.at.Time(),
	}
}

// lastVerified is Server.LastVerified: zero for a restored server.
func (e *entry) lastVerified() time.Time {
	if e.restored {
		return time.Time{}
	}
	return e.LastVerified.Time()
}

// expiry is when a listed e is silent for timeout.
func (e *entry) expiry(timeout time.Duration) stamp { return e.LastVerified + stamp(timeout) }

// Empty and Full are Server's.
func (e *entry) Empty() bool { return e.Clients == 0 }
func (e *entry) Full() bool  { return e.Clients >= e.MaxClients }

// stamp is an instant in Unix nanoseconds, 0 for none: 8 bytes where a
// time.Time is 24.
type stamp int64

func stampOf(t time.Time) stamp {
	if t.IsZero() {
		return 0
	}
	return stamp(t.UnixNano())
}

// Time returns s as a time.Time, the zero Time for 0.
func (s stamp) Time() time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s))
}

// check is one verification in flight: its requests, sent up to
// 1+VerifyRetries times, each try with the challenge of its time. It is
// allocated per check and let go when the check ends, so an idle entry
// pays one pointer for it.
type check struct {
	sentAt time.Time // the first try; the check ends at sentAt+ChallengeLifetime
	reqs   game.Requests
	cause  ProbeCause
	tries  int                             // sent so far, 1..1+VerifyRetries
	tryAt  [1 + MaxVerifyRetries]stamp     // when each try was handed out (for the RTT)
	hbs    int                             // heartbeats seen while it runs, the one that started it included
	chals  [1 + MaxVerifyRetries]Challenge // the challenge of each try
}

// issued reports whether the reply's challenge is one of c's tries'.
func (c *check) issued(family game.Family, rep *Reply) bool {
	text, _ := rep.get("challenge")
	for _, ch := range c.chals[:c.tries] {
		if family == game.FamilyDoom3 && ch.Int32 == rep.Challenge32 ||
			family != game.FamilyDoom3 && ch.Text == text {
			return true
		}
	}
	return false
}

// Registry is the master's server list and the decisions about it. It
// does no I/O and never reads the clock: every method takes now.
//
// mu guards the fields below it. Select does not take mu unless the
// snapshot it reads is stale.
type Registry struct {
	cfg  Config
	chal *Challenger

	rotation    atomic.Uint64            // fair-rotation counter, one step per Select
	afterRetry  atomic.Uint64            // checks verified after a retry was sent
	encodings   atomic.Uint64            // replies encoded on demand (answer.go)
	leftToPeers atomic.Uint64            // due re-probes left to other instances (share.go)
	snap        atomic.Pointer[snapshot] // immutable; rebuilt after changes
	dirty       atomic.Bool              // snap is stale
	version     atomic.Uint64            // listing version (see Version)
	build       sync.Mutex               // one snapshot build at a time (select.go)

	mu      sync.Mutex
	servers map[serverKey]*entry
	perKey  map[addrKey]int32
	pending int                           // entries not listed
	names   map[string]string             // interned game and gametype names, at most MaxInternedNames
	players map[netip.AddrPort]playerList // listed servers' last player lists (players.go)
	tally   map[tallyKey]int              // listed servers per game, protocol and gametype (tally.go)
	share   Share                         // nil: every server is this instance's (share.go)
	// The other landmarks' RTTs (peers.go): their names, at most
	// MaxLandmarks, and each server's samples; nil until the first.
	landmarks []string
	peers     map[serverKey][]peerRTT
}

// NewRegistry returns an empty registry.
func NewRegistry(cfg Config, chal *Challenger) (*Registry, error) {
	cfg.setDefaults()
	if cfg.ChallengeLifetime > chal.Period() {
		return nil, fmt.Errorf("master: challenge lifetime %v exceeds the secret rotation period %v", cfg.ChallengeLifetime, chal.Period())
	}
	if cfg.MaxServers < 0 || cfg.MaxPending < 0 || cfg.ChallengeLifetime < 0 || cfg.Timeout < 0 || cfg.MaxMissedProbes < 0 || cfg.VerifyRetryDelay < 0 {
		return nil, fmt.Errorf("master: negative registry limit in %+v", cfg)
	}
	if cfg.VerifyRetries > MaxVerifyRetries {
		return nil, fmt.Errorf("master: %d verification retries; at most %d", cfg.VerifyRetries, MaxVerifyRetries)
	}
	if last := retryOffset(cfg.VerifyRetryDelay, cfg.VerifyRetries); cfg.VerifyRetries > 0 && last >= cfg.ChallengeLifetime {
		return nil, fmt.Errorf("master: the last of %d verification retries would go out %v after the first try, not within the challenge lifetime %v", cfg.VerifyRetries, last, cfg.ChallengeLifetime)
	}
	r := &Registry{
		cfg:     cfg,
		chal:    chal,
		servers: make(map[serverKey]*entry),
		perKey:  make(map[addrKey]int32),
		names:   make(map[string]string),
		players: make(map[netip.AddrPort]playerList),
		tally:   make(map[tallyKey]int),
	}
	r.snap.Store(&snapshot{minExpire: math.MaxInt64})
	return r, nil
}

// Config returns the registry's configuration with defaults filled in.
func (r *Registry) Config() Config { return r.cfg }

// VerifiedAfterRetry returns the checks verified after at least one retry
// had been sent (the reply may answer any of the check's tries).
func (r *Registry) VerifiedAfterRetry() uint64 { return r.afterRetry.Load() }

// retryOffset is when the k-th retry is due, from the check's first try:
// delay × (2^k − 1), so 1 s, 3 s, 7 s with a 1 s delay.
func retryOffset(delay time.Duration, k int) time.Duration {
	return delay * time.Duration(1<<k-1)
}

// Heartbeat handles a heartbeat from src. It returns the probe to send, or
// a reason to send nothing. It never extends a listing: only a verified
// reply does. A flatline tag is handled as Flatline.
func (r *Registry) Heartbeat(now time.Time, src netip.AddrPort, hb Heartbeat) (Probe, Reason) {
	var g *game.Game
	if hb.Family == game.FamilyQ3 && hb.Tag != game.HeartbeatDarkPlaces {
		var flat, ok bool
		g, flat, ok = r.cfg.Catalogue.ByHeartbeat(hb.Tag)
		if !ok {
			return Probe{}, ReasonUnknownHeartbeat
		}
		if flat {
			return r.Flatline(now, src)
		}
		if !r.cfg.Policy.Accepts(g.Name) {
			return Probe{}, ReasonGamePolicy
		}
	} else if hb.Family != game.FamilyQ3 && hb.Family != game.FamilyDoom3 {
		return Probe{}, ReasonUnknownHeartbeat
	}
	src, why := classify(src, r.cfg.AllowLoopback, r.cfg.RefusePrivate, r.cfg.AddrMap)
	if why != OK {
		return Probe{}, why
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.servers[keyOf(src)]
	if !ok {
		k := addrKeyOf(src.Addr())
		switch {
		case len(r.servers) >= r.cfg.MaxServers:
			return Probe{}, ReasonServerListFull
		case r.pending >= r.cfg.MaxPending:
			return Probe{}, ReasonTooManyPending
		case r.cfg.MaxServersPerAddress > 0 && int(r.perKey[k]) >= r.cfg.MaxServersPerAddress:
			return Probe{}, ReasonAddressFull
		}
		e = &entry{Addr: src, Family: hb.Family, FirstSeen: stampOf(now)}
		r.servers[keyOf(src)] = e
		r.perKey[k]++
		r.pending++
	}
	e.LastHeartbeat = stampOf(now)
	if c := e.chk; c != nil {
		if c.hbs++; c.hbs >= 2 && e.Listed {
			// Two heartbeats within one check: ioquake3's shutdown sends
			// two back to back (SV_MasterShutdown). The check in flight
			// now decides at once, as for a flatline.
			c.cause = CauseFlatline
		}
		return Probe{}, ReasonProbeOutstanding
	}
	if e.Listed && (e.Family != hb.Family || (e.hbGame != g)) {
		// A listed server that changes game must prove it again; its
		// listing stands until then.
		e.hbGame = g
	}
	if !e.Listed {
		e.hbGame, e.Family = g, hb.Family
	}
	p := r.startProbeLocked(now, e, game.GetInfo, CauseHeartbeat)
	e.chk.hbs = 1
	return p, OK
}

// Flatline handles a shutdown heartbeat ("WolfFlatline-1", "ETFlatline-1")
// from src. A flatline is unauthenticated, so it never delists anything by
// itself: a listed server is checked at once and dropped only if that check
// goes unanswered within ChallengeLifetime (see Expire).
func (r *Registry) Flatline(now time.Time, src netip.AddrPort) (Probe, Reason) {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.servers[keyOf(src)]
	if !ok || !e.Listed {
		return Probe{}, ReasonNotListed
	}
	e.LastHeartbeat = stampOf(now)
	if e.chk != nil {
		e.chk.cause = CauseFlatline // the check in flight now decides
		return Probe{}, ReasonProbeOutstanding
	}
	return r.startProbeLocked(now, e, game.GetInfo, CauseFlatline), OK
}

func (r *Registry) startProbeLocked(now time.Time, e *entry, reqs game.Requests, cause ProbeCause) Probe {
	e.chk = &check{sentAt: now, reqs: reqs, cause: cause}
	return r.tryLocked(now, e)
}

// tryLocked records and returns the next try of e's check, with the
// challenge of now.
func (r *Registry) tryLocked(now time.Time, e *entry) Probe {
	c := e.chk
	ch := r.chal.Issue(now, e.Addr)
	c.chals[c.tries] = ch
	c.tryAt[c.tries] = stampOf(now)
	c.tries++
	return Probe{To: e.Addr, Family: e.Family, Requests: c.reqs, Challenge: ch, Cause: c.cause, Try: c.tries - 1}
}

// Verify handles a reply from src: the server is listed or refreshed, or
// the reply is rejected with a reason. The reply must come from the address
// the challenge was sent to, carry the challenge of one of the check's
// tries within ChallengeLifetime of its first, and hold valid required
// keys.
func (r *Registry) Verify(now time.Time, src netip.AddrPort, rep Reply) (Server, Change, Reason) {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.servers[keyOf(src)]
	if !ok {
		return Server{}, ChangeNone, ReasonUnknownServer
	}
	c := e.chk
	if c == nil {
		return Server{}, ChangeNone, ReasonUnsolicited
	}
	want := game.GetInfo
	if rep.Kind == ReplyStatus {
		want = game.GetStatus
	}
	if c.reqs&want == 0 {
		return Server{}, ChangeNone, ReasonUnsolicited
	}
	if !now.Before(c.sentAt.Add(r.cfg.ChallengeLifetime)) {
		return Server{}, ChangeNone, ReasonChallengeExpired
	}
	var why Reason
	if e.Family == game.FamilyDoom3 {
		why = r.chal.Check32(now, src, rep.Challenge32)
	} else {
		c, _ := rep.get("challenge")
		why = r.chal.Check(now, src, c)
	}
	if why != OK {
		return Server{}, ChangeNone, why
	}
	if !c.issued(e.Family, &rep) {
		// Issued to this address, but for an earlier check: stale.
		return Server{}, ChangeNone, ReasonChallengeExpired
	}
	s, why := r.parseReplyLocked(e, &rep)
	if why != OK {
		return Server{}, ChangeNone, why
	}

	info := packInfo(rep.Info)
	change := ChangeRefreshed
	reverified := e.restored // restored, verified again: its last-verified time shows
	// What the snapshot (and so every cached answer) holds: a change in
	// the info alone, if only its echoed challenge, leaves them be.
	listing := !e.Listed || s.Game != e.Game || s.Protocol != int(e.Protocol) || s.Gametype != e.Gametype ||
		s.Empty() != e.Empty() || s.Full() != e.Full()
	wasListed, gameChanged := e.Listed, s.Game != e.Game
	switch {
	case !e.Listed:
		change = ChangeListed
		r.pending--
	case s.Game != e.Game || s.Protocol != int(e.Protocol) || s.Gametype != e.Gametype ||
		s.Clients != int(e.Clients) || s.MaxClients != int(e.MaxClients) || info != e.info:
		change = ChangeUpdated
	}
	r.tallyLocked(e, -1)
	e.Listed = true
	e.Game, e.Protocol, e.Gametype = r.internLocked(s.Game), int32(s.Protocol), r.internLocked(s.Gametype)
	r.tallyLocked(e, 1)
	e.Clients, e.MaxClients = clamp32(s.Clients), clamp32(s.MaxClients)
	if info != e.info {
		e.info = info
	}
	e.LastVerified, e.restored = stampOf(now), false
	e.Missed = 0
	if d, ok := c.rttSample(e.Family, &rep, now); ok {
		e.rtt.add(now, d)
	}
	if c.tries > 1 {
		r.afterRetry.Add(1)
	}
	e.chk = nil
	// The periodic re-probe (getstatus: the players) keeps its own
	// schedule: a heartbeat's check of a listed server leaves it be, so
	// a server that heartbeats as often as it is re-probed (Quake III: both
	// every 5 minutes) is still re-probed, and its player list kept fresh.
	// A new listing, a re-probe, a restored server or a game change set it.
	if keep := c.cause == CauseHeartbeat || c.cause == CauseFlatline; !keep || !wasListed || e.NextProbe == 0 || gameChanged {
		e.NextProbe = 0
		if g, ok := r.cfg.Catalogue.ByName(e.Game); ok && g.Reprobe.Interval > 0 {
			e.NextProbe = r.reprobeAtLocked(e, now, g.Reprobe.Interval)
		} else if e.hbGame == nil {
			e.NextProbe = r.reprobeAtLocked(e, now, game.DefaultReprobeInterval)
		}
	}
	if listing {
		r.dirty.Store(true)
	}
	if change != ChangeRefreshed || reverified {
		r.version.Add(1)
	}
	r.setPlayersLocked(now, src, &rep)
	return e.server(), change, OK
}

// parseReplyLocked applies dpmaster's validation of an infoResponse (in its
// order) to rep, for entry e.
func (r *Registry) parseReplyLocked(e *entry, rep *Reply) (Server, Reason) {
	var s Server
	if e.Family == game.FamilyDoom3 {
		s.Protocol = rep.Protocol
		g, ok := r.cfg.Catalogue.ByProtocol(game.FamilyDoom3, rep.Protocol)
		if !ok {
			return s, ReasonBadProtocol
		}
		s.Game = g.Name
		mc, _ := rep.get("si_maxPlayers")
		s.MaxClients, _ = strconv.Atoi(mc)
		if s.MaxClients <= 0 {
			return s, ReasonNoMaxClients
		}
		if rep.Players < 0 {
			return s, ReasonMissingClients
		}
		s.Clients = rep.Players
		s.Gametype, _ = rep.get("si_gameType")
	} else {
		// A statusResponse carries the serverinfo, where ioquake3 names
		// the protocol com_protocol and the gametype g_gametype, and where
		// "gamename" is the mod (baseq3, baseoa), not com_gamename
		// (vector openarena_statusResponse_3bots.hex).
		status := rep.Kind == ReplyStatus
		p, ok := rep.get("protocol")
		if !ok && status {
			p, ok = rep.get("com_protocol")
		}
		if !ok {
			return s, ReasonMissingProtocol
		}
		// Any 32-bit number, negative ones too: dpmaster reads it with
		// strtol, and test and custom builds use "protocol\-1".
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return s, ReasonBadProtocol
		}
		s.Protocol = int(n)
		gt, ok := rep.get("gametype")
		if !ok && status {
			gt, ok = rep.get("g_gametype")
		}
		if !ok {
			gt = "0" // dpmaster's default
		}
		s.Gametype = gt
		mc, _ := rep.get("sv_maxclients")
		s.MaxClients, _ = strconv.Atoi(mc)
		if s.MaxClients <= 0 {
			return s, ReasonNoMaxClients
		}
		if rep.Kind == ReplyStatus {
			if rep.Players < 0 {
				return s, ReasonMissingClients
			}
			s.Clients = rep.Players
		} else {
			c, ok := rep.get("clients")
			n, err := strconv.Atoi(c)
			if !ok || err != nil || n < 0 {
				return s, ReasonMissingClients
			}
			s.Clients = n
		}
		name, ok := rep.get("gamename")
		if status {
			if cg, has := rep.get("com_gamename"); has {
				name, ok = cg, true
			} else if e.hbGame != nil {
				ok = false // the mod's name: the heartbeat named the game
			}
		}
		switch {
		case !ok && e.hbGame == nil:
			return s, ReasonMissingGamename
		case !ok:
			name = e.hbGame.Name
		case !validToken(name, MaxGamenameLen):
			return s, ReasonBadGamename
		case e.hbGame != nil && !e.hbGame.HasGamename(name):
			return s, ReasonGamenameMismatch
		case e.hbGame != nil:
			name = e.hbGame.Name
		}
		s.Game = name
	}
	if s.Gametype != "" {
		gt, ok := gametypeOf(e.Family, s.Gametype)
		if !ok {
			return s, ReasonBadGametype
		}
		s.Gametype = gt
	}
	if !r.cfg.Policy.Accepts(s.Game) {
		return s, ReasonGamePolicy
	}
	return s, OK
}

// validToken: non-empty, at most max bytes, no whitespace or control byte.
func validToken(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// gametypeOf returns the gametype a server is listed with, or false if
// its gametype is refused (ReasonBadGametype).
//
// Quake III family: dpmaster's rule (techinfo.txt: since 2.1 "any string,
// as long as it does not contain whitespace characters"), as the
// "gametype=X" filter of a getservers is one word. Doom 3 family: the
// gametype is si_gameType, which Quake 4 sets to display names with
// spaces ("Team DM", "Arena CTF"); its clients filter on it themselves,
// never through the master, so spaces are kept. Either way a control
// byte (below ' ', or DEL) is refused: no game sends one, and it would
// reach the logs and the HTTP list. A gametype longer than MaxGametypeLen
// is listed cut to its first MaxGametypeLen bytes (dpmaster's 31), and
// a query's filter is cut the same way, so the two still match.
func gametypeOf(f game.Family, gt string) (string, bool) {
	for i := 0; i < len(gt); i++ {
		c := gt[i]
		if c < ' ' || c == 0x7f || (c == ' ' && f != game.FamilyDoom3) {
			return "", false
		}
	}
	return cutGametype(gt), true
}

// cutGametype returns gt's first MaxGametypeLen bytes: the gametype a
// server is listed with, and the filter a query's gametype is compared
// as (resolve).
func cutGametype(gt string) string {
	if len(gt) > MaxGametypeLen {
		return gt[:MaxGametypeLen]
	}
	return gt
}

// packInfo encodes the info pairs the registry keeps of a reply as one
// string, "key\x00value\x00" per pair in wire order: one allocation of
// the bytes themselves, no slice, and nothing aliasing the packet. The
// echoed challenge is left out (it is the master's own, different every
// check, and never served), as are pairs with a NUL byte (neither family
// can send one); at most MaxInfoPairs pairs and MaxInfoBytes bytes of keys
// and values are kept.
func packInfo(in []Pair) string {
	n, size := 0, 0
	for _, p := range in {
		if skipPair(p) {
			continue
		}
		if n == MaxInfoPairs || size+len(p.Key)+len(p.Value) > MaxInfoBytes {
			break
		}
		n++
		size += len(p.Key) + len(p.Value)
	}
	var sb strings.Builder
	sb.Grow(size + 2*n)
	for _, p := range in {
		if n == 0 {
			break
		}
		if skipPair(p) {
			continue
		}
		sb.WriteString(p.Key)
		sb.WriteByte(0)
		sb.WriteString(p.Value)
		sb.WriteByte(0)
		n--
	}
	return sb.String()
}

func skipPair(p Pair) bool {
	return strings.EqualFold(p.Key, "challenge") || strings.IndexByte(p.Key, 0) >= 0 || strings.IndexByte(p.Value, 0) >= 0
}

// unpackInfo returns the pairs of packInfo's encoding s, slicing s.
func unpackInfo(s string) []Pair {
	if s == "" {
		return nil
	}
	out := make([]Pair, 0, strings.Count(s, "\x00")/2)
	for s != "" {
		k, rest, _ := strings.Cut(s, "\x00")
		v, rest, _ := strings.Cut(rest, "\x00")
		out = append(out, Pair{k, v})
		s = rest
	}
	return out
}

// MaxInternedNames bounds the game and gametype names the registry keeps
// one copy of; beyond it each entry keeps its own copy.
const MaxInternedNames = 4096

// internLocked returns the registry's copy of name, so that thousands of
// servers of one game share one string and none aliases a packet. r.mu
// must be held.
func (r *Registry) internLocked(name string) string {
	if c, ok := r.names[name]; ok {
		return c
	}
	c := strings.Clone(name)
	if len(r.names) < MaxInternedNames {
		r.names[c] = c
	}
	return c
}

func clamp32(n int) int32 {
	return int32(max(math.MinInt32, min(n, math.MaxInt32)))
}

// serverKey is a server's address as the servers map's key: 18 bytes,
// where a netip.AddrPort is 32 with its zone handle, so a map slot is 32
// bytes instead of 40. Addresses are unmapped, so the 16 bytes tell IPv4
// from IPv6; a zone is not part of the key (two servers at one link-local
// address on two interfaces would be one).
type serverKey struct {
	ip   [16]byte
	port uint16
}

func keyOf(a netip.AddrPort) serverKey { return serverKey{a.Addr().As16(), a.Port()} }

// addrKey is the per-address accounting key of sourceKey's prefix, in 16
// bytes: the IPv4 address (v4-mapped) or the IPv6 /64 (low half zero).
type addrKey [16]byte

func addrKeyOf(a netip.Addr) addrKey { return sourceKey(a).Addr().As16() }

// DueProbes appends to dst, and returns, the probes due at now: the
// retries of unanswered checks whose time has come (every one due: at most
// one per check in flight, at most VerifyRetries per check), then up to
// max new checks: listed servers whose re-probe time has come (with their
// game's requests), and restored servers awaiting re-verification. Each
// new check is marked in flight; its answer goes to Verify and its silence
// is judged by Expire. max <= 0 means no bound. The scan is linear in the
// number of servers.
func (r *Registry) DueProbes(now time.Time, dst []Probe, max int) []Probe {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.servers {
		if c := e.chk; c != nil {
			if c.tries <= r.cfg.VerifyRetries && !now.Before(c.sentAt.Add(retryOffset(r.cfg.VerifyRetryDelay, c.tries))) &&
				now.Before(c.sentAt.Add(r.cfg.ChallengeLifetime)) {
				dst = append(dst, r.tryLocked(now, e))
			}
			continue
		}
		if (max > 0 && n >= max) || !e.Listed || e.NextProbe == 0 || stampOf(now) < e.NextProbe {
			continue
		}
		reqs, interval := r.reprobeOf(e)
		if !r.mineLocked(e) {
			// Another instance's share: its verification will set the
			// next re-probe; look again soon in case that instance died.
			e.NextProbe = stampOf(now.Add(shareRecheck(interval)))
			r.leftToPeers.Add(1)
			continue
		}
		cause := CauseReprobe
		if e.restored {
			cause = CauseRestored
			reqs |= game.GetInfo // an infoResponse restores everything a client filters on
		}
		e.NextProbe = stampOf(now.Add(interval))
		dst = append(dst, r.startProbeLocked(now, e, reqs, cause))
		n++
	}
	return dst
}

// reprobeOf returns the requests and the interval of e's periodic
// re-probe: its game's, or getinfo every game.DefaultReprobeInterval.
func (r *Registry) reprobeOf(e *entry) (game.Requests, time.Duration) {
	if g, ok := r.cfg.Catalogue.ByName(e.Game); ok && g.Reprobe.Requests != 0 && g.Reprobe.Interval > 0 {
		return g.Reprobe.Requests, g.Reprobe.Interval
	}
	return game.GetInfo, game.DefaultReprobeInterval
}

// recheckDelay is the wait from an unanswered check's first try to the
// next check of a listed server that is kept: its re-probe interval
// divided by MaxMissedProbes, so that the MaxMissedProbes checks that
// drop a live server span its whole re-probe period (see Expire).
func (r *Registry) recheckDelay(e *entry) time.Duration {
	_, interval := r.reprobeOf(e)
	return interval / time.Duration(max(r.cfg.MaxMissedProbes, 1))
}

// Expire removes, at now, the servers that must go, appending them to dst:
// new servers that never answered their challenge, listed servers silent
// for Timeout, listed servers whose flatline check went unanswered, and
// listed servers whose last MaxMissedProbes checks all went unanswered. A
// check is unanswered at its first try + ChallengeLifetime exactly
// (retries included); a server is silent at LastVerified+Timeout exactly.
//
// # Unanswered checks of a listed server
//
// A flatline check (ET's and RtCW's flatline tag, or a second heartbeat
// while a heartbeat's check runs: ioquake3 sends two on shutdown) that
// goes unanswered drops the server at once, ChallengeLifetime after the
// flatline: a server that says it is going and then does not answer is
// gone. Any other check (a re-probe, a heartbeat's check, a restored
// server's) that goes unanswered counts a miss and schedules the next
// check recheckDelay (re-probe interval / MaxMissedProbes) after its
// first try; the server is dropped when MaxMissedProbes checks in a row
// went unanswered, so its last chances are spread over its whole re-probe
// period instead of the few seconds of one check's retries. A reply to
// any check clears the misses.
//
// The arithmetic, with 5% loss each way, independent, and a one-packet
// request (Q3A's getstatus re-probe, the getinfo of a heartbeat check):
// a try fails with q = 1 - 0.95² = 0.0975, a check of 1+VerifyRetries = 3
// tries with p = q³ = 9.3e-4. Before this rule one unanswered heartbeat
// check dropped a listed server: with a heartbeat every 5-minute period,
// 9.3e-4 per server per period, 4.6 live servers of 5,000 delisted per
// period, each gone until its next heartbeat (issue 9 measured 23 in 9
// minutes in an emulated world; TestReprobe_FivePercentLossKeepsLiveServers
// simulates 1,000 servers heartbeating every 5 minutes for an hour: 19
// delisted by the old rule with its seed, 9.7 a seed over seeds 1-10,
// where the arithmetic predicts 11; none by this one).
// Now MaxMissedProbes = 3 checks, recheckDelay = 100 s apart for Q3A,
// must all go unanswered: p³ = 8.0e-10 per server per period, one live
// server of 5,000 delisted every 2.5e5 periods (2.4 years). A loss burst
// shorter than recheckDelay costs one miss, not the listing. A server
// that dies without a flatline goes 2 × recheckDelay + ChallengeLifetime
// after its first unanswered check (205 s for Q3A; it used to take
// MaxMissedProbes re-probe intervals, or its heartbeat check's 5 s).
func (r *Registry) Expire(now time.Time, dst []Removal) []Removal {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.servers {
		a := e.Addr
		why := OK
		if c := e.chk; c != nil && !now.Before(c.sentAt.Add(r.cfg.ChallengeLifetime)) {
			e.chk = nil
			switch {
			case !e.Listed:
				why = ReasonChallengeTimedOut
			case c.cause == CauseFlatline:
				why = ReasonCheckUnanswered
			default:
				e.Missed = uint8(min(int(e.Missed)+1, MaxMissedCount))
				if int(e.Missed) >= r.cfg.MaxMissedProbes {
					why = ReasonProbesUnanswered
				} else {
					e.NextProbe = stampOf(c.sentAt.Add(r.recheckDelay(e)))
				}
			}
		}
		if why == OK && e.Listed && stampOf(now) >= e.expiry(r.cfg.Timeout) &&
			(stampOf(now) >= e.expiry(2*r.cfg.Timeout) || r.mineLocked(e)) {
			// In a fleet the owner of a server's share decides its
			// silence, once for all (share.go); the others wait one more
			// Timeout for its removal before deciding themselves.
			why = ReasonSilent
		}
		if why == OK {
			continue
		}
		r.removeLocked(a, e)
		dst = append(dst, Removal{Addr: a, Listed: e.Listed, Reason: why, LastVerified: e.LastVerified.Time()})
	}
	return dst
}

func (r *Registry) removeLocked(a netip.AddrPort, e *entry) {
	delete(r.servers, keyOf(a))
	r.tallyLocked(e, -1)
	k := addrKeyOf(a.Addr())
	if r.perKey[k]--; r.perKey[k] <= 0 {
		delete(r.perKey, k)
	}
	delete(r.players, a)
	delete(r.peers, keyOf(a))
	if e.Listed {
		r.dirty.Store(true)
		r.version.Add(1)
	} else {
		r.pending--
	}
}

// Restore lists servers read back from the store after a restart, at
// once, and schedules each for re-verification at now (DueProbes). Their
// silence is timed from now. Servers beyond the limits, or refused by the
// current configuration, are skipped with their reason.
func (r *Registry) Restore(now time.Time, servers []Server) (restored int, skipped []Removal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.servers) == 0 {
		// A start from the state: the map sized once, not grown in
		// steps (a million servers at a restart, issue 11).
		r.servers = make(map[serverKey]*entry, min(len(servers), r.cfg.MaxServers))
	}
	for _, s := range servers {
		a, why := classify(s.Addr, r.cfg.AllowLoopback, r.cfg.RefusePrivate, r.cfg.AddrMap)
		k := addrKeyOf(a.Addr())
		if _, dup := r.servers[keyOf(a)]; dup {
			continue
		}
		switch {
		case why != OK:
		case len(r.servers) >= r.cfg.MaxServers:
			why = ReasonServerListFull
		case r.cfg.MaxServersPerAddress > 0 && int(r.perKey[k]) >= r.cfg.MaxServersPerAddress:
			why = ReasonAddressFull
		case !r.cfg.Policy.Accepts(s.Game):
			why = ReasonGamePolicy
		case s.Protocol != int(int32(s.Protocol)):
			why = ReasonBadProtocol // no reply could have listed it
		}
		if why != OK {
			skipped = append(skipped, Removal{Addr: a, Listed: true, Reason: why})
			continue
		}
		e := &entry{
			Addr: a, Listed: true, Game: r.internLocked(s.Game), Family: s.Family, Protocol: int32(s.Protocol),
			Gametype: r.internLocked(s.Gametype), Clients: clamp32(s.Clients), MaxClients: clamp32(s.MaxClients),
			info:      packInfo(s.Info),
			FirstSeen: stampOf(s.FirstSeen), LastHeartbeat: stampOf(s.LastHeartbeat),
			// Its silence is timed from now; Server.LastVerified stays
			// zero: not verified by this process.
			LastVerified: stampOf(now), restored: true,
			NextProbe: stampOf(now),
		}
		if g, ok := r.cfg.Catalogue.ByName(s.Game); ok && g.Anonymous && len(g.Heartbeats) > 0 {
			e.hbGame = g
		}
		r.servers[keyOf(a)] = e
		r.perKey[k]++
		r.tallyLocked(e, 1)
		restored++
	}
	r.dirty.Store(true)
	r.version.Add(1)
	return restored, skipped
}

// Lookup returns the server at a, listed or pending.
func (r *Registry) Lookup(a netip.AddrPort) (Server, bool) {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.servers[keyOf(a)]
	if !ok {
		return Server{}, false
	}
	srv := e.server()
	srv.Landmarks = r.peerRTTsLocked(a)
	return srv, true
}

// Servers appends every listed server to dst (for the HTTP list and for
// persistence), in no particular order.
func (r *Registry) Servers(dst []Server) []Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.servers {
		if e.Listed {
			s := e.server()
			s.Landmarks = r.peerRTTsLocked(e.Addr)
			dst = append(dst, s)
		}
	}
	return dst
}

// Counts returns the number of listed and pending servers.
func (r *Registry) Counts() (listed, pending int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.servers) - r.pending, r.pending
}
