package master

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/game"
)

// Heartbeat is a server's registration packet, as the handler parsed it.
type Heartbeat struct {
	Family game.Family // FamilyQ3 for "heartbeat TAG\n", FamilyDoom3 for 0xFFFF "heartbeat"
	Tag    string      // Q3 family only: "QuakeArena-1", "DarkPlaces", "ETFlatline-1", ...
}

// ProbeCause is why the master probes a server.
type ProbeCause uint8

const (
	CauseHeartbeat ProbeCause = iota // a heartbeat: new server, or check of a listed one
	CauseFlatline                    // a flatline: check at once, drop if unanswered
	CauseReprobe                     // the game's periodic re-probe
	CauseRestored                    // re-verification after a restart
	CauseLearned                     // a server an upstream master or a peer named (Registry.Learn)

	numCauses
)

// String returns the cause's metrics label.
func (c ProbeCause) String() string {
	switch c {
	case CauseHeartbeat:
		return "heartbeat"
	case CauseFlatline:
		return "flatline"
	case CauseReprobe:
		return "reprobe"
	case CauseRestored:
		return "restored"
	case CauseLearned:
		return "learned"
	}
	return fmt.Sprintf("cause(%d)", uint8(c))
}

// Probe is what the master must send to a server: the requests, in the
// order getchallenge, getstatus, getinfo, each with the challenge (text
// form for the Quake III family, Int32 for Doom 3 / Quake 4).
type Probe struct {
	To        netip.AddrPort
	Family    game.Family
	Requests  game.Requests
	Challenge Challenge
	Cause     ProbeCause
	Try       int // 0 for a check's first try, k for its k-th retry
}

// ReplyKind is the kind of a server's reply.
type ReplyKind uint8

const (
	ReplyInfo   ReplyKind = iota // infoResponse (Q3) / infoResponse (Doom 3 family)
	ReplyStatus                  // statusResponse (Q3)
)

// Reply is a server's answer to a probe, as the handler parsed it.
type Reply struct {
	Kind ReplyKind
	// Info is the info string (Q3) or the NUL-separated key/values (Doom 3
	// family), in wire order. Keys are matched without regard to ASCII
	// case, as the engines do.
	Info []Pair
	// Players is the number of players the reply lists (statusResponse
	// lines, Doom 3 family player records), or -1 if it lists none. It
	// stands for "clients" where that key does not exist.
	Players int
	// Challenge32 and Protocol are the Doom 3 family's binary fields.
	Challenge32 int32
	Protocol    int
	// HasPlayerList says the reply lists players (a statusResponse, a
	// Doom 3 family infoResponse): PlayerList is kept as the server's
	// player list (see Registry.Players), even when empty.
	HasPlayerList bool
	PlayerList    []Player
}

func (r *Reply) get(key string) (string, bool) {
	for _, p := range r.Info {
		if strings.EqualFold(p.Key, key) {
			return p.Value, true
		}
	}
	return "", false
}

// Change is what a verified reply did to the listing.
type Change uint8

const (
	ChangeNone      Change = iota // rejected
	ChangeListed                  // newly listed
	ChangeUpdated                 // listed; fields clients filter on or the info changed
	ChangeRefreshed               // listed; only its verification time moved
)

// String returns the change's label.
func (c Change) String() string {
	switch c {
	case ChangeNone:
		return "none"
	case ChangeListed:
		return "listed"
	case ChangeUpdated:
		return "updated"
	case ChangeRefreshed:
		return "refreshed"
	}
	return fmt.Sprintf("change(%d)", uint8(c))
}

// Removal is a server the registry dropped, and why.
type Removal struct {
	Addr   netip.AddrPort
	Listed bool // it was listed (the store must delete it)
	Reason Reason
	// LastVerified is its last verification here (for a restored server
	// not verified since, its restoration): in a fleet, the removal only
	// applies to a record no newer.
	LastVerified time.Time
	// Shutdown, for a server dropped because it said it was shutting
	// down (a flatline) and its check went unanswered, is when that check
	// was sent; zero otherwise. A shutdown the master was told about
	// outweighs any verification made before it: in a fleet, another
	// instance's re-probe made before it must not list the server again.
	Shutdown time.Time
}

// Version is the newest verification the removal undoes: Shutdown if
// set, else LastVerified.
func (r Removal) Version() time.Time {
	if r.Shutdown.After(r.LastVerified) {
		return r.Shutdown
	}
	return r.LastVerified
}

