package master

import (
	"cmp"
	"fmt"
	"net/netip"
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
	AllowLoopback    bool // list servers at loopback addresses (a master and its servers on one host); default: refused
	RefusePrivate    bool // refuse unmapped servers on private / link-local addresses
	Catalogue        *game.Catalogue
	Policy           game.Policy
	AddrMap          *AddrMap // dpmaster -m; nil maps nothing
	// OnePerCloneGroup answers list queries with one address of each
	// group of clones (clones.go), its primary, where dpmaster's answers
	// (and the default) list every address; the JSON API groups them
	// either way.
	OnePerCloneGroup bool
	// CloneInterval is how often the clones are grouped (Handler.Tick);
	// default DefaultCloneInterval; negative: never.
	CloneInterval time.Duration
	// SuspectAfter is how long a player must stay in a server's roster,
	// in every player list received, to be counted a suspected bot
	// (bots.go); default DefaultSuspectAfter; negative: never.
	SuspectAfter time.Duration
	// Blocked is the block list: servers in these prefixes are refused
	// (heartbeats, upstreams' lists, peers' registers, the state file),
	// each for its published reason; at most MaxBlocks. Empty: none.
	// Reloadable: Registry.SetBlockList replaces it and removes what it
	// refuses.
	Blocked []Block
	// LandmarkPingInterval is how often a landmark master pings each
	// other landmark master it knows (mesh.go); default
	// DefaultLandmarkPingInterval.
	LandmarkPingInterval time.Duration
	// InlineSnapshot is the largest listing whose answer snapshot a
	// query brings up to date itself when the listing changed; a larger
	// one is answered from the last snapshot until Refresh does, but for
	// a few changes of small groups (see current). Default
	// DefaultInlineSnapshot; negative: always the query.
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
	c.SuspectAfter = cmp.Or(c.SuspectAfter, DefaultSuspectAfter)
	c.CloneInterval = cmp.Or(c.CloneInterval, DefaultCloneInterval)
	if c.Catalogue == nil {
		c.Catalogue = game.Default()
	}
}

// Registry is the master's server list and the decisions about it. It
// does no I/O and never reads the clock: every method takes now.
//
// mu guards the fields below it. Select does not take mu unless the
// snapshot it reads is stale.
type Registry struct {
	cfg  atomic.Pointer[Config] // SetConfig replaces it; read through conf
	chal *Challenger
	mesh Mesh // the other landmark masters (mesh.go)

	rotation    atomic.Uint64             // fair-rotation counter, one step per Select
	afterRetry  atomic.Uint64             // checks verified after a retry was sent
	encodings   atomic.Uint64             // replies encoded on demand (answer.go)
	leftToPeers atomic.Uint64             // due re-probes left to other instances (share.go)
	snap        atomic.Pointer[snapshot]  // immutable but for its minExpire; built from the last after changes
	blocks      atomic.Pointer[blockList] // the block list (sources.go)
	blockCheck  atomic.Bool               // the block list changed: the next Expire looks at every server
	dirty       atomic.Bool               // changes recorded since the last build took them (snapshot.go)
	waiting     atomic.Bool               // a query's build left changes of large groups (deferred)
	version     atomic.Uint64             // listing version (see Version)
	build       sync.Mutex                // one snapshot build at a time (snapshot.go)
	chunkMax    int                       // most entries a chunk holds (DefaultChunk; tests set fewer)
	inlineGroup int                       // MaxInlineGroup; tests set fewer
	opsMissed   atomic.Uint64             // removals a build did not find (a bookkeeping bug; tests check 0)
	released    func()                    // nil but in tests: called each time VerifiedBefore lets go of mu

	mu      sync.Mutex
	servers map[serverKey]*entry
	perKey  map[addrKey]int32
	pending int                           // entries not listed
	names   map[string]string             // interned game and gametype names, at most MaxInternedNames
	players map[netip.AddrPort]playerList // listed servers' last player lists (players.go)
	crowds  map[serverKey]crowd           // bots and suspected bots, of the servers with any (bots.go)
	// The clone groups of the last UpdateClones, and when it ran
	// (clones.go).
	cloneGroups []CloneGroup
	clonesAt    stamp
	// Where servers were learned from (sources.go): the source names,
	// at most MaxSourceNames, and each server's marks.
	srcNames []string
	srcIDs   map[string]uint16
	marks    map[serverKey][]mark
	tally    map[tallyKey]int // listed servers per game, protocol and gametype (tally.go)
	share    Share            // nil: every server is this instance's (share.go)
	// The other landmarks' RTTs (peers.go): their names, at most
	// MaxLandmarks, and each server's samples; nil until the first.
	landmarks []string
	peers     map[serverKey][]peerRTT
	// What the next snapshot build must apply (snapshot.go): the entries
	// changed since the last build (flagTouched), the removals from the
	// last snapshot recorded at their first change, the removals of
	// groups too large for a query's build (deferred), and the entries
	// of the snapshot by the time they fall silent.
	touched  []*entry
	leaving  []snapOp
	deferred []snapOp
	expq     expiryQueue
	inSnap   int // entries with flagInSnap
}

