package master

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master/upstream"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

// Handler defaults.
const (
	// DefaultMaxProbesPerTick bounds the re-probes one Tick sends, so a
	// restart with a large restored list spreads its re-verification over
	// several ticks instead of bursting.
	DefaultMaxProbesPerTick = 256
	// MaxMOTDChallengeLen bounds the client challenge a motd echoes; a
	// longer one is refused as malformed (ET sends a short decimal).
	MaxMOTDChallengeLen = 64
	// MaxMOTDLen bounds the configured message of the day.
	MaxMOTDLen = 1024
)

// Outgoing is one datagram the handler wants sent. The socket loop sends
// it from a socket of To's address family, preferring the one the packet
// that caused it arrived on.
//
// Encode, when not nil, stands for a server-list reply not encoded yet
// (HandlerDeps.DeferEncoding): it has no payload, and the shell passes
// it to Handler.Encode instead of sending it.
type Outgoing struct {
	To      netip.AddrPort
	Kind    Kind
	Payload []byte
	Encode  *Encoding
	// Delay is how long after the handler's now the datagram may be
	// sent: 0, at once, but for the datagrams of a paced reply (Pace),
	// which the shell must not send earlier.
	Delay time.Duration
}

// Persister receives listing changes to keep on disk. Its methods must not
// block the packet path (the server's implementation queues and coalesces
// them for a writer goroutine).
type Persister interface {
	Put(Server)
	Delete(netip.AddrPort)
}

// Observer is told of every verified reply: a server listed, updated or
// only refreshed, as the registry now holds it. Its method must not block
// the packet path.
type Observer interface {
	Verified(now time.Time, s Server)
}

// FleetPersister is a Persister shared by several instances (package
// fleet). The handler gives it, besides Put, every refreshed server (a
// verification that changed nothing but its time: the others time the
// server's silence and next re-probe from it) and, instead of Delete,
// each removal with the version it removes.
type FleetPersister interface {
	Persister
	Refresh(Server)
	Remove(Removal)
}

// HandlerConfig is the handler's settings: plain values that a user of
// the master fills directly (masterd.Config.Handler); the zero value of
// each is its default.
type HandlerConfig struct {
	// MaxPacketBytes caps each server-list datagram's UDP payload; 0
	// means q3.DefaultMaxBytes (1400, dpmaster's MAX_PACKET_SIZE_OUT).
	MaxPacketBytes int
	// MaxEntries caps entries per getserversResponse; 0 means no cap
	// other than MaxPacketBytes, q3.IDMasterEntriesPerPacket (112)
	// reproduces id's master.
	MaxEntries int
	// EndOnLastOnly puts the end marker on the last getserversResponse
	// packet only (dpmaster 2.x) instead of on every packet (id's master,
	// dpmaster before 2.0; the zero value). Real clients need the marker
	// on every packet: quakestat 2.17 and the ioquake3 client drop the
	// last server of a packet that does not end with one.
	EndOnLastOnly bool
	// MOTD is the message of the day for ET's getmotd; empty answers
	// none. At most MaxMOTDLen bytes, without '"', '\', NUL or newline.
	MOTD string
	// Peers are the masters whose register messages are accepted; a
	// port of 0 accepts any port of that address. Empty: none.
	Peers []netip.AddrPort
	// Upstreams are the masters verified IPv4 servers are forwarded to
	// with register. Empty: none.
	Upstreams []netip.AddrPort
	// MaxProbesPerTick bounds the new checks (re-probes, restored
	// servers) per Tick; 0 means DefaultMaxProbesPerTick. Retries of
	// checks in flight are not counted against it: at most one per check
	// per Tick, VerifyRetries per check.
	MaxProbesPerTick int
	// Aggregate are the upstream masters and scout peers whose lists
	// this master gathers, verifying each server with its own challenge
	// (package upstream documents each field's default). No source: no
	// aggregation. Reloadable: Handler.SetUpstreams.
	Aggregate upstream.Config
	// LearnPerTick bounds the first checks of servers the upstreams
	// named, per Tick; 0 means DefaultLearnPerTick.
	LearnPerTick int
}

