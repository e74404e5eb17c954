package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/scout-discovery/scout/internal/cli"
	"github.com/scout-discovery/scout/lab/loopnat"
	"github.com/scout-discovery/scout/lab/world"
)

func init() {
	register(cli.Command{Name: "world", Summary: "run (or generate) a world of emulated game servers on loopback", Run: runWorld})
}

const worldAbout = `Runs thousands of emulated Quake III Arena, Enemy Territory, RtCW,
OpenArena, Quake 4, UT3 and Counter-Strike: Source servers in this process,
one UDP socket each on 127.0.0.0/8, until interrupted or --duration passes.
Each server has a public-looking address (what masters list and clients
show) and answers its game's queries with the world's delay, jitter and
loss added; Quake III family and Quake 4 servers heartbeat to every
--master. Nothing leaves loopback.

The world comes from --world FILE (see 'scout-lab world generate') or from the
generator flags. --map-out writes the public <-> loopback table once every
socket is bound; 'scout master' and 'scout servers' read it with
--world-map to see the public addresses.

  scout-lab world generate [generator flags] > world.json
      writes a world file (JSON, version 1) and exits.

Games: q3a et rtcw oa q4 ut3 css. Delays: --delay 10ms-400ms draws each
hosting network's added round-trip time uniformly from the range.

--link 10mbit --link-queue 250ms gives every client (one address and
port) an access link: its replies, once their delay has passed, cross a
10 Mbit/s line one after the other through a 250 ms tail-drop queue, so a
client that probes faster than its line carries the replies sees its
round-trip times grow, then replies lost. --link-up shapes its requests
the same way.`

// worldMasterList is a repeatable --master flag.
type worldMasterList []netip.AddrPort

func (l *worldMasterList) String() string {
	parts := make([]string, len(*l))
	for i, a := range *l {
		parts[i] = a.String()
	}
	return strings.Join(parts, ",")
}

func (l *worldMasterList) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		a, err := netip.ParseAddrPort(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		*l = append(*l, a)
	}
	return nil
}

// worldGenFlags are the generator flags shared by `scout-lab world` and
// `scout-lab world generate`.
type worldGenFlags struct {
	servers     *int
	games       *string
	full, empty *float64
	delay       *string
	jitter      *time.Duration
	loss        *float64
	gone        *float64
	seed        *uint64
}

func addWorldGenFlags(fs *flag.FlagSet) worldGenFlags {
	return worldGenFlags{
		servers: fs.Int("servers", 2000, "number of servers to generate"),
		games:   fs.String("games", "q3a:20,et:20,rtcw:5,oa:20,q4:10,ut3:10,css:15", "game mix, GAME:WEIGHT,..."),
		full:    fs.Float64("full", 0.3, "share of full servers"),
		empty:   fs.Float64("empty", 0.4, "share of empty servers"),
		delay:   fs.String("delay", "10ms-400ms", "added round-trip time, a range LOW-HIGH or one value"),
		jitter:  fs.Duration("jitter", 0, "extra delay per reply, uniform in [0, jitter)"),
		loss:    fs.Float64("loss", 0, "probability that a reply datagram is lost"),
		gone:    fs.Float64("gone", 0, "share of servers that answer their masters only (listed, never answering a client)"),
		seed:    fs.Uint64("seed", 1, "generator seed: the same seed gives the same world"),
	}
}

func (g worldGenFlags) generate() (world.World, error) {
	mix, err := world.ParseMix(*g.games)
	if err != nil {
		return world.World{}, err
	}
	lo, hi, err := world.ParseRange(*g.delay)
	if err != nil {
		return world.World{}, err
	}
	return world.Generate(world.Spec{
		Servers: *g.servers, Games: mix, Full: *g.full, Empty: *g.empty,
		RTTMin: lo, RTTMax: hi, Jitter: *g.jitter, Loss: *g.loss, Gone: *g.gone, Seed: *g.seed,
	})
}

// worldRun is a scout-lab world run: the world, the emulator's settings and
// what to write.
type worldRun struct {
	w        world.World
	cfg      world.Config
	mapOut   string
	duration time.Duration
	asJSON   bool
}

func runWorld(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "generate" {
		return runWorldGenerate(args[1:], stdout, stderr)
	}
	r, code, ok := parseWorldFlags(args, stderr)
	if !ok {
		return code
	}
	defer world.TuneRuntime()() // more Ps, rarer GC: see world.TunedProcs
	em, err := world.Listen(r.w, r.cfg)
	if err != nil {
		fmt.Fprintf(stderr, "scout-lab world: %v\n", err)
		return 1
	}
	if r.mapOut != "" {
		if err := writeWorldMap(em.Table(), r.mapOut); err != nil {
			em.Close()
			fmt.Fprintf(stderr, "scout-lab world: %v\n", err)
			return 1
		}
	}
	printWorldSummary(stdout, r.w, em.Stats(), r.cfg.Masters, r.cfg.Access, r.asJSON)
	if r.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.duration)
		defer cancel()
	}
	if err := em.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "scout-lab world: %v\n", err)
		return 1
	}
	printWorldFinal(stdout, em.Stats(), r.cfg.Access, r.asJSON)
	return 0
}

