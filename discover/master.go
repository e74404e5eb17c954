package discover

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/protocol/q4"
	"github.com/scout-discovery/scout/protocol/steammaster"
)

// Protocol is the query protocol of a master.
type Protocol uint8

const (
	ProtocolQ3    Protocol = iota + 1 // getservers / getserversExt
	ProtocolQ4                        // Doom 3 / Quake 4 getServers
	ProtocolSteam                     // Valve's master query, paged by seed
)

// String returns "q3", "q4" or "steam".
func (p Protocol) String() string {
	switch p {
	case ProtocolQ3:
		return "q3"
	case ProtocolQ4:
		return "q4"
	case ProtocolSteam:
		return "steam"
	}
	return fmt.Sprintf("protocol(%d)", uint8(p))
}

// Request is what to ask a master, and how to probe what it lists.
type Request struct {
	Protocol Protocol
	Q3       q3.GetServers     // ProtocolQ3
	Q4       q4.GetServers     // ProtocolQ4
	Steam    steammaster.Query // ProtocolSteam: the first page's query (its Seed is replaced)
	Dialect  probe.Dialect     // how to probe the servers listed
	// Q3Also are more getservers forms sent to the same master with Q3,
	// each answered by a list of its own; the lists are merged into the
	// master's one. They have Q3's Ext. A game can be listed under two
	// names (see [RequestFor]); a getserversResponse does not say which
	// query it answers, so the master's list ends when every form's end
	// marker has come, or at the quiet window.
	Q3Also []q3.GetServers
}

// forms returns how many lists one query of r asks for.
func (r *Request) forms() int {
	if r.Protocol == ProtocolQ3 {
		return 1 + len(r.Q3Also)
	}
	return 1
}

// Master is one master server to ask.
type Master struct {
	Name string         // as given ("master.ioquake3.org:27950"), for reports
	Addr netip.AddrPort // where to ask
	Request
}

// ErrNoMaster reports a game that has no master protocol scout speaks.
var ErrNoMaster = errors.New("discover: game has no master query")

// Protocols of the Quake III releases still played, asked by default.
const (
	ProtocolQ3A132   = 68 // id's Quake III Arena 1.32
	ProtocolIOQuake3 = 71 // ioquake3 1.36 and the games on it (OpenArena 0.8.8)
)

// listedAs returns the names a master may list a server of g under, each
// with whether a client asks for it anonymously (by protocol alone), and
// the protocols to ask for when the user gives none. Masters key their
// lists by game: a dpmaster-style master lists an "anonymous" server
// (heartbeat QuakeArena-1, Wolfenstein-1, EnemyTerritory-1) under the game
// of its heartbeat tag and a DarkPlaces-style one ("heartbeat DarkPlaces")
// under the gamename of its infoResponse, and answers a query only with
// the servers of the game it names (or, for an anonymous query, of the
// first anonymous game with that protocol).
//
//   - Quake3Arena: anonymous, "getservers 68" (Quake III 1.32's client)
//     and "getservers 71" (ioquake3's client while com_gamename is
//     Quake3Arena, its LEGACY_MASTER_GAMENAME): both populations are
//     alive, and a master keeps them apart by protocol.
//   - OpenArena: ioquake3 heartbeats QuakeArena-1 and its client asks
//     anonymously when com_gamename is Quake3Arena (Debian's OpenArena
//     0.8.8 does: vector openarena_infoResponse.hex), and heartbeats
//     DarkPlaces and asks "getservers OpenArena 71" otherwise (cl_main.c,
//     CL_GlobalServers_f; sv_main.c, SV_MasterHeartbeat). Servers are
//     listed under either name, so both are asked. The anonymous list also
//     holds other ioquake3 games that keep the default com_gamename, as
//     it does for "quakestat -q3m,71".
//   - wolfmp (RtCW), et: anonymous, their client's protocol (RtCW's
//     wolfmaster only understands the anonymous form).
//   - DarkPlaces games (Xonotic, Nexuiz, ...): by name, "getservers
//     Xonotic 3", as the DarkPlaces client asks.
//
// The catalogue's newest protocol is the default elsewhere.
func listedAs(g *game.Game) (names []string, anonymous []bool, protocols []int) {
	if len(g.Protocols) > 0 {
		protocols = []int{slices.Max(g.Protocols)}
	}
	switch g.Name {
	case "Quake3Arena":
		return []string{g.Name}, []bool{true}, []int{ProtocolQ3A132, ProtocolIOQuake3}
	case "OpenArena":
		return []string{g.Name, "Quake3Arena"}, []bool{false, true}, []int{ProtocolIOQuake3}
	}
	return []string{g.Name}, []bool{g.Anonymous}, protocols
}

