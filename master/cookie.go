package master

// Cookies: scout's clients prove that they receive at the address they ask
// from (protocol/q3's cookie extension). A list request that carries the
// word asks for a cookie, one that carries cookie=TOKEN echoes it; the
// token is a Challenge (HMAC of the address, port 0, with a secret that
// rotates every HandlerDeps.Cookies period) for the request's address, so
// it checks for that address alone and for one to two periods. A request
// that echoes a good one is served from the address's cookie lane
// (ResponseLimits.CookieBurst, CookieRate), which a spoofed request
// cannot reach: the spoofer never sees the token. Any other request is
// served from the address's and networks' lanes as a game client's, and
// one that asked gets a token in a cookie datagram first, never larger
// than the request (so it reflects nothing), with "again" when the list
// did not go (getServers). A reply to a request that asked is never
// paced: one too large to go at once is not sent, and the client, told
// "again", asks at once with its cookie and gets the whole list from its
// cookie lane; a paced list would come slower, and its pauses could end a
// client's wait for it.

import (
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/protocol/q3"
)

// cookie is the lane of a list query from from whose unknown
// words are other, and the cookie to send it, if any (cookie.go): the
// cookie lane when it echoes a cookie this master gave its address;
// otherwise the legacy lane, and, when it asks for a cookie (or echoes
// one that does not check), a new one.
func (h *Handler) cookie(now time.Time, from netip.AddrPort, other []string) (replyLane, *q3.Cookie) {
	if h.deps.Cookies == nil {
		return laneLegacy, nil
	}
	token, asked := q3.CookieOf(other)
	if !asked {
		return laneLegacy, nil
	}
	a := netip.AddrPortFrom(from.Addr().Unmap(), 0)
	if token != "" {
		if h.deps.Cookies.Check(now, a, token) == OK {
			return laneCookie, nil
		}
		h.stats.badCookies.Add(1)
	}
	h.stats.cookies.Add(1)
	return laneAsking, &q3.Cookie{Token: h.deps.Cookies.Issue(now, a).Text}
}
