package master

import (
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

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
	return h.send(now, p.To, nil, laneAtOnce, dst, outs[:n]...)
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
		if h.deps.Persist != nil {
			h.deps.Persist.Put(s)
		}
	case ChangeRefreshed:
		if fp, ok := h.deps.Persist.(FleetPersister); ok {
			fp.Refresh(s)
		}
	}
	// After the Persister: a commit that the observer's change starts
	// (masterd's history) has the server's change in it too.
	if h.deps.Observer != nil {
		h.deps.Observer.Verified(now, s)
	}
	return h.forward(now, s, dst)
}

// forward passes a verified IPv4 Quake III server to the upstream masters,
// as Q3Master's register. It runs once per verified check, so at most
// about once per heartbeat or re-probe interval per server.
func (h *Handler) forward(now time.Time, s Server, dst []Outgoing) []Outgoing {
	if len(h.conf().Upstreams) == 0 || s.Family != game.FamilyQ3 {
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
	for _, up := range h.conf().Upstreams {
		dst = h.send(now, up, nil, laneAtOnce, dst, Outgoing{To: up, Kind: KindRegister, Payload: b})
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
	if why := h.allow(h.deps.Heartbeats, now, m.Server); why != OK {
		return h.drop(dst, KindRegister, from, why)
	}
	p, why := h.reg.Heartbeat(now, m.Server, Heartbeat{Family: game.FamilyQ3, Tag: game.HeartbeatDarkPlaces})
	if why == OK || why == ReasonProbeOutstanding {
		h.reg.Note(now, m.Server, SourceRegister+from.String())
	}
	if why != OK {
		return h.drop(dst, KindRegister, m.Server, why) // the server refused, as a heartbeat's
	}
	return h.probe(now, p, dst)
}

func (h *Handler) isPeer(a netip.AddrPort) bool {
	for _, p := range h.conf().Peers {
		if p.Addr().Unmap() == a.Addr() && (p.Port() == 0 || p.Port() == a.Port()) {
			return true
		}
	}
	return false
}