// Heartbeat handles a heartbeat from src. It returns the probe to send, or
// a reason to send nothing. It never extends a listing: only a verified
// reply does. A flatline tag is handled as Flatline.
func (r *Registry) Heartbeat(now time.Time, src netip.AddrPort, hb Heartbeat) (Probe, Reason) {
	var g *game.Game
	if hb.Family == game.FamilyQ3 && hb.Tag != game.HeartbeatDarkPlaces {
		var flat, ok bool
		g, flat, ok = r.conf().Catalogue.ByHeartbeat(hb.Tag)
		if !ok {
			return Probe{}, ReasonUnknownHeartbeat
		}
		if flat {
			return r.Flatline(now, src)
		}
		if !r.conf().Policy.Accepts(g.Name) {
			return Probe{}, ReasonGamePolicy
		}
	} else if hb.Family != game.FamilyQ3 && hb.Family != game.FamilyDoom3 {
		return Probe{}, ReasonUnknownHeartbeat
	}
	src, why := classify(src, r.conf().AllowLoopback, r.conf().RefusePrivate, r.conf().AddrMap)
	if why != OK {
		return Probe{}, why
	}
	if r.Blocked(src.Addr()) != nil {
		return Probe{}, ReasonBlocked
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.servers[keyOf(src)]
	if !ok {
		k := addrKeyOf(src.Addr())
		switch {
		case len(r.servers) >= r.conf().MaxServers:
			return Probe{}, ReasonServerListFull
		case r.pending >= r.conf().MaxPending:
			return Probe{}, ReasonTooManyPending
		case r.conf().MaxServersPerAddress > 0 && int(r.perKey[k]) >= r.conf().MaxServersPerAddress:
			return Probe{}, ReasonAddressFull
		}
		e = &entry{Addr: src, Family: hb.Family, FirstSeen: stampOf(now)}
		r.servers[keyOf(src)] = e
		r.perKey[k]++
		r.pending++
	}
	e.LastHeartbeat = stampOf(now)
	if c := e.chk; c != nil {
		if c.hbs++; c.hbs >= 2 && e.Listed {
			// Two heartbeats within one check: ioquake3's shutdown sends
			// two back to back (SV_MasterShutdown). The check in flight
			// now decides at once, as for a flatline.
			c.cause = CauseFlatline
		}
		return Probe{}, ReasonProbeOutstanding
	}
	if e.Listed && (e.Family != hb.Family || (e.hbGame != g)) {
		// A listed server that changes game must prove it again; its
		// listing stands until then. The game its heartbeat names is
		// what an anonymous query finds it by (resolve).
		if e.hbGame != g {
			r.touchLocked(e)
		}
		e.hbGame = g
	}
	if !e.Listed {
		e.hbGame, e.Family = g, hb.Family
	}
	p := r.startProbeLocked(now, e, game.GetInfo, CauseHeartbeat)
	e.chk.hbs = 1
	return p, OK
}

// Flatline handles a shutdown heartbeat ("WolfFlatline-1", "ETFlatline-1")
// from src. A flatline is unauthenticated, so it never delists anything by
// itself: a listed server is checked at once and dropped only if that check
// goes unanswered within ChallengeLifetime (see Expire).
func (r *Registry) Flatline(now time.Time, src netip.AddrPort) (Probe, Reason) {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.servers[keyOf(src)]
	if !ok || !e.Listed {
		return Probe{}, ReasonNotListed
	}
	e.LastHeartbeat = stampOf(now)
	if e.chk != nil {
		e.chk.cause = CauseFlatline // the check in flight now decides
		return Probe{}, ReasonProbeOutstanding
	}
	return r.startProbeLocked(now, e, game.GetInfo, CauseFlatline), OK
}

func (r *Registry) startProbeLocked(now time.Time, e *entry, reqs game.Requests, cause ProbeCause) Probe {
	e.chk = &check{sentAt: now, reqs: reqs, cause: cause}
	return r.tryLocked(now, e)
}

// tryLocked records and returns the next try of e's check, with the
// challenge of now.
func (r *Registry) tryLocked(now time.Time, e *entry) Probe {
	c := e.chk
	ch := r.chal.Issue(now, e.Addr)
	c.chals[c.tries] = ch
	c.tryAt[c.tries] = stampOf(now)
	c.tries++
	return Probe{To: e.Addr, Family: e.Family, Requests: c.reqs, Challenge: ch, Cause: c.cause, Try: c.tries - 1}
}

// Verify handles a reply from src: the server is listed or refreshed, or
// the reply is rejected with a reason. The reply must come from the address
// the challenge was sent to, carry the challenge of one of the check's
// tries within ChallengeLifetime of its first, and hold valid required
// keys.
func (r *Registry) Verify(now time.Time, src netip.AddrPort, rep Reply) (Server, Change, Reason) {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.servers[keyOf(src)]
	if !ok {
		return Server{}, ChangeNone, ReasonUnknownServer
	}
	c := e.chk
	if c == nil {
		return Server{}, ChangeNone, ReasonUnsolicited
	}
	want := game.GetInfo
	if rep.Kind == ReplyStatus {
		want = game.GetStatus
	}
	if c.reqs&want == 0 {
		return Server{}, ChangeNone, ReasonUnsolicited
	}
	if !now.Before(c.sentAt.Add(r.conf().ChallengeLifetime)) {
		return Server{}, ChangeNone, ReasonChallengeExpired
	}
	var why Reason
	if e.Family == game.FamilyDoom3 {
		why = r.chal.Check32(now, src, rep.Challenge32)
	} else {
		c, _ := rep.get("challenge")
		why = r.chal.Check(now, src, c)
	}
	if why != OK {
		return Server{}, ChangeNone, why
	}
	if !c.issued(e.Family, &rep) {
		// Issued to this address, but for an earlier check: stale.
		return Server{}, ChangeNone, ReasonChallengeExpired
	}
	s, why := r.parseReplyLocked(e, &rep)
	if why != OK {
		return Server{}, ChangeNone, why
	}

	info := packInfo(rep.Info)
	change := ChangeRefreshed
	reverified := e.restored() // restored, verified again: its last-verified time shows
	// What the snapshot (and so every cached answer) holds: a change in
	// the info alone, if only its echoed challenge, leaves them be.
	listing := !e.Listed || s.Game != e.Game || s.Protocol != int(e.Protocol) || s.Gametype != e.Gametype ||
		s.Empty() != e.Empty() || s.Full() != e.Full()
	wasListed, gameChanged := e.Listed, s.Game != e.Game
	r.noteChangeLocked(e, listing, stampOf(now))
	switch {
	case !e.Listed:
		change = ChangeListed
		r.pending--
	case s.Game != e.Game || s.Protocol != int(e.Protocol) || s.Gametype != e.Gametype ||
		s.Clients != int(e.Clients) || s.MaxClients != int(e.MaxClients) || info != e.info:
		change = ChangeUpdated
	}
	r.tallyLocked(e, -1)
	e.Listed = true
	e.Game, e.Protocol, e.Gametype = r.internLocked(s.Game), int32(s.Protocol), r.internLocked(s.Gametype)
	r.tallyLocked(e, 1)
	e.Clients, e.MaxClients = clamp32(s.Clients), clamp32(s.MaxClients)
	if info != e.info {
		e.info = info
	}
	e.LastVerified = stampOf(now)
	e.setRestored(false)
	e.Missed = 0
	if d, ok := c.rttSample(e.Family, &rep, now); ok {
		e.rtt.add(now, d)
	}
	if c.tries > 1 {
		r.afterRetry.Add(1)
	}
	e.chk = nil
	// The periodic re-probe (getstatus: the players) keeps its own
	// schedule: a heartbeat's check of a listed server leaves it be, so
	// a server that heartbeats as often as it is re-probed (Quake III: both
	// every 5 minutes) is still re-probed, and its player list kept fresh.
	// A new listing, a re-probe, a restored server or a game change set it.
	if keep := c.cause == CauseHeartbeat || c.cause == CauseFlatline; !keep || !wasListed || e.NextProbe == 0 || gameChanged {
		e.NextProbe = 0
		if g, ok := r.conf().Catalogue.ByName(e.Game); ok && g.Reprobe.Interval > 0 {
			e.NextProbe = r.reprobeAtLocked(e, now, g.Reprobe.Interval)
		} else if e.hbGame == nil {
			e.NextProbe = r.reprobeAtLocked(e, now, game.DefaultReprobeInterval)
		}
	}
	if change != ChangeRefreshed || reverified {
		r.version.Add(1)
	}
	suspected, listed := r.setPlayersLocked(now, src, &rep)
	bots, told := botsOf(&rep, int(e.Clients))
	r.setCrowdLocked(keyOf(src), bots, told, suspected, listed)
	out := e.server()
	r.crowdOfLocked(&out)
	return out, change, OK
}

// parseReplyLocked applies dpmaster's validation of an infoResponse (in its
// order) to rep, for entry e.
func (r *Registry) parseReplyLocked(e *entry, rep *Reply) (Server, Reason) {
	var s Server
	if e.Family == game.FamilyDoom3 {
		s.Protocol = rep.Protocol
		g, ok := r.conf().Catalogue.ByProtocol(game.FamilyDoom3, rep.Protocol)
		if !ok {
			return s, ReasonBadProtocol
		}
		s.Game = g.Name
		mc, _ := rep.get("si_maxPlayers")
		s.MaxClients, _ = strconv.Atoi(mc)
		if s.MaxClients <= 0 {
			return s, ReasonNoMaxClients
		}
		if rep.Players < 0 {
			return s, ReasonMissingClients
		}
		s.Clients = rep.Players
		s.Gametype, _ = rep.get("si_gameType")
	} else {
		// A statusResponse carries the serverinfo, where ioquake3 names
		// the protocol com_protocol and the gametype g_gametype, and where
		// "gamename" is the mod (baseq3, baseoa), not com_gamename
		// (vector openarena_statusResponse_3bots.hex).
		status := rep.Kind == ReplyStatus
		p, ok := rep.get("protocol")
		if !ok && status {
			p, ok = rep.get("com_protocol")
		}
		if !ok {
			return s, ReasonMissingProtocol
		}
		// Any 32-bit number, negative ones too: dpmaster reads it with
		// strtol, and test and custom builds use "protocol\-1".
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return s, ReasonBadProtocol
		}
		s.Protocol = int(n)
		gt, ok := rep.get("gametype")
		if !ok && status {
			gt, ok = rep.get("g_gametype")
		}
		if !ok {
			gt = "0" // dpmaster's default
		}
		s.Gametype = gt
		mc, _ := rep.get("sv_maxclients")
		s.MaxClients, _ = strconv.Atoi(mc)
		if s.MaxClients <= 0 {
			return s, ReasonNoMaxClients
		}
		if rep.Kind == ReplyStatus {
			if rep.Players < 0 {
				return s, ReasonMissingClients
			}
			s.Clients = rep.Players
		} else {
			c, ok := rep.get("clients")
			n, err := strconv.Atoi(c)
			if !ok || err != nil || n < 0 {
				return s, ReasonMissingClients
			}
			s.Clients = n
		}
		name, ok := rep.get("gamename")
		if status {
			if cg, has := rep.get("com_gamename"); has {
				name, ok = cg, true
			} else if e.hbGame != nil {
				ok = false // the mod's name: the heartbeat named the game
			}
		}
		switch {
		case !ok && e.hbGame == nil:
			return s, ReasonMissingGamename
		case !ok:
			name = e.hbGame.Name
		case !validToken(name, MaxGamenameLen):
			return s, ReasonBadGamename
		case e.hbGame != nil && !e.hbGame.HasGamename(name):
			return s, ReasonGamenameMismatch
		case e.hbGame != nil:
			name = e.hbGame.Name
		}
		s.Game = name
	}
	if s.Gametype != "" {
		gt, ok := gametypeOf(e.Family, s.Gametype)
		if !ok {
			return s, ReasonBadGametype
		}
		s.Gametype = gt
	}
	if !r.conf().Policy.Accepts(s.Game) {
		return s, ReasonGamePolicy
	}
	return s, OK
}

