package masterd

import (
	"cmp"
	"log/slog"
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/web"
)

// Defaults of the shell's settings.
const (
	// DefaultPort is the master port of Quake III and dpmaster.
	DefaultPort = 27950
	// DefaultMOTDPort is Enemy Territory's message-of-the-day port.
	DefaultMOTDPort = 27951
	// DefaultHBThrottle is the heartbeat flood protection's throttle per
	// source: twice the servers one address may list.
	DefaultHBThrottle = 2 * master.DefaultMaxServersPerAddress
	// DefaultHBDecayTime is the heartbeat flood protection's decay time.
	DefaultHBDecayTime = time.Second
	// DefaultReadBuffer is each master socket's receive buffer (SO_RCVBUF):
	// room for thousands of small datagrams (each costs its kernel
	// truesize, about 1 KB), so heartbeats arriving at tens of thousands
	// a second are not dropped while the process waits for a core.
	// Linux caps it at net.core.rmem_max (208 KB unless raised).
	DefaultReadBuffer = 4 << 20
	// DefaultCookieRotation is Config.CookieRotation's default: a client
	// keeps its cookie for an hour or two.
	DefaultCookieRotation = time.Hour
	// DefaultGCPercent is the Go garbage collector's target percentage
	// Run sets (Config.GCPercent). A master's live heap is its list,
	// steady between registrations, and its answers are cached, so it
	// makes little garbage; the runtime's default, 100, lets the heap
	// grow to twice the live data before each collection, which is most
	// of what a listed server costs the process beyond its live bytes.
	// With 25 the heap grows to 1.25 times: BENCHMARKS.md "Memory per
	// listed server" gives the VmRSS per server and the CPU per answer
	// (the same) and per registration (7% more over UDP at 16,000
	// servers) at both settings. At a million servers each collection
	// marks the whole list: registration takes 2-3 times the CPU and the
	// first answer after a change is slower ("A million servers"), so
	// a master that large may rather run with GOGC=100 (870 MB then).
	DefaultGCPercent = 25
)

// Limit is a per-source flood protection in dpmaster's terms: a source
// may send Throttle packets at once, then one every Decay.
type Limit struct {
	// Throttle is dpmaster's --fp-throttle (at least 2 when set).
	Throttle int
	// Decay is dpmaster's --fp-decay-time.
	Decay time.Duration
}

