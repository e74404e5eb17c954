package fleet

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/master"
)

// Landmarks. Each instance with Config.Landmark is one landmark,
// placed where it runs; re-probes rotate among the instances
// (master.Rendezvous), so each measures its RTT to every server within a
// few periods, and the fleet shares what each measured:
//
//	PREFIX rtts       hash: field = "ADDRESS ID" (the server, the
//	                  landmark), value = "RTT MEASURED": the landmark's
//	                  median RTT to the server in master.RTTUnit and when
//	                  its last sample was taken, Unix ms; one small record
//	                  per server per landmark
//	PREFIX landmarks  hash: field = instance id, value = its description
//	                  (master.Landmark as JSON), while it is live
//
// The RTT goes with the write of each verification the instance makes
// (the put script: one more HSET, and two more fields in its stream
// entry, l and r; written even when another instance's newer record
// supersedes the record itself), so it adds no Redis round trip: per
// re-probe still one EVALSHA, now HGET, HSET, HSET, XADD. The others
// apply it from the stream (master.Registry.ApplyLandmarkRTT) and read the
// whole hash with the registry on a resync. A server's removal deletes
// its records of the landmarks the remover knows (itself, the live ones
// and those its registry holds: one HDEL each in the removal's script;
// none in a fleet without landmarks). The description goes with the beat (one
// more HSET, and HMGET of the live ones' in the same script); a dead
// instance's is deleted by the next beat of any instance, and its RTTs
// are forgotten by every registry (master.Registry.ForgetLandmarks, every
// beat) and not read again on a resync. A landmark that leaves for good
// leaves its records in the rtts hash until each server goes.

// rttField is the rtts field of landmark id's RTT to the server at a.
func rttField(a netip.AddrPort, id string) string { return a.String() + " " + id }

// rttValue is the rtts value of s's RTT (this instance's), "" if none.
func rttValue(s master.Server) string {
	if s.RTT <= 0 || s.RTTMeasured.IsZero() {
		return ""
	}
	u := (s.RTT + master.RTTUnit/2) / master.RTTUnit
	return strconv.FormatInt(int64(max(1, u)), 10) + " " + strconv.FormatInt(s.RTTMeasured.UnixMilli(), 10)
}

// parseRTT reads an rtts value.
func parseRTT(v string) (rtt time.Duration, at time.Time, ok bool) {
	u, ms, ok := strings.Cut(v, " ")
	if !ok {
		return 0, time.Time{}, false
	}
	units, err1 := strconv.ParseInt(u, 10, 64)
	t, err2 := strconv.ParseInt(ms, 10, 64)
	if err1 != nil || err2 != nil || units <= 0 || units > int64(master.MaxRTT/master.RTTUnit) || t <= 0 {
		return 0, time.Time{}, false
	}
	return time.Duration(units) * master.RTTUnit, time.UnixMilli(t), true
}

// putRTT returns the put script's RTT arguments for s: the rtts field and
// value, or two empty strings when this instance is not a landmark or has
// not measured s.
func (n *Node) putRTT(a netip.AddrPort, s master.Server) (string, string) {
	if n.cfg.Landmark == nil {
		return "", ""
	}
	v := rttValue(s)
	if v == "" {
		return "", ""
	}
	return rttField(a, n.cfg.ID), v
}

