package master

import (
	"net/netip"
	"slices"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master/upstream"
)

// Where the master learned of each server, and when each source last
// named it: its own heartbeats (Server.LastHeartbeat), an upstream master
// or a scout peer (package upstream), or a peer master's register. The
// marks live in a map of their own, off the entry, so that a server only
// heartbeats reach costs nothing: a server some source named costs the
// map's slot and 16 bytes a source. They are not kept across restarts:
// each source names its servers again at its next refresh.

// SourceHeartbeat is the source name of a server's own heartbeats.
const SourceHeartbeat = "heartbeat"

// SourceRegister begins the source name of a peer master's register
// messages: "register from ADDR:PORT".
const SourceRegister = "register from "

// MaxSourceNames bounds the source names the registry keeps: the
// upstreams (upstream.MaxSources) and the peer masters that register
// servers (a name each).
const MaxSourceNames = 256

// SourceMark is one source of a server and when it last named it.
type SourceMark struct {
	Source string    `json:"source"`
	At     time.Time `json:"at"`
}

// mark is a SourceMark as the registry keeps it.
type mark struct {
	id uint16
	at stamp
}

// SourceID returns the registry's id for the source name, making one if
// it is new; false when MaxSourceNames are taken.
func (r *Registry) SourceID(name string) (uint16, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sourceIDLocked(name)
}

func (r *Registry) sourceIDLocked(name string) (uint16, bool) {
	if id, ok := r.srcIDs[name]; ok {
		return id, true
	}
	if len(r.srcNames) >= MaxSourceNames {
		return 0, false
	}
	id := uint16(len(r.srcNames))
	r.srcNames = append(r.srcNames, name)
	r.srcIDs[name] = id
	return id, true
}

// markLocked records that source id named the server at k at now.
func (r *Registry) markLocked(k serverKey, id uint16, now stamp) {
	ms := r.marks[k]
	for i := range ms {
		if ms[i].id == id {
			ms[i].at = now
			return
		}
	}
	r.marks[k] = append(ms, mark{id, now})
}

// sourcesLocked returns the sources of e other than its heartbeats
// (Server.LastHeartbeat), in the order they first named it.
func (r *Registry) sourcesLocked(e *entry) []SourceMark {
	ms := r.marks[keyOf(e.Addr)]
	if len(ms) == 0 {
		return nil
	}
	out := make([]SourceMark, 0, len(ms))
	for _, m := range ms {
		out = append(out, SourceMark{r.srcNames[m.id], m.at.Time()})
	}
	return out
}

// Note records that the source called name named the server at a at now,
// if the registry knows it (and has room for the name).
func (r *Registry) Note(now time.Time, a netip.AddrPort, name string) {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	r.mu.Lock()
	defer r.mu.Unlock()
	k := keyOf(a)
	if _, ok := r.servers[k]; !ok {
		return
	}
	if id, ok := r.sourceIDLocked(name); ok {
		r.markLocked(k, id, stampOf(now))
	}
}

