package master

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/infostring"
	"github.com/scout-discovery/scout/q3"
	"github.com/scout-discovery/scout/q4"
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
// (HandlerConfig.DeferEncoding): it has no payload, and the shell passes
// it to Handler.Encode instead of sending it.
type Outgoing struct {
	To      netip.AddrPort
	Kind    Kind
	Payload []byte
	Encode  *Encoding
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

// HandlerConfig configures a Handler. Only Registry is required; a nil
// limiter or budget disables that defence.
type HandlerConfig struct {
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
	// Observer is told of every verified reply (package web keeps each
	// server's player count over time from them); nil tells no one.
	Observer Observer
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
	// last server of a packet that does not end with one (measured with
	// quakestat against a two-packet reply: 4 of 5 servers listed without
	// it, 5 of 5 with it).
	EndOnLastOnly bool
	// Landmark, if not empty, is this master's id as a landmark: a
	// getserversExt with the word q3.LandmarksKeyword is answered with
	// the list and then this master's RTTs to the servers listed
	// (landmarks.go). Empty: the word is ignored like any unknown one.
	Landmark string
	// DeferEncoding, when positive, leaves to Handler.Encode the reply
	// to a list query for a game and protocol that list at least that
	// many servers (before the query's filters), unless it is cached for
	// the current listing and asks for no landmark packets:
	// HandlePacket returns one Outgoing with Encode set instead of the
	// reply's packets, for the shell to encode off its socket loop. 0
	// encodes every reply in HandlePacket.
	DeferEncoding int
	// MOTD is the message of the day for ET's getmotd.
	MOTD string
	// Peers are the masters whose register messages are accepted; a
	// port of 0 accepts any port of that address.
	Peers []netip.AddrPort
	// Upstreams are the masters verified IPv4 servers are forwarded to
	// with register.
	Upstreams []netip.AddrPort
	// MaxProbesPerTick bounds the new checks (re-probes, restored
	// servers) per Tick; 0 means DefaultMaxProbesPerTick. Retries of
	// checks in flight are not counted against it: at most one per check
	// per Tick, VerifyRetries per check.
	MaxProbesPerTick int
	// Logger receives listing events at Info, the refusals of a whole
	// class of servers (bad_gametype, bad_protocol, unknown_heartbeat,
	// ...) at Warn once per server and reason (see MaxLoggedDrops), and
	// every drop at Debug; nil discards.
	Logger *slog.Logger
}

// Handler turns datagrams into decisions and datagrams: a mostly pure
// function of (now, source, bytes). It owns no socket and never reads the
// clock. Its only side effects are the registry, the limiters, the
// counters in Stats, the Persister and the logger.
//
// A Handler is safe for concurrent use: each socket's goroutine may call
// it. It holds no mutable state of its own beyond atomic counters.
type Handler struct {
	cfg   HandlerConfig
	reg   *Registry
	stats Stats
	log   *slog.Logger
	drops *dropLog // refusals of whole classes of servers, logged once each
}

// NewHandler returns a handler for cfg.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	if cfg.Registry == nil {
		return nil, errors.New("master: handler without a registry")
	}
	if cfg.MaxPacketBytes == 0 {
		cfg.MaxPacketBytes = q3.DefaultMaxBytes
	}
	if cfg.MaxProbesPerTick == 0 {
		cfg.MaxProbesPerTick = DefaultMaxProbesPerTick
	}
	if cfg.Landmark != "" {
		if _, err := q3.EncodeLandmarksResponses(cfg.Landmark, nil, 0); err != nil {
			return nil, errors.New("master: landmark id: " + err.Error())
		}
	}
	if len(cfg.MOTD) > MaxMOTDLen || strings.ContainsAny(cfg.MOTD, "\"\\\x00\n") {
		return nil, errors.New(`master: the message of the day must be at most 1024 bytes without '"', '\', NUL or newline`)
	}
	// Check the split options once, with a worst-case (IPv6) entry.
	probe := []netip.AddrPort{netip.MustParseAddrPort("[2001:db8::1]:1")}
	if _, err := q3.EncodeServersResponses(probe, q3.SplitOptions{Ext: true, End: q3.EndEOT, MaxBytes: cfg.MaxPacketBytes, MaxEntries: cfg.MaxEntries}); err != nil {
		return nil, err
	}
	if cfg.MaxPacketBytes > 65507 {
		return nil, errors.New("master: server-list packets cannot exceed 65507 bytes")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg, reg: cfg.Registry, log: log, drops: newDropLog()}, nil
}

// Stats returns the handler's counters.
func (h *Handler) Stats() *Stats { return &h.stats }

