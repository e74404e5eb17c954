package servers

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

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

// gameNames follows the listed servers and the answered servers' game
// names, to tell the user when a list was empty or shrank because of one.
type gameNames struct {
	answered int
	shown    int            // answered and shown by the filters
	names    map[string]int // gamename (as the server writes it) -> servers
	listed   map[netip.AddrPort]bool
}

func (g *gameNames) wrap(filter browser.Filter, each func(discover.Event)) func(discover.Event) {
	g.names = map[string]int{}
	g.listed = map[netip.AddrPort]bool{}
	return func(e discover.Event) {
		switch e := e.(type) {
		case discover.Listed:
			g.listed[e.Addr] = true
		case discover.Probed:
			if e.Answered() {
				g.answered++
				if filter.Show(e.Result) {
					g.shown++
				}
				g.names[gameNameOf(e.Result)]++
			}
		}
		each(e)
	}
}

// nameCheckGrace is how long a run that found servers waits, after its
// last result, for the masters' lists under the other game names
// (nameCheck) before it gives up on them.
const nameCheckGrace = 200 * time.Millisecond

// nameCheck asks the masters, on a socket of its own while the run goes
// on, for the servers they list under the other game names of the
// protocols --game asks for anonymously ([discover.OtherNames]), probing
// nothing: one more query per master and name (an ioquake3 server with
// com_gamename OpenArena is listed under OpenArena, not in the anonymous
// list --game q3 asks for). warnGameName compares them with the run's.
type nameCheck struct {
	others []discover.OtherName
	done   chan struct{}
	cancel context.CancelFunc
	sums   []discover.Summary
	listed []map[string]map[netip.AddrPort]bool // by other name: master name -> servers
}

// startNameCheck starts the lists; nil when --game has no other name or
// the socket cannot be had.
func startNameCheck(ctx context.Context, opt Config, cfg discover.Config) *nameCheck {
	others := discover.OtherNames(opt.Game, game.Builtin(), opt.Protocol, opt.IPv6)
	if len(others) == 0 || len(cfg.Masters) == 0 {
		return nil
	}
	conn, c, err := opt.Listen()
	if err != nil {
		return nil
	}
	cctx, cancel := context.WithCancel(ctx)
	n := &nameCheck{others: others, done: make(chan struct{}), cancel: cancel,
		sums: make([]discover.Summary, len(others)), listed: make([]map[string]map[netip.AddrPort]bool, len(others))}
	go func() {
		defer close(n.done)
		defer c.Close()
		for i, o := range others {
			lcfg := discover.Config{Quiet: cfg.Quiet, Timeout: cfg.Timeout}
			for _, m := range cfg.Masters {
				lcfg.Masters = append(lcfg.Masters, discover.Master{Name: m.Name, Addr: m.Addr, Request: o.Request})
			}
			l := map[string]map[netip.AddrPort]bool{}
			n.listed[i] = l
			n.sums[i], _ = discover.List(cctx, conn, lcfg, func(e discover.Event) {
				if e, ok := e.(discover.Listed); ok {
					if l[e.Master] == nil {
						l[e.Master] = map[netip.AddrPort]bool{}
					}
					l[e.Master][e.Addr] = true
				}
			})
		}
	}()
	return n
}

// wait waits for the lists: to their end when full, else at most
// nameCheckGrace, then ends them with what came.
func (n *nameCheck) wait(full bool) {
	if !full {
		t := time.NewTimer(nameCheckGrace)
		defer t.Stop()
		select {
		case <-n.done:
		case <-t.C:
		}
	}
	if full {
		<-n.done
	}
	n.cancel()
	<-n.done
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
//     that lists servers under another name of the same protocol in the
//     catalogue (nc, [discover.OtherNames]) is named, with the count and
//     the --game to use;
//   - the list was not empty but shrank: each answering master that
//     lists servers under another name that the run's list did not have
//     is named, with the count, the name, the queries --game sent and the
//     --game that finds them.
//
// nc may be nil (no other name); warnGameName waits for it.
func warnGameName(ctx context.Context, opt Config, sum discover.Summary, g *gameNames, nc *nameCheck, stderr io.Writer) {
	if g.answered > 0 && g.shown == 0 && opt.Filter.GameName != "" {
		fmt.Fprintf(stderr, "scout servers: --gamename %s hid all %d servers that answered; their game names: %s\n",
			browser.Display(opt.Filter.GameName), g.answered, g.summary())
	}
	if hint := othersHint(opt.Game, g); hint != "" {
		mine := false // a name --game asks the masters for
		for n := range g.names {
			mine = mine || opt.Game.HasGamename(n) || slices.Contains(discover.ListedUnder(opt.Game), n)
		}
		if !mine {
			fmt.Fprintf(stderr, "scout servers: none of the %d servers that answered gives the gamename %s; they give %s%s\n",
				g.answered, strings.Join(opt.Game.Gamenames, " or "), g.summary(), hint)
		}
	}
	if nc == nil {
		return
	}
	nc.wait(sum.Listed == 0 && ctx.Err() == nil)
	if ctx.Err() != nil {
		return
	}
	answered := map[netip.AddrPort]bool{}
	for _, r := range sum.Masters {
		if r.Answered() {
			answered[r.Addr] = true
		}
	}
	mine, _ := discover.RequestFor(opt.Game, opt.Protocol, opt.IPv6)
	for i, o := range nc.others {
		for _, r := range nc.sums[i].Masters {
			if !answered[r.Addr] {
				continue
			}
			if sum.Listed == 0 {
				if r.Listed-r.Unusable > 0 {
					fmt.Fprintf(stderr, "scout servers: master %s listed no servers for %s (%s), but lists %d under the game name %s (%s): try --game %s\n",
						browser.Display(r.Name), opt.Game.Name, strings.Join(mine.Describe(), "; "), r.Listed-r.Unusable,
						o.Game.Name, strings.Join(o.Request.Describe(), "; "), strings.ToLower(o.Game.Name))
				}
				continue
			}
			missed := 0
			for a := range nc.listed[i][r.Name] {
				if !g.listed[a] {
					missed++
				}
			}
			if missed > 0 {
				fmt.Fprintf(stderr, "scout servers: master %s also lists %d servers under the game name %s (%s), which --game %s does not ask for (%s): --game %s finds them\n",
					browser.Display(r.Name), missed, o.Game.Name, strings.Join(o.Request.Describe(), "; "),
					strings.ToLower(opt.Game.Name), strings.Join(mine.Describe(), "; "), strings.ToLower(o.Game.Name))
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

// warnAfter writes to stderr, after a discovery run of any order, what
// its masters and servers call for: passed bounds, refused entries, game
// names the client did not ask for.
func warnAfter(ctx context.Context, opt Config, sum discover.Summary, g *gameNames, nc *nameCheck, stderr io.Writer) {
	warnLimits(sum, stderr)
	warnRefused(sum, stderr)
	warnGameName(ctx, opt, sum, g, nc, stderr)
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

// warnRefused says, once, how many servers public masters listed at
// local addresses were not probed, and how to probe them.
func warnRefused(sum discover.Summary, stderr io.Writer) {
	if len(sum.Refused) == 0 {
		return
	}
	n := 0
	var why []string
	for r, k := range sum.Refused {
		n += k
		why = append(why, fmt.Sprintf("%s %d", r, k))
	}
	slices.Sort(why)
	fmt.Fprintf(stderr, "scout servers: %d servers that public masters listed at local addresses or at their own were not probed (%s); --allow-local probes them\n",
		n, strings.Join(why, ", "))
}