// Config is everything a Master is built from, as plain values: library
// users fill it directly, and scout master fills it from its command line
// and --config file (docs/config.md maps each option to its field). The
// zero value of every field is its default, applied once, by NewMaster
// (or, for the sub-structs of other packages, by that package's
// constructor), so Config{} is a master on 0.0.0.0:27950 and [::]:27950
// with scout master's defaults, no MOTD and no HTTP. What the master
// works with (its state file or fleet, its logger) is not configuration:
// NewMaster takes it as Deps.
//
// The fields of Config itself are fixed while a master runs: sockets,
// files, the process's settings and the master's identity; a change
// needs a restart. Those of the embedded Reloadable may change while it
// runs, without losing the list.
type Config struct {
	// Listen are the master sockets' addresses; port 0 picks a free
	// port. Empty: 0.0.0.0 and :: on DefaultPort, as dpmaster.
	Listen []netip.AddrPort
	// OptionalIPv6 makes an IPv6 socket that cannot be opened (a host
	// without IPv6) a warning instead of an error, as dpmaster does for
	// its default sockets. The default Listen always has it.
	OptionalIPv6 bool
	// MOTDListen are the message-of-the-day sockets' addresses (Enemy
	// Territory's getmotd, answered with Handler.MOTD). Empty: none.
	MOTDListen []netip.AddrPort
	// ReadBuffer is each master socket's receive buffer in bytes; 0
	// means DefaultReadBuffer, negative the system's default.
	ReadBuffer int
	// HTTP is the TCP address Run serves HTTPHandler on (the page, the
	// JSON API, /metrics, /healthz, /servers); empty serves none (the
	// handler can still be mounted elsewhere with Master.HTTPHandler).
	HTTP string
	// HTTPLimits are the HTTP server's timeouts and connection caps
	// (httpconns.go); zero fields mean their defaults.
	HTTPLimits HTTPLimits

	// CommitInterval is the state writer's group commit: everything
	// verified or dropped since the last commit is written in one
	// transaction, at most this often, so a change is on disk at most
	// CommitInterval plus one commit's duration after it was made (and
	// a kill -9 loses no more). 0 means DefaultCommitInterval.
	CommitInterval time.Duration
	// NoPlayerSightings keeps no record of where players were seen (the
	// player pages, /api/v1/players/{name}; history.Sightings): for an
	// operator who will not keep players' names beyond the servers'
	// current lists.
	NoPlayerSightings bool
	// ChallengeRotation is how often the challenge secret rotates;
	// 0 means master.DefaultRotationPeriod.
	ChallengeRotation time.Duration
	// CookieRotation is how often the secret of the cookies given to
	// scout's clients rotates (a cookie is good for one to two periods;
	// master's cookie.go); 0 means DefaultCookieRotation, negative gives
	// no cookies (the word is ignored, as dpmaster ignores it).
	CookieRotation time.Duration
	// DeferEncoding is the smallest listing (servers of one game and
	// protocol) whose uncached replies are encoded off the socket loop
	// (master.HandlerDeps.DeferEncoding); 0 means DefaultDeferEncoding,
	// negative never.
	DeferEncoding int
	// GCPercent is the Go garbage collector's target percentage that Run
	// sets for the whole process while it runs (runtime/debug's
	// SetGCPercent; the old value is back when Run returns, or when the
	// last of several Masters running at once returns: the first one's
	// setting holds), unless the GOGC environment variable is set, which
	// wins. 0 means DefaultGCPercent; negative leaves the runtime's
	// setting alone (for a process that tunes it itself, as the demo's
	// emulated world does). GOMEMLIMIT, the runtime's soft memory limit,
	// applies as the runtime documents; none is set by default (a
	// master's memory grows with its list, which no fixed limit fits).
	GCPercent int

	// Landmark, if set, makes this master a landmark: a getserversExt
	// with the word landmarks gets its RTTs to the servers after the
	// list, and the JSON API publishes them and describes it. Its empty
	// ID means the fleet instance's id (Deps.Fleet), else its Address,
	// else "master"; in a fleet the ID is always the instance's. nil:
	// not a landmark.
	Landmark *master.Landmark

	Reloadable
}

// Reloadable is the part of Config that may change while a master runs:
// the limits, the defences, the games and policies, the addresses
// accepted or mapped, the answers' layout and the API's limits. A change
// to any other field of Config needs a restart.
type Reloadable struct {
	// Registry configures the registry (limits, games, policy, address
	// map, expiry); package master documents each field's default.
	Registry master.Config
	// Handler configures the packet handler (packet layout, MOTD, peer
	// and upstream masters); package master documents each field's
	// default.
	Handler master.HandlerConfig
	// API configures the JSON API under /api/ (package web documents each
	// field's default).
	API web.Config

	// NoQueryLimit turns the defences on queries off, both the default
	// response rate limiting and dpmaster's flood protection; the global
	// outbound budget (OutRate, OutBurst) stays.
	NoQueryLimit bool
	// SourceThrottle selects dpmaster's flood protection on queries
	// (getservers, getServers, gameAuth, getmotd; its -f, --fp-throttle,
	// --fp-decay-time): Queries limits how often each source may ask,
	// master.SourceLimiter, instead of the default defence, Responses.
	SourceThrottle bool
	// Queries is dpmaster's flood protection, used with SourceThrottle;
	// zero fields mean master.DefaultThrottle and master.DefaultDecayTime.
	Queries Limit
	// Responses is the default defence on queries (unless SourceThrottle
	// or NoQueryLimit): the bytes of replies per victim IPv4 address or
	// IPv6 /64, master.ResponseLimiter; zero fields mean the master.Default
	// figures it documents.
	Responses master.ResponseLimits
	// Heartbeats is the flood protection on heartbeats; zero fields mean
	// DefaultHBThrottle and DefaultHBDecayTime.
	Heartbeats Limit
	// MaxSources bounds the sources each flood protection tracks; 0
	// means master.DefaultMaxSources.
	MaxSources int
	// OutRate and OutBurst are the global outbound byte budget (bytes
	// per second, burst bytes); 0 means
	// master.DefaultOutboundBytesPerSecond and
	// master.DefaultOutboundBurst.
	OutRate, OutBurst int

	// LandmarkPeers are the other landmark masters a landmark master
	// (Landmark set) pings for its RTTs to them (master.Mesh), when it is
	// not in a fleet; a fleet's landmarks ping the fleet's other live
	// landmarks instead. Empty: none.
	LandmarkPeers []master.LandmarkPeer
}

