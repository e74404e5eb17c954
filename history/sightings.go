package history

import (
	"cmp"
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/gametext"
)

// Sightings: where each player was seen recently, for a player's page.
//
// Every player list the registry receives (master.Registry.Players, the
// re-probe's statusResponse or Quake 4's infoResponse, with each player's
// Since from the registry's roster tracking) records, for every player
// that is not a bot (ping 0), a sighting: the server, its game, the name
// as the server sent it, when the player was first and last listed there.
// A player is known by the name's bytes with colour codes stripped
// (gametext.StripColours), so "^1Bob" and "^4Bob" are one Bob, and the
// name as last sent on each server is kept beside.
//
// What is kept is what the servers publish to anyone who asks them (the
// name in their player lists), no address of a player, and only for
// SightingRetention: a sighting not renewed for that long is forgotten,
// and a name left without sightings with it. At most MaxSightingNames
// names (beyond, the names last seen longest ago are forgotten first) and
// MaxSightingsPerName servers per name (beyond, the server it was seen on
// longest ago gives its place).
//
// Size in memory (live heap, BenchmarkSightings_MemoryPerName, 18-byte
// names): 196 bytes for a name seen on one server, 988 for a name at
// MaxSightingsPerName; so 13 MB for MaxSightingNames names seen on one
// server each, and 65 MB at most (every name on MaxSightingsPerName
// servers, which only servers listing made-up players could cause).
const (
	SightingRetention   = 7 * 24 * time.Hour
	MaxSightingNames    = 65536
	MaxSightingsPerName = 8
	// MaxSightingGameBytes bounds the game name a sighting keeps.
	MaxSightingGameBytes = 64
)

// sightingPrune is how often Seen forgets what is older than
// SightingRetention (reads skip it meanwhile).
const sightingPrune = time.Hour

// Sighting is one server a player was seen on.
type Sighting struct {
	Server netip.AddrPort // as the registry keys it
	Game   string
	// Name is the name as the server last sent it, colour codes and all
	// (at most master.MaxPlayerNameBytes).
	Name string
	// First is when the player was first listed there (the registry's
	// Since of the earliest stay seen), Last the last list that had the
	// player; whole seconds.
	First, Last time.Time
}

// Sightings keeps the players' sightings (see SightingRetention). It is
// pure: the times come with the lists, it never reads the clock and owns
// no file; masterd's state writer commits its changed names (TakeDirty)
// and gives them back at start (Load).
//
// mu guards everything but version.
type Sightings struct {
	version atomic.Uint64 // moves with every change, for caches

	notify func() // OnChange's; called after mu is released

	mu     sync.Mutex
	names  map[string]*seen // by the plain name's bytes
	dirty  map[string]struct{}
	pruned time.Time // the last prune's now
	// Counters: lists recorded, names forgotten to stay within
	// MaxSightingNames.
	lists, evicted uint64
}

// seen is one name's sightings, the most recent first.
type seen struct {
	s []sighting
}

// sighting is a Sighting in memory: times in Unix seconds.
type sighting struct {
	server      netip.AddrPort
	game, name  string
	first, last int64
}

func (s sighting) public() Sighting {
	return Sighting{Server: s.server, Game: s.game, Name: s.name,
		First: time.Unix(s.first, 0).UTC(), Last: time.Unix(s.last, 0).UTC()}
}

// NewSightings returns an empty record.
func NewSightings() *Sightings {
	return &Sightings{names: map[string]*seen{}}
}

// OnChange sets a function called (without the lock held) after a list
// changed a name's sightings, and from then on remembers the changed
// names for TakeDirty. It must be set before the first Seen.
func (r *Sightings) OnChange(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notify = fn
	if r.dirty == nil {
		r.dirty = map[string]struct{}{}
	}
}

// Version returns a counter that moves whenever a sighting changes.
func (r *Sightings) Version() uint64 { return r.version.Load() }

// PlayerKey is the name a player is known by: raw's bytes, colour codes
// stripped as the games strip them. "" is no name (nothing is kept).
func PlayerKey(raw string) string { return gametext.StripColours(raw) }

// Seen records the players of a list the server at a (a game's) sent at
// at. Bots (ping 0) and names without a character but colour codes are
// not recorded. A list seen again (the same at) changes nothing.
func (r *Sightings) Seen(a netip.AddrPort, game string, at time.Time, players []master.Player) {
	if len(game) > MaxSightingGameBytes {
		game = game[:MaxSightingGameBytes]
	}
	t := at.Unix()
	changed := false
	r.mu.Lock()
	r.lists++
	if at.Sub(r.pruned) >= sightingPrune {
		r.pruneLocked(at)
		r.pruned = at
	}
	for _, p := range players {
		if p.Ping == 0 {
			continue
		}
		raw := p.Name
		if len(raw) > master.MaxPlayerNameBytes {
			raw = raw[:master.MaxPlayerNameBytes]
		}
		k := PlayerKey(raw)
		if k == "" {
			continue
		}
		first := t
		if !p.Since.IsZero() && p.Since.Unix() < t {
			first = p.Since.Unix()
		}
		if r.seeLocked(k, sighting{server: a, game: game, name: raw, first: first, last: t}) {
			changed = true
			if r.dirty != nil {
				r.dirty[k] = struct{}{}
			}
		}
	}
	notify := r.notify
	r.mu.Unlock()
	if changed {
		r.version.Add(1)
		if notify != nil {
			notify()
		}
	}
}

