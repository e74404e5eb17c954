// Package gametext reads the text game servers send (server names,
// player names, map names) as the games draw it: each game's own 8-bit
// character set, and the colour codes the games strip from what they
// show.
//
// Servers send names as bytes. Quake III engines draw a byte as a glyph
// of their console font, whose lower 32 glyphs are symbols and whose upper
// half repeats the lower one in another colour; DarkPlaces games (Nexuiz,
// Xonotic) send UTF-8 when the server enables it; idTech 4 games (Quake 4,
// Doom 3) and GameSpy 4 titles send Latin-1; Source (A2S) sends UTF-8. A
// name is kept as its bytes ([Raw] in JSON) and decoded to Unicode only
// for display, so nothing is lost.
package gametext

import (
	"strings"
	"unicode/utf8"
)

// Charset is how a game's bytes map to characters.
type Charset uint8

const (
	// Quake is the Quake III family's console font: ASCII, the symbols
	// of bytes 0x01-0x1F and 0x7F, and an upper half that repeats the
	// lower one (0xC1 draws an 'A'). A name that is valid UTF-8 and
	// holds multi-byte sequences is read as UTF-8 instead (DarkPlaces
	// with UTF-8 enabled), its private-use glyphs U+E000-U+E0FF mapped
	// through the font.
	Quake Charset = iota
	// Latin1 maps each byte to the code point of the same value
	// (ISO 8859-1), as idTech 4 and GameSpy 4 games mean their names.
	Latin1
	// UTF8 is UTF-8; a byte that is not part of a valid sequence is
	// read as Latin-1, so no byte turns into U+FFFD.
	UTF8
)

// For returns the character set of the names of a probe dialect ("q3",
// "q4", "gs4", "a2s") or a game family as package game names it ("q3",
// "doom3", "gamespy4", "source"); Quake for one it does not know.
func For(dialect string) Charset {
	switch dialect {
	case "q4", "gs4", "doom3", "gamespy4":
		return Latin1
	case "a2s", "source":
		return UTF8
	}
	return Quake
}

// quakeLow is what the Quake font draws for bytes 0x00-0x1F: the frame
// and bullet glyphs as their nearest Unicode symbols, the bracket and
// digit glyphs (0x10-0x1B) as the characters they show.
var quakeLow = [32]rune{
	'·', '▪', '▪', '▪', '▪', '•', '▪', '▪', '▪', '▪', '▪', '▪', ' ', '▪', '•', '•',
	'[', ']', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '•', '─', '─', '─',
}

// quake is the character the Quake font draws for byte c.
func quake(c byte) rune {
	c &= 0x7f
	switch {
	case c < 0x20:
		return quakeLow[c]
	case c == 0x7f:
		return '←'
	}
	return rune(c)
}

// Decode returns raw (a name as the server sent it) as Unicode, colour
// codes kept. It never fails: every byte maps to a character.
func (cs Charset) Decode(raw string) string {
	switch cs {
	case Latin1:
		return latin1(raw)
	case UTF8:
		if utf8.ValidString(raw) {
			return raw
		}
		return mixed(raw)
	}
	if isPrintableASCII(raw) {
		return raw
	}
	if utf8.ValidString(raw) {
		return strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || r >= 0xe000 && r <= 0xe0ff { // the font's glyphs; DarkPlaces' private use
				return quake(byte(r))
			}
			return r
		}, raw)
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
		} else {
			b.WriteRune(quake(c))
		}
	}
	return b.String()
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func latin1(s string) string {
	if isASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}

// mixed reads s as UTF-8 where it is, and its other bytes as Latin-1.
func mixed(s string) string {
	var b strings.Builder
	b.Grow(len(s) * 2)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			b.WriteRune(rune(s[i]))
			i++
			continue
		}
		b.WriteRune(r)
		i += n
	}
	return b.String()
}

// StripColours removes colour codes from a name, as the games do when
// they draw it: '^' and the byte after it when that byte is a letter or
// digit (ioquake3's Q_IsColorString); Quake 4's "^c" with three digits
// (^c900) and DarkPlaces' "^x" with three hex digits (^xF80) whole; "^^"
// is a literal '^' (DarkPlaces). Any other '^' is kept.
func StripColours(s string) string {
	if strings.IndexByte(s, '^') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '^' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		switch next := s[i+1]; {
		case next == '^':
			b.WriteByte('^')
			i++
		case (next == 'c' || next == 'C') && i+4 < len(s) && all(s[i+2:i+5], isDigit):
			i += 4
		case (next == 'x' || next == 'X') && i+4 < len(s) && all(s[i+2:i+5], isHex):
			i += 4
		case isDigit(next) || next >= 'a' && next <= 'z' || next >= 'A' && next <= 'Z':
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func all(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// Plain is a name for display and search: colour codes stripped from its
// bytes (a high byte that draws as '^' starts no colour code), then
// decoded with cs.
func (cs Charset) Plain(raw string) string { return cs.Decode(StripColours(raw)) }