// Deps is what a Master works with besides its Config. Every field may be
// nil.
type Deps struct {
	// Store keeps the registry on disk (master/store) and restores it at
	// NewMaster; nil keeps nothing.
	Store Store
	// Fleet shares the registry with other instances (package fleet, on
	// Redis) instead of keeping it in Store; nil: this instance is alone.
	// Store and Fleet cannot both be set.
	Fleet Fleet
	// Observer, if set, is told of every verified reply after the
	// player-count history.
	Observer master.Observer
	// Logger receives the master's log; nil discards it.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields set to their defaults (the
// sub-structs of other packages are left to them).
func (c Config) withDefaults() Config {
	if len(c.Listen) == 0 {
		c.Listen = []netip.AddrPort{
			netip.AddrPortFrom(netip.IPv4Unspecified(), DefaultPort),
			netip.AddrPortFrom(netip.IPv6Unspecified(), DefaultPort),
		}
		c.OptionalIPv6 = true
	}
	c.ReadBuffer = cmp.Or(c.ReadBuffer, DefaultReadBuffer)
	c.CommitInterval = cmp.Or(c.CommitInterval, DefaultCommitInterval)
	c.ChallengeRotation = cmp.Or(c.ChallengeRotation, master.DefaultRotationPeriod)
	c.CookieRotation = cmp.Or(c.CookieRotation, DefaultCookieRotation)
	c.HTTPLimits = c.HTTPLimits.withDefaults()
	c.DeferEncoding = cmp.Or(c.DeferEncoding, DefaultDeferEncoding)
	c.GCPercent = cmp.Or(c.GCPercent, DefaultGCPercent)
	c.Queries.Throttle = cmp.Or(c.Queries.Throttle, master.DefaultThrottle)
	c.Queries.Decay = cmp.Or(c.Queries.Decay, master.DefaultDecayTime)
	c.Heartbeats.Throttle = cmp.Or(c.Heartbeats.Throttle, DefaultHBThrottle)
	c.Heartbeats.Decay = cmp.Or(c.Heartbeats.Decay, DefaultHBDecayTime)
	c.MaxSources = cmp.Or(c.MaxSources, master.DefaultMaxSources)
	c.OutRate = cmp.Or(c.OutRate, master.DefaultOutboundBytesPerSecond)
	c.OutBurst = cmp.Or(c.OutBurst, master.DefaultOutboundBurst)
	return c
}

// landmark returns the master's landmark description with its ID
// resolved (see Config.Landmark), or nil.
func (c Config) landmark(fleet Fleet) *master.Landmark {
	if c.Landmark == nil {
		return nil
	}
	lm := *c.Landmark
	if f, ok := fleet.(interface{ ID() string }); ok {
		lm.ID = f.ID()
	}
	lm.ID = cmp.Or(lm.ID, lm.Address, "master")
	return &lm
}
