package master

import (
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Player lists and the listing version, for the HTTP API (package web).
//
// The player list of a server is what its last reply that lists players
// said: a statusResponse (the re-probe of Quake III Arena, RtCW and ET is
// a getstatus) or a Doom 3 family infoResponse. An infoResponse of the
// Quake III family lists no players and leaves the list as it was. The
// lists live in a map of their own, off the entry, so that a server without
// one pays nothing: a server with one pays the map's slot (an AddrPort
// key, a string and a stamp: 64 bytes, about 80 with the map's overhead)
// plus its packed list, "score\x00ping\x00name\x00" per player: the name's
// bytes plus 4 to 12. Eight players of 16-byte names cost about 290 bytes;
// the most a server can cost is MaxPlayersKept players of
// MaxPlayerNameBytes: about 3.4 KB.
const (
	// MaxPlayersKept bounds the players kept per server; further ones
	// are dropped (Quake III's MAX_CLIENTS is 64, Quake 4's 32).
	MaxPlayersKept = 64
	// MaxPlayerNameBytes bounds the bytes of a player's name kept, colour
	// codes included; a longer name is cut (ioquake3's MAX_NAME_LENGTH is
	// 32, Quake 4's 40 with the clan tag).
	MaxPlayerNameBytes = 40
)

// Player is one player of a server's last reply that listed players.
type Player struct {
	Name  string // as sent, colour codes and all; at most MaxPlayerNameBytes
	Score int    // frags; 0 in the Doom 3 family, whose records have none
	Ping  int    // ms; 0 for bots in every family
	// Since is when the player was first listed in the run of the
	// server's player lists that has listed it every time since (bots.go:
	// a player that never leaves is a suspected bot); whole seconds.
	Since time.Time
}

// playerList is a server's packed player list and when it was received.
type playerList struct {
	at     stamp
	packed string
}

// packPlayers encodes at most MaxPlayersKept players, names cut to
// MaxPlayerNameBytes, as one string, "score\x00ping\x00since\x00name\x00"
// each, since in Unix seconds. NUL bytes in names are dropped (neither
// family can send one).
func packPlayers(ps []Player) string {
	var sb strings.Builder
	for i, p := range ps {
		if i == MaxPlayersKept {
			break
		}
		name := cutName(p.Name)
		sb.WriteString(strconv.Itoa(p.Score))
		sb.WriteByte(0)
		sb.WriteString(strconv.Itoa(p.Ping))
		sb.WriteByte(0)
		if !p.Since.IsZero() {
			sb.WriteString(strconv.FormatInt(p.Since.Unix(), 10))
		}
		sb.WriteByte(0)
		sb.WriteString(name)
		sb.WriteByte(0)
	}
	return sb.String()
}

// unpackPlayers decodes packPlayers' encoding.
func unpackPlayers(s string) []Player {
	out := make([]Player, 0, strings.Count(s, "\x00")/4)
	for s != "" {
		sc, rest, _ := strings.Cut(s, "\x00")
		pg, rest, _ := strings.Cut(rest, "\x00")
		since, rest, _ := strings.Cut(rest, "\x00")
		name, rest, _ := strings.Cut(rest, "\x00")
		score, _ := strconv.Atoi(sc)
		ping, _ := strconv.Atoi(pg)
		p := Player{Name: name, Score: score, Ping: ping}
		if t, err := strconv.ParseInt(since, 10, 64); err == nil {
			p.Since = time.Unix(t, 0)
		}
		out = append(out, p)
		s = rest
	}
	return out
}

// setPlayersLocked keeps the player list of the reply r verified for e, if
// it lists players, each player's Since carried over from the list before
// when it listed that name too, and returns how many are suspected bots
// (bots.go). r.mu must be held.
func (r *Registry) setPlayersLocked(now time.Time, a netip.AddrPort, rep *Reply) (suspected int, listed bool) {
	if !rep.HasPlayerList {
		return 0, false
	}
	ps := rep.PlayerList[:min(len(rep.PlayerList), MaxPlayersKept)]
	var before map[string][]time.Time
	if prev, ok := r.players[a]; ok {
		for _, p := range unpackPlayers(prev.packed) {
			if before == nil {
				before = map[string][]time.Time{}
			}
			before[p.Name] = append(before[p.Name], p.Since)
		}
	}
	now = now.Truncate(time.Second)
	for i := range ps {
		name := cutName(ps[i].Name)
		ps[i].Since = now
		if ts := before[name]; len(ts) > 0 {
			if !ts[0].IsZero() {
				ps[i].Since = ts[0]
			}
			before[name] = ts[1:]
		}
	}
	r.players[a] = playerList{at: stampOf(now), packed: packPlayers(ps)}
	return suspects(now, ps, r.conf().SuspectAfter), true
}

// cutName is a player's name as packPlayers keeps it.
func cutName(name string) string {
	name = strings.ReplaceAll(name, "\x00", "")
	if len(name) > MaxPlayerNameBytes {
		name = name[:MaxPlayerNameBytes]
	}
	return name
}

// Players returns the player list of the listed server at a from its last
// reply that listed players, and when that reply came; ok is false if the
// server is not listed or no reply of it listed players yet.
func (r *Registry) Players(a netip.AddrPort) (players []Player, at time.Time, ok bool) {
	a = netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
	r.mu.Lock()
	pl, has := r.players[a]
	e := r.servers[keyOf(a)]
	has = has && e != nil && e.Listed
	r.mu.Unlock()
	if !has {
		return nil, time.Time{}, false
	}
	return unpackPlayers(pl.packed), pl.at.Time(), true
}

// Version returns the listing version: a counter that grows whenever
// something a server list shows changes (a server listed, dropped or
// restored; a listed server's game, protocol, gametype, clients, slots or
// info; a restored server verified again). A re-probe that finds nothing
// new does not change it, so a cache keyed by it stays valid; what it
// leaves stale is only each server's last-verified time.
func (r *Registry) Version() uint64 { return r.version.Load() }
