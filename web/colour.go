package web

import "strings"

// StripColours returns name without its colour codes, as the games draw
// it: "^" followed by any byte but "^" is a Quake III colour code (ioquake3
// draws ^0-^9 and treats any other "^x" alike); Quake 4's "^c" takes three
// digits more (^c900 is red) and DarkPlaces' "^x" three hex digits more
// (^xF80); "^^" is a literal "^" (DarkPlaces). A "^" at the end is kept.
// Control bytes are dropped.
func StripColours(name string) string {
	if strings.IndexByte(name, '^') < 0 && !hasControl(name) {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c < ' ' || c == 0x7f:
			continue
		case c != '^' || i+1 == len(name):
			b.WriteByte(c)
			continue
		}
		next := name[i+1]
		switch {
		case next == '^':
			b.WriteByte('^')
			i++
		case (next == 'c' || next == 'C') && i+4 < len(name) && digits(name[i+2:i+5], isDigit):
			i += 4
		case (next == 'x' || next == 'X') && i+4 < len(name) && digits(name[i+2:i+5], isHex):
			i += 4
		default:
			i++
		}
	}
	return b.String()
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

func digits(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
