package q3

import (
	"fmt"
	"strconv"
	"strings"
)

// GetServers is a client's request for the server list, in either of its
// forms:
//
//	FF FF FF FF "getservers "    [<gamename> ] <protocol> {" " <option>} [0A]
//	FF FF FF FF "getserversExt " [<gamename> ] <protocol> {" " <option>} [0A]
//
// Quake III, RtCW and ET send the anonymous form "getservers 68 empty
// full"; DarkPlaces games put their game name first ("getservers Nexuiz 3
// empty full"), which is how dpmaster tells the forms apart: a first word
// that reads as a number (decimal digits after an optional sign, as C's
// strtol reads it: "getservers -1" asks for protocol -1) is the protocol.
// dpmaster answers getserversExt with
// getserversExtResponse and requires the game name there; early ioquake3
// sent "getserversExt 68 empty ipv6" without one, which this package reads
// and writes but dpmaster refuses.
//
// Options (dpmaster doc/techinfo.txt, messages.c): "empty" and "full" ask
// for empty and full servers too; "gametype=X" filters on the server's
// gametype, and "ffa", "tourney", "team", "ctf" stand for gametype=0, 1, 3
// and 4; "ipv4" and "ipv6" (extended form) ask for those address families,
// and neither means both. Words are compared case-sensitively, as dpmaster
// does.
//
// A request that ends in whitespace without a terminator ("getservers 84 ",
// as old Enemy Territory clients send) may have been cut before its next
// word: Parse returns the whole message it read together with an error
// wrapping ErrTruncated, so a caller that answers such requests anyway (as
// dpmaster does) can.
type GetServers struct {
	// Ext selects getserversExt.
	Ext bool `json:"ext"`
	// GameName is the game's name ("Quake3Arena", "Nexuiz", "et");
	// "" for the anonymous Quake III form. One word, not all digits.
	GameName string `json:"game_name,omitempty"`
	// Protocol is the network protocol the client speaks (68 for Quake
	// III 1.32, 71 for ioquake3/OpenArena, 84 for ET 2.60, 60 for RtCW).
	// Any 32-bit signed value: dpmaster reads it with strtol, and test
	// and custom builds use negative ones.
	Protocol int `json:"protocol"`
	// Empty and Full ask for empty and full servers as well.
	Empty bool `json:"empty,omitempty"`
	Full  bool `json:"full,omitempty"`
	// GameType is the gametype filter; "" means none. dpmaster 2.1 and
	// later compare it as a string (Xonotic sends names); Quake III uses
	// numbers. The shortcuts ffa, tourney, team and ctf decode as "0",
	// "1", "3" and "4", and those values encode as the shortcuts, which
	// both id's master and dpmaster understand.
	GameType string `json:"game_type,omitempty"`
	// IPv4 and IPv6 ask for servers of that address family. dpmaster
	// honours them only in getserversExt; they are kept for either form.
	IPv4 bool `json:"ipv4,omitempty"`
	IPv6 bool `json:"ipv6,omitempty"`
	// Other holds the words this package does not know, in order.
	Other []string `json:"other,omitempty"`
	// Terminator is the line ending; TermDefault sends none, as the
	// engines do (qstat adds a newline for q3m, rwm and q3m,71).
	Terminator Terminator `json:"terminator,omitempty"`
}

// gameTypeShortcuts are the Quake III words for gametype filters.
func gameTypeShortcuts() [4]struct{ word, value string } {
	return [...]struct{ word, value string }{
		{"ffa", "0"}, {"tourney", "1"}, {"team", "3"}, {"ctf", "4"},
	}
}

const gameTypeOption = "gametype="

func (g GetServers) word() string {
	if g.Ext {
		return cmdGetServersExt
	}
	return cmdGetServers
}

