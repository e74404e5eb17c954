// Package game is the catalogue of the games scout knows: how each one
// registers with a master server, how its clients ask for servers, and how a
// master keeps its listing true.
//
// The master (package master) and the discovery client both read this table.
// It is plain data: a [Game] value per game, collected in a [Catalogue] that
// answers the lookups a master needs while it handles packets:
//
//   - [Catalogue.ByHeartbeat]: the game of an "anonymous" server, from the tag
//     of its heartbeat ("heartbeat QuakeArena-1" is Quake III Arena);
//   - [Catalogue.ByGamename]: the game of a server or client that names
//     itself ("gamename\Xonotic" in an infoResponse, "getserversExt Xonotic 3");
//   - [Catalogue.ByProtocol]: the game of an anonymous client, from the
//     protocol number alone ("getservers 68");
//   - [Catalogue.ByName]: by the name used in configuration and policies.
//
// # Anonymous and named games
//
// dpmaster's documentation (doc/manual.txt, "GAME PROPERTIES") distinguishes
// two kinds of game. DarkPlaces-protocol games (Xonotic, Nexuiz, Warsow,
// OpenArena when com_gamename is OpenArena, ...) send "heartbeat DarkPlaces",
// put their name in the infoResponse's "gamename" key and in their queries
// ("getservers Xonotic 3"). Anonymous games (Quake III Arena, Return to
// Castle Wolfenstein, Enemy Territory) send a game-specific heartbeat tag and
// query with a bare protocol number, so the master recognises them by tag and
// by protocol. The catalogue keeps dpmaster's names for them ("Quake3Arena",
// "wolfmp", "et") so that --game-policy and -g mean the same thing.
//
// # Configuration
//
// [ParseProperties] reads dpmaster's "-g GAME PROPERTY=VALUE,..." syntax and
// [Catalogue.Apply] applies it; [ParsePolicy] reads "--game-policy
// accept|reject NAMES". A Catalogue is immutable once built: Apply returns a
// new one, so a running master can share it between goroutines freely.
package game

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Family is the wire protocol family a game speaks to masters and clients.
type Family uint8

const (
	// FamilyUnknown is the zero Family; no built-in game has it.
	FamilyUnknown Family = iota
	// FamilyQ3 is the Quake III connectionless protocol: packets start with
	// 0xFFFFFFFF, commands are text, info strings are backslash-separated.
	// Quake III Arena, RtCW, Enemy Territory and the DarkPlaces games.
	FamilyQ3
	// FamilyDoom3 is the Doom 3 / Quake 4 protocol: packets start with
	// 0xFFFF, info keys and values are NUL-separated, the protocol version is
	// a binary uint32 (major<<16 | minor), challenges are int32.
	FamilyDoom3
	// FamilyGameSpy4 is the GameSpy 4 style query used by Unreal Tournament
	// 3 (FE FD 09 challenge, FE FD 00 info). Query only; no master here.
	FamilyGameSpy4
	// FamilySource is Valve's Source engine query (A2S_INFO). Query only.
	FamilySource
)

// String returns the family's short name.
func (f Family) String() string {
	switch f {
	case FamilyQ3:
		return "q3"
	case FamilyDoom3:
		return "doom3"
	case FamilyGameSpy4:
		return "gamespy4"
	case FamilySource:
		return "source"
	}
	return fmt.Sprintf("family(%d)", uint8(f))
}

// Options are dpmaster's per-game options (its "-g GAME options=...").
type Options uint8

const (
	// SendEmpty makes getservers answers include empty servers even when the
	// client did not ask for them ("send-empty-servers"). Enemy Territory
	// clients expect it.
	SendEmpty Options = 1 << iota
	// SendFull makes getservers answers include full servers even when the
	// client did not ask for them ("send-full-servers").
	SendFull
)

// String lists the options in dpmaster's spelling, comma-separated, or
// "none".
func (o Options) String() string {
	switch o {
	case 0:
		return "none"
	case SendEmpty:
		return "send-empty-servers"
	case SendFull:
		return "send-full-servers"
	case SendEmpty | SendFull:
		return "send-empty-servers,send-full-servers"
	}
	return fmt.Sprintf("options(%#x)", uint8(o))
}

// Requests is a set of the requests a master sends to check a server.
type Requests uint8

const (
	// GetInfo is "getinfo <challenge>" (Q3) or "getInfo" with an int32
	// challenge (Doom 3 / Quake 4), answered by infoResponse.
	GetInfo Requests = 1 << iota
	// GetStatus is "getstatus <challenge>", answered by statusResponse.
	GetStatus
	// GetChallenge is "getchallenge", answered by challengeResponse. Enemy
	// Territory's master sends it with each re-probe; it proves nothing on
	// its own (the server picks the challenge), so scout only sends it for
	// fidelity to the seed and never waits for it.
	GetChallenge
)

// String lists the requests in the order a master sends them.
func (r Requests) String() string {
	if r == 0 {
		return "none"
	}
	s := ""
	add := func(bit Requests, name string) {
		if r&bit != 0 {
			if s != "" {
				s += "+"
			}
			s += name
		}
	}
	add(GetChallenge, "getchallenge")
	add(GetStatus, "getstatus")
	add(GetInfo, "getinfo")
	return s
}