// landmarkIDs returns the landmarks whose RTT records a removal deletes:
// this instance's, the live ones, and those the registry holds; none in a
// fleet without landmarks (this instance is not one and holds no other's
// RTT).
func (n *Node) landmarkIDs() []any {
	var ids []string
	if n.reg != nil {
		ids = n.reg.Landmarks()
	}
	if n.cfg.Landmark == nil && len(ids) == 0 {
		return nil
	}
	n.mu.Lock()
	ids = append(ids, n.live...)
	n.mu.Unlock()
	ids = append(ids, n.cfg.ID)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// applyRTT applies landmark id's RTT record value v to the server at addr.
func (n *Node) applyRTT(addr, id, v string) {
	if id == n.cfg.ID {
		return
	}
	a, err := netip.ParseAddrPort(addr)
	rtt, at, ok := parseRTT(v)
	if err != nil || !ok {
		n.stats.corrupt.Add(1)
		return
	}
	if n.reg.ApplyLandmarkRTT(a, id, rtt, at) {
		n.stats.applied[opRTT].Add(1)
	}
}

// resyncRTTs reads the rtts hash (in pages) into the registry: the RTTs of
// the landmarks live now, or of every landmark before the first beat.
func (n *Node) resyncRTTs(ctx context.Context) (int, error) {
	live := n.Live()
	read := 0
	var cursor uint64
	for {
		kv, next, err := n.rdb.HScan(ctx, n.rtts, cursor, "", int64(n.cfg.PageSize)).Result()
		if err != nil {
			return read, err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			addr, id, ok := strings.Cut(kv[i], " ")
			if !ok || (len(live) > 0 && !slices.Contains(live, id)) {
				continue
			}
			n.applyRTT(addr, id, kv[i+1])
			read++
		}
		if cursor = next; cursor == 0 {
			return read, nil
		}
	}
}

// description is this instance's landmark description for its beat, ""
// if it is not a landmark: with its RTTs to the other landmarks
// (master.Mesh.Own) as of now, and its address once known.
func (n *Node) description() string {
	if n.cfg.Landmark == nil {
		return ""
	}
	lm := *n.cfg.Landmark
	n.mu.Lock()
	if n.lmAddr != "" {
		lm.Address = n.lmAddr
	}
	n.mu.Unlock()
	if n.reg != nil {
		lm.RTTs = master.MeshJSON(n.reg.Mesh().Own())
	}
	b, err := json.Marshal(lm)
	if err != nil {
		return ""
	}
	return string(b)
}

// parseBeat reads the beat script's answer: the live instances and the
// descriptions of the other live landmarks.
func (n *Node) parseBeat(res []any) (live []string, peers []master.Landmark) {
	if len(res) < 2 {
		return nil, nil
	}
	ids, _ := res[0].([]any)
	descs, _ := res[1].([]any)
	for i, x := range ids {
		id, _ := x.(string)
		if id == "" {
			continue
		}
		live = append(live, id)
		if id == n.cfg.ID || i >= len(descs) {
			continue
		}
		d, _ := descs[i].(string)
		var lm master.Landmark
		if d == "" || json.Unmarshal([]byte(d), &lm) != nil || lm.ID != id {
			continue
		}
		peers = append(peers, lm)
	}
	slices.SortFunc(peers, func(a, b master.Landmark) int { return strings.Compare(a.ID, b.ID) })
	return live, peers
}

// pingable returns the address a landmark description gives, if a peer
// can ping it there.
func pingable(address string) (netip.AddrPort, bool) {
	a, err := netip.ParseAddrPort(address)
	return a, err == nil && a.Port() != 0 && !a.Addr().IsUnspecified()
}

// SetLandmarkAddress gives this instance's landmark description the
// address its peers ping it at (masterd gives the master's socket once
// bound; a later call replaces it), unless the description already has
// one they can.
func (n *Node) SetLandmarkAddress(a netip.AddrPort) {
	if n.cfg.Landmark == nil || a.Port() == 0 || a.Addr().IsUnspecified() {
		return
	}
	if _, ok := pingable(n.cfg.Landmark.Address); ok {
		return
	}
	n.mu.Lock()
	n.lmAddr = a.String()
	n.mu.Unlock()
}

// meshPeers gives the registry's landmark mesh (master.Mesh) the other
// live landmarks of the last beat: those with an address to ping, and
// the rows of RTTs each published.
func (n *Node) meshPeers(peers []master.Landmark) {
	if n.cfg.Landmark == nil || n.reg == nil {
		return
	}
	var ps []master.LandmarkPeer
	var rows []master.MeshRow
	for _, p := range peers {
		if a, ok := pingable(p.Address); ok {
			ps = append(ps, master.LandmarkPeer{ID: p.ID, Addr: a})
		}
		rows = append(rows, p.MeshRow())
	}
	n.reg.Mesh().SetPeers(time.Now(), ps)
	n.reg.Mesh().SetRows(rows)
}

// Landmarks returns the descriptions of the fleet's other live landmarks,
// as of the last beat (web.Config.Peers).
func (n *Node) Landmarks() []master.Landmark {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.peers)
}
