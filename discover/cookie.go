package discover

import (
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// Cookies (protocol/q3's cookie extension). Unless Config.NoCookies, every
// getservers and getserversExt a client sends asks a master for a cookie,
// or echoes the one that master gave it: a scout master then knows the
// request came from the address it answers, and serves it from a budget
// a spoofed flood cannot reach, at once even for a list of a million
// servers. A master that does not know the word (dpmaster) ignores it. A
// cookie that comes with "again" means the master did not send the list
// (the address's network is being flooded, say): the client asks again at
// once, echoing it, once per list.

// withCookie returns r's query with the cookie word: asking for one, or
// echoing token.
func (r *Request) withCookie(token string) Request {
	if r.Protocol != ProtocolQ3 {
		return *r
	}
	w := q3.CookieKeyword
	if token != "" {
		w = q3.CookieWord(token)
	}
	c := *r
	add := func(g q3.GetServers) q3.GetServers {
		g.Other = slices.DeleteFunc(slices.Clone(g.Other), func(o string) bool {
			return o == q3.CookieKeyword || strings.HasPrefix(o, q3.CookieKeyword+"=")
		})
		g.Other = append(g.Other, w)
		return g
	}
	c.Q3 = add(c.Q3)
	c.Q3Also = make([]q3.GetServers, len(r.Q3Also))
	for i, g := range r.Q3Also {
		c.Q3Also[i] = add(g)
	}
	return c
}

// receiveCookie handles a cookie packet from m: it keeps the token, and
// when the master says the list did not go, asks again with it (once a
// list). It reports whether b was a cookie.
func (s *session) receiveCookie(now time.Time, m *collecting, b []byte) ([]outgoing, bool) {
	if s.cfg.NoCookies || m.Protocol != ProtocolQ3 {
		return nil, false
	}
	c, err := q3.ParseCookie(b)
	if err != nil {
		return nil, false
	}
	m.cookie = c.Token
	m.rep.Cookie = true
	if !c.Again || m.cookieAgain || m.done || m.rep.Packets > 0 {
		return nil, true
	}
	m.cookieAgain = true
	return s.ask(now, m), true
}