// Reprobe is how a master keeps a listed server's entry true: which
// requests it sends, and how often.
type Reprobe struct {
	// Requests sent at each re-probe. The master lists or refreshes the
	// server on the first verified reply among them.
	Requests Requests
	// Interval between re-probes of a listed server. Zero means the game
	// is never re-probed; the server stays listed only as long as it
	// heartbeats.
	Interval time.Duration
}

// Game is one game's entry in the catalogue. Slices are shared with the
// catalogue and must not be modified; use [Game.Clone] first.
type Game struct {
	// Name is the game's master-protocol name: the "gamename" it sends, or
	// dpmaster's name for an anonymous game ("Quake3Arena", "wolfmp",
	// "et"). Names are case-sensitive, as in dpmaster. It is the name used
	// by --game-policy and -g.
	Name string
	// Title is the human-readable name.
	Title string
	// Family is the protocol family.
	Family Family
	// Anonymous reports a game whose clients query with a bare protocol
	// number and whose servers may omit "gamename": the master identifies
	// it by Heartbeats and Protocols.
	Anonymous bool
	// Heartbeats are the tags of its "heartbeat TAG" packets while alive.
	// DarkPlaces-protocol games all send "DarkPlaces" and are identified by
	// gamename instead, so they list none here.
	Heartbeats []string
	// Flatlines are the tags it sends when shutting down ("WolfFlatline-1",
	// "ETFlatline-1").
	Flatlines []string
	// Gamenames are the values of "gamename" its servers put in
	// infoResponse. For a named game, Name is among them. Empty means the
	// game's servers send no gamename (the master uses Name).
	Gamenames []string
	// Gametypes names its game types as players read them, by the number
	// its servers send (g_gametype; "" where a number has no name). Nil
	// for a game whose servers send a name, or whose numbers scout does
	// not know: GametypeName then gives the server's text.
	Gametypes []string
	// Protocols are its network protocol numbers. For FamilyDoom3 they are
	// versions, major<<16 | minor (Quake 4 1.4.2 is 2.85 = 0x20055).
	Protocols []int
	// Options are dpmaster's per-game answer options.
	Options Options
	// Reprobe is how the master re-checks its listed servers.
	Reprobe Reprobe
	// GamePort is the default UDP port of its servers.
	GamePort uint16
	// MasterPort is the default UDP port of its master server.
	MasterPort uint16
	// MOTDPort is the port of its "getmotd" service, 0 if none (Enemy
	// Territory: 27951).
	MOTDPort uint16
	// Masters are well-known public master host names, as host:port, in
	// the order a client should try them. Several are historical and may
	// no longer answer.
	Masters []string
}

// Clone returns a deep copy of g, safe to modify.
func (g *Game) Clone() *Game {
	c := *g
	c.Heartbeats = slices.Clone(g.Heartbeats)
	c.Flatlines = slices.Clone(g.Flatlines)
	c.Gamenames = slices.Clone(g.Gamenames)
	c.Protocols = slices.Clone(g.Protocols)
	c.Masters = slices.Clone(g.Masters)
	return &c
}

// HasProtocol reports whether p is one of the game's protocols.
func (g *Game) HasProtocol(p int) bool { return slices.Contains(g.Protocols, p) }

// HasGamename reports whether name is a gamename the game's servers send.
// A game with no Gamenames accepts its own Name.
func (g *Game) HasGamename(name string) bool {
	if len(g.Gamenames) == 0 {
		return name == g.Name
	}
	return slices.Contains(g.Gamenames, name)
}

// Doom3Version builds a Doom 3 / Quake 4 protocol version from its major
// and minor numbers, as the engines put it on the wire.
func Doom3Version(major, minor uint16) int { return int(major)<<16 | int(minor) }

// HeartbeatDarkPlaces is the heartbeat tag of every DarkPlaces-protocol game
// ("heartbeat DarkPlaces\n"), ioquake3 with a non-default com_gamename
// included. The game is then known only from the infoResponse's gamename.
const HeartbeatDarkPlaces = "DarkPlaces"

// Re-probe intervals from the seed (CAIA 070730A, sections II.C and III.D).
const (
	// Q3AReprobeInterval: id's Q3A master sent getstatus every 5 minutes.
	Q3AReprobeInterval = 5 * time.Minute
	// ETReprobeInterval: id's ET master sent getchallenge+getstatus+getinfo
	// every 4 minutes.
	ETReprobeInterval = 4 * time.Minute
	// DefaultReprobeInterval is used for the other games: the Q3A rhythm,
	// which matches the 5-minute heartbeat period of Quake III engines.
	DefaultReprobeInterval = 5 * time.Minute
)

// Default ports.
const (
	PortQ3Master    = 27950 // Q3A, RtCW, ET, DarkPlaces masters
	PortQ3Server    = 27960 // Q3A, RtCW, ET, ioquake3 servers
	PortETMOTD      = 27951 // ET getmotd / motd
	PortDoom3Master = 27650 // Doom 3 and Quake 4 masters
	PortQuake4      = 28004 // Quake 4 servers
	PortDoom3       = 27666 // Doom 3 servers
)

// GametypeName is gametype gt (as a server sends it) as players read it:
// the name of its number in Gametypes ("CTF" for Quake III Arena's 4), or
// gt itself when it is not a number with a name.
func (g *Game) GametypeName(gt string) string {
	n, err := strconv.Atoi(gt)
	if err != nil || n < 0 || n >= len(g.Gametypes) || g.Gametypes[n] == "" || strconv.Itoa(n) != gt {
		return gt
	}
	return g.Gametypes[n]
}
