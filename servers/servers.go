// Package servers is scout servers: it asks a game's masters for their
// server lists (or the LAN, by broadcast) and probes every server listed,
// in the masters' order, by Armitage's adaptive ordering or by the
// landmark masters' published RTTs, showing the results as they arrive: a
// live table on a terminal, plain lines, or a JSON stream. A shell: the
// decisions are package discover's, probe's, adaptive's and landmark's;
// here are the sockets, the clock, the terminal and the messages.
//
// Config is filled by Flags (the command line's spelling) or directly;
// Run does one run.
package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/scout-discovery/scout/adaptive"
	"github.com/scout-discovery/scout/browser"
	"github.com/scout-discovery/scout/discover"
	"github.com/scout-discovery/scout/game"
	"github.com/scout-discovery/scout/probe"
)

// Config is one run of scout servers. Flags fills it from the command
// line; the zero value of a field is what its comment says.
type Config struct {
	// Game is the game whose servers to list (required).
	Game *game.Game
	// Masters are the masters to ask, as HOST:PORT or HOST (the game's
	// master port); nil asks the game's well-known masters.
	Masters []string
	// Protocol is the protocol to ask the masters for; 0 is the game's
	// newest.
	Protocol int
	// IPv6 asks with getserversExt, for IPv6 servers too (Quake III
	// family).
	IPv6 bool
	// Quiet is how long a master's list without end marker may be silent
	// before it is complete; MasterTimeout how long a master has to
	// answer each query (discover.Config's Quiet and Timeout).
	Quiet, MasterTimeout time.Duration
	// AllowLocal probes the servers a public master lists at local
	// addresses (discover.Config.AllowLocal).
	AllowLocal bool
	// Prober probes the servers (its zero value is probe's defaults).
	Prober probe.Prober
	// Status also fetches each server's full status (rules and players:
	// getstatus for the Quake III family, A2S_PLAYER and A2S_RULES for
	// Source).
	Status bool
	// JSON writes one JSON object per server as it arrives, then a
	// summary. Otherwise, when the output and the input are a terminal,
	// the run opens the interactive browser (package tui), unless Plain
	// asks for lines; a run in another order than the masters' (Order)
	// or on the LAN prints lines too.
	JSON  bool
	Plain bool
	// Filter hides servers from the output; Sort orders the plain output
	// at the end (browser.Orders; "" for the order of arrival).
	Filter browser.Filter
	Sort   string
	// LAN finds servers on the local network by broadcast instead of
	// masters: getinfo to LANAddr at each of LANPorts, replies collected
	// for LANWindow.
	LAN       bool
	LANAddr   netip.Addr
	LANPorts  []uint16
	LANWindow time.Duration
	// Order is the probe order and its constants.
	Order Order
	// MaxTime bounds the whole run; 0 is no bound.
	MaxTime time.Duration
	// Listen opens each UDP socket the run uses (the masters', the
	// probes', the game-name check's); nil opens one on an ephemeral port
	// read with the kernel's receive timestamps and ICMP errors where the
	// platform has them. The lab gives one that translates an emulated
	// world's addresses.
	Listen func() (probe.Conn, io.Closer, error)
	// KeepProbes keeps every probe's outcome of a conventional run in
	// Result.Probes (an ordered run always keeps them), to draw the run.
	KeepProbes bool
	// Memory is the client's memory file (package rttcache): a run
	// records its RTTs there, and --order auto and landmarks order and
	// stop by it. "" is no memory.
	Memory string
}

// Order is the probe order of a run and its constants.
type Order struct {
	// Order is "auto" (the default plan: discover.PlanDefault), "master"
	// (conventional: the masters' order, probing while the lists arrive;
	// "" is "master"), "adaptive" (Armitage's Algorithms 1 and 2) or
	// "landmarks" (the default plan, asking the masters for their
	// landmark RTTs).
	Order string
	// Variant is adaptive's constants: "paper" (adaptive.Paper; "" is
	// "paper") or "scout" (adaptive.Scout).
	Variant string
	// AutoStop is RTTstop, the largest playable RTT; 0 turns auto-stop
	// off.
	AutoStop time.Duration
	// ClusterBy, if not nil, overrides the variant's clusters.
	ClusterBy *adaptive.Key
	// Seed seeds the planner's random choices.
	Seed uint64
	// LandmarkPings is how many pings follow each landmark master's list,
	// for the client's RTT to it (0 to discover.MaxLandmarkPings).
	LandmarkPings int
	// LandmarkSiblings skips servers whose answered siblings predict them
	// unplayable (landmark.DefaultSiblings).
	LandmarkSiblings bool
	// Given says the order was asked for (--order); the interactive
	// browser runs conventional discovery unless another order was.
	Given bool
}

// Params returns the adaptive planner's constants: the variant's, with
// AutoStop and ClusterBy.
func (o Order) Params() adaptive.Params {
	p := adaptive.Paper()
	if o.Variant == "scout" {
		p = adaptive.Scout()
	}
	p.StopRTT = o.AutoStop
	if o.ClusterBy != nil {
		p.ClusterBy = *o.ClusterBy
	}
	return p
}

// Result is what a run found, beyond what it printed.
type Result struct {
	// Answered counts the servers that answered.
	Answered int
	// Probes are the run's probes in the order sent (an ordered run's,
	// or a conventional one's with Config.KeepProbes); StopAt is when
	// auto-stop fired (0 if it did not).
	Probes []discover.Outcome
	StopAt time.Duration
}

