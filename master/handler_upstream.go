package master

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master/upstream"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

// Aggregation: the handler drives an upstream.Aggregator. Each Tick sends
// the queries due to the upstream masters, and takes up to
// HandlerConfig.LearnPerTick of the servers they named for their first
// check (Registry.Learn); a list packet from an upstream with a query in
// flight goes to the aggregator, and the servers it names are marked with
// their source (Registry.Report) or queued for that check. A server an
// upstream named is then a server like any other: re-probed on its
// game's period, dropped when silent, whether or not any upstream still
// names it.

// DefaultLearnPerTick bounds the new checks of learned servers per Tick
// (about a second): as many as re-probes (DefaultMaxProbesPerTick), so a
// 100,000-server upstream is verified in about 6.5 minutes, its first
// checks at most 256 small datagrams a second.
const DefaultLearnPerTick = DefaultMaxProbesPerTick

// upstreams is the handler's aggregation state.
//
// mu guards the fields below it; the registry's mutex may be taken
// while it is held, never the reverse.
type upstreams struct {
	mu      sync.Mutex
	agg     *upstream.Aggregator
	ids     []uint16 // each source's id in the registry
	fetches []upstream.Fetch
	// Counters of the first checks of learned servers, by outcome.
	learned [numReasons]uint64
}

// newUpstreams builds the aggregation of cfg; nil when it has no source.
func newUpstreams(cfg upstream.Config, reg *Registry, seed uint64) (*upstreams, error) {
	if len(cfg.Sources) == 0 {
		return nil, nil
	}
	cfg = resolveQueries(cfg, reg.Config().Catalogue)
	agg, err := upstream.New(time.Time{}, cfg, seed)
	if err != nil {
		return nil, err
	}
	u := &upstreams{agg: agg}
	if u.ids, err = sourceIDs(reg, agg.Sources()); err != nil {
		return nil, err
	}
	return u, nil
}

// resolveQueries fills the Game of each query that leaves it empty: the
// anonymous game a bare protocol asks for, or the game a query names.
func resolveQueries(cfg upstream.Config, cat *game.Catalogue) upstream.Config {
	for i := range cfg.Sources {
		qs := append([]upstream.Query(nil), cfg.Sources[i].Queries...)
		for j := range qs {
			q := &qs[j]
			if q.Game != "" {
				continue
			}
			switch {
			case q.Family == game.FamilyDoom3:
				if g, ok := cat.ByProtocol(game.FamilyDoom3, int(q.Q4.Protocol.Uint32())); ok {
					q.Game = g.Name
				}
			case q.Q3.GameName != "":
				q.Game = q.Q3.GameName
			default:
				if g, ok := cat.ByProtocol(game.FamilyQ3, q.Q3.Protocol); ok {
					q.Game = g.Name
				}
			}
		}
		cfg.Sources[i].Queries = qs
	}
	return cfg
}

func sourceIDs(reg *Registry, srcs []upstream.Source) ([]uint16, error) {
	ids := make([]uint16, len(srcs))
	for i, s := range srcs {
		id, ok := reg.SourceID(s.Name)
		if !ok {
			return nil, fmt.Errorf("master: more than %d source names", MaxSourceNames)
		}
		ids[i] = id
	}
	return ids, nil
}

// tickUpstreams sends the upstream queries due at now and starts the
// first checks of up to LearnPerTick learned servers.
func (h *Handler) tickUpstreams(now time.Time, dst []Outgoing) []Outgoing {
	u := h.up.Load()
	if u == nil {
		return dst
	}
	u.mu.Lock()
	sends, fetches := u.agg.Poll(now)
	u.fetches = append(u.fetches, fetches...)
	cands := u.agg.Next(cmp.Or(h.conf().LearnPerTick, DefaultLearnPerTick), nil)
	ids := u.ids
	u.mu.Unlock()
	for _, s := range sends {
		k := KindUpstreamQuery
		if s.Family == game.FamilyDoom3 {
			k = KindUpstreamQ4Query
		}
		dst = h.send(now, s.To, nil, laneAtOnce, dst, Outgoing{To: s.To, Kind: k, Payload: s.Payload})
	}
	var outcomes [numReasons]uint64
	for i, c := range cands {
		p, probe, why := h.reg.Learn(now, ids[c.Source], c)
		if why == ReasonTooManyPending {
			// The checks in flight are full: the rest wait for the
			// next tick, in order.
			u.mu.Lock()
			u.agg.Requeue(cands[i:])
			u.mu.Unlock()
			break
		}
		outcomes[why]++
		if probe {
			dst = h.probe(now, p, dst)
		}
	}
	u.mu.Lock()
	for r, n := range outcomes {
		u.learned[r] += n
	}
	u.mu.Unlock()
	return dst
}