// seeLocked merges one sighting into k's, reporting a change.
func (r *Sightings) seeLocked(k string, s sighting) bool {
	n := r.names[k]
	if n == nil {
		if len(r.names) >= MaxSightingNames {
			r.evictLocked()
		}
		n = &seen{}
		r.names[k] = n
	}
	i := slices.IndexFunc(n.s, func(x sighting) bool { return x.server == s.server })
	if i >= 0 {
		old := n.s[i]
		if s.last < old.last || (s.last == old.last && s.name == old.name && s.game == old.game && s.first >= old.first) {
			return false // an older list, or this one again
		}
		s.first = min(s.first, old.first)
		n.s = slices.Delete(n.s, i, i+1)
	} else if len(n.s) >= MaxSightingsPerName {
		n.s = n.s[:MaxSightingsPerName-1] // the one seen longest ago gives its place
	}
	n.s = slices.Insert(n.s, 0, s)
	slices.SortStableFunc(n.s, bySeen)
	return true
}

// bySeen orders sightings the most recently seen first, then by server.
func bySeen(x, y sighting) int {
	if c := cmp.Compare(y.last, x.last); c != 0 {
		return c
	}
	return x.server.Compare(y.server)
}

// evictLocked forgets the names seen longest ago: a sixteenth of
// MaxSightingNames at once, so that a full record sorts its names once
// per that many new names.
func (r *Sightings) evictLocked() {
	type nl struct {
		k    string
		last int64
	}
	all := make([]nl, 0, len(r.names))
	for k, n := range r.names {
		all = append(all, nl{k, n.s[0].last})
	}
	slices.SortFunc(all, func(x, y nl) int { return cmp.Or(cmp.Compare(x.last, y.last), cmp.Compare(x.k, y.k)) })
	for _, x := range all[:max(1, MaxSightingNames/16)] {
		delete(r.names, x.k)
		r.evicted++
		if r.dirty != nil {
			r.dirty[x.k] = struct{}{} // deleted from the store too
		}
	}
}

// pruneLocked forgets the sightings not renewed within SightingRetention
// of now.
func (r *Sightings) pruneLocked(now time.Time) {
	limit := now.Add(-SightingRetention).Unix()
	for k, n := range r.names {
		keep := n.s[:0]
		for _, s := range n.s {
			if s.last >= limit {
				keep = append(keep, s)
			}
		}
		if len(keep) == len(n.s) {
			continue
		}
		if len(keep) == 0 {
			delete(r.names, k)
		} else {
			n.s = keep
		}
		if r.dirty != nil {
			r.dirty[k] = struct{}{}
		}
	}
}

// Of returns where the player known by key (see PlayerKey) was seen within
// SightingRetention of now, the most recent first; nil if nowhere.
func (r *Sightings) Of(key string, now time.Time) []Sighting {
	limit := now.Add(-SightingRetention).Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.names[key]
	if n == nil {
		return nil
	}
	var out []Sighting
	for _, s := range n.s {
		if s.last >= limit {
			out = append(out, s.public())
		}
	}
	return out
}

// Len returns the names kept, the lists recorded and the names
// forgotten to stay within MaxSightingNames since NewSightings.
func (r *Sightings) Len() (names int, lists, evicted uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.names), r.lists, r.evicted
}

// SightingRecord is one name's sightings as the state file keeps them:
// Key is the name (see PlayerKey), Value its sightings encoded
// (EncodeSightings); a nil Value deletes the name.
type SightingRecord struct {
	Key   string
	Value []byte
}

// TakeDirty returns the names changed since the last call, encoded, and
// forgets them; a failed commit gives them back with Redirty. Changes are
// remembered only once OnChange is set.
func (r *Sightings) TakeDirty() []SightingRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]SightingRecord, 0, len(r.dirty))
	for k := range r.dirty {
		rec := SightingRecord{Key: k}
		if n := r.names[k]; n != nil {
			rec.Value = encodeSightings(n.s)
		}
		out = append(out, rec)
	}
	if len(r.dirty) > 1024 {
		r.dirty = map[string]struct{}{}
	} else {
		clear(r.dirty)
	}
	return out
}

// Redirty marks names changed again (a failed commit).
func (r *Sightings) Redirty(recs []SightingRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dirty == nil {
		r.dirty = map[string]struct{}{}
	}
	for _, rec := range recs {
		r.dirty[rec.Key] = struct{}{}
	}
}