// AppendBinary appends the request. The options come in a fixed order:
// gametype, empty, full, ipv4, ipv6, then Other.
func (g GetServers) AppendBinary(b []byte) ([]byte, error) {
	if g.GameName != "" {
		if err := validToken("game name", g.GameName); err != nil {
			return b, err
		}
		if isSignedNumber(g.GameName) {
			return b, fmt.Errorf("%w: game name %q would read as the protocol", ErrInvalid, clip(g.GameName))
		}
	}
	if int64(g.Protocol) < -1<<31 || int64(g.Protocol) > 1<<31-1 {
		return b, fmt.Errorf("%w: protocol %d", ErrInvalid, g.Protocol)
	}
	if g.GameType != "" {
		if err := validToken("game type", g.GameType); err != nil {
			return b, err
		}
	}
	for _, w := range g.Other {
		if err := validToken("option", w); err != nil {
			return b, err
		}
		if isKnownOption(w) {
			return b, fmt.Errorf("%w: option %q in Other has a field of its own", ErrInvalid, clip(w))
		}
	}
	out := appendHeader(b, g.word())
	if g.GameName != "" {
		out = append(out, ' ')
		out = append(out, g.GameName...)
	}
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(g.Protocol), 10)
	if g.GameType != "" {
		out = append(out, ' ')
		out = appendGameType(out, g.GameType)
	}
	for _, o := range [...]struct {
		on   bool
		word string
	}{{g.Empty, "empty"}, {g.Full, "full"}, {g.IPv4, "ipv4"}, {g.IPv6, "ipv6"}} {
		if o.on {
			out = append(out, ' ')
			out = append(out, o.word...)
		}
	}
	for _, w := range g.Other {
		out = append(out, ' ')
		out = append(out, w...)
	}
	out, err := g.Terminator.resolve(TermNone).append(out)
	if err != nil {
		return b, err
	}
	return out, nil
}

func appendGameType(b []byte, gt string) []byte {
	for _, s := range gameTypeShortcuts() {
		if s.value == gt {
			return append(b, s.word...)
		}
	}
	b = append(b, gameTypeOption...)
	return append(b, gt...)
}

func isKnownOption(w string) bool {
	switch w {
	case "empty", "full", "ipv4", "ipv6":
		return true
	}
	for _, s := range gameTypeShortcuts() {
		if w == s.word {
			return true
		}
	}
	return strings.HasPrefix(w, gameTypeOption)
}

func parseGetServers(body []byte, ext bool) (Message, error) {
	g := GetServers{Ext: ext}
	name := g.word()
	l, err := splitLine(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	g.Terminator = l.term
	words := l.words
	if len(words) == 0 {
		return nil, fmt.Errorf("%s: %w", name, l.short("protocol"))
	}
	if !isSignedNumber(words[0]) {
		// dpmaster's rule: a first word that is not a number is the game
		// name, and the protocol follows it.
		g.GameName = words[0]
		words = words[1:]
		if len(words) == 0 {
			return nil, fmt.Errorf("%s: %w", name, l.short("protocol after the game name"))
		}
	}
	if g.Protocol, err = parseSignedNumber("protocol", words[0]); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i, w := range words[1:] {
		switch w {
		case "empty":
			g.Empty = true
		case "full":
			g.Full = true
		case "ipv4":
			g.IPv4 = true
		case "ipv6":
			g.IPv6 = true
		case "ffa", "tourney", "team", "ctf":
			for _, s := range gameTypeShortcuts() {
				if w == s.word {
					g.GameType = s.value
				}
			}
		default:
			if gt, ok := strings.CutPrefix(w, gameTypeOption); ok {
				if gt == "" {
					if l.term == TermNone && i == len(words)-2 {
						return nil, fmt.Errorf("%s: %w: gametype= without a value", name, ErrTruncated)
					}
					return nil, fmt.Errorf("%s: %w: gametype= without a value", name, ErrMalformed)
				}
				// Lenient: dpmaster allows one filter; with several, the
				// last one wins, as it does in dpmaster's loop.
				g.GameType = gt
				continue
			}
			g.Other = append(g.Other, w)
		}
	}
	return l.finish(name, g)
}