// validToken: non-empty, at most max bytes, no whitespace or control byte.
func validToken(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// gametypeOf returns the gametype a server is listed with, or false if
// its gametype is refused (ReasonBadGametype).
//
// Quake III family: dpmaster's rule (techinfo.txt: since 2.1 "any string,
// as long as it does not contain whitespace characters"), as the
// "gametype=X" filter of a getservers is one word. Doom 3 family: the
// gametype is si_gameType, which Quake 4 sets to display names with
// spaces ("Team DM", "Arena CTF"); its clients filter on it themselves,
// never through the master, so spaces are kept. Either way a control
// byte (below ' ', or DEL) is refused: no game sends one, and it would
// reach the logs and the HTTP list. A gametype longer than MaxGametypeLen
// is listed cut to its first MaxGametypeLen bytes (dpmaster's 31), and
// a query's filter is cut the same way, so the two still match.
func gametypeOf(f game.Family, gt string) (string, bool) {
	for i := 0; i < len(gt); i++ {
		c := gt[i]
		if c < ' ' || c == 0x7f || (c == ' ' && f != game.FamilyDoom3) {
			return "", false
		}
	}
	return cutGametype(gt), true
}

// cutGametype returns gt's first MaxGametypeLen bytes: the gametype a
// server is listed with, and the filter a query's gametype is compared
// as (resolve).
func cutGametype(gt string) string {
	if len(gt) > MaxGametypeLen {
		return gt[:MaxGametypeLen]
	}
	return gt
}
