package web

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/geo"
	"github.com/scout-discovery/scout/history"
	"github.com/scout-discovery/scout/latency"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/protocol/gametext"
)

// RecentSamples is how many of a server's last player counts the list
// gives (recent_players): 24 slots, two hours at history.Resolution.
const RecentSamples = 24

// ServerJSON is one server of /api/v1/servers.
type ServerJSON struct {
	Address  string `json:"address"`
	Game     string `json:"game"`
	Family   string `json:"family"`
	Protocol int    `json:"protocol"`
	// Name is the server's name as its game draws it (package gametext:
	// Quake III's font, Latin-1 for the Doom 3 family), colour codes kept
	// for the page to draw; NamePlain without them.
	Name           string     `json:"name"`
	NamePlain      string     `json:"name_plain"`
	Map            string     `json:"map"`
	Gametype       string     `json:"gametype"`
	Players        int        `json:"players"` // clients as the server counts them: bots included
	Humans         int        `json:"humans"`  // players that are neither bots nor suspected bots
	Bots           int        `json:"bots"`
	SuspectedBots  int        `json:"suspected_bots"`
	MaxPlayers     int        `json:"max_players"`
	Country        string     `json:"country"`
	ASN            uint32     `json:"asn,omitempty"`
	Network        string     `json:"network,omitempty"`
	FirstSeen      time.Time  `json:"first_seen"`
	LastVerified   *time.Time `json:"last_verified,omitempty"` // absent: restored, not verified again yet
	PingEstimateMs *int       `json:"ping_estimate_ms,omitempty"`
	// PingLowMs is the least the viewer's RTT can be as far as the
	// landmarks' measurements and the model tell, where landmarks
	// measured the server: ping_estimate_ms is then the tightest upper
	// bound, and the range between them is the estimate's uncertainty.
	// Absent with the country model alone.
	PingLowMs     *int  `json:"ping_low_ms,omitempty"`
	RecentPlayers []int `json:"recent_players"`
	// AlsoListedAs are the other addresses of the same game server
	// (master's clones.go), on the group's primary; CloneOf is the
	// primary, on each of the others.
	AlsoListedAs []string `json:"also_listed_as,omitempty"`
	CloneOf      string   `json:"clone_of,omitempty"`
	// Landmarks are the landmarks' RTTs to it (landmarks.go); absent
	// unless the master is configured as a landmark and has measured it.
	Landmarks []master.LandmarkRTTJSON `json:"landmarks,omitempty"`
}

// row is one server of a view, with its sort and filter keys.
type row struct {
	ServerJSON
	reg      netip.AddrPort // the registry's address (the published one is Address)
	pub      netip.AddrPort
	info     []master.Pair
	cs       gametext.Charset // how its game draws names (its own, its players')
	gameKeys []string         // lower-case game name and gamenames, for game=
	nameKey  string           // lower-case plain name
	mapKey   string
	gtKey    string
	city     latency.City
	hasCity  bool
	via      []viaLandmark // landmarks with a known place that measured it
	sources  []SourceJSON  // the detail's (ecosystem.go)
}

// view is an immutable picture of the list at one registry version and
// history slot, with the answers encoded from it (see cache).
type view struct {
	version uint64
	slot    int64     // the history slot it was built in: recent_players end with it
	built   time.Time // Last-Modified, whole seconds
	rows    []row     // ascending by published address
	byAddr  map[netip.AddrPort]int
	cache   *bodyCache
}