// ListedUnder returns the game names a master may list a server of g
// under, all of which RequestFor(g, ...) asks for (see listedAs):
// OpenArena's servers under OpenArena and Quake3Arena.
func ListedUnder(g *game.Game) []string {
	names, _, _ := listedAs(g)
	return names
}

// RequestFor returns the request a client of g sends to its masters.
// Quake III family games ask for empty and full servers too, anonymous
// games by protocol alone ("getservers 71 empty full") and DarkPlaces
// games by name ("getservers Xonotic 3 empty full"); ext asks with
// getserversExt for IPv6 servers as well, naming the game as dpmaster
// requires. Where a game is listed under more than one name or protocol
// (see listedAs: OpenArena, Quake3Arena), the request asks for each
// (Request.Q3Also). protocol, when not 0, replaces the default
// protocols.
func RequestFor(g *game.Game, protocol int, ext bool) (Request, error) {
	names, anon, protocols := listedAs(g)
	if protocol != 0 {
		protocols = []int{protocol}
	}
	if len(protocols) == 0 {
		protocols = []int{0}
	}
	switch g.Family {
	case game.FamilyQ3:
		var forms []q3.GetServers
		for i, name := range names {
			for _, p := range protocols {
				gs := q3.GetServers{Protocol: p, Empty: true, Full: true, Ext: ext}
				if !anon[i] || ext {
					gs.GameName = name
				}
				forms = append(forms, gs)
			}
		}
		return Request{Protocol: ProtocolQ3, Q3: forms[0], Q3Also: forms[1:], Dialect: probe.Q3Info}, nil
	case game.FamilyDoom3:
		v := q4.VersionOf(uint32(protocols[0]))
		gs := q4.GetServers{Protocol: v, Dialect: v.Dialect()}
		gs.ThirdParty = gs.Dialect == q4.DialectQuake4 // as the Quake 4 client and qstat send it
		return Request{Protocol: ProtocolQ4, Q4: gs, Dialect: probe.Q4}, nil
	case game.FamilySource:
		f, err := steammaster.Filter{GameDir: g.Name}.Encode()
		if err != nil {
			return Request{}, err
		}
		q := steammaster.Query{Region: steammaster.RegionAll, Seed: steammaster.FirstSeed(), Filter: f}
		return Request{Protocol: ProtocolSteam, Steam: q, Dialect: probe.A2SInfo}, nil
	}
	return Request{}, fmt.Errorf("%w: %s (%s)", ErrNoMaster, g.Name, g.Family)
}

// page is what one packet from a master held.
type page struct {
	servers []netip.AddrPort
	dropped int            // entries the codec dropped as naming no server
	end     bool           // the list is complete
	next    netip.AddrPort // Steam: the seed of the next page's query
	err     error          // why parsing stopped early (servers still count)
}

// queries returns the request packets, one per form; for Steam, the page
// starting at seed.
func (r *Request) queries(seed netip.AddrPort) ([][]byte, error) {
	var b []byte
	var err error
	switch r.Protocol {
	case ProtocolQ3:
		out := make([][]byte, 0, r.forms())
		for _, gs := range append([]q3.GetServers{r.Q3}, r.Q3Also...) {
			gs.Ext = r.Q3.Ext
			if b, err = gs.AppendBinary(nil); err != nil {
				return nil, err
			}
			out = append(out, b)
		}
		return out, nil
	case ProtocolQ4:
		b, err = r.Q4.AppendBinary(nil)
	case ProtocolSteam:
		q := r.Steam
		q.Seed = seed
		b, err = q.AppendBinary(nil)
	default:
		err = fmt.Errorf("discover: unknown protocol %v", r.Protocol)
	}
	if err != nil {
		return nil, err
	}
	return [][]byte{b}, nil
}

// parse reads one reply packet. Lenient as the codecs are: a list that
// breaks off keeps the entries before the break, with the reason. An
// error with no servers and no end means the packet is garbage.
func (r *Request) parse(b []byte) page {
	switch r.Protocol {
	case ProtocolQ3:
		m, err := q3.Parse(b)
		resp, ok := m.(q3.ServersResponse)
		if !ok {
			if err == nil {
				err = fmt.Errorf("%T is not a server list", m)
			}
			return page{err: err}
		}
		if resp.Ext != r.Q3.Ext {
			return page{err: fmt.Errorf("getserversExt=%v answered with Ext=%v", r.Q3.Ext, resp.Ext)}
		}
		return page{servers: resp.Servers, dropped: len(resp.Dropped), end: resp.End != q3.EndNone, err: err}
	case ProtocolQ4:
		m, err := q4.ParseServers(b)
		return page{servers: m.Servers, err: err}
	case ProtocolSteam:
		m, err := steammaster.ParseReply(b)
		p := page{servers: m.Servers, end: m.End, err: err}
		if next, ok := m.Next(); ok && err == nil {
			p.next = next
		} else if err == nil && !m.End {
			p.err = errors.New("empty page without the end marker")
		}
		return p
	}
	return page{err: fmt.Errorf("unknown protocol %v", r.Protocol)}
}

