package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/scout-discovery/scout/browser"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/probe"
	"github.com/scout-discovery/scout/protocol/gametext"
	"github.com/scout-discovery/scout/protocol/infostring"
)

func init() {
	register(cli.Command{Name: "query", Summary: "ask game servers directly for their info, players and ping", Run: runQuery})
}

const queryAbout = `Asks each server for its info and status with the query protocol of its
game, one unguessable challenge per request, and measures the round-trip
time from the send that was answered. Unanswered requests are sent again
(--retries) after --timeout each.

ADDR is host, host:port, IPv4, or IPv6 in brackets ([::1]:27960); without a
port the game's default port is used.

Games (--game):
  q3       Quake III family: Q3A, Enemy Territory, RtCW, OpenArena,
           ioquake3, DarkPlaces (getinfo + getstatus; port 27960)
  q4       Quake 4 (getInfo; port 28004)
  doom3    Doom 3 (getInfo; port 27666)
  ut3      Unreal Tournament 3, GameSpy 4 query (also: gs4; port 6500)
  source   Valve Source, A2S_INFO + A2S_PLAYER + A2S_RULES (also: a2s;
           port 27015)

Output: a table, each server then its players (and, for Source, its
rules); with --json one JSON object per line and server: address, game,
name, map, gametype, protocol, numplayers, maxplayers, info (every key the
server sent), players, rules (Source), rtt_ms, attempts, and when a request
failed error and error_kind: timeout (no reply after every attempt),
unreachable (an ICMP destination unreachable answered it, e.g. "getinfo:
unreachable: port" for a closed port; Linux only, elsewhere a closed port
times out), garbled, misdirected or other.

Exit status: 0 when at least one server answered, 1 when none did, 2 for
bad usage.`

// queryGame is one --game choice.
type queryGame struct {
	dialect probe.Dialect
	port    uint16
}

var queryGames = map[string]queryGame{
	"q3":     {probe.Q3, probe.DefaultPortQ3},
	"q4":     {probe.Q4, probe.DefaultPortQ4},
	"doom3":  {probe.Q4, 27666},
	"ut3":    {probe.GS4, probe.DefaultPortGS4},
	"gs4":    {probe.GS4, probe.DefaultPortGS4},
	"source": {probe.A2S, probe.DefaultPortA2S},
	"a2s":    {probe.A2S, probe.DefaultPortA2S},
}

func runQuery(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("query", "[flags] ADDR...", queryAbout, stderr)
	gameName := fs.String("game", "q3", "the servers' game: q3, q4, doom3, ut3 (gs4), source (a2s)")
	timeout := fs.Duration("timeout", probe.DefaultTimeout, "how long each request waits for its reply")
	retries := fs.Int("retries", probe.DefaultAttempts-1, "how many times an unanswered request is sent again")
	asJSON := fs.Bool("json", false, "print one JSON object per server and line")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	game, ok := queryGames[strings.ToLower(*gameName)]
	switch {
	case !ok:
		return cli.UsageError(fs, "unknown game %q (q3, q4, doom3, ut3, source)", *gameName)
	case fs.NArg() == 0:
		return cli.UsageError(fs, "no server address given")
	case *timeout <= 0 || *retries < 0:
		return cli.UsageError(fs, "--timeout must be positive and --retries not negative")
	}
	// Parse every address before sending anything: a typo is a usage error.
	addrs := make([]discover.HostPort, fs.NArg())
	for i, a := range fs.Args() {
		qa, err := discover.ParseHostPort(a, game.port)
		if err != nil {
			return cli.UsageError(fs, "%v", err)
		}
		addrs[i] = qa
	}

	p := &probe.Prober{Timeout: *timeout, Attempts: *retries + 1}
	results, err := discover.QueryHosts(ctx, p, game.dialect, addrs)
	if err != nil {
		fmt.Fprintf(stderr, "scout query: %v\n", err)
		return 1
	}

	answered := false
	for _, r := range results {
		answered = answered || r.Answered()
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		for i, r := range results {
			if err := enc.Encode(queryJSON(addrs[i].Text, r)); err != nil {
				fmt.Fprintf(stderr, "scout query: %v\n", err)
				return 1
			}
		}
	} else {
		queryTable(stdout, addrs, results)
	}
	if !answered {
		return 1
	}
	return 0
}