// NewRegistry returns an empty registry.
func NewRegistry(cfg Config, chal *Challenger) (*Registry, error) {
	cfg.setDefaults()
	if err := checkConfig(cfg, chal); err != nil {
		return nil, err
	}
	r := &Registry{
		chal:    chal,
		servers: make(map[serverKey]*entry),
		perKey:  make(map[addrKey]int32),
		names:   make(map[string]string),
		players: make(map[netip.AddrPort]playerList),
		crowds:  make(map[serverKey]crowd),
		srcIDs:  make(map[string]uint16),
		marks:   make(map[serverKey][]mark),
		tally:   make(map[tallyKey]int),

		chunkMax:    DefaultChunk,
		inlineGroup: MaxInlineGroup,
	}
	r.cfg.Store(&cfg)
	r.mesh.interval = cfg.LandmarkPingInterval
	r.snap.Store(newSnapshot())
	if len(cfg.Blocked) > MaxBlocks {
		return nil, fmt.Errorf("master: %d block-list entries; at most %d", len(cfg.Blocked), MaxBlocks)
	}
	bl := newBlockList(cfg.Blocked)
	r.blocks.Store(&bl)
	return r, nil
}

// checkConfig refuses a configuration (defaults filled in) the registry
// cannot run with.
func checkConfig(cfg Config, chal *Challenger) error {
	if cfg.ChallengeLifetime > chal.Period() {
		return fmt.Errorf("master: challenge lifetime %v exceeds the secret rotation period %v", cfg.ChallengeLifetime, chal.Period())
	}
	if cfg.MaxServers < 0 || cfg.MaxPending < 0 || cfg.ChallengeLifetime < 0 || cfg.Timeout < 0 || cfg.MaxMissedProbes < 0 || cfg.VerifyRetryDelay < 0 || cfg.LandmarkPingInterval < 0 {
		return fmt.Errorf("master: negative registry limit in %+v", cfg)
	}
	if cfg.VerifyRetries > MaxVerifyRetries {
		return fmt.Errorf("master: %d verification retries; at most %d", cfg.VerifyRetries, MaxVerifyRetries)
	}
	if last := retryOffset(cfg.VerifyRetryDelay, cfg.VerifyRetries); cfg.VerifyRetries > 0 && last >= cfg.ChallengeLifetime {
		return fmt.Errorf("master: the last of %d verification retries would go out %v after the first try, not within the challenge lifetime %v", cfg.VerifyRetries, last, cfg.ChallengeLifetime)
	}
	return nil
}

// Config returns the registry's configuration with defaults filled in.
func (r *Registry) Config() Config { return *r.conf() }

// conf is the configuration in force; SetConfig replaces it whole, so a
// caller that reads several fields takes it once.
func (r *Registry) conf() *Config { return r.cfg.Load() }

// SetConfig replaces the registry's configuration while it runs (a
// reload): limits, games, policy, address map, expiry. Every listed
// server stays listed; one the new configuration refuses (a game now
// rejected, an address now refused) leaves at its next check, as a
// verification applies the configuration in force. Lowering MaxServers
// below the servers held refuses new ones until enough leave. The
// challenge lifetime and the landmark ping interval stay as they were
// (they are tied to the challenger and the mesh). The next answer is
// built from the new configuration.
func (r *Registry) SetConfig(cfg Config) error {
	cfg.setDefaults()
	old := r.conf()
	cfg.ChallengeLifetime, cfg.LandmarkPingInterval = old.ChallengeLifetime, old.LandmarkPingInterval
	if err := checkConfig(cfg, r.chal); err != nil {
		return err
	}
	if len(cfg.Blocked) > MaxBlocks {
		return fmt.Errorf("master: %d block-list entries; at most %d", len(cfg.Blocked), MaxBlocks)
	}
	r.SetBlockList(cfg.Blocked)
	r.mu.Lock()
	r.cfg.Store(&cfg)
	// Every entry again through the next snapshot build: the address map
	// and the games shape what the answers hold.
	for _, e := range r.servers {
		r.touchLocked(e)
	}
	r.version.Add(1)
	r.mu.Unlock()
	return nil
}

// VerifiedAfterRetry returns the checks verified after at least one retry
// had been sent (the reply may answer any of the check's tries).
func (r *Registry) VerifiedAfterRetry() uint64 { return r.afterRetry.Load() }

// retryOffset is when the k-th retry is due, from the check's first try:
// delay × (2^k − 1), so 1 s, 3 s, 7 s with a 1 s delay.
func retryOffset(delay time.Duration, k int) time.Duration {
	return delay * time.Duration(1<<k-1)
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
		// steps (a million servers at a restart).
		r.servers = make(map[serverKey]*entry, min(len(servers), r.conf().MaxServers))
	}
	for _, s := range servers {
		a, why := classify(s.Addr, r.conf().AllowLoopback, r.conf().RefusePrivate, r.conf().AddrMap)
		k := addrKeyOf(a.Addr())
		if _, dup := r.servers[keyOf(a)]; dup {
			continue
		}
		switch {
		case why != OK:
		case r.Blocked(a.Addr()) != nil:
			why = ReasonBlocked
		case len(r.servers) >= r.conf().MaxServers:
			why = ReasonServerListFull
		case r.conf().MaxServersPerAddress > 0 && int(r.perKey[k]) >= r.conf().MaxServersPerAddress:
			why = ReasonAddressFull
		case !r.conf().Policy.Accepts(s.Game):
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
			LastVerified: stampOf(now), flags: flagRestored,
			NextProbe: stampOf(now),
		}
		if g, ok := r.conf().Catalogue.ByName(s.Game); ok && g.Anonymous && len(g.Heartbeats) > 0 {
			e.hbGame = g
		}
		r.servers[keyOf(a)] = e
		r.perKey[k]++
		r.tallyLocked(e, 1)
		r.touchLocked(e)
		restored++
	}
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
	srv.Sources = r.sourcesLocked(e)
	r.crowdOfLocked(&srv)
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
			s.Sources = r.sourcesLocked(e)
			r.crowdOfLocked(&s)
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