// usable reports whether a listed address can be probed: a unicast
// address a datagram can be sent to, and a port. Masters list nothing
// else; a broken or hostile one could list port 0, 0.0.0.0 (or anything
// in 0.0.0.0/8, "this network"), the broadcast 255.255.255.255 (or
// anything in the reserved 240.0.0.0/4), a multicast address, or an IPv6
// link-local address, which means nothing without the zone a master
// cannot send. Each such entry is dropped alone (MasterReport.Unusable).
// Private and loopback addresses are usable: whether they are probed is
// netscope.Refused's decision (a LAN or test master lists them; a public
// one may not).
func usable(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	switch {
	case ap.Port() == 0 || !a.IsValid() || a.IsUnspecified() || a.IsMulticast():
		return false
	case a.Is4():
		b := a.As4()
		return b[0] != 0 && b[0] < 240
	}
	return !a.IsLinkLocalUnicast() || a.Zone() != ""
}

// Describe returns the queries r sends, as text without the packet
// prefix: "getservers 68 empty full", "getservers OpenArena 71 empty
// full", ...; "getServers 2.85" for Quake 4; the filter of a Steam query.
func (r *Request) Describe() []string {
	switch r.Protocol {
	case ProtocolQ4:
		return []string{"getServers " + r.Q4.Protocol.String()}
	case ProtocolSteam:
		return []string{"Steam master query " + r.Steam.Filter}
	}
	bs, err := r.queries(netip.AddrPort{})
	if err != nil {
		return nil
	}
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = strings.TrimPrefix(string(b), q3.Prefix)
	}
	return out
}

// OtherName is a game of the catalogue whose masters' lists g's request
// does not ask for, at a protocol g's request asks for anonymously: where
// a server of g's engine is listed when it heartbeats under a game name
// (an ioquake3 server with com_gamename OpenArena heartbeats DarkPlaces
// and is listed under OpenArena, not in the anonymous protocol-71 list
// that --game q3 asks for).
type OtherName struct {
	Game    *game.Game
	Request Request // the queries for it that g's request does not send
}

// OtherNames returns, for a Quake III family game g asked with protocol
// (0: the defaults of RequestFor) and ext, the named (not anonymous)
// games of catalogue that share a protocol g asks for anonymously, each
// with the queries g's request does not already send. Named games that
// share a protocol with each other (Xonotic and Nexuiz, protocol 3) are
// different games, not other names. Other families are keyed by protocol
// alone (Quake 4, Doom 3) or by directory (Steam): none.
func OtherNames(g *game.Game, catalogue []*game.Game, protocol int, ext bool) []OtherName {
	if g.Family != game.FamilyQ3 {
		return nil
	}
	mine, err := RequestFor(g, protocol, ext)
	if err != nil {
		return nil
	}
	_, anon, protocols := listedAs(g)
	if protocol != 0 {
		protocols = []int{protocol}
	}
	if !slices.Contains(anon, true) {
		return nil
	}
	asked := map[string]bool{}
	for _, gs := range append([]q3.GetServers{mine.Q3}, mine.Q3Also...) {
		gs.Ext = mine.Q3.Ext
		b, _ := gs.AppendBinary(nil)
		asked[string(b)] = true
	}
	var out []OtherName
	for _, o := range catalogue {
		if o.Name == g.Name || o.Family != game.FamilyQ3 || o.Anonymous {
			continue
		}
		var forms []q3.GetServers
		for _, p := range protocols {
			if !o.HasProtocol(p) {
				continue
			}
			r, err := RequestFor(o, p, ext)
			if err != nil {
				continue
			}
			for _, gs := range append([]q3.GetServers{r.Q3}, r.Q3Also...) {
				gs.Ext = r.Q3.Ext
				b, _ := gs.AppendBinary(nil)
				if !asked[string(b)] {
					asked[string(b)] = true
					forms = append(forms, gs)
				}
			}
		}
		if len(forms) > 0 {
			out = append(out, OtherName{Game: o, Request: Request{Protocol: ProtocolQ3, Q3: forms[0], Q3Also: forms[1:], Dialect: mine.Dialect}})
		}
	}
	return out
}
