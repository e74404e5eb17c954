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
	// DefaultHTTPReadHeaderTimeout bounds reading an HTTP request's
	// header.
	DefaultHTTPReadHeaderTimeout = 5 * time.Second
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

// Config is everything a Master is built from. Library users fill it
// directly; the zero value of every field is a sensible default, so
// Config{} is a master on 0.0.0.0:27950 and [::]:27950 with scout
// master's defaults, no MOTD, no state file and no HTTP.
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

	// Registry configures the registry (limits, games, policy, address
	// map); its zero value is dpmaster's defaults.
	Registry master.Config
	// Handler configures the packet handler. Its Registry, Queries,
	// Responses, Heartbeats, Budget, Persist and Logger are set by
	// NewMaster from the fields of Config and are ignored here. Its
	// DeferEncoding 0 means DefaultDeferEncoding, negative never.
	Handler master.HandlerConfig
	// ChallengeRotation is how often the challenge secret rotates;
	// 0 means master.DefaultRotationPeriod.
	ChallengeRotation time.Duration

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
	// ReadBuffer is each master socket's receive buffer in bytes; 0
	// means DefaultReadBuffer, negative the system's default.
	ReadBuffer int
	// OutRate and OutBurst are the global outbound byte budget (bytes
	// per second, burst bytes); 0 means
	// master.DefaultOutboundBytesPerSecond and
	// master.DefaultOutboundBurst.
	OutRate, OutBurst int

	// LandmarkPeers are the other landmark masters a landmark master
	// (Handler.Landmark set) pings for its RTTs to them (master.Mesh),
	// when it is not in a fleet; a fleet's landmarks ping the fleet's
	// other live landmarks instead.
	LandmarkPeers []master.LandmarkPeer

	// Fleet shares the registry with other instances (package fleet,
	// on Redis) instead of keeping it in Store; nil: this instance is
	// alone. Store and Fleet cannot both be set.
	Fleet Fleet
	// Store keeps the registry on disk and restores it at NewMaster;
	// nil keeps nothing.
	Store Store
	// CommitInterval is the state writer's group commit: everything
	// verified or dropped since the last commit is written in one
	// transaction, at most this often, so a change is on disk at most
	// CommitInterval plus one commit's duration after it was made (and
	// a kill -9 loses no more). 0 means DefaultCommitInterval.
	CommitInterval time.Duration
	// HTTP is the TCP address Run serves HTTPHandler on (/metrics,
	// /healthz, /servers); empty serves none (the handler can still be
	// mounted elsewhere with Master.HTTPHandler).
	HTTP string
	// GCPercent is the Go garbage collector's target percentage that Run
	// sets for the whole process while it runs (runtime/debug's
	// SetGCPercent; the old value is back when Run returns, or when the
	// last of several Masters running at once returns: the first one's
	// setting holds), unless the GOGC environment variable is set, which
	// wins. 0 means
	// DefaultGCPercent; negative leaves the runtime's setting alone (for
	// a process that tunes it itself, as the demo's emulated world does).
	// GOMEMLIMIT, the runtime's soft memory limit, applies as the runtime
	// documents; none is set by default (a master's memory grows with its
	// list, which no fixed limit fits).
	GCPercent int
	// Observer, if set, is told of every verified reply after the
	// history (master.HandlerConfig.Observer).
	Observer master.Observer
	// API configures the JSON API under /api/ (package web). Its
	// Registry, History and Logger are set by NewMaster.
	API web.Config
	// Logger receives the master's log; nil discards it.
	Logger *slog.Logger
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if len(c.Listen) == 0 {
		c.Listen = []netip.AddrPort{
			netip.AddrPortFrom(netip.IPv4Unspecified(), DefaultPort),
			netip.AddrPortFrom(netip.IPv6Unspecified(), DefaultPort),
		}
		c.OptionalIPv6 = true
	}
	c.ChallengeRotation = cmp.Or(c.ChallengeRotation, master.DefaultRotationPeriod)
	c.CommitInterval = cmp.Or(c.CommitInterval, DefaultCommitInterval)
	c.Queries.Throttle = cmp.Or(c.Queries.Throttle, master.DefaultThrottle)
	c.Queries.Decay = cmp.Or(c.Queries.Decay, master.DefaultDecayTime)
	c.Heartbeats.Throttle = cmp.Or(c.Heartbeats.Throttle, DefaultHBThrottle)
	c.Heartbeats.Decay = cmp.Or(c.Heartbeats.Decay, DefaultHBDecayTime)
	c.MaxSources = cmp.Or(c.MaxSources, master.DefaultMaxSources)
	c.ReadBuffer = cmp.Or(c.ReadBuffer, DefaultReadBuffer)
	c.OutRate = cmp.Or(c.OutRate, master.DefaultOutboundBytesPerSecond)
	c.OutBurst = cmp.Or(c.OutBurst, master.DefaultOutboundBurst)
	c.GCPercent = cmp.Or(c.GCPercent, DefaultGCPercent)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