// HandlerDeps is what a Handler works with besides its settings: the
// registry it decides on, the defences and budget the shell built, where
// its results go, and who it is. Only Registry is required; a nil
// limiter or budget disables that defence.
type HandlerDeps struct {
	Registry *Registry
	// Queries limits getservers, getServers, gameAuth and getmotd per
	// source (dpmaster's -f, --fp-throttle, --fp-decay-time).
	Queries *SourceLimiter
	// Responses limits the bytes of the replies to those requests per
	// victim prefix (the default defence, see ResponseLimiter).
	Responses *ResponseLimiter
	// Heartbeats limits heartbeats per source, and registrations per
	// server named by a peer master.
	Heartbeats *SourceLimiter
	// Budget is the global outbound byte budget; every datagram the
	// handler returns has been reserved from it.
	Budget *ByteBudget
	// Persist receives listing changes; nil keeps nothing.
	Persist Persister
	// Observer is told of every verified reply (package history keeps
	// each server's player count over time from them); nil tells no one.
	Observer Observer
	// DeferEncoding, when positive, is the shell's offer to encode large
	// replies off its socket loop: the reply to a list query for a game
	// and protocol that list at least that many servers (before the
	// query's filters), unless it is cached for the current listing and
	// asks for no landmark packets, is left to Handler.Encode:
	// HandlePacket returns one Outgoing with Encode set instead of the
	// reply's packets. 0 encodes every reply in HandlePacket.
	DeferEncoding int
	// Cookies, if set, gives and checks the cookies of scout's clients
	// (cookie.go): a getservers that asks for one gets one, and one that
	// echoes the cookie its address was given is served from the
	// address's cookie lane (ResponseLimits.CookieBurst). nil: the word is
	// ignored like any unknown one.
	Cookies *Challenger
	// Landmark, if not empty, is this master's id as a landmark: a
	// getserversExt with the word q3.LandmarksKeyword is answered with
	// the list and then this master's RTTs to the servers listed
	// (landmarks.go). Empty: the word is ignored like any unknown one.
	Landmark string
	// Seed seeds the upstream refreshes' jitter (HandlerConfig.Aggregate);
	// the shell passes a random one.
	Seed uint64
	// Logger receives listing events at Info, the refusals of a whole
	// class of servers (bad_gametype, bad_protocol, unknown_heartbeat,
	// ...) at Warn once per server and reason (see MaxLoggedDrops), and
	// every drop at Debug; nil discards.
	Logger *slog.Logger
}

// CheckMOTD reports whether s can be a message of the day: at most
// MaxMOTDLen bytes, without '"', '\', NUL or newline (the reply quotes it
// in an info string).
func CheckMOTD(s string) error {
	if len(s) > MaxMOTDLen || strings.ContainsAny(s, "\"\\\x00\n") {
		return fmt.Errorf(`the message of the day must be at most %d bytes without '"', '\', NUL or newline`, MaxMOTDLen)
	}
	return nil
}

// Handler turns datagrams into decisions and datagrams: a mostly pure
// function of (now, source, bytes). It owns no socket and never reads the
// clock. Its only side effects are the registry, the limiters, the
// counters in Stats, the Persister and the logger.
//
// A Handler is safe for concurrent use: each socket's goroutine may call
// it. It holds no mutable state of its own beyond atomic counters.
type Handler struct {
	cfg   atomic.Pointer[HandlerConfig] // SetConfig replaces it; read through conf
	deps  HandlerDeps
	reg   *Registry
	stats Stats
	log   *slog.Logger
	drops *dropLog                  // refusals of whole classes of servers, logged once each
	up    atomic.Pointer[upstreams] // nil: no aggregation (handler_upstream.go)
}

