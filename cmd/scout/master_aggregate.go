package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/master"
	"github.com/scout-discovery/scout/master/upstream"
	"github.com/scout-discovery/scout/masterd"
	"github.com/scout-discovery/scout/protocol/q3"
	"github.com/scout-discovery/scout/servers"
)

// ecosystemOpts are scout master's options for the other masters and the
// block list: the upstream masters it gathers lists from, the scout peers
// it exchanges verified lists with, the bounds on both, and the servers
// it refuses with a published reason.
var ecosystemOpts = []optSpec{
	{long: "aggregate", arity: argWords, file: fileLists,
		help: "ADDR[:PORT] QUERY...: ask this master for its lists every --aggregate-interval and verify each server it names with this master's own challenge; " +
			"QUERY is GAME[:PROTOCOL] (the queries scout servers --game sends: q3, et, rtcw, OpenArena, Xonotic, q4, ...), 'ext' (getserversExt, IPv6 too, for the games after it) or name=LABEL; several allowed",
		set: func(a *masterArgs, v []string) error { a.aggregate = append(a.aggregate, v); return nil }},
	{long: "scout-peer", arity: argOne, file: fileList,
		help: "URL: another scout master's HTTP address (http://HOST:PORT): fetch its verified list every --aggregate-interval and verify each server; several allowed",
		set:  func(a *masterArgs, v []string) error { a.scoutPeers = append(a.scoutPeers, v[0]); return nil }},
	durOpt("aggregate-interval", 10, time.Second, func(a *masterArgs) *time.Duration { return &a.cfg().Handler.Aggregate.Interval },
		"SECONDS: ask each upstream and peer this often, ±10% (300)"),
	intOpt("aggregate-max-servers", 0, 1, func(a *masterArgs) *int { return &a.cfg().Handler.Aggregate.MaxLearned },
		"N: servers taken from one upstream or peer per refresh; the rest are counted and dropped (16384)"),
	intOpt("aggregate-max-entries", 0, 1, func(a *masterArgs) *int { return &a.cfg().Handler.Aggregate.MaxEntries },
		"N: entries read of one query's answer, duplicates included; the rest is not read (16384)"),
	intOpt("aggregate-checks", 0, 1, func(a *masterArgs) *int { return &a.cfg().Handler.LearnPerTick },
		"N: first checks a second of servers upstreams and peers named (256)"),
	flagOpt("one-per-clone-group", 0, func(a *masterArgs) { a.cfg().Registry.OnePerCloneGroup = true },
		"answer list queries with one address of each game server listed under several (same host name, map, players and clock); the JSON API groups them either way"),
	{long: "block", arity: argOne, file: fileList,
		help: "\"PREFIX REASON\": refuse servers in PREFIX (1.2.3.4, 1.2.3.0/24, 2001:db8::/32), listing none there, for REASON, published at /api/v1/blocklist and /blocked; several allowed",
		set: func(a *masterArgs, v []string) error {
			b, err := parseBlock(v[0])
			a.cfg().Registry.Blocked = append(a.cfg().Registry.Blocked, b)
			return err
		}},
}

// parseBlock reads "PREFIX REASON": an address or prefix, then the reason
// (required: a block list says why).
func parseBlock(s string) (master.Block, error) {
	p, reason, _ := strings.Cut(strings.TrimSpace(s), " ")
	reason = strings.TrimSpace(reason)
	pre, err := netip.ParsePrefix(p)
	if err != nil {
		a, aerr := netip.ParseAddr(p)
		if aerr != nil {
			return master.Block{}, fmt.Errorf("want \"PREFIX REASON\" (1.2.3.0/24 padding the list), got %q", s)
		}
		pre = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
	}
	switch {
	case reason == "":
		return master.Block{}, fmt.Errorf("%q: a block needs its reason, published with it", s)
	case len(reason) > master.MaxBlockReasonLen || strings.ContainsAny(reason, "\x00\n"):
		return master.Block{}, fmt.Errorf("%q: the reason must be at most %d bytes on one line", s, master.MaxBlockReasonLen)
	}
	return master.Block{Prefix: pre, Reason: reason}, nil
}

// aggregation resolves --aggregate and --scout-peer into the handler's
// sources.
func (a masterArgs) aggregation(ctx context.Context, c *masterd.Config) error {
	for _, words := range a.aggregate {
		src, err := parseAggregate(ctx, words)
		if err != nil {
			return fmt.Errorf("%w: --aggregate %s: %v", errMasterUsage, strings.Join(words, " "), err)
		}
		c.Handler.Aggregate.Sources = append(c.Handler.Aggregate.Sources, src)
	}
	for _, u := range a.scoutPeers {
		src, err := parseScoutPeer(ctx, u)
		if err != nil {
			return fmt.Errorf("%w: --scout-peer %s: %v", errMasterUsage, u, err)
		}
		c.Handler.Aggregate.Sources = append(c.Handler.Aggregate.Sources, src)
	}
	return nil
}

