package game

import (
	"errors"
	"fmt"
)

// ErrConflict reports a catalogue that would be ambiguous: two games with
// the same name, heartbeat tag, gamename, or anonymous protocol.
var ErrConflict = errors.New("game: conflicting catalogue entries")

// Catalogue is an immutable, indexed set of games. It is safe for
// concurrent use. The zero value is an empty catalogue.
type Catalogue struct {
	games      []*Game
	byName     map[string]*Game
	byTag      map[string]tagEntry
	byGamename map[string]*Game
	byProtocol map[protoKey]*Game // anonymous games only
}

type tagEntry struct {
	g        *Game
	flatline bool
}

type protoKey struct {
	f Family
	p int
}

// NewCatalogue indexes games. It fails with ErrConflict when two games
// share a name, a heartbeat or flatline tag, a gamename, or (among
// anonymous games of one family) a protocol number.
func NewCatalogue(games ...*Game) (*Catalogue, error) {
	c := &Catalogue{
		byName:     make(map[string]*Game, len(games)),
		byTag:      make(map[string]tagEntry),
		byGamename: make(map[string]*Game),
		byProtocol: make(map[protoKey]*Game),
	}
	for _, g := range games {
		if g.Name == "" {
			return nil, fmt.Errorf("%w: game without a name", ErrConflict)
		}
		if _, dup := c.byName[g.Name]; dup {
			return nil, fmt.Errorf("%w: game %q twice", ErrConflict, g.Name)
		}
		c.byName[g.Name] = g
		c.games = append(c.games, g)
		for i, tags := range [][]string{g.Heartbeats, g.Flatlines} {
			for _, t := range tags {
				if t == HeartbeatDarkPlaces {
					return nil, fmt.Errorf("%w: %q: tag %q is the DarkPlaces protocol's", ErrConflict, g.Name, t)
				}
				if o, dup := c.byTag[t]; dup {
					return nil, fmt.Errorf("%w: heartbeat %q of %q and %q", ErrConflict, t, o.g.Name, g.Name)
				}
				c.byTag[t] = tagEntry{g: g, flatline: i == 1}
			}
		}
		for _, n := range g.Gamenames {
			if o, dup := c.byGamename[n]; dup && o != g {
				return nil, fmt.Errorf("%w: gamename %q of %q and %q", ErrConflict, n, o.Name, g.Name)
			}
			c.byGamename[n] = g
		}
		if len(g.Gamenames) == 0 {
			if o, dup := c.byGamename[g.Name]; dup && o != g {
				return nil, fmt.Errorf("%w: gamename %q of %q and %q", ErrConflict, g.Name, o.Name, g.Name)
			}
			c.byGamename[g.Name] = g
		}
		if g.Anonymous {
			for _, p := range g.Protocols {
				k := protoKey{g.Family, p}
				if o, dup := c.byProtocol[k]; dup && o != g {
					return nil, fmt.Errorf("%w: anonymous protocol %d of %q and %q", ErrConflict, p, o.Name, g.Name)
				}
				c.byProtocol[k] = g
			}
		}
	}
	return c, nil
}

// Default returns the catalogue of [Builtin] games.
func Default() *Catalogue {
	c, err := NewCatalogue(Builtin()...)
	if err != nil {
		panic(err) // the built-in table is checked by TestBuiltin_NoConflicts
	}
	return c
}

// Games returns the games in catalogue order. The slice is a copy; the
// games are shared and must not be modified.
func (c *Catalogue) Games() []*Game { return append([]*Game(nil), c.games...) }

// ByName returns the game named name (case-sensitive, as dpmaster).
func (c *Catalogue) ByName(name string) (*Game, bool) {
	g, ok := c.byName[name]
	return g, ok
}

// ByHeartbeat returns the game whose heartbeat tag is tag, and whether the
// tag is its flatline (shutdown) tag. "DarkPlaces" is no game's tag: it
// returns false, and the game is found from the infoResponse's gamename.
func (c *Catalogue) ByHeartbeat(tag string) (g *Game, flatline, ok bool) {
	e, ok := c.byTag[tag]
	return e.g, e.flatline, ok
}

// ByGamename returns the game whose servers send gamename name.
func (c *Catalogue) ByGamename(name string) (*Game, bool) {
	g, ok := c.byGamename[name]
	return g, ok
}

// ByProtocol returns the anonymous game of family f that uses protocol p:
// what "getservers 68" asks for. For FamilyDoom3, when no game lists the
// exact version, the anonymous game whose versions share p's major number
// is returned (Doom 3 is major 1, Quake 4 major 2).
func (c *Catalogue) ByProtocol(f Family, p int) (*Game, bool) {
	if g, ok := c.byProtocol[protoKey{f, p}]; ok {
		return g, true
	}
	if f == FamilyDoom3 {
		for _, g := range c.games {
			if g.Family != f || !g.Anonymous {
				continue
			}
			for _, v := range g.Protocols {
				if v>>16 == p>>16 {
					return g, true
				}
			}
		}
	}
	return nil, false
}

// ByGamenameProtocol returns the game of a server that says gamename name
// and protocol p. A named game must list p unless it lists no protocol at
// all; ok is false when the gamename is unknown or the protocol is not the
// game's.
func (c *Catalogue) ByGamenameProtocol(name string, p int) (*Game, bool) {
	g, ok := c.byGamename[name]
	if !ok {
		return nil, false
	}
	if len(g.Protocols) > 0 && !g.HasProtocol(p) {
		return nil, false
	}
	return g, true
}