// Registry returns the handler's registry.
func (h *Handler) Registry() *Registry { return h.reg }

// Config returns the handler's configuration, with its defaults filled in.
func (h *Handler) Config() HandlerConfig { return h.cfg }

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
	m, err := q3.Parse(pkt)
	switch {
	case err == nil:
		return m, k, OK
	case errors.Is(err, q3.ErrUnknownCommand):
		return nil, k, ReasonUnknownCommand
	}
	if gs, ok := m.(q3.GetServers); ok && errors.Is(err, q3.ErrTruncated) {
		// Every word read, but the datagram ends in whitespace: "getservers
		// 84 " as old Enemy Territory clients send. dpmaster answers it
		// (its option loop skips empty words), and so does scout.
		return gs, k, OK
	}
	return nil, k, ReasonMalformed
}

func (h *Handler) handleQ3(now time.Time, from netip.AddrPort, pkt []byte, dst []Outgoing) []Outgoing {
	m, k, why := parseQ3(pkt)
	h.stats.in[k].Add(1)
	if why != OK {
		return h.drop(dst, k, from, why)
	}
	switch m := m.(type) {
	case q3.Heartbeat:
		if why := h.allow(h.cfg.Heartbeats, now, from); why != OK {
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
		return h.getServers(now, from, m, dst)
	case q3.ServersResponse:
		// A landmark ping's reply from another landmark master (mesh.go);
		// any other list sent to a master is unexpected.
		if h.cfg.Landmark != "" && !m.Ext && len(m.Servers) == 0 && len(m.Dropped) == 0 && m.End != q3.EndNone && h.reg.mesh.pong(now, from) {
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

// probe builds the requests of p: getchallenge, getstatus, getinfo in that
// order for the Quake III family, getInfo for Doom 3 / Quake 4.
func (h *Handler) probe(now time.Time, p Probe, dst []Outgoing) []Outgoing {
	var outs [3]Outgoing
	n := 0
	add := func(k Kind, b []byte, err error) {
		if err != nil {
			// Our own challenge is always encodable; this is a bug.
			h.log.Error("encoding a probe", "kind", k, "err", err)
			return
		}
		outs[n] = Outgoing{To: p.To, Kind: k, Payload: b}
		n++
	}
	if p.Family == game.FamilyDoom3 {
		m := q4.GetInfo{Challenge: p.Challenge.Int32}
		b, err := m.AppendBinary(nil)
		add(KindQ4GetInfo, b, err)
	} else {
		if p.Requests&game.GetChallenge != 0 {
			b, err := q3.GetChallenge{}.AppendBinary(nil)
			add(KindGetChallenge, b, err)
		}
		if p.Requests&game.GetStatus != 0 {
			b, err := q3.GetStatus{Challenge: p.Challenge.Text}.AppendBinary(nil)
			add(KindGetStatus, b, err)
		}
		if p.Requests&game.GetInfo != 0 {
			b, err := q3.GetInfo{Challenge: p.Challenge.Text}.AppendBinary(nil)
			add(KindGetInfo, b, err)
		}
	}
	if p.Try > 0 {
		h.stats.retries[p.Cause].Add(1)
	} else {
		h.stats.probes[p.Cause].Add(1)
	}
	return h.send(now, p.To, nil, dst, outs[:n]...)
}

// reserve takes a reply of payload bytes in datagrams datagrams to to from
// lim (a nil lim, as for the master's own probes, skips it), then from the
// global budget. A reply the budget refuses stays charged to lim: an
// exhausted budget makes the per-victim limit stricter, never looser.
func (h *Handler) reserve(now time.Time, to netip.AddrPort, lim *ResponseLimiter, payload, datagrams int) Reason {
	if lim != nil {
		if why := lim.Allow(now, to, Cost(to.Addr(), payload, datagrams)); why != OK {
			return why
		}
	}
	if h.cfg.Budget != nil {
		return h.cfg.Budget.Reserve(now, payload)
	}
	return OK
}

// send reserves the bytes of outs from lim and the budget and appends them
// to dst, all or nothing.
func (h *Handler) send(now time.Time, to netip.AddrPort, lim *ResponseLimiter, dst []Outgoing, outs ...Outgoing) []Outgoing {
	total := 0
	for _, o := range outs {
		total += len(o.Payload)
	}
	if why := h.reserve(now, to, lim, total, len(outs)); why != OK {
		h.stats.dropped[why].Add(1)
		h.stats.denied.Add(uint64(total))
		return dst
	}
	for _, o := range outs {
		h.stats.out[o.Kind].Add(1)
		h.stats.outBytes[o.Kind].Add(uint64(len(o.Payload)))
	}
	return append(dst, outs...)
}

// verify passes a server's reply to the registry and acts on the change.
func (h *Handler) verify(now time.Time, from netip.AddrPort, k Kind, rep Reply, dst []Outgoing) []Outgoing {
	s, ch, why := h.reg.Verify(now, from, rep)
	if why != OK {
		return h.drop(dst, k, from, why)
	}
	h.stats.changes[ch].Add(1)
	switch ch {
	case ChangeListed:
		h.log.Info("listed", "server", s.Addr, "game", s.Game, "protocol", s.Protocol, "clients", s.Clients, "max_clients", s.MaxClients)
		fallthrough
	case ChangeUpdated:
		if h.cfg.Persist != nil {
			h.cfg.Persist.Put(s)
		}
	case ChangeRefreshed:
		if fp, ok := h.cfg.Persist.(FleetPersister); ok {
			fp.Refresh(s)
		}
	}
	// After the Persister: a commit that the observer's change starts
	// (masterd's history) has the server's change in it too.
	if h.cfg.Observer != nil {
		h.cfg.Observer.Verified(now, s)
	}
	return h.forward(now, s, dst)
}

// forward passes a verified IPv4 Quake III server to the upstream masters,
// as Q3Master's register. It runs once per verified check, so at most
// about once per heartbeat or re-probe interval per server.
func (h *Handler) forward(now time.Time, s Server, dst []Outgoing) []Outgoing {
	if len(h.cfg.Upstreams) == 0 || s.Family != game.FamilyQ3 {
		return dst
	}
	pub, _ := h.reg.Config().AddrMap.Map(s.Addr)
	if !pub.Addr().Is4() {
		return dst
	}
	b, err := q3.Register{Server: pub}.AppendBinary(nil)
	if err != nil {
		return dst
	}
	for _, up := range h.cfg.Upstreams {
		dst = h.send(now, up, nil, dst, Outgoing{To: up, Kind: KindRegister, Payload: b})
	}
	return dst
}

// register handles a peer master's register: the server it names is
// challenged as if it had sent a heartbeat. The tag is unknown, so the
// server must name its game in its infoResponse (gamename), as ioquake3
// and DarkPlaces servers do.
func (h *Handler) register(now time.Time, from netip.AddrPort, m q3.Register, dst []Outgoing) []Outgoing {
	if !h.isPeer(from) {
		return h.drop(dst, KindRegister, from, ReasonNotPeer)
	}
	if why := h.allow(h.cfg.Heartbeats, now, m.Server); why != OK {
		return h.drop(dst, KindRegister, from, why)
	}
	p, why := h.reg.Heartbeat(now, m.Server, Heartbeat{Family: game.FamilyQ3, Tag: game.HeartbeatDarkPlaces})
	if why != OK {
		return h.drop(dst, KindRegister, m.Server, why) // the server refused, as a heartbeat's
	}
	return h.probe(now, p, dst)
}

func (h *Handler) isPeer(a netip.AddrPort) bool {
	for _, p := range h.cfg.Peers {
		if p.Addr().Unmap() == a.Addr() && (p.Port() == 0 || p.Port() == a.Port()) {
			return true
		}
	}
	return false
}

// getServers answers getservers and getserversExt.
func (h *Handler) getServers(now time.Time, from netip.AddrPort, m q3.GetServers, dst []Outgoing) []Outgoing {
	k := KindGetServers
	if m.Ext {
		k = KindGetServersExt
	}
	if badSource(from) {
		return h.drop(dst, k, from, ReasonBadAddress)
	}
	if m.Ext && m.GameName == "" {
		// The game name is mandatory in getserversExt (dpmaster reads the
		// first word as the name, finds no protocol after it, and answers
		// nothing): early ioquake3's "getserversExt 68 empty ipv6".
		return h.drop(dst, k, from, ReasonExtWithoutGame)
	}
	if why := h.allow(h.cfg.Queries, now, from); why != OK {
		return h.drop(dst, k, from, why)
	}
	q := Query{Family: game.FamilyQ3, Game: m.GameName, Protocol: m.Protocol, Empty: m.Empty, Full: m.Full}
	if m.GameType != "" {
		q.Gametype, q.HasGametype = m.GameType, true
	}
	if m.Ext {
		q.IPv4, q.IPv6 = m.IPv4, m.IPv6
	} else {
		q.IPv4 = true // the short form has no room for IPv6 entries
	}
	f, why := h.reg.resolve(q, h.reg.current(now))
	switch why {
	case OK:
	case ReasonUnknownGame:
		// A well-formed query for a protocol no game lists and no listed
		// anonymous server uses gets the empty list, as from dpmaster, so
		// the client stops waiting; it is no larger than the query's own
		// reply to an empty game.
		h.stats.unknownGame.Add(1)
		f = filter{game: "\x00unknown"} // matches no group
	default:
		return h.drop(dst, k, from, why)
	}
	end := q3.EndEOT
	if m.GameName == "" && (m.Protocol == 43 || m.Protocol == 45) {
		end = q3.EndNUL // Q3Master notes: protocols 43/45 end with one NUL
	}
	form := replyForm{split: q3.SplitOptions{
		Ext: m.Ext, End: end, MaxEntries: h.cfg.MaxEntries, MaxBytes: h.cfg.MaxPacketBytes,
	}}
	outK := KindServersResponse
	if m.Ext {
		outK = KindServersExtResponse
	}
	var landmarks lmAsk
	if m.Ext && h.cfg.Landmark != "" && slices.Contains(m.Other, q3.LandmarksKeyword) {
		landmarks = lmRuns
		if slices.Contains(m.Other, q3.LandmarkPeersKeyword) {
			landmarks |= lmPeers
		}
	}
	return h.reply(now, from, outK, f, form, !h.cfg.EndOnLastOnly, landmarks, dst)
}

// sendList sends a cached server-list reply, all or nothing: its bytes
// are reserved from the response limiter and the budget at once, and its packets rotated for
// fairness (see answer).
func (h *Handler) sendList(now time.Time, to netip.AddrPort, k Kind, a *answer, dst []Outgoing) []Outgoing {
	if why := h.reserve(now, to, h.cfg.Responses, a.bytes, len(a.pkts)); why != OK {
		h.stats.dropped[why].Add(1)
		h.stats.denied.Add(uint64(a.bytes))
		return dst
	}
	h.stats.out[k].Add(uint64(len(a.pkts)))
	h.stats.outBytes[k].Add(uint64(a.bytes))
	h.stats.answers.Add(1)
	return a.appendTo(dst, to, k, h.reg.rotation.Add(1))
}

// answer sends a query's reply packets, all or nothing.
func (h *Handler) answer(now time.Time, to netip.AddrPort, k Kind, pkts [][]byte, dst []Outgoing) []Outgoing {
	outs := make([]Outgoing, len(pkts))
	for i, p := range pkts {
		outs[i] = Outgoing{To: to, Kind: k, Payload: p}
	}
	n := len(dst)
	dst = h.send(now, to, h.cfg.Responses, dst, outs...)
	if len(dst) > n {
		h.stats.answers.Add(1)
	}
	return dst
}

// handleQ4 handles the Doom 3 / Quake 4 packets.
func (h *Handler) handleQ4(now time.Time, from netip.AddrPort, pkt []byte, dst []Outgoing) []Outgoing {
	m, err := q4.Parse(pkt)
	k := kindOfQ4(m)
	h.stats.in[k].Add(1)
	switch {
	case errors.Is(err, q4.ErrUnknownCommand):
		return h.drop(dst, k, from, ReasonUnknownCommand)
	case err != nil:
		return h.drop(dst, k, from, ReasonMalformed)
	}
	switch m := m.(type) {
	case *q4.Heartbeat:
		if why := h.allow(h.cfg.Heartbeats, now, from); why != OK {
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

func (h *Handler) q4GetServers(now time.Time, from netip.AddrPort, m *q4.GetServers, dst []Outgoing) []Outgoing {
	k := KindQ4GetServers
	if badSource(from) {
		return h.drop(dst, k, from, ReasonBadAddress)
	}
	if why := h.allow(h.cfg.Queries, now, from); why != OK {
		return h.drop(dst, k, from, why)
	}
	q := Query{Family: game.FamilyDoom3, Protocol: int(m.Protocol.Uint32()), IPv4: true}
	if _, ok := h.reg.Config().Catalogue.ByProtocol(game.FamilyDoom3, q.Protocol); !ok && m.Protocol.Major == 0 {
		// qstat's q4m and dm3m send protocol 0.0: tell the games by the
		// request's layout, and list every protocol of that game.
		q.Game, q.AnyProtocol = "Doom3", true
		if m.Dialect == q4.DialectQuake4 {
			q.Game = "Quake4"
		}
	}
	// The players filter (gui_filter_players): 0 any, 1 not full, 2 not
	// full and not empty. Password and gametype filters are the client's.
	switch m.Filter.Players {
	case 1:
		q.Empty = true
	case 2:
	default:
		q.Empty, q.Full = true, true
	}
	f, why := h.reg.resolve(q, h.reg.current(now))
	switch why {
	case OK:
	case ReasonUnknownGame:
		f = filter{game: "\x00unknown"} // matches no group: the empty list
	default:
		return h.drop(dst, k, from, why)
	}
	form := replyForm{q4: true, split: q3.SplitOptions{MaxBytes: min(h.cfg.MaxPacketBytes, q4.MaxServersPacketLen)}}
	return h.reply(now, from, KindQ4Servers, f, form, true, 0, dst)
}

// gameAuth answers a Doom 3 / Quake 4 client's key check. id's key
// database is gone, so the master cannot tell a good key from a bad one:
// it accepts every well-formed request with a CD key and returns a GUID
// derived from the key (so the same key keeps the same GUID, and the key
// cannot be read back from it). A request without a CD key is refused
// with "invalid".
func (h *Handler) gameAuth(now time.Time, from netip.AddrPort, m *q4.GameAuth, dst []Outgoing) []Outgoing {
	k := KindQ4GameAuth
	if badSource(from) {
		return h.drop(dst, k, from, ReasonBadAddress)
	}
	if why := h.allow(h.cfg.Queries, now, from); why != OK {
		return h.drop(dst, k, from, why)
	}
	reply := q4.AuthKey{Kind: q4.AuthBadKey, Reason: q4.AuthBadInvalid, XPKeyValid: !m.HasXPKey}
	if m.HasCDKey && m.CDKey != "" {
		reply = q4.AuthKey{Kind: q4.AuthGUID, GUID: GUIDOf(m.CDKey)}
	}
	b, err := reply.AppendBinary(nil)
	if err != nil {
		return h.drop(dst, k, from, ReasonMalformed)
	}
	return h.answer(now, from, KindQ4AuthKey, [][]byte{b}, dst)
}

// GUIDOf is the GUID the master gives a CD key: 11 characters of the
// base32 SHA-256 of the key (the Doom 3 server keeps 11).
func GUIDOf(cdkey string) string {
	sum := sha256.Sum256([]byte("scout-master-guid\x00" + cdkey))
	return base32.StdEncoding.EncodeToString(sum[:])[:11]
}

// HandleMOTD handles one datagram that arrived on the message-of-the-day
// port: Enemy Territory's getmotd, answered with motd echoing the
// client's challenge. Anything else is dropped.
func (h *Handler) HandleMOTD(now time.Time, from netip.AddrPort, pkt []byte, dst []Outgoing) []Outgoing {
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	h.stats.inBytes.Add(uint64(len(pkt)))
	if !bytes.HasPrefix(pkt, []byte(q3.Prefix)) {
		h.stats.in[KindGarbage].Add(1)
		return h.drop(dst, KindGarbage, from, ReasonNotConnectionless)
	}
	m, k, why := parseQ3(pkt)
	h.stats.in[k].Add(1)
	if why != OK {
		return h.drop(dst, k, from, why)
	}
	req, ok := m.(q3.GetMOTD)
	if !ok {
		return h.drop(dst, k, from, ReasonWrongPort)
	}
	if badSource(from) {
		return h.drop(dst, k, from, ReasonBadAddress)
	}
	if why := h.allow(h.cfg.Queries, now, from); why != OK {
		return h.drop(dst, k, from, why)
	}
	c, _ := req.Info.Get("challenge")
	if len(c) > MaxMOTDChallengeLen || strings.ContainsRune(c, '"') {
		return h.drop(dst, k, from, ReasonMalformed)
	}
	b, err := q3.MOTD{Info: infostring.Info{{Key: "challenge", Value: c}, {Key: "motd", Value: h.cfg.MOTD}}}.AppendBinary(nil)
	if err != nil {
		return h.drop(dst, k, from, ReasonMalformed)
	}
	return h.answer(now, from, KindMOTD, [][]byte{b}, dst)
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
			if fp, ok := h.cfg.Persist.(FleetPersister); ok {
				fp.Remove(r)
			} else if h.cfg.Persist != nil {
				h.cfg.Persist.Delete(r.Addr)
			}
		}
	}
	for _, p := range h.reg.DueProbes(now, nil, h.cfg.MaxProbesPerTick) {
		dst = h.probe(now, p, dst)
	}
	if h.cfg.Landmark != "" {
		for _, to := range h.reg.mesh.due(now) {
			dst = h.send(now, to, nil, dst, Outgoing{To: to, Kind: KindLandmarkPing, Payload: landmarkPing})
		}
	}
	return dst
}