// NewHandler returns a handler with the settings cfg working with deps.
func NewHandler(cfg HandlerConfig, deps HandlerDeps) (*Handler, error) {
	if deps.Registry == nil {
		return nil, errors.New("master: handler without a registry")
	}
	if deps.Landmark != "" {
		if _, err := q3.EncodeLandmarksResponses(deps.Landmark, nil, 0); err != nil {
			return nil, errors.New("master: landmark id: " + err.Error())
		}
	}
	cfg, err := checkHandlerConfig(cfg)
	if err != nil {
		return nil, err
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{deps: deps, reg: deps.Registry, log: log, drops: newDropLog()}
	h.cfg.Store(&cfg)
	up, err := newUpstreams(cfg.Aggregate, deps.Registry, deps.Seed)
	if err != nil {
		return nil, err
	}
	if up != nil {
		h.up.Store(up)
	}
	return h, nil
}

// checkHandlerConfig fills cfg's defaults and refuses what cannot be sent.
func checkHandlerConfig(cfg HandlerConfig) (HandlerConfig, error) {
	if cfg.MaxPacketBytes == 0 {
		cfg.MaxPacketBytes = q3.DefaultMaxBytes
	}
	if cfg.MaxProbesPerTick == 0 {
		cfg.MaxProbesPerTick = DefaultMaxProbesPerTick
	}
	if err := CheckMOTD(cfg.MOTD); err != nil {
		return cfg, fmt.Errorf("master: %w", err)
	}
	// Check the split options once, with a worst-case (IPv6) entry.
	probe := []netip.AddrPort{netip.MustParseAddrPort("[2001:db8::1]:1")}
	if _, err := q3.EncodeServersResponses(probe, q3.SplitOptions{Ext: true, End: q3.EndEOT, MaxBytes: cfg.MaxPacketBytes, MaxEntries: cfg.MaxEntries}); err != nil {
		return cfg, err
	}
	if cfg.MaxPacketBytes > 65507 {
		return cfg, errors.New("master: server-list packets cannot exceed 65507 bytes")
	}
	return cfg, nil
}

// SetConfig replaces the handler's settings while it runs (a reload):
// packet layout, MOTD, peer and upstream masters, the sources it
// aggregates (SetUpstreams). The replies built after it follow the new
// settings; a cached answer in the old layout is not sent again once the
// registry's listing changes.
func (h *Handler) SetConfig(cfg HandlerConfig) error {
	cfg, err := checkHandlerConfig(cfg)
	if err != nil {
		return err
	}
	if err := h.SetUpstreams(time.Time{}, cfg.Aggregate, h.deps.Seed); err != nil {
		return err
	}
	h.cfg.Store(&cfg)
	return nil
}

// conf is the settings in force; SetConfig replaces them whole.
func (h *Handler) conf() *HandlerConfig { return h.cfg.Load() }

// Stats returns the handler's counters.
func (h *Handler) Stats() *Stats { return &h.stats }

// Registry returns the handler's registry.
func (h *Handler) Registry() *Registry { return h.reg }

// Config returns the handler's settings, with their defaults filled in.
func (h *Handler) Config() HandlerConfig { return *h.conf() }

// Deps returns what the handler works with.
func (h *Handler) Deps() HandlerDeps { return h.deps }

// drop counts a dropped packet and returns dst unchanged.
func (h *Handler) drop(dst []Outgoing, k Kind, from netip.AddrPort, why Reason) []Outgoing {
	h.stats.dropped[why].Add(1)
	if classReason(why) && serverKind(k) {
		h.drops.note(h.log, k, from, why)
	}
	if h.log.Enabled(context.Background(), slog.LevelDebug) {
		h.log.Debug("dropped", "from", from, "kind", k, "reason", why)
	}
	return dst
}

// badSource reports a source no reply may go to: port 0, unspecified,
// multicast or broadcast (a reply there is wasted or reflected to many).
func badSource(a netip.AddrPort) bool {
	ip := a.Addr().Unmap()
	return a.Port() == 0 || !ip.IsValid() || ip.IsUnspecified() || ip.IsMulticast() ||
		ip == netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// HandlePacket handles one datagram that arrived at now from from on the
// master port, and appends what must be sent to dst. It never replies to
// garbage, to a response, or to a command a master does not serve; every
// packet that produces nothing is counted in Stats by reason.
func (h *Handler) HandlePacket(now time.Time, from netip.AddrPort, pkt []byte, dst []Outgoing) []Outgoing {
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	h.stats.inBytes.Add(uint64(len(pkt)))
	switch {
	case bytes.HasPrefix(pkt, []byte(q3.Prefix)):
		return h.handleQ3(now, from, pkt, dst)
	case bytes.HasPrefix(pkt, []byte(q4.Prefix)):
		return h.handleQ4(now, from, pkt, dst)
	}
	h.stats.in[KindGarbage].Add(1)
	return h.drop(dst, KindGarbage, from, ReasonNotConnectionless)
}

// parseQ3 parses a Quake III packet and returns its kind, or a reason.
func parseQ3(pkt []byte) (q3.Message, Kind, Reason) {
	word, known := q3.Command(pkt)
	k := kindOfQ3(word, known)
	m, err := q3.ParseQuery(pkt) // "getservers 84 " too, as dpmaster
	switch {
	case err == nil:
		return m, k, OK
	case errors.Is(err, q3.ErrUnknownCommand):
		return nil, k, ReasonUnknownCommand
	}
	if sr, ok := m.(q3.ServersResponse); ok {
		// A damaged list keeps what it read: an upstream's is read up to
		// the damage (handler_upstream.go); anyone else's is dropped.
		return sr, k, ReasonMalformed
	}
	return nil, k, ReasonMalformed
}

func (h *Handler) handleQ3(now time.Time, from netip.AddrPort, pkt []byte, dst []Outgoing) []Outgoing {
	m, k, why := parseQ3(pkt)
	h.stats.in[k].Add(1)
	if sr, ok := m.(q3.ServersResponse); ok {
		var err error
		if why != OK {
			err = errors.New("damaged list")
		}
		if h.upstreamList(now, from, serversPacket(sr, err)) {
			return dst
		}
	}
	if why != OK {
		return h.drop(dst, k, from, why)
	}
	switch m := m.(type) {
	case q3.Heartbeat:
		if why := h.allow(h.deps.Heartbeats, now, from); why != OK {
			return h.drop(dst, k, from, why)
		}
		p, why := h.reg.Heartbeat(now, from, Heartbeat{Family: game.FamilyQ3, Tag: m.Tag})
		if why != OK {
			return h.drop(dst, k, from, why)
		}
		return h.probe(now, p, dst)
	case q3.InfoResponse:
		rep := Reply{Kind: ReplyInfo, Info: pairs(m.Info), Players: -1}
		return h.verify(now, from, k, rep, dst)
	case q3.StatusResponse:
		rep := Reply{Kind: ReplyStatus, Info: pairs(m.Info), Players: len(m.Players), HasPlayerList: true}
		rep.PlayerList = make([]Player, 0, min(len(m.Players), MaxPlayersKept))
		for _, p := range m.Players[:min(len(m.Players), MaxPlayersKept)] {
			rep.PlayerList = append(rep.PlayerList, Player{Name: p.Name, Score: p.Score, Ping: p.Ping})
		}
		return h.verify(now, from, k, rep, dst)
	case q3.ChallengeResponse:
		// ET's master sends getchallenge before getstatus and getinfo
		// (seed 000, III.D). The answer proves nothing the echoed HMAC
		// challenge of the other two does not, so it is read and let go.
		if _, ok := h.reg.Lookup(from); !ok {
			return h.drop(dst, k, from, ReasonUnknownServer)
		}
		return dst
	case q3.GetServers:
		return h.getServers(now, from, m, len(pkt), dst)
	case q3.ServersResponse:
		// A landmark ping's reply from another landmark master (mesh.go);
		// any other list sent to a master is unexpected.
		if h.deps.Landmark != "" && !m.Ext && len(m.Servers) == 0 && len(m.Dropped) == 0 && m.End != q3.EndNone && h.reg.mesh.pong(now, from) {
			return dst
		}
	case q3.Register:
		return h.register(now, from, m, dst)
	case q3.GetMOTD:
		return h.drop(dst, k, from, ReasonWrongPort)
	}
	return h.drop(dst, k, from, ReasonUnexpected)
}

func (h *Handler) allow(l *SourceLimiter, now time.Time, from netip.AddrPort) Reason {
	if l == nil {
		return OK
	}
	return l.Allow(now, from)
}

func pairs(in infostring.Info) []Pair {
	out := make([]Pair, len(in))
	for i, p := range in {
		out[i] = Pair{p.Key, p.Value}
	}
	return out
}

// replyLane is how a reply is charged: at once only (the master's own
// probes), to an address's budgets (a reply that has not proven its return
// path; laneAsking: one that asked for a cookie, never paced: told to ask
// again with it instead, cookie.go), or to its cookie lane.
type replyLane uint8

const (
	laneAtOnce replyLane = iota
	laneLegacy
	laneAsking
	laneCookie
)

// reserve takes a reply of payload bytes in datagrams datagrams to to from
// lim (a nil lim, as for the master's own probes, skips it), then from the
// global budget, and returns when its datagrams may go. The master's own
// requests (laneAtOnce without lim) are charged to the budget, never
// refused by it (ByteBudget.Charge). A reply the budget
// refuses stays charged to lim: an exhausted budget makes the per-victim
// limit stricter, never looser.
func (h *Handler) reserve(now time.Time, to netip.AddrPort, lim *ResponseLimiter, payload, datagrams int, lane replyLane) (Pace, Reason) {
	cost := Cost(to.Addr(), payload, datagrams)
	p := Pace{now: now.UnixNano()}
	maxPace := DefaultMaxPace
	if lim != nil && lane != laneAtOnce {
		var why Reason
		if p, why = lim.reserve(now, to, cost, lane == laneCookie, lane != laneAsking); why != OK {
			return p, why
		}
		if why = p.refusePaced(lane == laneAsking); why != OK {
			return p, why
		}
		maxPace = lim.Limits().MaxPace
	}
	if h.deps.Budget != nil && lane == laneAtOnce && lim == nil {
		h.deps.Budget.Charge(now, payload) // the master's own requests
		return p, OK
	}
	if h.deps.Budget != nil {
		var wait time.Duration
		switch lane {
		case laneLegacy:
			wait = min(DefaultBudgetLegacyWait, maxPace)
		case laneCookie:
			wait = maxPace
		}
		ln, why := h.deps.Budget.ReservePaced(now, payload, lane == laneLegacy || lane == laneAsking, wait)
		if why != OK {
			return p, why
		}
		p.add(ln)
		p.finish(cost)
	}
	return p, OK
}

// send reserves the bytes of outs from lim and the budget and appends them
// to dst, all or nothing, each with its delay if the reply is paced.
func (h *Handler) send(now time.Time, to netip.AddrPort, lim *ResponseLimiter, lane replyLane, dst []Outgoing, outs ...Outgoing) []Outgoing {
	total := 0
	for _, o := range outs {
		total += len(o.Payload)
	}
	p, why := h.reserve(now, to, lim, total, len(outs), lane)
	if why != OK {
		h.stats.dropped[why].Add(1)
		h.stats.denied.Add(uint64(total))
		return dst
	}
	for _, o := range outs {
		h.stats.out[o.Kind].Add(1)
		h.stats.outBytes[o.Kind].Add(uint64(len(o.Payload)))
	}
	n := len(dst)
	dst = append(dst, outs...)
	h.delay(p, to, dst[n:])
	return dst
}

// delay sets the delay of each datagram of a reply (out, in the order
// they go) from its pace.
func (h *Handler) delay(p Pace, to netip.AddrPort, out []Outgoing) {
	if !p.Paced() {
		return
	}
	h.stats.paced.Add(1)
	per, cum := DatagramCost(to.Addr()), 0
	for i := range out {
		cum += len(out[i].Payload) + per
		out[i].Delay = p.Delay(cum)
	}
}

// handleQ4 handles the Doom 3 / Quake 4 packets.
func (h *Handler) handleQ4(now time.Time, from netip.AddrPort, pkt []byte, dst []Outgoing) []Outgoing {
	m, err := q4.Parse(pkt)
	k := kindOfQ4(m)
	h.stats.in[k].Add(1)
	if sv, ok := m.(*q4.Servers); ok && h.upstreamList(now, from, q4ServersPacket(sv, err)) {
		return dst
	}
	switch {
	case errors.Is(err, q4.ErrUnknownCommand):
		return h.drop(dst, k, from, ReasonUnknownCommand)
	case err != nil:
		return h.drop(dst, k, from, ReasonMalformed)
	}
	switch m := m.(type) {
	case *q4.Heartbeat:
		if why := h.allow(h.deps.Heartbeats, now, from); why != OK {
			return h.drop(dst, k, from, why)
		}
		p, why := h.reg.Heartbeat(now, from, Heartbeat{Family: game.FamilyDoom3})
		if why != OK {
			return h.drop(dst, k, from, why)
		}
		return h.probe(now, p, dst)
	case *q4.InfoResponse:
		rep := Reply{Kind: ReplyInfo, Info: pairs(m.Info), Players: len(m.Players),
			Challenge32: m.Challenge, Protocol: int(m.Protocol.Uint32()), HasPlayerList: true}
		rep.PlayerList = make([]Player, 0, min(len(m.Players), MaxPlayersKept))
		for _, p := range m.Players[:min(len(m.Players), MaxPlayersKept)] {
			rep.PlayerList = append(rep.PlayerList, Player{Name: p.Name, Ping: int(p.Ping)})
		}
		return h.verify(now, from, k, rep, dst)
	case *q4.GetServers:
		return h.q4GetServers(now, from, m, dst)

	case *q4.GameAuth:
		return h.gameAuth(now, from, m, dst)
	}
	return h.drop(dst, k, from, ReasonUnexpected)
}

// Tick does the master's timed work at now: it removes the servers that
// must go (telling the Persister) and appends the retries and re-probes
// that are due. The server calls it about once a second, so a retry goes
// out up to a second after it is due.
func (h *Handler) Tick(now time.Time, dst []Outgoing) []Outgoing {
	h.drops.tick(h.log)
	for _, r := range h.reg.Expire(now, nil) {
		h.stats.removed[r.Reason].Add(1)
		if r.Listed {
			h.log.Info("removed", "server", r.Addr, "reason", r.Reason)
			if fp, ok := h.deps.Persist.(FleetPersister); ok {
				fp.Remove(r)
			} else if h.deps.Persist != nil {
				h.deps.Persist.Delete(r.Addr)
			}
		}
	}
	for _, p := range h.reg.DueProbes(now, nil, h.conf().MaxProbesPerTick) {
		dst = h.probe(now, p, dst)
	}
	dst = h.tickUpstreams(now, dst)
	h.reg.clonesDue(now)
	if h.deps.Landmark != "" {
		for _, to := range h.reg.mesh.due(now) {
			dst = h.send(now, to, nil, laneAtOnce, dst, Outgoing{To: to, Kind: KindLandmarkPing, Payload: landmarkPing})
		}
	}
	return dst
}
