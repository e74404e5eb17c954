package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/store"
)

// Defaults of Config.
const (
	// DefaultPrefix starts every key of the fleet.
	DefaultPrefix = "scout:master:"
	// DefaultStreamLen bounds the change stream (XADD MAXLEN ~): about
	// 200 bytes an entry, 25 MB. At 1,000,000 servers re-probed every
	// 5 minutes (3,300 changes/s) it is 38 s of history; an instance cut
	// off for longer reads the whole hash again.
	DefaultStreamLen = 131072
	// DefaultBeat is how often an instance says it is live.
	DefaultBeat = time.Second
	// DefaultDead is how long after its last beat an instance is dead
	// and its share moves.
	DefaultDead = 3 * time.Second
	// DefaultPageSize is the servers read per HSCAN page at startup and
	// on a full resync, and the writes per pipeline.
	DefaultPageSize = 1000
	// DefaultReadCount is the changes read per XREAD.
	DefaultReadCount = 1000
	// DefaultBlock is how long an XREAD waits for a change.
	DefaultBlock = 500 * time.Millisecond
	// QueuedPerServer bounds the writes queued while Redis is slow or
	// unreachable, by default, at this many per server the registry may
	// hold (Config.MaxServers): one write per address, and room for as
	// many addresses again that left meanwhile (their removals).
	QueuedPerServer = 2
	// DefaultTimeout bounds each Redis round trip (dial, read, write).
	DefaultTimeout = time.Second
	// MinBackoff and MaxBackoff bound the wait before trying Redis again
	// after a failure; it doubles from one to the other.
	MinBackoff = 50 * time.Millisecond
	MaxBackoff = 2 * time.Second
	// StopTimeout bounds writing the queue when the instance stops.
	StopTimeout = 2 * time.Second
	// DefaultRemovedTTL is how long a removal is remembered in Redis
	// (PREFIX removed), so that a write of an older verification that
	// arrives after it (an instance's queue written when Redis came back)
	// cannot list the server again: the registry's default silence
	// Timeout, after which such a record would be taken as silent and
	// re-verified at once anyway (master.Registry.Apply).
	DefaultRemovedTTL = 15 * time.Minute
)

// Config configures a Node. Zero fields mean their defaults.
type Config struct {
	// Redis is the server's URL, redis://[user:password@]HOST:PORT/DB.
	Redis string
	// Prefix starts every key; DefaultPrefix if empty. Fleets with
	// different prefixes may share one Redis.
	Prefix string
	// ID names this instance in the fleet; a random one if empty. Two
	// live instances must not share one.
	ID        string
	StreamLen int64
	Beat      time.Duration
	Dead      time.Duration
	PageSize  int
	ReadCount int
	Block     time.Duration
	// MaxQueued bounds the writes queued; 0: QueuedPerServer × the
	// registry's MaxServers (set at Join).
	MaxQueued int
	Timeout   time.Duration
	// RemovedTTL is how long a removal is remembered in Redis; 0 means
	// DefaultRemovedTTL.
	RemovedTTL time.Duration
	Logger     *slog.Logger
	// Landmark, if set, makes this instance one of the fleet's landmarks
	// (landmarks.go): its RTT to each server it verifies is shared with
	// the verification's write, and its description with its beat. Its
	// ID must be the instance's (New sets an empty one to it).
	Landmark *master.Landmark
}

// op is a queued write: the latest state of one address.
type op struct {
	srv *master.Server // nil: a removal
	ver int64          // the version written, or removed
}