// upstreamList hands a list packet from from to the aggregator, and
// reports whether it was the aggregator's (a query of from in flight).
func (h *Handler) upstreamList(now time.Time, from netip.AddrPort, p upstream.Packet) bool {
	u := h.up.Load()
	if u == nil {
		return false
	}
	u.mu.Lock()
	found, ok := u.agg.Receive(now, from, p, nil)
	var id uint16
	if ok && len(found) > 0 {
		id = u.ids[found[0].Source]
	}
	u.mu.Unlock()
	if ok {
		h.learn(now, id, found)
	}
	return ok
}

// learn marks the servers of found that the registry knows with source
// id and queues the others for their first check.
func (h *Handler) learn(now time.Time, id uint16, found []upstream.Found) {
	if len(found) == 0 {
		return
	}
	unknown := h.reg.Report(now, id, found, nil)
	if len(unknown) == 0 {
		return
	}
	u := h.up.Load()
	u.mu.Lock()
	u.agg.Queue(unknown)
	u.mu.Unlock()
}

// serversPacket returns a Quake III server list as the aggregator reads
// it.
func serversPacket(m q3.ServersResponse, err error) upstream.Packet {
	return upstream.Packet{Family: game.FamilyQ3, Ext: m.Ext, Servers: m.Servers, Dropped: len(m.Dropped), End: m.End != q3.EndNone, Err: err}
}

// q4ServersPacket returns a Doom 3 family server list as the aggregator
// reads it: no end marker ever.
func q4ServersPacket(m *q4.Servers, err error) upstream.Packet {
	p := upstream.Packet{Family: game.FamilyDoom3, Err: err}
	if m != nil {
		p.Servers = m.Servers
	}
	return p
}

// TakeFetches returns the peer lists due for fetching since the last call
// (the shell fetches each and hands it to Offer).
func (h *Handler) TakeFetches() []upstream.Fetch {
	u := h.up.Load()
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	f := u.fetches
	u.fetches = nil
	return f
}

// Offer hands the handler the list the shell fetched from peer source i
// (err: why the fetch failed), as upstream.Aggregator.Offer.
func (h *Handler) Offer(now time.Time, i int, list []upstream.PeerServer, took time.Duration, err error) {
	u := h.up.Load()
	if u == nil {
		return
	}
	u.mu.Lock()
	found := u.agg.Offer(now, i, list, took, err, nil)
	var id uint16
	if i >= 0 && i < len(u.ids) {
		id = u.ids[i]
	}
	u.mu.Unlock()
	h.learn(now, id, found)
}

// Upstreams returns each upstream source's health at now, with how many
// of the servers of its last successful refresh this master lists; nil
// without upstreams.
func (h *Handler) Upstreams(now time.Time) []upstream.Health {
	u := h.up.Load()
	if u == nil {
		return nil
	}
	u.mu.Lock()
	hs := u.agg.Health(now)
	since := make(map[uint16]time.Time, len(hs))
	for i := range hs {
		if t := u.agg.LastSuccess(i); !t.IsZero() {
			since[u.ids[i]] = t
		}
	}
	ids := u.ids
	u.mu.Unlock()
	listed := h.reg.ListedBy(since)
	for i := range hs {
		if _, ok := since[ids[i]]; ok {
			hs[i].Verified = listed[ids[i]]
		}
	}
	return hs
}

// LearnOutcomes returns the first checks of learned servers by outcome:
// OK for those started (or found known), the reason of each refused.
func (h *Handler) LearnOutcomes() map[Reason]uint64 {
	out := map[Reason]uint64{}
	u := h.up.Load()
	if u == nil {
		return out
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for r, n := range u.learned {
		if n > 0 {
			out[Reason(r)] = n
		}
	}
	return out
}

// LearnQueued returns the learned servers waiting for their first check.
func (h *Handler) LearnQueued() int {
	u := h.up.Load()
	if u == nil {
		return 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.agg.Queued()
}

// SetUpstreams replaces the upstream sources and settings at now (a
// reload; a zero now asks new sources at the next Tick): sources kept by
// name keep their health and schedule. A handler built without upstreams
// gets them.
func (h *Handler) SetUpstreams(now time.Time, cfg upstream.Config, seed uint64) error {
	cfg = resolveQueries(cfg, h.reg.Config().Catalogue)
	u := h.up.Load()
	if u == nil {
		nu, err := newUpstreams(cfg, h.reg, seed)
		if err != nil || nu == nil {
			return err
		}
		if !h.up.CompareAndSwap(nil, nu) {
			return errors.New("master: upstreams set twice at once")
		}
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	next, err := upstream.New(time.Time{}, cfg, seed) // checks cfg before anything changes
	if err != nil {
		return err
	}
	ids, err := sourceIDs(h.reg, next.Sources())
	if err != nil {
		return err
	}
	if _, err := u.agg.Reconfigure(now, cfg); err != nil {
		return err
	}
	u.ids = ids
	return nil
}
