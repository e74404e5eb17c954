package discover

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/q3"
	"github.com/scout-discovery/scout/q4"
	"github.com/scout-discovery/scout/steammaster"
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
}

// Master is one master server to ask.
type Master struct {
	Name string         // as given ("master.ioquake3.org:27950"), for reports
	Addr netip.AddrPort // where to ask
	Request
}

// ErrNoMaster reports a game that has no master protocol scout speaks.
var ErrNoMaster = errors.New("discover: game has no master query")

// RequestFor returns the request a client of g sends to its masters.
// Quake III family games ask for empty and full servers too, anonymous
// games by protocol alone ("getservers 71 empty full") and DarkPlaces
// games by name ("getservers Xonotic 3 empty full"); ext asks with
// getserversExt for IPv6 servers as well, naming the game as dpmaster
// requires. protocol overrides the game's newest protocol when not 0.
func RequestFor(g *game.Game, protocol int, ext bool) (Request, error) {
	newest := 0
	if len(g.Protocols) > 0 {
		newest = slices.Max(g.Protocols)
	}
	if protocol != 0 {
		newest = protocol
	}
	switch g.Family {
	case game.FamilyQ3:
		gs := q3.GetServers{Protocol: newest, Empty: true, Full: true}
		if !g.Anonymous || ext {
			gs.GameName = g.Name
		}
		gs.Ext = ext
		return Request{Protocol: ProtocolQ3, Q3: gs, Dialect: probe.Q3Info}, nil
	case game.FamilyDoom3:
		v := q4.VersionOf(uint32(newest))
		gs := q4.GetServers{Protocol: v, Dialect: v.Dialect()}
		gs.ThirdParty = gs.Dialect == q4.DialectQuake4 // as the Quake 4 client and qstat send it
		return Request{Protocol: ProtocolQ4, Q4: gs, Dialect: probe.Q4}, nil
	case game.FamilySource:
		f, err := steammaster.Filter{GameDir: g.Name}.Encode()
		if err != nil {
			return Request{}, err
		}
		q := steammaster.Query{Region: steammaster.RegionAll, Seed: steammaster.FirstSeed(), Filter: f}
		return Request{Protocol: ProtocolSteam, Steam: q, Dialect: probe.A2S}, nil
	}
	return Request{}, fmt.Errorf("%w: %s (%s)", ErrNoMaster, g.Name, g.Family)
}

// page is what one packet from a master held.
type page struct {
	servers []netip.AddrPort
	end     bool           // the list is complete
	next    netip.AddrPort // Steam: the seed of the next page's query
	err     error          // why parsing stopped early (servers still count)
}

// query returns the request packet; for Steam, the page starting at seed.
func (r *Request) query(seed netip.AddrPort) ([]byte, error) {
	switch r.Protocol {
	case ProtocolQ3:
		return r.Q3.AppendBinary(nil)
	case ProtocolQ4:
		return r.Q4.AppendBinary(nil)
	case ProtocolSteam:
		q := r.Steam
		q.Seed = seed
		return q.AppendBinary(nil)
	}
	return nil, fmt.Errorf("discover: unknown protocol %v", r.Protocol)
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
		return page{servers: resp.Servers, end: resp.End != q3.EndNone, err: err}
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
// address and a port. Masters should list nothing else; a broken or
// hostile one could list 0.0.0.0, a broadcast or a multicast address.
func usable(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	return ap.Port() != 0 && a.IsValid() && !a.IsUnspecified() && !a.IsMulticast() &&
		!(a.Is4() && a.As4() == [4]byte{255, 255, 255, 255})
}

// joinNames lists master names for messages.
func joinNames(ms []*collecting) string {
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}
