package master

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/protocol/infostring"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
)

// admitQuery is why a query from from at now is not answered (a source
// no reply may go to, or the query limiter's verdict), or OK.
func (h *Handler) admitQuery(now time.Time, from netip.AddrPort) Reason {
	if badSource(from) {
		return ReasonBadAddress
	}
	return h.allow(h.deps.Queries, now, from)
}

// getServers answers getservers and getserversExt (not through
// admitQuery: a getserversExt without a game name is refused as such
// before the limiter counts it).
func (h *Handler) getServers(now time.Time, from netip.AddrPort, m q3.GetServers, size int, dst []Outgoing) []Outgoing {
	k := KindGetServers
	if m.Ext {
		k = KindGetServersExt
	}
	if badSource(from) {
		return h.drop(dst, k, from, ReasonBadAddress)
	}
	if m.Ext && m.GameName == "" {
		// The game name is mandatory in getserversExt (dpmaster reads the
		// first word as the name, finds no protocol after it, and answers
		// nothing): early ioquake3's "getserversExt 68 empty ipv6".
		return h.drop(dst, k, from, ReasonExtWithoutGame)
	}
	if why := h.allow(h.deps.Queries, now, from); why != OK {
		return h.drop(dst, k, from, why)
	}
	q := Query{Family: game.FamilyQ3, Game: m.GameName, Protocol: m.Protocol, Empty: m.Empty, Full: m.Full}
	if m.GameType != "" {
		q.Gametype, q.HasGametype = m.GameType, true
	}
	if m.Ext {
		q.IPv4, q.IPv6 = m.IPv4, m.IPv6
	} else {
		q.IPv4 = true // the short form has no room for IPv6 entries
	}
	f, why := h.reg.resolve(q, h.reg.current(now))
	switch why {
	case OK:
	case ReasonUnknownGame:
		// A well-formed query for a protocol no game lists and no listed
		// anonymous server uses gets the empty list, as from dpmaster, so
		// the client stops waiting; it is no larger than the query's own
		// reply to an empty game.
		h.stats.unknownGame.Add(1)
		f = filter{game: "\x00unknown"} // matches no group
	default:
		return h.drop(dst, k, from, why)
	}
	end := q3.EndEOT
	if m.GameName == "" && (m.Protocol == 43 || m.Protocol == 45) {
		end = q3.EndNUL // Q3Master notes: protocols 43/45 end with one NUL
	}
	form := replyForm{split: q3.SplitOptions{
		Ext: m.Ext, End: end, MaxEntries: h.conf().MaxEntries, MaxBytes: h.conf().MaxPacketBytes,
	}}
	outK := KindServersResponse
	if m.Ext {
		outK = KindServersExtResponse
	}
	var landmarks lmAsk
	if m.Ext && h.deps.Landmark != "" && slices.Contains(m.Other, q3.LandmarksKeyword) {
		landmarks = lmRuns
		if slices.Contains(m.Other, q3.LandmarkPeersKeyword) {
			landmarks |= lmPeers
		}
	}
	lane, cookie := h.cookie(now, from, m.Other)
	n := len(dst)
	dst = h.reply(now, from, outK, f, form, !h.conf().EndOnLastOnly, landmarks, lane, dst)
	if len(dst) == n+1 && dst[n].Encode != nil {
		// Left to the encoder: the cookie goes when the list is sent.
		dst[n].Encode.cookie, dst[n].Encode.cookieMax = cookie, size
		return dst
	}
	return h.sendCookie(dst, n, from, cookie, size)
}

// sendCookie puts cookie, if any, before the list's datagrams that dst
// holds from n on, with "again" when there are none (the list did not
// go), if it is at most max bytes (the request's size: a cookie reflects
// nothing).
func (h *Handler) sendCookie(dst []Outgoing, n int, to netip.AddrPort, cookie *q3.Cookie, max int) []Outgoing {
	if cookie == nil {
		return dst
	}
	c := *cookie
	c.Again = len(dst) == n
	b, err := c.AppendBinary(nil)
	if err != nil || len(b) > max {
		return dst
	}
	h.stats.out[KindCookie].Add(1)
	h.stats.outBytes[KindCookie].Add(uint64(len(b)))
	return slices.Insert(dst, n, Outgoing{To: to, Kind: KindCookie, Payload: b})
}

// sendList sends a cached server-list reply, all or nothing: its bytes
// are reserved from the response limiter and the budget at once (paced
// if it is larger than a budget's burst), and its packets rotated for
// fairness (see answer).
func (h *Handler) sendList(now time.Time, to netip.AddrPort, k Kind, a *answer, lane replyLane, dst []Outgoing) []Outgoing {
	p, why := h.reserve(now, to, h.deps.Responses, a.bytes, len(a.pkts), lane)
	if why != OK {
		h.stats.dropped[why].Add(1)
		h.stats.denied.Add(uint64(a.bytes))
		return dst
	}
	h.stats.out[k].Add(uint64(len(a.pkts)))
	h.stats.outBytes[k].Add(uint64(a.bytes))
	h.stats.answers.Add(1)
	if lane == laneCookie {
		h.stats.cookieAnswers.Add(1)
	}
	n := len(dst)
	dst = a.appendTo(dst, to, k, h.reg.rotation.Add(1))
	h.delay(p, to, dst[n:])
	return dst
}