// Node is one instance's link to the fleet: the Persister its handler
// writes to (master.FleetPersister), the follower of the others' changes,
// its beat, and its share. Join, then Run.
type Node struct {
	cfg    Config
	rdb    *redis.Client
	log    *slog.Logger
	hash   string
	stream string
	insts  string
	rtts   string // landmark RTTs (landmarks.go)
	lms    string // landmark descriptions (landmarks.go)
	epochK string // the registry's epoch (fullread.go)
	gone   string // recent removals (PREFIX removed)
	put    *redis.Script
	del    *redis.Script
	beat   *redis.Script
	hist   *redis.Script

	reg    *master.Registry
	obs    master.Observer // nil: none
	wake   chan struct{}
	lastID string // the last change applied; owned by follow (and Join before it)
	// epoch is the registry's epoch at the last full read, "" before
	// the first (synced); owned by follow (and Join before it).
	epoch string
	// partial is a full read of the hash cut short, to go on with
	// (fullread.go); owned by follow (and Join before it).
	partial *fullRead
	// read is set once the first full read of the shared registry is
	// done (Ready); read by the HTTP server, so atomic.
	read atomic.Bool

	mu    sync.Mutex
	queue map[netip.AddrPort]op
	// writing is the writes taken from queue by a pipeline not yet done.
	writing map[netip.AddrPort]op
	// sparing, while a full read that drops what the hash does not hold
	// is under way (fullread.go), collects the addresses whose writes
	// were in flight when it began or were taken from the queue since:
	// the read may have passed their place in the hash before they
	// landed, and they are this instance's own, not gone.
	sparing map[netip.AddrPort]struct{}
	live    []string
	// lastBeat is when the last beat succeeded (this process's clock);
	// the live set is as old as it.
	lastBeat time.Time
	peers    []master.Landmark // the other live landmarks' descriptions
	lmAddr   string            // this landmark's address, if its description had none (SetLandmarkAddress)
	downAt   time.Time         // when Redis became unreachable; zero while up
	// beatEpoch is the registry's epoch as the last beat read it: a Redis
	// flushed under a follower whose XREAD goes on blocking is seen there.
	beatEpoch    string
	beatEpochSet bool
	lastErr      string
	// beating is when this instance's beats began to succeed without a
	// failed round trip since (zero: not beating). Until it has beaten
	// for Dead it takes no other instance for dead (doBeat).
	beating time.Time

	stats stats
	hooks *nodeHooks // nil but in tests
}

// nodeHooks are the points where a test holds a node to order its steps
// (the writer against a full read) deterministically.
type nodeHooks struct {
	beforeWrite func() // a batch taken from the queue, before it is written
	afterPages  func() // a full read's pages applied, before it drops what it did not see
}

