package master

import (
	"strconv"
	"time"
)

// Players, bots and suspected bots.
//
// A server's clients count its bots too (Debian's OpenArena server with
// three bots answers clients 3), so the registry keeps apart what a
// server tells of them, from its latest reply that tells it:
//
//   - an infoResponse: ioquake3's g_humanplayers and ET: Legacy's humans
//     (bots = clients - humans), DarkPlaces' bots;
//   - a statusResponse (the Quake III re-probe) or a Doom 3 family
//     infoResponse, which list the players: those with ping 0 (every
//     engine gives its bots ping 0), or ET's omnibot_playing when it
//     counts more (some mods report 0 or -1 with bots playing, so it never
//     counts fewer).
//
// Servers that pad their player counts give their bots a ping. A player
// that has never left a server's roster, in every player list the master
// received, for SuspectAfter (real people leave: a day's session is hours)
// is a suspected bot. It is flagged, not removed: the API keeps players,
// bots and suspected bots apart, and humans are the players that are
// neither (Server.Humans); the player-count history, and so the ranking,
// counts humans.
//
// The counts live in a map of their own, off the entry, for the servers
// with a bot or a suspected bot only (16 bytes and the map's slot each).
// A player's presence is timed from the first reply that listed it since
// the master started; restarts start it again.

// DefaultSuspectAfter is how long a player must have stayed in a server's
// roster, in every player list received, to be a suspected bot.
const DefaultSuspectAfter = 12 * time.Hour

// crowd is what the registry keeps of a server's bots: the bots its
// latest reply that told them counted, and the suspected bots of its
// latest player list.
type crowd struct {
	bots, suspected int16
}

// botsOf returns the bots rep tells of, for a server of clients clients,
// and whether it tells any (a Quake III infoResponse without the keys
// does not).
func botsOf(rep *Reply, clients int) (int, bool) {
	n := -1
	if rep.HasPlayerList {
		n = 0
		for _, p := range rep.PlayerList {
			if p.Ping == 0 {
				n++
			}
		}
		if ob, err := strconv.Atoi(infoValue(rep.Info, "omnibot_playing")); err == nil && ob > n && ob <= len(rep.PlayerList) {
			n = ob
		}
	} else if h, ok := intKey(rep.Info, "g_humanplayers", "humans"); ok && h <= clients {
		n = clients - h
	} else if b, ok := intKey(rep.Info, "bots"); ok {
		n = b
	}
	if n < 0 {
		return 0, false
	}
	return min(n, clients), true
}

// intKey returns the first of keys the info has, read as a whole number
// of at least 0.
func intKey(info []Pair, keys ...string) (int, bool) {
	for _, k := range keys {
		if v, err := strconv.Atoi(infoValue(info, k)); err == nil && v >= 0 {
			return v, true
		}
	}
	return 0, false
}

// infoValue returns the value of key (ASCII case ignored), or "".
func infoValue(info []Pair, key string) string {
	r := Reply{Info: info}
	v, _ := r.get(key)
	return v
}

// setCrowdLocked records what the verified reply rep of the server at k
// tells of its bots (bots, told) and its suspected bots (suspected, told
// when it lists players). r.mu must be held.
func (r *Registry) setCrowdLocked(k serverKey, bots int, botsTold bool, suspected int, suspectedTold bool) {
	c := r.crowds[k]
	if botsTold {
		c.bots = int16(min(bots, MaxPlayersKept*4))
	}
	if suspectedTold {
		c.suspected = int16(min(suspected, MaxPlayersKept))
	}
	if c == (crowd{}) {
		delete(r.crowds, k)
		return
	}
	r.crowds[k] = c
}

// crowdOfLocked fills s's Bots and SuspectedBots. r.mu must be held.
func (r *Registry) crowdOfLocked(s *Server) {
	c := r.crowds[keyOf(s.Addr)]
	s.Bots = min(int(c.bots), s.Clients)
	s.SuspectedBots = min(int(c.suspected), s.Clients-s.Bots)
}

// Humans is the players that are neither bots nor suspected bots.
func (s *Server) Humans() int { return max(0, s.Clients-s.Bots-s.SuspectedBots) }

// suspects returns how many of ps (their Since set) have stayed at least
// after, at now; players with ping 0 are bots already and not counted.
func suspects(now time.Time, ps []Player, after time.Duration) int {
	if after <= 0 {
		return 0
	}
	n := 0
	for _, p := range ps {
		if p.Ping != 0 && !p.Since.IsZero() && now.Sub(p.Since) >= after {
			n++
		}
	}
	return n
}

// Suspected reports whether p, in a player list received at, is a
// suspected bot under the registry's SuspectAfter.
func (r *Registry) Suspected(p Player, at time.Time) bool {
	after := r.conf().SuspectAfter
	return after > 0 && p.Ping != 0 && !p.Since.IsZero() && at.Sub(p.Since) >= after
}
