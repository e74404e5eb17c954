// Package browser shows game servers to a person: the cleaning of
// server-controlled text for a terminal, and the filters and orders of a
// server browser. The interactive terminal browser is package tui.
package browser

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/gametext"
)

// Display makes a server-controlled string safe for a terminal: control
// bytes (escape sequences, tabs that would break the table) become '?',
// and bytes that are not UTF-8 become U+FFFD.
func Display(s string) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

// Name is a Quake III family server or player name for display: colour
// codes removed, the bytes read as the game's font draws them
// (gametext.Quake), then made safe by Display.
func Name(s string) string { return Display(gametext.Quake.Plain(s)) }

// NameFor is Name for a name of a probe dialect's game ("q3", "q4",
// "gs4", "a2s": probe.Result.Game), read in that game's character set.
func NameFor(game, s string) string { return Display(gametext.For(game).Plain(s)) }

// Ping formats a round-trip time: tenths below 10 ms, whole milliseconds
// above.
func Ping(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// Filter is what a player hides. The zero Filter shows every server that
// answered.
type Filter struct {
	HideEmpty bool
	HideFull  bool
	MaxPing   time.Duration // 0: any
	GameType  string        // exact, case-insensitive; "": any
	Map       string        // substring, case-insensitive; "": any
	GameName  string        // the "gamename" (or "game") key, case-insensitive; "": any
}

// Show reports whether r passes the filter. A server that never answered
// never does: there is nothing to show.
func (f Filter) Show(r probe.Result) bool {
	switch {
	case !r.Answered():
		return false
	case f.HideEmpty && r.NumPlayers == 0:
		return false
	case f.HideFull && r.MaxPlayers > 0 && r.NumPlayers >= r.MaxPlayers:
		return false
	case f.MaxPing > 0 && r.RTT > f.MaxPing:
		return false
	case f.GameType != "" && !strings.EqualFold(r.GameType, f.GameType) && !strings.EqualFold(GameType(r), f.GameType):
		return false
	case f.Map != "" && !strings.Contains(strings.ToLower(r.Map), strings.ToLower(f.Map)):
		return false
	case f.GameName != "" && !strings.EqualFold(GameName(r), f.GameName):
		return false
	}
	return true
}

// GameType is the server's game type as the page shows it: by name where
// the game's numbers have names ("CTF" for Quake III Arena's 4, game.Game's
// Gametypes), else as the server wrote it, made displayable.
func GameType(r probe.Result) string {
	if r.Game == "q3" {
		p, _ := strconv.Atoi(r.Protocol)
		g, ok := catalogue().ByGamenameProtocol(GameName(r), p)
		if !ok {
			g, ok = catalogue().ByProtocol(game.FamilyQ3, p)
		}
		if ok {
			return Display(g.GametypeName(r.GameType))
		}
	}
	return Display(r.GameType)
}

// catalogue is the built-in games, built once.
var catalogue = sync.OnceValue(game.Default)

// GameName is the game or mod a server names in its info (its gamename,
// game, si_game or folder key), "" when it names none.
func GameName(r probe.Result) string {
	for _, k := range []string{"gamename", "game", "si_game", "folder"} {
		if v, ok := r.Info.Get(k); ok && v != "" {
			return v
		}
	}
	return ""
}

// Orders are the --sort keys.
var Orders = []string{"ping", "players", "name", "map"}

// Sort orders rs by key (one of Orders): ping ascending, players
// descending, name and map alphabetically (colour codes ignored); ties by
// ping, then address. It reports false for an unknown key.
func Sort(rs []probe.Result, key string) bool {
	var by func(a, b probe.Result) int
	switch key {
	case "ping":
		by = func(a, b probe.Result) int { return 0 }
	case "players":
		by = func(a, b probe.Result) int { return cmp.Compare(b.NumPlayers, a.NumPlayers) }
	case "name":
		by = func(a, b probe.Result) int {
			return cmp.Compare(strings.ToLower(NameFor(a.Game, a.Name)), strings.ToLower(NameFor(b.Game, b.Name)))
		}
	case "map":
		by = func(a, b probe.Result) int { return cmp.Compare(strings.ToLower(a.Map), strings.ToLower(b.Map)) }
	default:
		return false
	}
	slices.SortStableFunc(rs, func(a, b probe.Result) int {
		return cmp.Or(by(a, b), cmp.Compare(a.RTT, b.RTT), a.Addr.Compare(b.Addr))
	})
	return true
}

// Columns of a server line.
const (
	addrWidth    = 21 // 255.255.255.255:65535
	nameWidth    = 32
	mapWidth     = 16
	playersWidth = 7
	typeWidth    = 12
)

// Header is the heading of Line's columns.
func Header() string {
	return fmt.Sprintf("%-*s  %-*s  %-*s  %*s  %-*s  %s", addrWidth, "ADDRESS", nameWidth, "NAME",
		mapWidth, "MAP", playersWidth, "PLAYERS", typeWidth, "TYPE", "PING")
}

// Line is one server as a line of fixed-width columns (no newline).
// Server text is cleaned and clipped to its column.
func Line(r probe.Result) string {
	if !r.Answered() {
		msg := "no reply"
		if r.Err != nil {
			msg = r.Err.Error()
		}
		return fmt.Sprintf("%-*s  %s", addrWidth, r.Addr, Display(msg))
	}
	return fmt.Sprintf("%-*s  %-*s  %-*s  %*s  %-*s  %s", addrWidth, r.Addr,
		nameWidth, clip(NameFor(r.Game, r.Name), nameWidth), mapWidth, clip(Display(r.Map), mapWidth),
		playersWidth, strconv.Itoa(r.NumPlayers)+"/"+strconv.Itoa(r.MaxPlayers),
		typeWidth, clip(GameType(r), typeWidth), Ping(r.RTT))
}

// clip cuts s to at most n runes, marking a cut with '~'.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "~"
}