// parseWorldFlags reads scout-lab world's flags and the world (read or
// generated); when it returns !ok, the caller returns code at once.
func parseWorldFlags(args []string, stderr io.Writer) (r worldRun, code int, ok bool) {
	fs := newFlags("world", "[flags] | generate [generator flags]", worldAbout, stderr)
	gen := addWorldGenFlags(fs)
	var masters worldMasterList
	fs.Var(&masters, "master", "a master to heartbeat to, loopback HOST:PORT (repeatable)")
	file := fs.String("world", "", "read the world from this file instead of generating it")
	fs.StringVar(&r.mapOut, "map-out", "", "write the public <-> loopback table here once the sockets are bound")
	fs.DurationVar(&r.duration, "duration", 0, "stop after this long (0: run until interrupted)")
	fs.DurationVar(&r.cfg.HeartbeatInterval, "heartbeat-interval", world.HeartbeatInterval, "period of heartbeats")
	fs.DurationVar(&r.cfg.Dynamics, "dynamics", 0, "mean time between changes (map, players) of one server; 0: static")
	wait := fs.String("wait", "sleep", "how replies wait for their due time: sleep (nanosleep), spin, timer")
	fs.BoolVar(&r.cfg.RealTime, "realtime", true, "release replies from a SCHED_FIFO thread when permitted (root), for accurate delays on a loaded machine")
	sockets := fs.String("sockets", "auto", "one socket per server (server), per port (port, for worlds beyond the descriptor limit), or auto")
	fs.BoolVar(&r.asJSON, "json", false, "print the summary and the final counters as JSON")
	lf := addLinkFlags(fs)
	if code, done := parseFlags(fs, args); done {
		return r, code, false
	}
	bad := func(format string, a ...any) (worldRun, int, bool) {
		return r, cli.UsageError(fs, format, a...), false
	}
	var err error
	if r.cfg.Access, err = lf.link(); err != nil {
		return bad("%v", err)
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	r.cfg.Masters = masters
	modes := map[string]world.WaitMode{"sleep": world.WaitSleep, "spin": world.WaitSpin, "timer": world.WaitTimer}
	if r.cfg.Wait, ok = modes[*wait]; !ok {
		return bad("--wait %q: want sleep, spin or timer", *wait)
	}
	sockModes := map[string]world.SocketMode{"auto": world.SocketsAuto, "server": world.SocketsPerServer, "port": world.SocketsPerPort}
	if r.cfg.Sockets, ok = sockModes[*sockets]; !ok {
		return bad("--sockets %q: want auto, server or port", *sockets)
	}
	if *file != "" {
		r.w, err = readWorldFile(*file)
	} else {
		r.w, err = gen.generate()
	}
	if err != nil {
		return bad("%v", err)
	}
	return r, 0, true
}

// printWorldFinal prints the emulator's final counters.
func printWorldFinal(w io.Writer, st world.Stats, access world.AccessLink, asJSON bool) {
	if asJSON {
		json.NewEncoder(w).Encode(map[string]any{"final": st})
		return
	}
	fmt.Fprintf(w, "stopped: %d datagrams received (%s), %d sent, %d lost, %d heartbeats; send lateness %s\n",
		st.Received, worldOutcomes(st.Outcomes), st.Sent, st.Lost, st.Heartbeats, worldLateness(st))
	if access.Enabled() {
		fmt.Fprintf(w, "access link: %d replies shaped, queueing delay mean %v max %v, %d dropped by the full queue (%d requests upstream), %d unshaped\n",
			st.LinkShaped, st.LinkWaitMean, st.LinkWaitMax, st.LinkDropped, st.LinkUpDropped, st.LinkUnshaped)
	}
}

func runWorldGenerate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("world generate", "[generator flags] > world.json", "Writes a generated world file (JSON, version 1) to standard output.", stderr)
	gen := addWorldGenFlags(fs)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	w, err := gen.generate()
	if err != nil {
		return cli.UsageError(fs, "%v", err)
	}
	if err := w.Write(stdout); err != nil {
		fmt.Fprintf(stderr, "scout-lab world generate: %v\n", err)
		return 1
	}
	return 0
}

func readWorldFile(path string) (world.World, error) {
	f, err := os.Open(path)
	if err != nil {
		return world.World{}, err
	}
	defer f.Close()
	w, err := world.Read(f)
	if err != nil {
		return world.World{}, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// writeWorldMap writes tab to a temporary file and renames it, so that a
// reader never sees half a table.
func writeWorldMap(tab *loopnat.Table, path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = tab.WriteTo(f)
	err = errors.Join(err, f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

func printWorldSummary(w io.Writer, wd world.World, st world.Stats, masters []netip.AddrPort, access world.AccessLink, asJSON bool) {
	byGame := map[world.Game]int{}
	players := 0
	for _, s := range wd.Servers {
		byGame[s.Game]++
		players += len(s.Players)
	}
	if asJSON {
		json.NewEncoder(w).Encode(map[string]any{"servers": st.Servers, "by_game": byGame, "sockets": st.Sockets, "addresses": st.Addresses, "players": players, "masters": masters, "access": access})
		return
	}
	games := make([]string, 0, len(byGame))
	for g, n := range byGame {
		games = append(games, fmt.Sprintf("%s %d", g, n))
	}
	sort.Strings(games)
	fmt.Fprintf(w, "world: %d servers (%s), %d players, %d sockets on %d loopback addresses, heartbeats to %d master(s), %s\n",
		st.Servers, strings.Join(games, ", "), players, st.Sockets, st.Addresses, len(masters), access)
}

func worldOutcomes(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// worldLateness formats the send lateness quantiles of st, "n/a" for one
// with too few samples to be more than the longest (world.Stats.LatenessKnown).
func worldLateness(st world.Stats) string {
	q := func(q float64, d time.Duration) string {
		if !st.LatenessKnown(q) {
			return "n/a"
		}
		return d.String()
	}
	return fmt.Sprintf("p50 %s p99 %s p99.9 %s (%d samples)",
		q(0.50, st.LatenessP50), q(0.99, st.LatenessP99), q(0.999, st.LatenessP999), st.LatenessSamples)
}