// New returns a node for cfg. It does not connect yet.
func New(cfg Config) (*Node, error) {
	opt, err := redis.ParseURL(cfg.Redis)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.ID == "" {
		var b [6]byte
		rand.Read(b[:])
		cfg.ID = hex.EncodeToString(b[:])
	}
	orInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	orDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if cfg.StreamLen <= 0 {
		cfg.StreamLen = DefaultStreamLen
	}
	orDur(&cfg.Beat, DefaultBeat)
	orDur(&cfg.Dead, DefaultDead)
	orDur(&cfg.Block, DefaultBlock)
	orDur(&cfg.Timeout, DefaultTimeout)
	orDur(&cfg.RemovedTTL, DefaultRemovedTTL)
	orInt(&cfg.PageSize, DefaultPageSize)
	orInt(&cfg.ReadCount, DefaultReadCount)
	if cfg.Landmark != nil {
		lm := *cfg.Landmark
		if lm.ID == "" {
			lm.ID = cfg.ID
		}
		if lm.ID != cfg.ID {
			return nil, fmt.Errorf("fleet: the landmark %q must have the instance's id %q", lm.ID, cfg.ID)
		}
		cfg.Landmark = &lm
	}
	if cfg.Dead <= cfg.Beat {
		return nil, fmt.Errorf("fleet: an instance is dead %v after its last beat, not more than one beat (%v)", cfg.Dead, cfg.Beat)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = cfg.Timeout, cfg.Timeout, cfg.Timeout
	opt.MaxRetries = -1 // the node retries with its own backoff, and says so
	n := &Node{
		cfg:     cfg,
		rdb:     redis.NewClient(opt),
		log:     cfg.Logger.With("fleet", cfg.ID),
		hash:    cfg.Prefix + "servers",
		stream:  cfg.Prefix + "changes",
		insts:   cfg.Prefix + "instances",
		rtts:    cfg.Prefix + "rtts",
		lms:     cfg.Prefix + "landmarks",
		epochK:  cfg.Prefix + "epoch",
		gone:    cfg.Prefix + "removed",
		put:     redis.NewScript(putScript),
		del:     redis.NewScript(delScript),
		beat:    redis.NewScript(beatScript),
		hist:    redis.NewScript(histScript),
		wake:    make(chan struct{}, 1),
		queue:   make(map[netip.AddrPort]op),
		writing: make(map[netip.AddrPort]op),
	}
	n.stats.init()
	return n, nil
}

// ID returns the instance's name in the fleet.
func (n *Node) ID() string { return n.cfg.ID }

// The scripts. Versions are 20-digit strings, compared as strings. A
// removal is remembered for Config.RemovedTTL in a sorted set (PREFIX
// removed: address -> the removal's version in milliseconds), and put
// writes nothing older than a removal remembered (returns 0): an
// instance's queue, written when Redis answers again after an outage, may
// hold a verification made before another instance removed the server
// (a flatline: the server said it was shutting down), and must not list
// it again. put
// also writes this instance's landmark RTT to the server, if it sends one
// (ARGV[5] the rtts field, ARGV[6] its value: landmarks.go; ARGV[7] is the
// version in milliseconds), whether or
// not the record itself was newer, and says so in the stream entry (l, r);
// it returns 1 when the record was written, 2 when only the RTT was, 0
// when nothing was. del (ARGV[5] the version in milliseconds, ARGV[6]
// RemovedTTL in milliseconds) also removes the server's RTT fields of the
// landmarks named in ARGV[7..]. beat writes this instance's landmark
// description (ARGV[3], if any), forgets the dead instances' and returns
// the live instances and their descriptions, and the registry's epoch
// ("" if none: fullread.go).
const (
	putScript = `local cur = redis.call('HGET', KEYS[1], ARGV[1])
local newer = not cur or string.sub(cur, 1, 20) < string.sub(ARGV[2], 1, 20)
if newer and not cur then
  local gone = redis.call('ZSCORE', KEYS[4], ARGV[1])
  if gone and tonumber(gone) >= tonumber(ARGV[7]) then newer = false end
end
local rtt = ARGV[5] ~= ''
if rtt then redis.call('HSET', KEYS[3], ARGV[5], ARGV[6]) end
if newer then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  if rtt then
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'a', ARGV[1], 'v', ARGV[2], 'i', ARGV[4], 'l', ARGV[4], 'r', ARGV[6])
  else
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'a', ARGV[1], 'v', ARGV[2], 'i', ARGV[4])
  end
  return 1
end
if rtt then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'a', ARGV[1], 'i', ARGV[4], 'l', ARGV[4], 'r', ARGV[6])
  return 2
end
return 0`
	delScript = `local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = math.min(tonumber(ARGV[5]), ms)
local prev = redis.call('ZSCORE', KEYS[4], ARGV[1])
if not prev or tonumber(prev) < v then redis.call('ZADD', KEYS[4], v, ARGV[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ms - tonumber(ARGV[6]))
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or string.sub(cur, 1, 20) > ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
for k = 7, #ARGV do redis.call('HDEL', KEYS[3], ARGV[1] .. ' ' .. ARGV[k]) end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'a', ARGV[1], 'd', ARGV[2], 'i', ARGV[4])
return 1`
	beatScript = `local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local prev = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], ms, ARGV[1])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[3]) end
local dead = {}
if ARGV[4] == '1' and prev and ms - tonumber(prev) < tonumber(ARGV[2]) then
  dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ms - tonumber(ARGV[2]))
end
if #dead > 0 then
  redis.call('ZREM', KEYS[1], unpack(dead))
  redis.call('HDEL', KEYS[2], unpack(dead))
end
local live = redis.call('ZRANGE', KEYS[1], 0, -1)
local d = {}
if #live > 0 then d = redis.call('HMGET', KEYS[2], unpack(live)) end
return {live, d, redis.call('GET', KEYS[3]) or ''}`
)

// version is a record's version: its verification time in Unix
// nanoseconds, 20 digits.
func version(t time.Time) string {
	if t.IsZero() {
		return fmtVersion(0)
	}
	return fmtVersion(t.UnixNano())
}

func fmtVersion(ns int64) string {
	s := strconv.FormatInt(max(ns, 0), 10)
	const zeros = "00000000000000000000"
	return zeros[:20-len(s)] + s
}

// encode returns the hash value of s.
func encode(s master.Server) string {
	return version(s.LastVerified) + string(store.Encode(s))
}

// decode parses a hash value of the server at addr.
func decode(addr, v string) (master.Server, error) {
	a, err := netip.ParseAddrPort(addr)
	if err != nil {
		return master.Server{}, fmt.Errorf("fleet: address %q: %w", addr, err)
	}
	if len(v) < 20 {
		return master.Server{}, fmt.Errorf("fleet: record of %s: %w", addr, store.ErrCorrupt)
	}
	s, err := store.Decode([]byte(v[20:]))
	if err != nil {
		return s, fmt.Errorf("fleet: record of %s: %w", addr, err)
	}
	s.Addr = a
	return s, nil
}

// Put, Delete, Refresh and Remove implement master.FleetPersister: they
// queue the latest state of the address and wake the writer; they never
// block on Redis.
func (n *Node) Put(s master.Server)     { n.enqueue(s.Addr, op{srv: &s, ver: s.LastVerified.UnixNano()}) }
func (n *Node) Refresh(s master.Server) { n.Put(s) }

// Delete removes the record of a whatever its version (a server the
// configuration now refuses).
func (n *Node) Delete(a netip.AddrPort) { n.enqueue(a, op{ver: 1<<63 - 1}) }

// Remove removes the record of r.Addr unless it is newer than the
// removal's version (master.Removal.Version).
func (n *Node) Remove(r master.Removal) {
	var ver int64
	if v := r.Version(); !v.IsZero() {
		ver = v.UnixNano()
	}
	n.enqueue(r.Addr, op{ver: ver})
}

func (n *Node) enqueue(a netip.AddrPort, o op) {
	n.mu.Lock()
	if _, ok := n.queue[a]; !ok && len(n.queue) >= n.cfg.MaxQueued {
		n.mu.Unlock()
		n.stats.queueDropped.Add(1)
		return
	}
	n.queue[a] = o
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Queued returns the writes waiting for Redis, those of a pipeline in
// flight included.
func (n *Node) Queued() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.queue) + len(n.writing)
}