// buildView builds the view of servers (the registry's listed servers at
// version) at now.
func buildView(now time.Time, version uint64, servers []master.Server, cat *game.Catalogue, am *master.AddrMap, db geoLookup, hist *history.History, cache cacheLimits) *view {
	v := &view{version: version, slot: history.SlotOf(now), built: now.Truncate(time.Second).UTC(),
		rows: make([]row, 0, len(servers)), byAddr: make(map[netip.AddrPort]int, len(servers)), cache: newBodyCache(cache)}
	// Rows are built in published-address order (sorting the indices,
	// not the big rows).
	pubs := make([]netip.AddrPort, len(servers))
	order := make([]int, len(servers))
	for i := range servers {
		pubs[i], _ = am.Map(servers[i].Addr)
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmpAddr(pubs[x], pubs[y]) })
	for _, k := range order {
		s, pub := &servers[k], pubs[k]
		r := row{reg: s.Addr, pub: pub, info: s.Info}
		j := &r.ServerJSON
		j.Address, j.Game, j.Family, j.Protocol = pub.String(), s.Game, s.Family.String(), s.Protocol
		j.Gametype, j.Players, j.MaxPlayers, j.FirstSeen = s.Gametype, s.Clients, s.MaxClients, s.FirstSeen.UTC()
		if !s.LastVerified.IsZero() {
			t := s.LastVerified.UTC()
			j.LastVerified = &t
		}
		r.cs = gametext.For(s.Family.String())
		raw := infoOf(s.Info, "hostname", "sv_hostname", "si_name")
		j.Name, j.NamePlain = r.cs.Decode(raw), r.cs.Plain(raw)
		r.sources = sourcesJSON(s)
		j.Map = infoOf(s.Info, "mapname", "si_map")
		j.Humans, j.Bots, j.SuspectedBots = s.Humans(), s.Bots, s.SuspectedBots
		j.Country = "--"
		if db != nil {
			if gi, ok := db(pub.Addr()); ok {
				if gi.Country != "" {
					j.Country = gi.Country
				}
				j.ASN, j.Network = gi.ASN, gi.ASOrg
			}
		}
		r.city, r.hasCity = latency.MainCity(j.Country)
		if hist != nil {
			j.RecentPlayers = hist.Recent(s.Addr, v.slot+1, RecentSamples)
		} else {
			j.RecentPlayers = []int{}
		}
		r.gameKeys = []string{strings.ToLower(s.Game)}
		if g, ok := cat.ByName(s.Game); ok {
			for _, n := range g.Gamenames {
				r.gameKeys = append(r.gameKeys, strings.ToLower(n))
			}
		}
		r.nameKey = strings.ToLower(j.NamePlain)
		r.mapKey = strings.ToLower(j.Map)
		r.gtKey = strings.ToLower(j.Gametype)
		v.rows = append(v.rows, r)
	}
	for i, r := range v.rows {
		v.byAddr[r.pub] = i
	}
	return v
}

func cmpAddr(a, b netip.AddrPort) int { return a.Compare(b) }

// geoLookup geolocates an address (geo.DB.Lookup, or the API's cache of
// it).
type geoLookup func(netip.Addr) (geo.Info, bool)

// infoOf returns the value of the first of keys the info has (keys
// matched without regard to ASCII case).
func infoOf(info []master.Pair, keys ...string) string {
	for _, k := range keys {
		for _, p := range info {
			if strings.EqualFold(p.Key, k) {
				return p.Value
			}
		}
	}
	return ""
}

// pingEstimate is the latency model's RTT between the viewer's country's
// main city and the server's, in whole ms, or false.
func pingEstimate(from latency.City, fromOK bool, r *row) (int, bool) {
	est, _, ok := pingRange(from, fromOK, r)
	return est, ok
}

// viaLandmark is a landmark's place and its measured RTT to a server.
type viaLandmark struct {
	at  latency.City
	rtt time.Duration
}

