package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/scout-discovery/scout/browser"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/probe"
)

// gamesHelp is the -h text on --game, from the catalogue: each game, its
// aliases, the queries it sends to masters, and the servers of the same
// protocol that are listed under another name and so not found.
func gamesHelp() string {
	var b strings.Builder
	b.WriteString(`Games (--game, case-insensitive; aliases in brackets), and the queries each
sends its masters. A master lists a server under the game name it
heartbeats, and answers a query with the servers of the name (or, for an
anonymous query, the protocol) asked: a server listed under a name not
asked for is not found.
`)
	cat := game.Builtin()
	for _, g := range cat {
		var aliases []string
		for a, n := range gameAliases {
			if n == g.Name {
				aliases = append(aliases, a)
			}
		}
		sort.Strings(aliases)
		name := g.Name
		if len(aliases) > 0 {
			name += " [" + strings.Join(aliases, ", ") + "]"
		}
		fmt.Fprintf(&b, "  %s: %s\n", name, g.Title)
		req, err := discover.RequestFor(g, 0, false)
		if err != nil {
			b.WriteString("      no master scout can ask: --lan, or 'scout query ADDR'\n")
			continue
		}
		fmt.Fprintf(&b, "      asks %s\n", strings.Join(req.Describe(), "; "))
		for _, o := range discover.OtherNames(g, cat, 0, false) {
			fmt.Fprintf(&b, "      misses the servers listed under %s (%s): --game %s\n",
				o.Game.Name, strings.Join(o.Request.Describe(), "; "), strings.ToLower(o.Game.Name))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// gameNames follows the answered servers' game names, to tell the user
// when a list was empty or shrank because of one.
type gameNames struct {
	answered int
	shown    int            // answered and shown by the filters
	names    map[string]int // gamename (as the server writes it) -> servers
}

func (g *gameNames) wrap(filter browser.Filter, each func(discover.Event)) func(discover.Event) {
	g.names = map[string]int{}
	return func(e discover.Event) {
		if p, ok := e.(discover.Probed); ok && p.Answered() {
			g.answered++
			if filter.Show(p.Result) {
				g.shown++
			}
			g.names[gameNameOf(p.Result)]++
		}
		each(e)
	}
}

// gameNameOf is the "gamename" a server's info gives ("" when none): the
// key the catalogue's Gamenames are values of.
func gameNameOf(r probe.Result) string {
	v, _ := r.Info.Get("gamename")
	return v
}

// summary lists the game names, most servers first: "OpenArena (3), Quake3Arena (1)".
func (g *gameNames) summary() string {
	type kv struct {
		k string
		n int
	}
	var l []kv
	for k, n := range g.names {
		if k == "" {
			k = "(none)"
		}
		l = append(l, kv{k, n})
	}
	slices.SortFunc(l, func(a, b kv) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.k, b.k)
	})
	var parts []string
	for _, e := range l {
		parts = append(parts, fmt.Sprintf("%s (%d)", browser.Display(e.k), e.n))
	}
	return strings.Join(parts, ", ")
}

// warnGameName writes to stderr what the client can know about servers
// missed or hidden because of a game name:
//
//   - --gamename hid every server that answered: which names they gave;
//   - no server that answered gave a gamename --game asks the masters
//     for, and some gave the gamename of another catalogue game: the
//     names, and the --game that asks for that game;
//   - nothing was listed although masters answered: each answering master
//     is asked (once, on a new socket, probing nothing) for the other
//     names of the same protocol in the catalogue ([discover.OtherNames]),
//     and each that lists servers there is named, with the count and the
//     --game to use.
func warnGameName(ctx context.Context, opt serversOptions, cfg discover.Config, sum discover.Summary, g *gameNames, stderr io.Writer) {
	if g.answered > 0 && g.shown == 0 && opt.filter.GameName != "" {
		fmt.Fprintf(stderr, "scout servers: --gamename %s hid all %d servers that answered; their game names: %s\n",
			browser.Display(opt.filter.GameName), g.answered, g.summary())
	}
	if hint := othersHint(opt.game, g); hint != "" {
		mine := false // a name --game asks the masters for
		for n := range g.names {
			mine = mine || opt.game.HasGamename(n) || slices.Contains(discover.ListedUnder(opt.game), n)
		}
		if !mine {
			fmt.Fprintf(stderr, "scout servers: none of the %d servers that answered gives the gamename %s; they give %s%s\n",
				g.answered, strings.Join(opt.game.Gamenames, " or "), g.summary(), hint)
		}
	}
	if sum.Listed > 0 || ctx.Err() != nil {
		return
	}
	var answered []discover.Master
	for _, m := range cfg.Masters {
		for _, r := range sum.Masters {
			if r.Addr == m.Addr && r.Answered() {
				answered = append(answered, m)
				break
			}
		}
	}
	if len(answered) == 0 {
		return
	}
	others := discover.OtherNames(opt.game, game.Builtin(), opt.protocol, opt.ext)
	if len(others) == 0 {
		return
	}
	table, err := loadWorld(opt)
	if err != nil {
		return
	}
	conn, c, err := listen(opt, table)
	if err != nil {
		return
	}
	defer c.Close()
	mine, _ := discover.RequestFor(opt.game, opt.protocol, opt.ext)
	for _, o := range others {
		lcfg := discover.Config{Quiet: cfg.Quiet, Timeout: cfg.Timeout}
		for _, m := range answered {
			lcfg.Masters = append(lcfg.Masters, discover.Master{Name: m.Name, Addr: m.Addr, Request: o.Request})
		}
		osum, _ := discover.List(ctx, conn, lcfg, func(discover.Event) {})
		for _, r := range osum.Masters {
			if r.Listed-r.Unusable > 0 {
				fmt.Fprintf(stderr, "scout servers: master %s listed no servers for %s (%s), but lists %d under the game name %s (%s): try --game %s\n",
					browser.Display(r.Name), opt.game.Name, strings.Join(mine.Describe(), "; "), r.Listed-r.Unusable,
					o.Game.Name, strings.Join(o.Request.Describe(), "; "), strings.ToLower(o.Game.Name))
			}
		}
	}
}

// othersHint names the catalogue games other than mine of the gamenames
// the servers gave; "" when none.
func othersHint(mine *game.Game, g *gameNames) string {
	var hints []string
	for _, c := range game.Builtin() {
		if c.Name == mine.Name || len(c.Gamenames) == 0 {
			continue
		}
		for n := range g.names {
			if n != "" && c.HasGamename(n) && !slices.Contains(hints, strings.ToLower(c.Name)) {
				hints = append(hints, strings.ToLower(c.Name))
			}
		}
	}
	if len(hints) == 0 {
		return ""
	}
	sort.Strings(hints)
	return "; --game " + strings.Join(hints, " or --game ") + " asks the masters for those"
}

// warnLimits writes to stderr each master whose answer passed a bound of
// discover.Config (servers, packets or time per master), with the error
// naming it, so that it is seen with --json too.
func warnLimits(sum discover.Summary, stderr io.Writer) {
	for _, m := range sum.Masters {
		if m.End == discover.EndLimit {
			fmt.Fprintf(stderr, "scout servers: master %s: %s\n", browser.Display(m.Name), browser.Display(m.Error))
		}
	}
}
