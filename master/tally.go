package master

// Tally is the number of listed servers of one game, protocol and
// gametype.
type Tally struct {
	Game     string
	Protocol int
	Gametype string
	Servers  int
}

// tallyKey is a Tally's key. Its names are the entries' interned copies.
type tallyKey struct {
	game, gametype string
	proto          int32
}

// tallyLocked adds d (1 or -1) to the count of e's game, protocol and
// gametype, if e is listed. The registry calls it before and after every
// change of an entry's listing or of those fields, so the counts are kept
// as the listing changes and read in O(kinds), not O(servers) (a /metrics
// scrape at 1,000,000 servers). r.mu must be held.
func (r *Registry) tallyLocked(e *entry, d int) {
	if !e.Listed {
		return
	}
	k := tallyKey{e.Game, e.Gametype, e.Protocol}
	if n := r.tally[k] + d; n > 0 {
		r.tally[k] = n
	} else {
		delete(r.tally, k)
	}
}

// Tallies appends to dst, and returns, the number of listed servers of
// each game, protocol and gametype that has any, in no particular order.
// It takes the registry's lock for as many steps as there are such kinds,
// whatever the number of servers.
func (r *Registry) Tallies(dst []Tally) []Tally {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, n := range r.tally {
		dst = append(dst, Tally{Game: k.game, Protocol: int(k.proto), Gametype: k.gametype, Servers: n})
	}
	return dst
}