// pingRange estimates the viewer's RTT to r and the least it can be, in
// milliseconds. Where landmarks with a known place measured r, the
// triangle inequality bounds it through each landmark L: the viewer's
// RTT to L (the latency model, from the viewer's country) plus L's
// measured RTT to r is an upper bound, their difference a lower one. The
// estimate is the tightest upper bound, as scout servers --order
// landmarks orders by, so servers of one country are told apart by what
// the landmarks measured; low is the tightest lower bound. Without such a
// landmark it is the model between the two countries' main cities, and
// low is est.
func pingRange(from latency.City, fromOK bool, r *row) (est, low int, ok bool) {
	if !fromOK {
		return 0, 0, false
	}
	if len(r.via) > 0 {
		lo, hi := time.Duration(0), time.Duration(1<<62)
		for _, v := range r.via {
			vl := latency.CityRTT(from, v.at)
			lo = max(lo, vl-v.rtt, v.rtt-vl)
			hi = min(hi, vl+v.rtt)
		}
		lo = min(lo, hi) // the model can be off by more than the bounds' gap
		ms := func(d time.Duration) int { return int(d.Round(time.Millisecond) / time.Millisecond) }
		return ms(hi), ms(lo), true
	}
	if !r.hasCity {
		return 0, 0, false
	}
	ms := int(latency.CityRTT(from, r.city).Round(time.Millisecond) / time.Millisecond)
	return ms, ms, true
}

// selectRows returns the indices of v's rows that q selects, in q's order
// (ties broken by address, so the order is stable between refreshes). It
// is pure.
func selectRows(rows []row, q *ListQuery) []int {
	from, fromOK := latency.MainCity(q.From)
	idx := make([]int, 0, len(rows))
	for i := range rows {
		if matches(&rows[i], q) {
			idx = append(idx, i)
		}
	}
	ping := func(r *row) int {
		if ms, ok := pingEstimate(from, fromOK, r); ok {
			return ms
		}
		return 1 << 30 // unknown last, whatever the order
	}
	by := func(a, b *row) int {
		switch q.Sort {
		case SortPlayers:
			if c := cmp.Compare(a.Players, b.Players); c != 0 {
				return c
			}
			// then name ascending, whatever the order of players
			if c := cmp.Compare(a.nameKey, b.nameKey); c != 0 {
				if q.Desc {
					return -c
				}
				return c
			}
			return 0
		case SortName:
			return cmp.Compare(a.nameKey, b.nameKey)
		case SortMap:
			return cmp.Compare(a.mapKey, b.mapKey)
		case SortGame:
			return cmp.Compare(strings.ToLower(a.Game), strings.ToLower(b.Game))
		case SortCountry:
			return cmp.Compare(a.Country, b.Country)
		case SortGametype:
			return cmp.Compare(a.gtKey, b.gtKey)
		case SortPing:
			pa, pb := ping(a), ping(b)
			if q.Desc && (pa == 1<<30) != (pb == 1<<30) {
				return -cmp.Compare(pa, pb) // keep the unknown last
			}
			return cmp.Compare(pa, pb)
		}
		return 0
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		a, b := &rows[i], &rows[j]
		c := by(a, b)
		if q.Desc {
			c = -c
		}
		if c == 0 {
			c = cmpAddr(a.pub, b.pub) // always ascending: the stable tie-break
		}
		return c
	})
	return idx
}

func matches(r *row, q *ListQuery) bool {
	anyOf := func(want []string, have ...string) bool {
		if len(want) == 0 {
			return true
		}
		for _, h := range have {
			if _, ok := slices.BinarySearch(want, h); ok {
				return true
			}
		}
		return false
	}
	switch {
	case r.CloneOf != "" && !q.AllClones:
		return false // listed as its primary's also_listed_as
	case !anyOf(q.Games, r.gameKeys...),
		!anyOf(q.Gametypes, r.gtKey),
		!anyOf(q.Maps, r.mapKey),
		len(q.Countries) > 0 && !slices.Contains(q.Countries, r.Country),
		len(q.Protocols) > 0 && !slices.Contains(q.Protocols, r.Protocol),
		q.Empty != nil && (r.Players == 0) != *q.Empty,
		q.Full != nil && (r.Players >= r.MaxPlayers) != *q.Full,
		q.Text != "" && !strings.Contains(r.nameKey, q.Text):
		return false
	}
	return true
}
