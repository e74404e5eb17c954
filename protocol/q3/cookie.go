package q3

import (
	"bytes"
	"fmt"
	"strings"
)

// Cookie extension (scout's): a client proves that it receives at the
// address it asks from, so that a master can send it a large list at
// once, which it would not send to an address a spoofed request could
// name. A client adds the word CookieKeyword to getservers or
// getserversExt to ask for a cookie, or CookieKeyword=TOKEN to echo one
// it was given ("getservers 68 empty full cookie=Ab3_..."). A master that
// does not know the word ignores it: dpmaster skips every filter word it
// does not know, and so does scout's master without cookies; a game
// client never sends it, and is never sent a cookie.
//
// A scout master answers a request that asks for one, or echoes one it
// cannot check, with a Cookie before the list:
//
//	\xff\xff\xff\xffcookie <token>           (the list follows)
//	\xff\xff\xff\xffcookie <token> again     (the list was not sent: ask again with the cookie)
//
// never larger than the request, so it reflects nothing: a token is at
// most MaxCookieLen characters of the base64url alphabet, and a master
// sends none to a request shorter than its reply. A client echoes the
// token in its next request to that master, as long as it runs; the
// master takes it for the address it gave it to, for an hour or two.
const (
	CookieKeyword = "cookie"
	// CookieCommand names the reply packet.
	CookieCommand = "cookie"
	// MaxCookieLen bounds a token.
	MaxCookieLen = 64
	cookieAgain  = "again"
)

// CookieWord returns the getservers word that echoes token.
func CookieWord(token string) string { return CookieKeyword + "=" + token }

// CookieOf returns the token a request's unknown words (GetServers.Other)
// echo, if any, and whether they ask for a cookie at all (the bare word,
// or an echo).
func CookieOf(other []string) (token string, asked bool) {
	for _, w := range other {
		switch {
		case w == CookieKeyword:
			asked = true
		case strings.HasPrefix(w, CookieKeyword+"="):
			if t := w[len(CookieKeyword)+1:]; validCookie(t) {
				return t, true
			}
			asked = true
		}
	}
	return "", asked
}

// Cookie is a master's cookie reply.
type Cookie struct {
	Token string
	// Again says the list was not sent: the client asks again at once,
	// echoing Token.
	Again bool
}

var cookieHeader = Prefix + CookieCommand + " "

func validCookie(t string) bool {
	if len(t) == 0 || len(t) > MaxCookieLen {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// AppendBinary appends the reply packet.
func (c Cookie) AppendBinary(b []byte) ([]byte, error) {
	if !validCookie(c.Token) {
		return b, fmt.Errorf("%w: cookie %q: 1 to %d characters of [A-Za-z0-9_-]", ErrInvalid, clip(c.Token), MaxCookieLen)
	}
	b = append(b, cookieHeader...)
	b = append(b, c.Token...)
	if c.Again {
		b = append(b, ' ')
		b = append(b, cookieAgain...)
	}
	return b, nil
}

// ParseCookie reads a cookie reply. Errors wrap ErrNotQ3, ErrTruncated or
// ErrMalformed.
func ParseCookie(pkt []byte) (Cookie, error) {
	if !bytes.HasPrefix(pkt, []byte(Prefix)) {
		return Cookie{}, ErrNotQ3
	}
	if !bytes.HasPrefix(pkt, []byte(cookieHeader)) {
		if bytes.HasPrefix([]byte(cookieHeader), pkt) {
			return Cookie{}, fmt.Errorf("%w: cookie header", ErrTruncated)
		}
		return Cookie{}, fmt.Errorf("%w: not a cookie", ErrMalformed)
	}
	rest := strings.TrimRight(string(pkt[len(cookieHeader):]), "\n")
	tok, flag, spaced := strings.Cut(rest, " ")
	c := Cookie{Token: tok}
	switch {
	case !validCookie(tok):
		return Cookie{}, fmt.Errorf("%w: cookie token %q", ErrMalformed, clip(tok))
	case flag == cookieAgain:
		c.Again = true
	case flag != "" || spaced:
		return Cookie{}, fmt.Errorf("%w: cookie flag %q", ErrMalformed, clip(flag))
	}
	return c, nil
}