// Load adds records read back from the state file (at start): records
// that do not decode, and sightings older than SightingRetention at now,
// are skipped; corrupt counts the records skipped. Sightings already
// recorded win over loaded ones of the same server.
func (r *Sightings) Load(now time.Time, recs []SightingRecord) (corrupt int) {
	limit := now.Add(-SightingRetention).Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range recs {
		ss, err := DecodeSightings(rec.Value)
		if err != nil || rec.Key == "" || len(rec.Key) > master.MaxPlayerNameBytes {
			corrupt++
			continue
		}
		for _, s := range ss {
			if s.Last.Unix() < limit {
				continue
			}
			in := sighting{server: s.Server, game: s.Game, name: s.Name, first: s.First.Unix(), last: s.Last.Unix()}
			if n := r.names[rec.Key]; n != nil && slices.ContainsFunc(n.s, func(x sighting) bool { return x.server == in.server }) {
				continue
			}
			r.seeLocked(rec.Key, in)
		}
	}
	r.version.Add(1)
	return corrupt
}

// The encoding of one name's sightings (a state file record's value):
//
//	byte    version (1)
//	uvarint number of sightings (1 to MaxSightingsPerName)
//	each:   string server (netip.AddrPort.MarshalBinary), string game,
//	        string name (strings: uvarint length, bytes), varint first
//	        and last (Unix seconds, first <= last)
//
// with no byte after the last.
const sightingsVersion = 1

// ErrBadSightings is the error of a record that does not decode.
var ErrBadSightings = errors.New("history: bad sightings record")

// EncodeSightings encodes ss (at most MaxSightingsPerName are kept).
func EncodeSightings(ss []Sighting) []byte {
	in := make([]sighting, 0, len(ss))
	for _, s := range ss[:min(len(ss), MaxSightingsPerName)] {
		in = append(in, sighting{server: s.Server, game: s.Game, name: s.Name, first: s.First.Unix(), last: s.Last.Unix()})
	}
	return encodeSightings(in)
}

func encodeSightings(ss []sighting) []byte {
	b := []byte{sightingsVersion}
	b = binary.AppendUvarint(b, uint64(len(ss)))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, s := range ss {
		ab, _ := netip.AddrPortFrom(s.server.Addr().WithZone(""), s.server.Port()).MarshalBinary()
		str(string(ab))
		str(s.game)
		str(s.name)
		b = binary.AppendVarint(b, s.first)
		b = binary.AppendVarint(b, s.last)
	}
	return b
}

// DecodeSightings decodes a record's value (see EncodeSightings), most
// recent first. Every count and length is checked against the bounds
// before it is used.
func DecodeSightings(b []byte) ([]Sighting, error) {
	if len(b) < 1 || b[0] != sightingsVersion {
		return nil, ErrBadSightings
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n < 1 || n > MaxSightingsPerName {
		return nil, ErrBadSightings
	}
	b = b[k:]
	str := func(limit int) (string, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(limit) || uint64(len(b)-k) < l {
			return "", false
		}
		s := string(b[k : k+int(l)])
		b = b[k+int(l):]
		return s, true
	}
	num := func() (int64, bool) {
		v, k := binary.Varint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	out := make([]sighting, 0, n)
	for range n {
		ab, ok1 := str(18) // an IPv6 address and its port; no zone
		game, ok2 := str(MaxSightingGameBytes)
		name, ok3 := str(master.MaxPlayerNameBytes)
		first, ok4 := num()
		last, ok5 := num()
		var a netip.AddrPort
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || a.UnmarshalBinary([]byte(ab)) != nil || !a.IsValid() ||
			first > last || first < 0 || last > 1<<40 {
			return nil, ErrBadSightings
		}
		if slices.ContainsFunc(out, func(x sighting) bool { return x.server == a }) {
			return nil, ErrBadSightings
		}
		out = append(out, sighting{server: a, game: game, name: name, first: first, last: last})
	}
	if len(b) != 0 {
		return nil, ErrBadSightings
	}
	slices.SortStableFunc(out, bySeen)
	res := make([]Sighting, len(out))
	for i, s := range out {
		res[i] = s.public()
	}
	return res, nil
}

// Watch returns the master.Observer that feeds r: after each verified
// reply it asks players (master.Registry.Players) for the server's last
// player list, and records it (a list already recorded changes nothing).
func (r *Sightings) Watch(players func(netip.AddrPort) ([]master.Player, time.Time, bool)) master.Observer {
	return watcher{r, players}
}

type watcher struct {
	r       *Sightings
	players func(netip.AddrPort) ([]master.Player, time.Time, bool)
}

func (w watcher) Verified(_ time.Time, s master.Server) {
	if ps, at, ok := w.players(s.Addr); ok {
		w.r.Seen(s.Addr, s.Game, at, ps)
	}
}
