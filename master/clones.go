package master

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Clones: one game server registered under many ports or addresses to pad
// the list. Their replies say the same thing at once: the same host name,
// the same map, the same players with the same scores, the same match
// clock. The registry groups listed servers that do, and keeps the groups
// for the API (one entry, "also listed as") and for the optional policy
// of answering one address per group (Config.OnePerCloneGroup); the UDP
// answers otherwise list every address, as dpmaster's do (in-game
// browsers expect every address).
//
// Two listed servers are clones when they have the same host name (not
// empty) and map, and
//
//   - the same address (IPv4, or IPv6 /64) and the same roster: the names
//     and scores of their last player lists, or, where no player list is
//     known, the same number of clients; or
//   - different addresses and the same roster of at least MinCloneRoster
//     players: a handful of real people's chosen names and scores do not
//     coincide on two independent servers;
//
// and, where both publish a match clock, the same one: ET's
// g_levelStartTime equal, or a Score_Time whose match start (the time of
// the reply less the elapsed time) is within CloneClockTolerance.
// Grouping is transitive. The server first seen is the group's primary;
// the others are its clones.

// Clone detection's bounds and defaults.
const (
	// MinCloneRoster is the players two servers at different addresses
	// must share, names and scores, to be clones.
	MinCloneRoster = 2
	// CloneClockTolerance is how far apart two match starts derived from
	// Score_Time may be for one match: the clock's one-second resolution
	// and the time between the two replies.
	CloneClockTolerance = 10 * time.Second
	// DefaultCloneInterval is how often Handler.Tick groups the clones.
	DefaultCloneInterval = 30 * time.Second
)

// CloneGroup is one game server listed under several addresses: Primary,
// the address first seen, and the others.
type CloneGroup struct {
	Primary netip.AddrPort
	Clones  []netip.AddrPort // ascending
}

// cloneRow is what clone detection reads of one listed server.
type cloneRow struct {
	e             *entry
	host, mapName string
	roster        string // names and scores, sorted; or "#clients"
	players       int    // in the roster; 0 without a player list
	levelStart    string // g_levelStartTime, "" if none
	matchStart    int64  // from Score_Time, Unix seconds; 0 if none
}

// UpdateClones groups the listed servers that are one game server (see
// above) at now, marks each clone for Config.OnePerCloneGroup's answers,
// and keeps the groups for CloneGroups. It returns how many groups there
// are. It is linear in the listed servers (their keys are hashed, then
// only servers sharing a host name and map are compared).
func (r *Registry) UpdateClones(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	rows := make([]cloneRow, 0, len(r.servers))
	for _, e := range r.servers {
		if !e.Listed {
			continue
		}
		info := unpackInfo(e.info)
		host := infoValue(info, "hostname")
		if host == "" {
			host = infoValue(info, "sv_hostname")
		}
		if host == "" {
			host = infoValue(info, "si_name")
		}
		if host == "" {
			continue
		}
		row := cloneRow{e: e, host: host, mapName: infoValue(info, "mapname") + "\x00" + infoValue(info, "si_map"),
			levelStart: infoValue(info, "g_levelStartTime")}
		if st, err := strconv.ParseInt(infoValue(info, "Score_Time"), 10, 64); err == nil {
			row.matchStart = e.LastVerified.Time().Unix() - st
		}
		if pl, ok := r.players[e.Addr]; ok {
			ps := unpackPlayers(pl.packed)
			names := make([]string, len(ps))
			for i, p := range ps {
				names[i] = p.Name + "\x00" + strconv.Itoa(p.Score)
			}
			slices.Sort(names)
			row.roster, row.players = strings.Join(names, "\x01"), len(ps)
		} else {
			row.roster = "#" + strconv.Itoa(int(e.Clients))
		}
		rows = append(rows, row)
	}
	groups := groupClones(rows)
	// Mark the clones; a change of mark is a change of what the UDP
	// answers hold under the policy.
	clone := map[*entry]bool{}
	out := make([]CloneGroup, 0, len(groups))
	for _, g := range groups {
		cg := CloneGroup{Primary: g[0].e.Addr}
		for _, m := range g[1:] {
			clone[m.e] = true
			cg.Clones = append(cg.Clones, m.e.Addr)
		}
		slices.SortFunc(cg.Clones, netip.AddrPort.Compare)
		out = append(out, cg)
	}
	changed := false
	for _, row := range rows {
		if was := row.e.flags&flagClone != 0; was != clone[row.e] {
			r.touchLocked(row.e)
			row.e.flags ^= flagClone
			changed = true
		}
	}
	for _, e := range r.servers {
		if !e.Listed && e.flags&flagClone != 0 {
			e.flags &^= flagClone
		}
	}
	if changed {
		r.version.Add(1)
	}
	slices.SortFunc(out, func(a, b CloneGroup) int { return a.Primary.Compare(b.Primary) })
	r.cloneGroups = out
	return len(out)
}