// queryServerJSON is one line of --json output.
type queryServerJSON struct {
	Address    string            `json:"address"` // the resolved address
	Query      string            `json:"query"`   // the address as given
	Game       string            `json:"game"`
	Name       string            `json:"name"`       // as the game draws it (discover.ServerJSON.Name)
	NamePlain  string            `json:"name_plain"` // colour codes removed
	NameRaw    []byte            `json:"name_raw"`   // the bytes sent, base64
	StatusInfo infostring.Info   `json:"status_info,omitempty"`
	Map        string            `json:"map"`
	GameType   string            `json:"gametype"`
	Protocol   string            `json:"protocol"`
	NumPlayers int               `json:"numplayers"`
	MaxPlayers int               `json:"maxplayers"`
	Info       infostring.Info   `json:"info"`
	Players    []queryPlayerJSON `json:"players"`
	Rules      infostring.Info   `json:"rules,omitempty"` // A2S_RULES, in wire order
	RTTms      float64           `json:"rtt_ms"`
	Attempts   int               `json:"attempts"`
	Error      string            `json:"error,omitempty"`
	ErrorKind  string            `json:"error_kind,omitempty"` // see errorKind
}

type queryPlayerJSON struct {
	Name    string  `json:"name"`
	NameRaw []byte  `json:"name_raw"`
	Score   int     `json:"score"`
	Ping    int     `json:"ping"`
	Team    string  `json:"team,omitempty"`
	Time    float64 `json:"time_s,omitempty"`
}

func queryJSON(given string, r probe.Result) queryServerJSON {
	cs := gametext.For(r.Game)
	j := queryServerJSON{Query: given, Game: r.Game, Name: cs.Decode(r.Name), NamePlain: cs.Plain(r.Name),
		NameRaw: []byte(r.Name), StatusInfo: r.StatusInfo,
		Map: r.Map, GameType: r.GameType, Protocol: r.Protocol, NumPlayers: r.NumPlayers,
		MaxPlayers: r.MaxPlayers, Info: r.Info, Players: []queryPlayerJSON{}, Rules: r.Rules,
		RTTms: float64(r.RTT.Microseconds()) / 1000, Attempts: r.Attempts}
	if r.Addr.IsValid() {
		j.Address = r.Addr.String()
	}
	if j.Info == nil {
		j.Info = infostring.Info{}
	}
	for _, p := range r.Players {
		j.Players = append(j.Players, queryPlayerJSON{Name: cs.Decode(p.Name), NameRaw: []byte(p.Name), Score: p.Score, Ping: p.Ping,
			Team: p.Team, Time: p.Time.Seconds()})
	}
	if r.Err != nil {
		j.Error = r.Err.Error()
		j.ErrorKind = errorKind(r.Err)
	}
	return j
}

// errorKind names the class of a result's error for --json.
func errorKind(err error) string {
	switch {
	case errors.Is(err, probe.ErrUnreachable):
		return "unreachable"
	case errors.Is(err, probe.ErrTimeout):
		return "timeout"
	case errors.Is(err, probe.ErrGarbled):
		return "garbled"
	case errors.Is(err, probe.ErrMisdirected):
		return "misdirected"
	}
	return "other"
}

// queryTable prints the results as a table, each server's players under
// it.
func queryTable(w io.Writer, addrs []discover.HostPort, results []probe.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDRESS\tNAME\tMAP\tPLAYERS\tTYPE\tPING")
	for i, r := range results {
		addr := addrs[i].Text
		if r.Addr.IsValid() && r.Addr.String() != addr {
			addr += " (" + r.Addr.String() + ")"
		}
		if !r.Answered() {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\n", addr, "error: "+r.Err.Error())
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\n", addr, browser.NameFor(r.Game, r.Name), browser.Display(r.Map),
			r.NumPlayers, r.MaxPlayers, browser.GameType(r), browser.Ping(r.RTT))
		for _, p := range r.Players {
			fmt.Fprintf(tw, "\t  %s\tscore %d\tping %d\t\t\n", browser.NameFor(r.Game, p.Name), p.Score, p.Ping)
		}
		for _, kv := range r.Rules {
			fmt.Fprintf(tw, "\t  rule %s\t%s\t\t\t\n", browser.Display(kv.Key), browser.Display(kv.Value))
		}
		if r.Err != nil {
			fmt.Fprintf(tw, "\t  error: %s\t\t\t\t\n", r.Err)
		}
	}
	tw.Flush()
}