// Run does one run of scout servers, writing the servers and the summary
// to stdout and the warnings to stderr. It returns what it found with
// the error that ended it, if any: a run whose time (MaxTime) ran out
// returns context.DeadlineExceeded with what it found until then.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) (Result, error) {
	if cfg.Game == nil {
		return Result{}, errors.New("servers: no game")
	}
	if cfg.Listen == nil {
		cfg.Listen = listen
	}
	if browsing(cfg, stdout) {
		return browse(ctx, cfg, stdout, stderr) // MaxTime bounds each of its runs
	}
	if cfg.MaxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.MaxTime)
		defer cancel()
	}
	out := newOutput(cfg, stdout)
	var res Result
	var err error
	if cfg.LAN {
		err = runLAN(ctx, cfg, out)
	} else {
		res, err = runDiscover(ctx, cfg, out, stderr)
	}
	res.Answered = out.tally.Answered
	return res, err
}

// listen opens a UDP socket read with the kernel's receive timestamps and
// ICMP errors, where the platform has them.
func listen() (probe.Conn, io.Closer, error) {
	c, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, nil, err
	}
	sc, _ := probe.Wrap(c)
	return sc, c, nil
}

// runDiscover asks the masters and probes what they list.
func runDiscover(ctx context.Context, opt Config, out *output, stderr io.Writer) (Result, error) {
	cfg, unresolved, err := prepare(ctx, opt)
	if err != nil {
		return Result{}, err
	}
	out.mastersAsked = len(cfg.Masters) + len(unresolved)
	for _, r := range unresolved {
		out.event(discover.MasterDone{MasterReport: r})
	}
	mconn, mc, err := opt.Listen()
	if err != nil {
		return Result{}, err
	}
	defer mc.Close()
	pconn, pc, err := opt.Listen()
	if err != nil {
		return Result{}, err
	}
	defer pc.Close()
	out.start()
	mem := openMemory(opt.Memory, stderr)
	switch opt.Order.Order {
	case "adaptive":
		return runOrdered(ctx, opt, out, mconn, pconn, cfg, unresolved, stderr, mem)
	case "auto", "landmarks":
		return runPlanned(ctx, opt, out, mconn, pconn, cfg, unresolved, stderr, mem)
	}
	each := out.event
	var log *probeLog
	if opt.KeepProbes || mem != nil {
		log = &probeLog{start: out.began}
		each = log.wrap(each)
	}
	gn := &gameNames{}
	nc := startNameCheck(ctx, opt, cfg)
	sum, err := discover.Discover(ctx, mconn, pconn, cfg, gn.wrap(opt.Filter, each))
	sum.Masters = append(unresolved, sum.Masters...)
	var res Result
	if log != nil {
		mem.record(sum.Masters, log.probes, nil)
		if opt.KeepProbes {
			res.Probes = log.probes
		}
	}
	out.finish(sum)
	warnAfter(ctx, opt, sum, gn, nc, stderr)
	return res, err
}

// prepare resolves the masters of a run and returns its discovery's
// configuration, and a report for each master that could not be
// resolved.
func prepare(ctx context.Context, opt Config) (discover.Config, []discover.MasterReport, error) {
	// --order landmarks asks with getserversExt: the landmark extension
	// rides on it (q3.LandmarksKeyword).
	req, err := discover.RequestFor(opt.Game, opt.Protocol, opt.IPv6 || opt.Order.Order == "landmarks")
	if err != nil {
		return discover.Config{}, nil, err
	}
	req.Dialect = StatusDialect(req.Dialect, opt.Status)
	names := opt.Masters
	if len(names) == 0 {
		names = opt.Game.Masters
	}
	if len(names) == 0 {
		return discover.Config{}, nil, fmt.Errorf("%s has no well-known master: give --master", opt.Game.Name)
	}
	cfg := discover.Config{Quiet: opt.Quiet, Timeout: opt.MasterTimeout, Prober: opt.Prober, AllowLocal: opt.AllowLocal}
	var unresolved []discover.MasterReport
	for _, n := range names {
		ap, err := resolveMaster(ctx, n, opt.Game.MasterPort)
		if err != nil {
			unresolved = append(unresolved, discover.MasterReport{Name: n, Protocol: req.Protocol.String(),
				End: discover.EndNoReply, Error: err.Error()})
			continue
		}
		cfg.Masters = append(cfg.Masters, discover.Master{Name: n, Addr: ap, Request: req})
	}
	return cfg, unresolved, nil
}

// StatusDialect returns the dialect that also fetches the full status
// when status is set: Q3 (getinfo and getstatus) for Q3Info, A2S
// (A2S_INFO, A2S_PLAYER and A2S_RULES) for A2SInfo. The other dialects
// already fetch what there is.
func StatusDialect(d probe.Dialect, status bool) probe.Dialect {
	switch {
	case status && d == probe.Q3Info:
		return probe.Q3
	case status && d == probe.A2SInfo:
		return probe.A2S
	}
	return d
}

// resolveMaster reads HOST:PORT (or HOST, with the game's master port).
func resolveMaster(ctx context.Context, s string, defPort uint16) (netip.AddrPort, error) {
	hp, err := discover.ParseHostPort(s, defPort)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return hp.Resolve(ctx)
}

// runLAN broadcasts getinfo and shows who answers.
func runLAN(ctx context.Context, opt Config, out *output) error {
	conn, c, err := opt.Listen()
	if err != nil {
		return err
	}
	defer c.Close()
	var targets []probe.Target
	for _, p := range opt.LANPorts {
		targets = append(targets, probe.Target{Addr: netip.AddrPortFrom(opt.LANAddr, p), Dialect: probe.Q3Info})
	}
	out.start()
	counts, err := discover.LAN(ctx, conn, targets, opt.LANWindow, func(s discover.Server) {
		out.event(discover.Listed{Addr: s.Addr, Master: "lan"})
		out.event(discover.Probed{Server: s})
	})
	out.finish(discover.Summary{Listed: out.tally.Listed, Probe: counts, Took: time.Since(out.began)})
	return err
}