// CloneGroups returns the groups of the last UpdateClones, by primary
// address; a group's servers may have been dropped since.
func (r *Registry) CloneGroups() []CloneGroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.cloneGroups)
}

// groupClones returns the groups of rows that are one game server, each
// with its primary (first seen, then the lowest address) first; rows in
// no group are left out. It is pure.
func groupClones(rows []cloneRow) [][]*cloneRow {
	parent := make([]int, len(rows))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[ra] = rb
		}
	}
	type hostKey struct {
		ak                    addrKey
		host, mapName, roster string
	}
	type crossKey struct{ host, mapName, roster string }
	same := map[hostKey][]int{}
	cross := map[crossKey][]int{}
	for i := range rows {
		r := &rows[i]
		hk := hostKey{addrKeyOf(r.e.Addr.Addr()), r.host, r.mapName, r.roster}
		same[hk] = append(same[hk], i)
		if r.players >= MinCloneRoster {
			k := crossKey{r.host, r.mapName, r.roster}
			cross[k] = append(cross[k], i)
		}
	}
	join := func(members []int) {
		// Within a bucket, servers whose clocks say different matches
		// are not one server: sorted by clock, neighbours that agree are
		// joined (linear after the sort, however many a padder lists).
		slices.SortFunc(members, func(x, y int) int {
			a, b := &rows[x], &rows[y]
			return cmp.Or(strings.Compare(a.levelStart, b.levelStart), cmp.Compare(a.matchStart, b.matchStart))
		})
		for x := 1; x < len(members); x++ {
			if sameClock(&rows[members[x]], &rows[members[x-1]]) {
				union(members[x], members[x-1])
			}
		}
	}
	for _, m := range same {
		join(m)
	}
	for _, m := range cross {
		join(m)
	}
	byRoot := map[int][]*cloneRow{}
	for i := range rows {
		root := find(i)
		byRoot[root] = append(byRoot[root], &rows[i])
	}
	var out [][]*cloneRow
	for _, g := range byRoot {
		if len(g) < 2 {
			continue
		}
		slices.SortFunc(g, func(a, b *cloneRow) int {
			return cmp.Or(cmp.Compare(a.e.FirstSeen, b.e.FirstSeen), a.e.Addr.Compare(b.e.Addr))
		})
		out = append(out, g)
	}
	return out
}

// sameClock reports whether a and b may be one match: their match clocks
// agree wherever both publish one.
func sameClock(a, b *cloneRow) bool {
	if a.levelStart != "" && b.levelStart != "" && a.levelStart != b.levelStart {
		return false
	}
	if a.matchStart != 0 && b.matchStart != 0 {
		d := a.matchStart - b.matchStart
		if d < 0 {
			d = -d
		}
		return time.Duration(d)*time.Second <= CloneClockTolerance
	}
	return true
}

// clonesDue runs UpdateClones when CloneInterval has passed since the
// last run.
func (r *Registry) clonesDue(now time.Time) {
	iv := r.conf().CloneInterval
	if iv < 0 {
		return
	}
	r.mu.Lock()
	due := r.clonesAt == 0 || stampOf(now) >= r.clonesAt+stamp(iv)
	if due {
		r.clonesAt = stampOf(now)
	}
	r.mu.Unlock()
	if due {
		r.UpdateClones(now)
	}
}
