package game

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax reports a malformed -g property or --game-policy.
var ErrSyntax = errors.New("game: syntax error")

// Op is how a [Property] changes a game's list: dpmaster's "=", "+=", "-=".
type Op uint8

const (
	OpSet    Op = iota // "=": replace the list
	OpAdd              // "+=": add values not already present
	OpRemove           // "-=": remove the values
)

// String returns the operator as written on the command line.
func (o Op) String() string {
	switch o {
	case OpSet:
		return "="
	case OpAdd:
		return "+="
	case OpRemove:
		return "-="
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Property is one change to a game, as dpmaster's "-g GAME PROPERTY=VALUE,...".
// Keys are dpmaster's "protocols", "options", "heartbeat", "flatline", plus
// scout's "gamenames".
type Property struct {
	Game   string
	Key    string
	Op     Op
	Values []string
}

// PropertyKeys are the keys a Property may change.
var propertyKeys = []string{"protocols", "options", "heartbeat", "flatline", "gamenames", "reprobe"}

// Bounds of the "reprobe" property (the re-probe period, Reprobe.Interval):
// a faster period costs every listed server a query that often; a slower
// one keeps a dead server listed that long (0 turns re-probes off).
const (
	MinReprobeInterval = time.Second
	MaxReprobeInterval = 24 * time.Hour
)

// MaxPropertyValues bounds the values of one property, so a configuration
// file cannot make the catalogue unreasonably large.
const MaxPropertyValues = 64

// ParseProperties parses the arguments that follow "-g": a game name, then
// one or more modifications such as "protocols+=70" or
// "options=send-empty-servers,send-full-servers". No spaces are allowed in
// a name or a modification, as in dpmaster.
func ParseProperties(gameName string, mods ...string) ([]Property, error) {
	if gameName == "" || strings.ContainsAny(gameName, " \t\\\"") {
		return nil, fmt.Errorf("%w: game name %q", ErrSyntax, gameName)
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("%w: -g %s: no property", ErrSyntax, gameName)
	}
	props := make([]Property, 0, len(mods))
	for _, m := range mods {
		i := strings.IndexByte(m, '=')
		if i <= 0 {
			return nil, fmt.Errorf("%w: %q: want PROPERTY=VALUE[,PROPERTY=VALUE]", ErrSyntax, m)
		}
		key, op := m[:i], OpSet
		switch {
		case strings.HasSuffix(key, "+"):
			key, op = key[:len(key)-1], OpAdd
		case strings.HasSuffix(key, "-"):
			key, op = key[:len(key)-1], OpRemove
		}
		if !slices.Contains(propertyKeys, key) {
			return nil, fmt.Errorf("%w: unknown property %q (want one of %s)", ErrSyntax, key, strings.Join(propertyKeys, ", "))
		}
		var vals []string
		if v := m[i+1:]; v != "" {
			vals = strings.Split(v, ",")
		}
		if key == "reprobe" {
			var d time.Duration
			err := ErrSyntax
			if op == OpSet && len(vals) == 1 {
				d, err = time.ParseDuration(vals[0])
			}
			if err != nil || (d != 0 && (d < MinReprobeInterval || d > MaxReprobeInterval)) {
				return nil, fmt.Errorf("%w: %q: want reprobe=DURATION from %v to %v, or 0 for none", ErrSyntax, m, MinReprobeInterval, MaxReprobeInterval)
			}
		}
		if len(vals) > MaxPropertyValues {
			return nil, fmt.Errorf("%w: %q: more than %d values", ErrSyntax, key, MaxPropertyValues)
		}
		for _, v := range vals {
			if v == "" || strings.ContainsAny(v, " \t\\\"") {
				return nil, fmt.Errorf("%w: %q: bad value %q", ErrSyntax, key, v)
			}
			if key == "protocols" {
				// Any 32-bit number, negative too: dpmaster reads -g
				// protocols with strtol, and servers may declare one.
				if _, err := strconv.ParseInt(v, 0, 32); err != nil {
					return nil, fmt.Errorf("%w: protocol %q", ErrSyntax, v)
				}
			}
			if key == "options" && v != "send-empty-servers" && v != "send-full-servers" {
				return nil, fmt.Errorf("%w: unknown option %q", ErrSyntax, v)
			}
		}
		props = append(props, Property{Game: gameName, Key: key, Op: op, Values: vals})
	}
	return props, nil
}

// Apply returns a new catalogue with props applied in order. A property for
// an unknown game creates it as a Quake III-family game, anonymous if it is
// given a heartbeat tag (as dpmaster does). c is not modified.
func (c *Catalogue) Apply(props ...Property) (*Catalogue, error) {
	games := make([]*Game, 0, len(c.games)+1)
	index := make(map[string]*Game, len(c.games))
	for _, g := range c.games {
		cl := g.Clone()
		games = append(games, cl)
		index[cl.Name] = cl
	}
	for _, p := range props {
		g, ok := index[p.Game]
		if !ok {
			g = &Game{
				Name: p.Game, Title: p.Game, Family: FamilyQ3,
				Reprobe:    Reprobe{Requests: GetInfo, Interval: DefaultReprobeInterval},
				MasterPort: PortQ3Master,
			}
			games = append(games, g)
			index[p.Game] = g
		}
		switch p.Key {
		case "protocols":
			nums := make([]int, len(p.Values))
			for i, v := range p.Values {
				n, _ := strconv.ParseInt(v, 0, 32) // checked by ParseProperties
				nums[i] = int(n)
			}
			g.Protocols = edit(g.Protocols, p.Op, nums)
		case "heartbeat":
			g.Heartbeats = edit(g.Heartbeats, p.Op, p.Values)
			g.Anonymous = g.Anonymous || len(g.Heartbeats) > 0
		case "reprobe":
			var d time.Duration
			if len(p.Values) == 1 {
				d, _ = time.ParseDuration(p.Values[0]) // checked by ParseProperties
			}
			g.Reprobe.Interval = d
		case "flatline":
			g.Flatlines = edit(g.Flatlines, p.Op, p.Values)
		case "gamenames":
			g.Gamenames = edit(g.Gamenames, p.Op, p.Values)
		case "options":
			var o Options
			for _, v := range p.Values {
				if v == "send-empty-servers" {
					o |= SendEmpty
				} else {
					o |= SendFull
				}
			}
			switch p.Op {
			case OpSet:
				g.Options = o
			case OpAdd:
				g.Options |= o
			case OpRemove:
				g.Options &^= o
			}
		default:
			return nil, fmt.Errorf("%w: unknown property %q", ErrSyntax, p.Key)
		}
	}
	return NewCatalogue(games...)
}

func edit[T comparable](list []T, op Op, vals []T) []T {
	switch op {
	case OpSet:
		return slices.Clone(vals)
	case OpAdd:
		for _, v := range vals {
			if !slices.Contains(list, v) {
				list = append(list, v)
			}
		}
	case OpRemove:
		list = slices.DeleteFunc(list, func(x T) bool { return slices.Contains(vals, x) })
	}
	return list
}

// PolicyMode is --game-policy's first argument.
type PolicyMode uint8

const (
	// PolicyAll accepts every game: the zero Policy, dpmaster's default.
	PolicyAll PolicyMode = iota
	// PolicyAccept accepts only the listed games.
	PolicyAccept
	// PolicyReject accepts every game except the listed ones.
	PolicyReject
)

// String returns "all", "accept" or "reject".
func (m PolicyMode) String() string {
	switch m {
	case PolicyAll:
		return "all"
	case PolicyAccept:
		return "accept"
	case PolicyReject:
		return "reject"
	}
	return fmt.Sprintf("policy(%d)", uint8(m))
}

// Policy is the master's game policy (dpmaster's --game-policy). Names are
// case-sensitive. The zero Policy accepts every game. A Policy is
// immutable once built and safe for concurrent use.
type Policy struct {
	mode  PolicyMode
	names map[string]struct{}
}

// ParsePolicy merges one or more "--game-policy MODE NAME..." argument
// lists. All must use the same mode, as dpmaster requires.
func ParsePolicy(lists ...[]string) (Policy, error) {
	var p Policy
	for _, l := range lists {
		if len(l) < 2 {
			return Policy{}, fmt.Errorf("%w: --game-policy needs accept|reject and at least one game", ErrSyntax)
		}
		var m PolicyMode
		switch l[0] {
		case "accept":
			m = PolicyAccept
		case "reject":
			m = PolicyReject
		default:
			return Policy{}, fmt.Errorf("%w: --game-policy %q: want accept or reject", ErrSyntax, l[0])
		}
		if p.mode != PolicyAll && p.mode != m {
			return Policy{}, fmt.Errorf("%w: --game-policy lists mix accept and reject", ErrSyntax)
		}
		p.mode = m
		if p.names == nil {
			p.names = make(map[string]struct{})
		}
		for _, n := range l[1:] {
			p.names[n] = struct{}{}
		}
	}
	return p, nil
}

// Mode returns the policy's mode.
func (p Policy) Mode() PolicyMode { return p.mode }

// Accepts reports whether the policy lets the game named name be listed
// and queried.
func (p Policy) Accepts(name string) bool {
	_, listed := p.names[name]
	switch p.mode {
	case PolicyAccept:
		return listed
	case PolicyReject:
		return !listed
	}
	return true
}