// Report records that source id named the servers of found at now, for
// those the registry knows (listed or pending), and appends the others
// to unknown: the servers to verify.
func (r *Registry) Report(now time.Time, id uint16, found []upstream.Found, unknown []upstream.Found) []upstream.Found {
	at := stampOf(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range found {
		k := keyOf(f.Addr)
		if _, ok := r.servers[k]; ok {
			r.markLocked(k, id, at)
		} else {
			unknown = append(unknown, f)
		}
	}
	return unknown
}

// Learn starts the check of a server that source id named (an upstream
// master, a scout peer): as a heartbeat would, under the same limits,
// policy and block list, but without a heartbeat's game tag: the server
// is taken to be of f.Game when that is an anonymous game (what "getservers
// 68" lists), else its reply must name its game. probe is false when
// there is nothing to send: the server is known already (its mark is
// updated), or why refuses it.
func (r *Registry) Learn(now time.Time, id uint16, f upstream.Found) (p Probe, probe bool, why Reason) {
	cfg := r.conf()
	var hb *game.Game
	if g, ok := cfg.Catalogue.ByName(f.Game); ok {
		if !cfg.Policy.Accepts(g.Name) {
			return Probe{}, false, ReasonGamePolicy
		}
		if g.Anonymous && len(g.Heartbeats) > 0 && g.Family == f.Family {
			hb = g
		}
	}
	if f.Family != game.FamilyQ3 && f.Family != game.FamilyDoom3 {
		return Probe{}, false, ReasonBadProtocol
	}
	src, why := classify(f.Addr, cfg.AllowLoopback, cfg.RefusePrivate, cfg.AddrMap)
	if why != OK {
		return Probe{}, false, why
	}
	if r.Blocked(src.Addr()) != nil {
		return Probe{}, false, ReasonBlocked
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := keyOf(src)
	if _, ok := r.servers[k]; ok {
		r.markLocked(k, id, stampOf(now))
		return Probe{}, false, OK
	}
	ak := addrKeyOf(src.Addr())
	switch {
	case len(r.servers) >= cfg.MaxServers:
		return Probe{}, false, ReasonServerListFull
	case r.pending >= cfg.MaxPending:
		return Probe{}, false, ReasonTooManyPending
	case cfg.MaxServersPerAddress > 0 && int(r.perKey[ak]) >= cfg.MaxServersPerAddress:
		return Probe{}, false, ReasonAddressFull
	}
	e := &entry{Addr: src, Family: f.Family, hbGame: hb, FirstSeen: stampOf(now)}
	r.servers[k] = e
	r.perKey[ak]++
	r.pending++
	r.markLocked(k, id, stampOf(now))
	return r.startProbeLocked(now, e, game.GetInfo, CauseLearned), true, OK
}

// Sources returns where the server at a was learned from besides its own
// heartbeats (Server.LastHeartbeat), each source in the order it first
// named it; nil if it is unknown or no source named it.
func (r *Registry) Sources(a netip.AddrPort) []SourceMark {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.servers[keyOf(a)]
	if !ok {
		return nil
	}
	return r.sourcesLocked(e)
}

// ListedBy counts, for each source id of since, the listed servers that
// source named at or after since[id] (its last successful refresh): how
// many of the servers it reported the master verified.
func (r *Registry) ListedBy(since map[uint16]time.Time) map[uint16]int {
	from := make(map[uint16]stamp, len(since))
	for id, t := range since {
		from[id] = stampOf(t)
	}
	out := make(map[uint16]int, len(since))
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, ms := range r.marks {
		e, ok := r.servers[k]
		if !ok || !e.Listed {
			continue
		}
		for _, m := range ms {
			if t, ok := from[m.id]; ok && m.at >= t {
				out[m.id]++
			}
		}
	}
	return out
}

// Block is one entry of the block list: servers in Prefix are refused,
// for Reason (published as is: the field's norm is to say why).
type Block struct {
	Prefix netip.Prefix `json:"prefix"`
	Reason string       `json:"reason"`
}

// MaxBlocks bounds the block list; MaxBlockReasonLen each reason.
const (
	MaxBlocks         = 4096
	MaxBlockReasonLen = 200
)

// blockList is an immutable block list, most specific prefixes first.
type blockList []Block

// newBlockList returns bs (prefixes masked, IPv4-mapped ones unmapped),
// most specific first so that Blocked names the closest rule.
func newBlockList(bs []Block) blockList {
	out := make(blockList, 0, len(bs))
	for _, b := range bs {
		p := b.Prefix
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, Block{Prefix: p.Masked(), Reason: b.Reason})
	}
	slices.SortStableFunc(out, func(a, b Block) int { return b.Prefix.Bits() - a.Prefix.Bits() })
	return out
}

func (l blockList) find(a netip.Addr) *Block {
	a = a.Unmap().WithZone("")
	for i := range l {
		if l[i].Prefix.Contains(a) {
			return &l[i]
		}
	}
	return nil
}

// Blocked returns the block-list entry that refuses a, or nil.
func (r *Registry) Blocked(a netip.Addr) *Block {
	if l := r.blocks.Load(); l != nil {
		return l.find(a)
	}
	return nil
}

// BlockList returns the block list, most specific prefixes first.
func (r *Registry) BlockList() []Block {
	if l := r.blocks.Load(); l != nil {
		return slices.Clone(*l)
	}
	return nil
}

// SetBlockList replaces the block list. The servers it now refuses,
// listed or pending, are removed by the next Expire (ReasonBlocked), so
// that their removal reaches the Persister as any other.
func (r *Registry) SetBlockList(bs []Block) {
	l := newBlockList(bs)
	r.blocks.Store(&l)
	r.blockCheck.Store(true)
}