// parseAggregate reads an --aggregate's words: the master's address (its
// port 27950 unless given; a host name is resolved now), then its queries.
func parseAggregate(ctx context.Context, words []string) (upstream.Source, error) {
	addrs, err := resolveAddrs(ctx, words[0], masterd.DefaultPort)
	if err != nil {
		return upstream.Source{}, err
	}
	if len(addrs) == 0 {
		return upstream.Source{}, errors.New("no address")
	}
	src := upstream.Source{Kind: upstream.KindMaster, Addr: preferIPv4(addrs)}
	if !isIPLiteral(words[0]) {
		src.Name = words[0] // the host name, not the address it resolved to
	}
	ext := false
	for _, w := range words[1:] {
		switch {
		case w == "ext":
			ext = true
			continue
		case strings.HasPrefix(w, "name="):
			src.Name = strings.TrimPrefix(w, "name=")
			continue
		}
		qs, err := aggregateQueries(w, ext)
		if err != nil {
			return src, err
		}
		for _, q := range qs {
			if !slices.ContainsFunc(src.Queries, func(o upstream.Query) bool { return o.String() == q.String() }) {
				src.Queries = append(src.Queries, q) // q3 and OpenArena both ask "getservers 71"
			}
		}
	}
	if len(src.Queries) == 0 {
		return src, errors.New("no query: give games (q3, et, rtcw, OpenArena, Xonotic, q4, ...)")
	}
	return src, nil
}

// aggregateQueries returns the queries of one GAME[:PROTOCOL] word: those
// scout servers --game GAME sends to its masters, each one query.
func aggregateQueries(w string, ext bool) ([]upstream.Query, error) {
	name, proto, hasProto := strings.Cut(w, ":")
	g, err := servers.FindGame(name)
	if err != nil {
		return nil, err
	}
	p := 0
	if hasProto {
		if g.Family == game.FamilyDoom3 {
			p, err = parseDoom3Version(proto)
		} else {
			p, err = strconv.Atoi(proto)
		}
		if err != nil {
			return nil, fmt.Errorf("%q: bad protocol %q", w, proto)
		}
	}
	r, err := discover.RequestFor(g, p, ext)
	if err != nil {
		return nil, err
	}
	switch r.Protocol {
	case discover.ProtocolQ3:
		var out []upstream.Query
		for _, gs := range append([]q3.GetServers{r.Q3}, r.Q3Also...) {
			gs.Ext = ext
			q := upstream.Query{Family: game.FamilyQ3, Q3: gs, Game: gs.GameName}
			if q.Game == "" && g.Anonymous {
				q.Game = g.Name // "et:82": ET, whatever the catalogue says of 82
			}
			out = append(out, q)
		}
		return out, nil
	case discover.ProtocolQ4:
		return []upstream.Query{{Family: game.FamilyDoom3, Q4: r.Q4}}, nil
	}
	return nil, fmt.Errorf("%s: its master (%s) lists servers scout does not verify", g.Name, r.Protocol)
}

// parseDoom3Version reads a Doom 3 family protocol: "2.85" or its number.
func parseDoom3Version(s string) (int, error) {
	if maj, min, ok := strings.Cut(s, "."); ok {
		a, err1 := strconv.ParseUint(maj, 10, 15)
		b, err2 := strconv.ParseUint(min, 10, 16)
		if err1 != nil || err2 != nil {
			return 0, errors.New("bad version")
		}
		return game.Doom3Version(uint16(a), uint16(b)), nil
	}
	return strconv.Atoi(s)
}

// parseScoutPeer reads a --scout-peer URL and resolves its host.
func parseScoutPeer(ctx context.Context, s string) (upstream.Source, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return upstream.Source{}, errors.New("want http://HOST:PORT, the peer's --http address")
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return upstream.Source{}, err
		}
	}
	addrs, err := resolveAddrs(ctx, u.Hostname(), port)
	if err != nil || len(addrs) == 0 {
		return upstream.Source{}, fmt.Errorf("resolving %s: %v", u.Hostname(), err)
	}
	base := u.Scheme + "://" + u.Host
	return upstream.Source{Kind: upstream.KindPeer, URL: base, Addr: preferIPv4(addrs)}, nil
}

// preferIPv4 returns the first IPv4 address of addrs, else the first.
func preferIPv4(addrs []netip.AddrPort) netip.AddrPort {
	for _, a := range addrs {
		if a.Addr().Is4() {
			return a
		}
	}
	return addrs[0]
}

func isIPLiteral(s string) bool {
	if _, err := netip.ParseAddrPort(s); err == nil {
		return true
	}
	_, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	return err == nil
}