// Live returns the live instances last seen, this one included.
func (n *Node) Live() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.live)
}

// LiveNow returns how many instances this one knows to be live at now:
// those of its last beat while that beat is less than Dead old, else one,
// itself. An instance cut off from Redis cannot tell whether the others
// still beat, and they take it for dead after Dead: it goes on
// re-probing its last share (Live), but does not report a fleet it no
// longer sees.
func (n *Node) LiveNow(now time.Time) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lastBeat.IsZero() || now.Sub(n.lastBeat) >= n.cfg.Dead {
		return 1
	}
	return max(len(n.live), 1)
}

// Up reports whether the last Redis round trip succeeded.
func (n *Node) Up() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.downAt.IsZero()
}

// Join reads the shared registry into reg (in pages of PageSize), beats
// once so that reg gets this instance's share, and remembers where the
// change stream stood before the read. obs, if not nil, is told of every
// record of another instance that reg takes (the player history of
// package web, fed by every instance's verifications). If Redis cannot be reached it logs
// so and returns nil: the instance starts with what it has and catches up
// when Redis answers (Run). Join must be called once, before Run.
func (n *Node) Join(ctx context.Context, reg *master.Registry, obs master.Observer) error {
	n.reg, n.obs = reg, obs
	if n.cfg.MaxQueued <= 0 {
		n.cfg.MaxQueued = QueuedPerServer * reg.Config().MaxServers
	}
	if err := n.loadScripts(ctx); err != nil {
		n.failed(err)
		return nil
	}
	if err := n.resync(ctx, false); err != nil {
		n.failed(err)
		return nil
	}
	if err := n.doBeat(ctx); err != nil {
		n.failed(err)
	}
	return nil
}

// Ready reports whether this instance has read the whole shared registry
// once: before, it lists only what it verified itself (Join could not reach
// Redis, or a read was cut short); after, it lists the fleet's servers.
func (n *Node) Ready() bool { return n.read.Load() }

// Run follows the fleet until ctx ends: it tails the others' changes,
// writes this instance's, and beats. Then it writes what is queued
// (within StopTimeout) and leaves the fleet, so its share moves at once.
func (n *Node) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { n.follow(ctx) })
	wg.Go(func() { n.beatLoop(ctx) })
	wg.Go(func() { n.writeLoop(ctx) })
	wg.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	for n.Queued() > 0 && sctx.Err() == nil {
		if err := n.flush(sctx); err != nil {
			n.log.Error("writing the fleet's queue at stop", "queued", n.Queued(), "err", err)
			break
		}
	}
	n.rdb.ZRem(sctx, n.insts, n.cfg.ID)
	n.rdb.HDel(sctx, n.lms, n.cfg.ID)
	n.rdb.Close()
}