// answer sends a query's reply packets, all or nothing.
func (h *Handler) answer(now time.Time, to netip.AddrPort, k Kind, pkts [][]byte, dst []Outgoing) []Outgoing {
	outs := make([]Outgoing, len(pkts))
	for i, p := range pkts {
		outs[i] = Outgoing{To: to, Kind: k, Payload: p}
	}
	n := len(dst)
	dst = h.send(now, to, h.deps.Responses, laneLegacy, dst, outs...)
	if len(dst) > n {
		h.stats.answers.Add(1)
	}
	return dst
}

func (h *Handler) q4GetServers(now time.Time, from netip.AddrPort, m *q4.GetServers, dst []Outgoing) []Outgoing {
	k := KindQ4GetServers
	if why := h.admitQuery(now, from); why != OK {
		return h.drop(dst, k, from, why)
	}
	q := Query{Family: game.FamilyDoom3, Protocol: int(m.Protocol.Uint32()), IPv4: true}
	if _, ok := h.reg.Config().Catalogue.ByProtocol(game.FamilyDoom3, q.Protocol); !ok && m.Protocol.Major == 0 {
		// qstat's q4m and dm3m send protocol 0.0: tell the games by the
		// request's layout, and list every protocol of that game.
		q.Game, q.AnyProtocol = "Doom3", true
		if m.Dialect == q4.DialectQuake4 {
			q.Game = "Quake4"
		}
	}
	// The players filter (gui_filter_players): 0 any, 1 not full, 2 not
	// full and not empty. Password and gametype filters are the client's.
	switch m.Filter.Players {
	case 1:
		q.Empty = true
	case 2:
	default:
		q.Empty, q.Full = true, true
	}
	f, why := h.reg.resolve(q, h.reg.current(now))
	switch why {
	case OK:
	case ReasonUnknownGame:
		f = filter{game: "\x00unknown"} // matches no group: the empty list
	default:
		return h.drop(dst, k, from, why)
	}
	form := replyForm{q4: true, split: q3.SplitOptions{MaxBytes: min(h.conf().MaxPacketBytes, q4.MaxServersPacketLen)}}
	return h.reply(now, from, KindQ4Servers, f, form, true, 0, laneLegacy, dst)
}

// gameAuth answers a Doom 3 / Quake 4 client's key check. id's key
// database is gone, so the master cannot tell a good key from a bad one:
// it accepts every well-formed request with a CD key and returns a GUID
// derived from the key (so the same key keeps the same GUID, and the key
// cannot be read back from it). A request without a CD key is refused
// with "invalid".
func (h *Handler) gameAuth(now time.Time, from netip.AddrPort, m *q4.GameAuth, dst []Outgoing) []Outgoing {
	k := KindQ4GameAuth
	if why := h.admitQuery(now, from); why != OK {
		return h.drop(dst, k, from, why)
	}
	reply := q4.AuthKey{Kind: q4.AuthBadKey, Reason: q4.AuthBadInvalid, XPKeyValid: !m.HasXPKey}
	if m.HasCDKey && m.CDKey != "" {
		reply = q4.AuthKey{Kind: q4.AuthGUID, GUID: GUIDOf(m.CDKey)}
	}
	b, err := reply.AppendBinary(nil)
	if err != nil {
		return h.drop(dst, k, from, ReasonMalformed)
	}
	return h.answer(now, from, KindQ4AuthKey, [][]byte{b}, dst)
}

// GUIDOf is the GUID the master gives a CD key: 11 characters of the
// base32 SHA-256 of the key (the Doom 3 server keeps 11).
func GUIDOf(cdkey string) string {
	sum := sha256.Sum256([]byte("scout-master-guid\x00" + cdkey))
	return base32.StdEncoding.EncodeToString(sum[:])[:11]
}

// HandleMOTD handles one datagram that arrived on the message-of-the-day
// port: Enemy Territory's getmotd, answered with motd echoing the
// client's challenge. Anything else is dropped.
func (h *Handler) HandleMOTD(now time.Time, from netip.AddrPort, pkt []byte, dst []Outgoing) []Outgoing {
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	h.stats.inBytes.Add(uint64(len(pkt)))
	if !bytes.HasPrefix(pkt, []byte(q3.Prefix)) {
		h.stats.in[KindGarbage].Add(1)
		return h.drop(dst, KindGarbage, from, ReasonNotConnectionless)
	}
	m, k, why := parseQ3(pkt)
	h.stats.in[k].Add(1)
	if why != OK {
		return h.drop(dst, k, from, why)
	}
	req, ok := m.(q3.GetMOTD)
	if !ok {
		return h.drop(dst, k, from, ReasonWrongPort)
	}
	if why := h.admitQuery(now, from); why != OK {
		return h.drop(dst, k, from, why)
	}
	c, _ := req.Info.Get("challenge")
	if len(c) > MaxMOTDChallengeLen || strings.ContainsRune(c, '"') {
		return h.drop(dst, k, from, ReasonMalformed)
	}
	b, err := q3.MOTD{Info: infostring.Info{{Key: "challenge", Value: c}, {Key: "motd", Value: h.conf().MOTD}}}.AppendBinary(nil)
	if err != nil {
		return h.drop(dst, k, from, ReasonMalformed)
	}
	return h.answer(now, from, KindMOTD, [][]byte{b}, dst)
}