// failed records a failed round trip: the first one after a success is
// logged and the node is down until the next success.
func (n *Node) failed(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	n.mu.Lock()
	first := n.downAt.IsZero()
	if first {
		n.downAt = time.Now()
	}
	n.lastErr = err.Error()
	n.beating = time.Time{}
	n.mu.Unlock()
	n.stats.errors.Add(1)
	if first {
		n.stats.outages.Add(1)
		n.log.Warn("redis unreachable: answering from memory, queueing writes", "err", err, "queued", n.Queued())
	}
}

// succeeded records a successful round trip.
func (n *Node) succeeded() {
	n.mu.Lock()
	down := n.downAt
	n.downAt = time.Time{}
	n.mu.Unlock()
	if !down.IsZero() {
		n.log.Info("redis reachable again: writing the queue and catching up", "down_for", time.Since(down).Round(time.Millisecond), "queued", n.Queued())
	}
}

// sleep waits d or until ctx ends, reporting whether ctx is still on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func nextBackoff(b time.Duration) time.Duration { return min(max(2*b, MinBackoff), MaxBackoff) }

// beatLoop beats every Beat.
func (n *Node) beatLoop(ctx context.Context) {
	t := time.NewTicker(n.cfg.Beat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := n.doBeat(ctx); err != nil {
				n.failed(err)
			}
		}
	}
}

// doBeat says this instance is live (and describes it as a landmark),
// reads the live set and the landmarks' descriptions, and sets the
// registry's share from it.
//
// It takes the instances whose last beat is Dead old for dead only once
// it has itself beaten for Dead without a failed round trip, and only if
// its own previous beat, by Redis's clock, is less than Dead old: after
// Redis stalled or was unreachable for Dead or more, no instance could
// beat meanwhile, and the first to beat again would otherwise take every
// other, whose beats are as old as its own, for dead, and take their
// shares until they beat again (on a loaded machine a redis-server that
// fsyncs every write stalled 2.6 s; TestFleet_RedisStallIsNoDeath). An
// instance dead meanwhile goes Dead later.
func (n *Node) doBeat(ctx context.Context) error {
	start := time.Now()
	n.mu.Lock()
	judge := "0"
	if !n.beating.IsZero() && start.Sub(n.beating) >= n.cfg.Dead {
		judge = "1"
	}
	n.mu.Unlock()
	res, err := n.beat.Run(ctx, n.rdb, []string{n.insts, n.lms, n.epochK}, n.cfg.ID, n.cfg.Dead.Milliseconds(), n.description(), judge).Slice()
	n.stats.observe(start)
	if err != nil {
		return err
	}
	n.succeeded()
	live, peers := n.parseBeat(res)
	slices.Sort(live)
	n.mu.Lock()
	if n.beating.IsZero() {
		n.beating = start
	}
	n.lastBeat = start
	changed := !slices.Equal(live, n.live)
	n.live = live
	n.peers = peers
	if len(res) == 3 {
		n.beatEpoch, _ = res[2].(string)
		n.beatEpochSet = true
	}
	n.mu.Unlock()
	n.meshPeers(peers)
	if changed {
		n.log.Info("fleet", "live", live)
		n.reg.SetShare(master.NewRendezvous(n.cfg.ID, live))
	}
	// Every beat, not only on a change: an RTT applied from the stream
	// before its landmark was seen live is kept only if it is live now.
	n.reg.ForgetLandmarks(func(id string) bool { return slices.Contains(live, id) })
	return nil
}

// RedisLog passes the Redis client's own messages (its connection pool's
// dial failures, which the node also reports in its own words) to log at
// Debug, instead of the standard logger's plain lines on standard error,
// which would break a JSON log. It sets go-redis's process-wide logger:
// the command that owns the process calls it, not a library.
func RedisLog(log *slog.Logger) { redis.SetLogger(redisLogger{log}) }

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis client", "text", fmt.Sprintf(format, v...))
}
